// Looking up one symbol of a library loaded with dlopen, for the providers
// that load rdma-core at run time (libibverbs, librdmacm). A missing symbol
// is added to `missing` (names joined by ", ") so the caller's error names
// every one of them, not just the first.
#pragma once

#include <dlfcn.h>

#include <string>

namespace rxv {

// dlsym gives the default symbol version (IBVERBS_1.1 for the classic verbs;
// the IBVERBS_1.0 compat versions are hidden, non-default ones).
template <typename Fn>
bool ResolveSymbol(void* handle, const char* name, Fn* slot, std::string* missing) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  *slot = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace rxv
