#!/bin/sh
# Prints 1 when librdmacm's headers are usable by the C++ compiler, else 0.
# binding.gyp calls this to decide whether to build the rdma_cm provider.
probe=$(mktemp -d 2>/dev/null || echo /tmp/rxv-probe-cm.$$)
mkdir -p "$probe"
cat > "$probe/p.cc" <<'SRC'
#include <rdma/rdma_cma.h>
int main() { return rdma_create_event_channel != nullptr ? 0 : 1; }
SRC
if ${CXX:-c++} -std=c++17 -fsyntax-only "$probe/p.cc" >/dev/null 2>&1; then echo 1; else echo 0; fi
rm -rf "$probe"
