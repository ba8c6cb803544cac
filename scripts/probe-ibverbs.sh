#!/bin/sh
# Prints 1 when rdma-core's headers are usable by the C++ compiler, else 0.
# binding.gyp calls this to decide whether to build the ibverbs provider.
probe=$(mktemp -d 2>/dev/null || echo /tmp/rxv-probe.$$)
mkdir -p "$probe"
cat > "$probe/p.cc" <<'SRC'
#include <infiniband/verbs.h>
int main() { return ibv_get_device_list != nullptr ? 0 : 1; }
SRC
if ${CXX:-c++} -std=c++17 -fsyntax-only "$probe/p.cc" >/dev/null 2>&1; then echo 1; else echo 0; fi
rm -rf "$probe"
