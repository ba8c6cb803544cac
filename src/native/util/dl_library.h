// Loading an rdma-core library at run time (libibverbs, librdmacm), the one
// way both providers do it: the file an environment variable names, else
// the library's soname; its symbols resolved at once; a failure that says
// what to install. Loaded once per process and never closed: providers
// register plugins, and a retry would fail the same way.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "util/dl_symbol.h"

namespace rxv {

struct RuntimeLibrary {
  const char* env_var;      // names a file to load instead (set, non-empty)
  const char* soname;       // "libibverbs.so.1"
  const char* if_absent;    // what to install when it cannot be opened
  const char* if_too_old;   // what to install when it lacks symbols
};

// Opens `lib` and lets `resolve(handle, &missing)` fill its table
// (ResolveSymbol for each symbol). False, with `why`, when the file cannot
// be opened or misses symbols.
template <typename Resolve>
bool OpenRuntimeLibrary(const RuntimeLibrary& lib, Resolve&& resolve, std::string* why) {
  const char* env = std::getenv(lib.env_var);
  const std::string file = (env != nullptr && *env != '\0') ? env : lib.soname;
  dlerror();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    *why = file + " not found: install " + lib.if_absent + " (dlopen: " +
           (err != nullptr ? err : "unknown error") + ")";
    return false;
  }
  std::string missing;
  resolve(handle, &missing);
  if (!missing.empty()) {
    *why = file + " is too old or not rdma-core's (missing " + missing + "): install " +
           lib.if_too_old;
    return false;
  }
  return true;
}

// The table `load` fills (false, with why, when it cannot), loaded on the
// first call from any thread and remembered: nullptr and `why` after a failure.
template <typename Api, bool (*Load)(Api*, std::string*)>
const Api* LoadOnce(std::string* why) {
  static Api api{};
  static bool ok = false;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] { ok = Load(&api, &failure); });
  if (!ok) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return &api;
}

}  // namespace rxv
