// CmId: an rdma_cm_id (librdmacm's or the soft CM's). No QP is ever
// attached: the caller makes one on openContext()'s device and moves it
// with modifyQp (cm_provider.h). Closing never blocks: the provider acked
// every event when it was read.
#pragma once

#include <napi.h>

#include <memory>
#include <optional>

#include "cm/cm_provider.h"
#include "wrap/wrap.h"

namespace rxv {

class CmChannelWrap;

class CmIdWrap : public ProviderWrap<CmIdWrap, cm::Id> {
 public:
  static constexpr const char* kClassName = "CmId";
  static constexpr napi_type_tag kTypeTag = {0x2a8f61c4d7e05b93ull, 0x91c3e7f2a54b0d68ull};
  static constexpr rules::Kind kKind = rules::Kind::kCmId;
  static constexpr const char* kWhat = "CM id";
  static constexpr const char* kMadeBy = "cmChannel.createId()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::cm_id_ctor;
  static Napi::Function Init(Napi::Env env);
  // `channel` is the JS object of the channel the id's events go to.
  static Napi::Object New(Napi::Env env, std::unique_ptr<cm::Id> id, Napi::Object channel);

  using ProviderWrap::ProviderWrap;
  ~CmIdWrap() override { CloseQuietly(); }

  // What the channel's reader did for an event of this id before JS sees it.
  struct StepOutcome {
    bool swallow = false;      // the step replaces the event (JS sees the next one)
    bool established = false;  // CONNECT_RESPONSE answered: QP in RTS, rdma_establish sent
    std::optional<VerbsError> error;  // the step failed: the event carries why
  };
  // The steps a connect asked for (resolveAddr's routeTimeoutMs, connect's
  // qp), taken as the event arrives: no trip through JS between the CM's
  // answer and our next request, as librdmacm does for ids that own a QP.
  StepOutcome TakeStep(cm::Event& ev);

 private:
  friend ProviderWrap;
  // Steps not taken yet are dropped, and the channel forgets the id.
  void Released();
  void SetChannel(CmChannelWrap* chw, Napi::Object channel);
  Napi::Value Channel(const Napi::CallbackInfo& info);
  Napi::Value LocalAddress(const Napi::CallbackInfo& info);
  Napi::Value PeerAddress(const Napi::CallbackInfo& info);
  Napi::Value Bind(const Napi::CallbackInfo& info);
  Napi::Value Listen(const Napi::CallbackInfo& info);
  Napi::Value ResolveAddr(const Napi::CallbackInfo& info);
  Napi::Value ResolveRoute(const Napi::CallbackInfo& info);
  Napi::Value OpenContext(const Napi::CallbackInfo& info);
  Napi::Value ServesContext(const Napi::CallbackInfo& info);
  Napi::Value ModifyQp(const Napi::CallbackInfo& info);
  Napi::Value Connect(const Napi::CallbackInfo& info);
  Napi::Value Accept(const Napi::CallbackInfo& info);
  Napi::Value Reject(const Napi::CallbackInfo& info);
  Napi::Value Establish(const Napi::CallbackInfo& info);
  Napi::Value Disconnect(const Napi::CallbackInfo& info);
  Napi::Value Migrate(const Napi::CallbackInfo& info);

  CmChannelWrap* chw_ = nullptr;  // cleared when either side closes
  int route_ms_ = -1;             // >= 0: resolve the route on ADDR_RESOLVED
  Napi::ObjectReference establish_qp_;  // set: move it to RTS and establish on CONNECT_RESPONSE
  int establish_rnr_ = -1;              // the RNR retry count that QP gets (connect's own)
};

}  // namespace rxv
