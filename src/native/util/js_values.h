// Small conversions between native values and their JS forms.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

namespace rxv {

// A 64-bit value from a bigint or a safe-integer number.
uint64_t ValueU64(Napi::Env env, Napi::Value v, const char* what,
                  uint64_t fallback);
// "0011:2233:4455:6677", as ibv_devinfo prints GUIDs.
Napi::String GuidString(Napi::Env env, uint64_t guid);
// "fe80:0000:0000:0000:0011:2233:4455:6677".
Napi::String GidString(Napi::Env env, const uint8_t raw[16]);
// Parses the form above (or 32 hex digits); false if malformed.
bool ParseGid(const std::string& s, uint8_t out[16]);

}  // namespace rxv
