#include "wrap/ah.h"

#include "util/js_values.h"
#include "wrap/pd.h"

namespace rxv {

Napi::Function AhWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&AhWrap::Closed>("closed"),
                         InstanceMethod<&AhWrap::CloseJs>("close"),
                     });
}

Napi::Object AhWrap::New(Napi::Env env, std::unique_ptr<Ah> ah, Napi::Object pd) {
  return Wrap(env, std::move(ah), pd);
}

static uint32_t AvField(Napi::Env env, Napi::Object o, const char* key, uint32_t dflt, uint32_t max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  return ValueU32(env, v, key, 0, max);
}

AddressVector ReadAddressVector(Napi::Env env, Napi::Value v) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, "the address must be an object");
  Napi::Object o = v.As<Napi::Object>();
  AddressVector av;
  av.port_num = static_cast<uint8_t>(AvField(env, o, "portNum", 1, 255));
  av.dlid = static_cast<uint16_t>(AvField(env, o, "dlid", 0, 0xffff));
  av.sl = static_cast<uint8_t>(AvField(env, o, "sl", 0, 15));
  av.sgid_index = static_cast<uint8_t>(AvField(env, o, "sgidIndex", 0, 255));
  av.hop_limit = static_cast<uint8_t>(AvField(env, o, "hopLimit", 1, 255));
  av.traffic_class = static_cast<uint8_t>(AvField(env, o, "trafficClass", 0, 255));
  av.flow_label = AvField(env, o, "flowLabel", 0, 0xfffff);
  Napi::Value dgid = o.Get("dgid");
  if (!dgid.IsUndefined() && !dgid.IsNull()) {
    if (!dgid.IsString()) throw Napi::TypeError::New(env, "dgid must be a GID string");
    if (!ParseGid(dgid.As<Napi::String>().Utf8Value(), av.dgid))
      throw Napi::RangeError::New(env, "dgid must be 32 hex digits, e.g. fe80:0000:...:0001");
    av.is_global = true;
  }
  return av;
}

// createAh(address): ibv_create_ah. The address is read in full before the
// PD is taken (its getters may close it).
Napi::Value PdWrap::CreateAh(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddressVector av = ReadAddressVector(env, info[0]);
  Pd* pd = Checked(env, "ibv_create_ah");
  auto ah = Guard(env, [&] { return pd->create_ah(av); });
  return AhWrap::New(env, std::move(ah), Value());
}

}  // namespace rxv
