#include "wrap/cm_js.h"

#include <cmath>
#include <string>

#include "cm/cm_address.h"
#include "util/errors.h"

namespace rxv {
namespace cm {

namespace {

// An integer in [min, max]: TypeError when not a number, RangeError otherwise.
double ReadInt(Napi::Env env, Napi::Value v, const std::string& what, double min, double max) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, what + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < min || d > max) {
    throw Napi::RangeError::New(env, what + " must be an integer from " + std::to_string(int64_t(min)) + " to " +
                                         std::to_string(int64_t(max)));
  }
  return d;
}

uint8_t ReadU8(Napi::Env env, Napi::Object o, const char* key, uint8_t fallback, uint8_t max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  return static_cast<uint8_t>(ReadInt(env, v, std::string("param.") + key, 0, max));
}

}  // namespace

SockAddr ReadAddress(Napi::Env env, Napi::Value v, const char* what) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, std::string(what) + " must be an object { host, port }");
  Napi::Object o = v.As<Napi::Object>();
  Napi::Value host = o.Get("host");
  Napi::Value port = o.Get("port");
  std::string w = what;
  if (!host.IsString()) throw Napi::TypeError::New(env, w + ".host must be a string (a numeric IPv4 or IPv6 address)");
  SockAddr out;
  out.host = host.As<Napi::String>().Utf8Value();
  out.port = static_cast<uint16_t>(ReadInt(env, port, w + ".port", 0, 65535));
  Addr parsed;
  if (!parse_addr(out.host, out.port, &parsed)) {
    throw Napi::TypeError::New(env, w + ".host must be a numeric IPv4 or IPv6 address (no names are resolved), got '" +
                                        out.host.substr(0, 64) + "'");
  }
  return out;
}

int ReadTimeout(Napi::Env env, Napi::Value v, const char* what) {
  return static_cast<int>(ReadInt(env, v, what, 1, INT32_MAX));
}

std::vector<uint8_t> ReadPrivateData(Napi::Env env, Napi::Value v, uint32_t max, const char* what) {
  if (v.IsUndefined() || v.IsNull()) return {};
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a Uint8Array (or Buffer)");
  }
  Napi::Uint8Array a = v.As<Napi::Uint8Array>();
  if (a.ByteLength() > max) {
    throw Napi::RangeError::New(env, std::string(what) + " is " + std::to_string(a.ByteLength()) +
                                         " bytes: at most " + std::to_string(max) + " fit (TCP port space)");
  }
  const uint8_t* p = a.Data();
  return std::vector<uint8_t>(p, p + a.ByteLength());
}

int ReadOptionalRnrRetry(Napi::Env env, Napi::Value v, const char* what) {
  if (v.IsUndefined()) return -1;
  return static_cast<int>(ReadInt(env, v, what, 0, 7));
}

ConnParam ReadConnParam(Napi::Env env, Napi::Value v, uint32_t max) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, "param must be an object { qpNum, privateData?, ... }");
  Napi::Object o = v.As<Napi::Object>();
  ConnParam p;
  p.private_data = ReadPrivateData(env, o.Get("privateData"), max, "param.privateData");
  p.responder_resources = ReadU8(env, o, "responderResources", p.responder_resources, 255);
  p.initiator_depth = ReadU8(env, o, "initiatorDepth", p.initiator_depth, 255);
  p.retry_count = ReadU8(env, o, "retryCount", p.retry_count, 7);
  p.rnr_retry_count = ReadU8(env, o, "rnrRetryCount", p.rnr_retry_count, 7);
  Napi::Value qpn = o.Get("qpNum");
  if (qpn.IsUndefined()) throw Napi::TypeError::New(env, "param.qpNum is required (the QP of this side)");
  p.qp_num = static_cast<uint32_t>(ReadInt(env, qpn, "param.qpNum", 0, 0xffffff));
  Napi::Value srq = o.Get("srq");
  if (!srq.IsUndefined()) {
    if (!srq.IsBoolean()) throw Napi::TypeError::New(env, "param.srq must be a boolean");
    p.srq = srq.As<Napi::Boolean>().Value();
  }
  return p;
}

Napi::Value AddressValue(Napi::Env env, const SockAddr& a) {
  if (a.host.empty()) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("host", a.host);
  o.Set("port", a.port);
  return o;
}

}  // namespace cm
}  // namespace rxv
