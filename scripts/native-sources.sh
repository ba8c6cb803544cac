#!/bin/sh
# Lists the addon's C++ sources for binding.gyp (one per line, stable order).
cd "$(dirname "$0")/.." && find src/native -name '*.cc' | LC_ALL=C sort
