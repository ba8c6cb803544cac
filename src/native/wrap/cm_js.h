// Reading CM arguments from JS (each throws TypeError/RangeError naming what
// was expected, before any native object is touched) and writing CM values
// back.
#pragma once

#include <napi.h>

#include <cstdint>
#include <vector>

#include "cm/cm_provider.h"

namespace rxv {
namespace cm {

// { host: numeric IPv4/IPv6 string, port: integer 0..65535 }.
SockAddr ReadAddress(Napi::Env env, Napi::Value v, const char* what);
// A positive integer number of milliseconds.
int ReadTimeout(Napi::Env env, Napi::Value v, const char* what);
// A Uint8Array of at most `max` bytes (undefined: none).
std::vector<uint8_t> ReadPrivateData(Napi::Env env, Napi::Value v, uint32_t max, const char* what);
// NativeCmConnParam; `max` bounds its private data.
ConnParam ReadConnParam(Napi::Env env, Napi::Value v, uint32_t max);
// An optional RNR retry count (0-7): -1 when undefined.
int ReadOptionalRnrRetry(Napi::Env env, Napi::Value v, const char* what);
// { host, port }, or null when the address is not known yet.
Napi::Value AddressValue(Napi::Env env, const SockAddr& a);

}  // namespace cm
}  // namespace rxv
