#include "util/js_values.h"

#include <cmath>
#include <cstdio>

namespace rxv {

uint64_t ValueU64(Napi::Env env, Napi::Value v, const char* what,
                  uint64_t fallback) {
  if (v.IsUndefined()) return fallback;
  if (v.IsBigInt()) {
    bool lossless = false;
    uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) {
      throw Napi::RangeError::New(env, std::string(what) +
                                           " must fit in 64 bits unsigned");
    }
    return x;
  }
  if (v.IsNumber()) {
    double d = v.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(d) || std::floor(d) != d || d < 0 ||
        d > 9007199254740991.0) {
      throw Napi::RangeError::New(
          env, std::string(what) +
                   " must be a non-negative safe integer or a bigint");
    }
    return static_cast<uint64_t>(d);
  }
  throw Napi::TypeError::New(env,
                             std::string(what) + " must be a bigint or a number");
}

Napi::String GuidString(Napi::Env env, uint64_t guid) {
  char buf[24];
  snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x",
           static_cast<unsigned>((guid >> 48) & 0xffff),
           static_cast<unsigned>((guid >> 32) & 0xffff),
           static_cast<unsigned>((guid >> 16) & 0xffff),
           static_cast<unsigned>(guid & 0xffff));
  return Napi::String::New(env, buf);
}

Napi::String GidString(Napi::Env env, const uint8_t raw[16]) {
  char buf[48];
  int at = 0;
  for (int i = 0; i < 16; i += 2) {
    at += snprintf(buf + at, sizeof buf - at, i ? ":%02x%02x" : "%02x%02x",
                   raw[i], raw[i + 1]);
  }
  return Napi::String::New(env, buf);
}

static int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseGid(const std::string& s, uint8_t out[16]) {
  int nibbles = 0;
  uint8_t tmp[16] = {0};
  for (char c : s) {
    if (c == ':') continue;
    int d = HexDigit(c);
    if (d < 0 || nibbles >= 32) return false;
    tmp[nibbles / 2] = static_cast<uint8_t>(tmp[nibbles / 2] << 4 | d);
    nibbles++;
  }
  if (nibbles != 32) return false;
  for (int i = 0; i < 16; i++) out[i] = tmp[i];
  return true;
}

}  // namespace rxv
