// SrqWrap: a shared receive queue. Receives arrive packed like a QP's
// (wr_codec.h) and go through the same checks (qp.h, PostRecvsChecked).
#pragma once

#include <napi.h>

#include <memory>
#include <vector>

#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class PdWrap;

class SrqWrap : public ProviderWrap<SrqWrap, Srq> {
 public:
  static constexpr const char* kClassName = "Srq";
  static constexpr napi_type_tag kTypeTag = {0x3b7e0c5a91d24f68ull, 0xa4c19e2f60d87b35ull};
  static constexpr rules::Kind kKind = rules::Kind::kSrq;
  static constexpr const char* kWhat = "shared receive queue";
  static constexpr const char* kMadeBy = "pd.createSrq()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::srq_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Srq> srq, Napi::Object pd, PdWrap* pdw);

  using ProviderWrap::ProviderWrap;
  ~SrqWrap() override { CloseQuietly(); }

  PdWrap* pdw() const { return pdw_; }

 private:
  Napi::Value Query(const Napi::CallbackInfo& info);
  Napi::Value Arm(const Napi::CallbackInfo& info);
  Napi::Value PostRecv(const Napi::CallbackInfo& info);

  PdWrap* pdw_ = nullptr;
  std::vector<RecvWr> recv_wrs_;  // reused between posts
};

}  // namespace rxv
