// Turning native failures and bad arguments into JS errors: errno failures
// become Error with `code` (errno name), `errno` and `syscall` (the verb);
// bad arguments become TypeError/RangeError saying what was expected.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "provider/provider.h"
#include "rules/refusals.h"

namespace rxv {

Napi::Error ErrnoError(Napi::Env env, int err, const std::string& verb,
                       const std::string& detail = "");
Napi::Error FromVerbsError(Napi::Env env, const VerbsError& e);
// The same error made with raw Node-API, for code entered from libuv where
// the C++ wrapper cannot be used (util/deliver.h); nullptr when JS values
// cannot be made (the environment is going away).
napi_value RawVerbsError(napi_env env, const VerbsError& e);
const char* ErrnoName(int err);

// Argument readers: each throws TypeError/RangeError naming `what`.
uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* what,
                uint32_t min = 0, uint32_t max = UINT32_MAX);
int32_t ArgI32(const Napi::CallbackInfo& info, size_t i, const char* what,
               int32_t min, int32_t max);
bool ArgBool(const Napi::CallbackInfo& info, size_t i, const char* what,
             bool fallback);
Napi::Function ArgFunction(const Napi::CallbackInfo& info, size_t i,
                           const char* what);
std::string ArgString(const Napi::CallbackInfo& info, size_t i,
                      const char* what);
uint32_t ValueU32(Napi::Env env, Napi::Value v, const char* what,
                  uint32_t min = 0, uint32_t max = UINT32_MAX);

// Runs `body`, converting VerbsError into a JS exception and an over-ack
// into a RangeError (NAPI C++ exceptions are enabled, so Napi::Error
// propagates to JS).
template <typename F>
auto Guard(Napi::Env env, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const VerbsError& e) {
    throw FromVerbsError(env, e);
  } catch (const rules::OverAck& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::bad_alloc&) {
    throw ErrnoError(env, ENOMEM, "malloc", "out of memory");
  }
}

}  // namespace rxv
