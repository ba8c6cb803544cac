#include "util/errors.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace rxv {

const char* ErrnoName(int err) {
  switch (err) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOSPC: return "ENOSPC";
    case ERANGE: return "ERANGE";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENOTCONN: return "ENOTCONN";
    case EPROTO: return "EPROTO";
    case ENXIO: return "ENXIO";
    case EISCONN: return "EISCONN";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNRESET: return "ECONNRESET";
    case ECONNABORTED: return "ECONNABORTED";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EALREADY: return "EALREADY";
    default: return "EUNKNOWN";
  }
}

// "<verb> failed: <ENAME> (<strerror>)[: <detail>]", for both builders.
static std::string ErrnoMessage(int err, const std::string& verb, const std::string& detail) {
  std::string msg = verb + " failed: " + ErrnoName(err) + " (" + std::strerror(err) + ")";
  if (!detail.empty()) msg += ": " + detail;
  return msg;
}

Napi::Error ErrnoError(Napi::Env env, int err, const std::string& verb,
                       const std::string& detail) {
  Napi::Error e = Napi::Error::New(env, ErrnoMessage(err, verb, detail));
  e.Set("code", Napi::String::New(env, ErrnoName(err)));
  e.Set("errno", Napi::Number::New(env, -err));
  e.Set("syscall", Napi::String::New(env, verb));
  return e;
}

Napi::Error FromVerbsError(Napi::Env env, const VerbsError& e) {
  return ErrnoError(env, e.err(), e.verb(), e.detail());
}

napi_value RawVerbsError(napi_env env, const VerbsError& e) {
  std::string text = ErrnoMessage(e.err(), e.verb(), e.detail());
  napi_value code, msg, err, num, verb;
  if (napi_create_string_utf8(env, ErrnoName(e.err()), NAPI_AUTO_LENGTH, &code) != napi_ok ||
      napi_create_string_utf8(env, text.c_str(), NAPI_AUTO_LENGTH, &msg) != napi_ok ||
      napi_create_error(env, code, msg, &err) != napi_ok ||
      napi_create_int32(env, -e.err(), &num) != napi_ok ||
      napi_set_named_property(env, err, "errno", num) != napi_ok ||
      napi_create_string_utf8(env, e.verb().c_str(), NAPI_AUTO_LENGTH, &verb) != napi_ok ||
      napi_set_named_property(env, err, "syscall", verb) != napi_ok) {
    return nullptr;
  }
  return err;
}

static std::string Describe(Napi::Value v) {
  if (v.IsUndefined()) return "undefined";
  if (v.IsNull()) return "null";
  if (v.IsBoolean()) return "a boolean";
  if (v.IsBigInt()) return "a bigint";
  if (v.IsString()) return "a string";
  if (v.IsFunction()) return "a function";
  if (v.IsArray()) return "an array";
  if (v.IsObject()) return "an object";
  if (v.IsNumber()) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.17g", v.As<Napi::Number>().DoubleValue());
    return buf;
  }
  return "something else";
}

uint32_t ValueU32(Napi::Env env, Napi::Value v, const char* what, uint32_t min,
                  uint32_t max) {
  if (!v.IsNumber()) {
    throw Napi::TypeError::New(
        env, std::string(what) + " must be a number, got " + Describe(v));
  }
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < min || d > max) {
    throw Napi::RangeError::New(env, std::string(what) +
                                         " must be an integer in [" +
                                         std::to_string(min) + ", " +
                                         std::to_string(max) + "], got " +
                                         Describe(v));
  }
  return static_cast<uint32_t>(d);
}

uint32_t ArgU32(const Napi::CallbackInfo& info, size_t i, const char* what,
                uint32_t min, uint32_t max) {
  return ValueU32(info.Env(), info[i], what, min, max);
}

int32_t ArgI32(const Napi::CallbackInfo& info, size_t i, const char* what,
               int32_t min, int32_t max) {
  Napi::Value v = info[i];
  if (!v.IsNumber()) {
    throw Napi::TypeError::New(
        info.Env(), std::string(what) + " must be a number, got " + Describe(v));
  }
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < min || d > max) {
    throw Napi::RangeError::New(
        info.Env(), std::string(what) + " must be an integer in [" +
                        std::to_string(min) + ", " + std::to_string(max) +
                        "], got " + Describe(v));
  }
  return static_cast<int32_t>(d);
}

bool ArgBool(const Napi::CallbackInfo& info, size_t i, const char* what,
             bool fallback) {
  Napi::Value v = info[i];
  if (v.IsUndefined()) return fallback;
  if (!v.IsBoolean()) {
    throw Napi::TypeError::New(
        info.Env(), std::string(what) + " must be a boolean, got " + Describe(v));
  }
  return v.As<Napi::Boolean>().Value();
}

Napi::Function ArgFunction(const Napi::CallbackInfo& info, size_t i,
                           const char* what) {
  if (!info[i].IsFunction()) {
    throw Napi::TypeError::New(info.Env(), std::string(what) +
                                               " must be a function, got " +
                                               Describe(info[i]));
  }
  return info[i].As<Napi::Function>();
}

std::string ArgString(const Napi::CallbackInfo& info, size_t i,
                      const char* what) {
  if (!info[i].IsString()) {
    throw Napi::TypeError::New(info.Env(), std::string(what) +
                                               " must be a string, got " +
                                               Describe(info[i]));
  }
  return info[i].As<Napi::String>().Utf8Value();
}

}  // namespace rxv
