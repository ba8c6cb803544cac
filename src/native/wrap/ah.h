// Ah: an address handle (ibv_ah), where a UD QP's datagrams go. A WR copies
// its address when posted, so closing it never waits for WRs (rdma-core
// tracks no users of an AH either); it keeps its PD alive.
#pragma once

#include <napi.h>

#include <memory>

#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class AhWrap : public ProviderWrap<AhWrap, Ah> {
 public:
  static constexpr const char* kClassName = "Ah";
  static constexpr napi_type_tag kTypeTag = {0x5d3c1f0be7a94a21ull, 0x8e61c2b9d04f7a35ull};
  static constexpr rules::Kind kKind = rules::Kind::kAh;
  static constexpr const char* kWhat = "address handle";
  static constexpr const char* kMadeBy = "pd.createAh()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::ah_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Ah> ah, Napi::Object pd);

  using ProviderWrap::ProviderWrap;
  ~AhWrap() override { CloseQuietly(); }
};

// An address vector from its JS form { portNum, dlid, sl, dgid, sgidIndex,
// hopLimit, trafficClass, flowLabel } (a dgid makes it global). Reads every
// field once; its getters may run any JS, so call it before taking natives.
AddressVector ReadAddressVector(Napi::Env env, Napi::Value v);

}  // namespace rxv
