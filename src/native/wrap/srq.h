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

class SrqWrap : public TaggedWrap<SrqWrap>, public Lifetime {
 public:
  static constexpr const char* kClassName = "Srq";
  static constexpr napi_type_tag kTypeTag = {0x3b7e0c5a91d24f68ull, 0xa4c19e2f60d87b35ull};
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Srq> srq, Napi::Object pd, PdWrap* pdw);

  explicit SrqWrap(const Napi::CallbackInfo& info);
  ~SrqWrap() override { CloseQuietly(); }
  SrqWrap(const SrqWrap&) = delete;
  SrqWrap& operator=(const SrqWrap&) = delete;

  void Close(bool force) override;
  Srq* Checked(Napi::Env env, const char* verb) const {
    ThrowIfClosed(env, verb);
    return srq_.get();
  }
  PdWrap* pdw() const { return pdw_; }

 private:
  const char* kind() const override { return "shared receive queue"; }
  Napi::Value Query(const Napi::CallbackInfo& info);
  Napi::Value Arm(const Napi::CallbackInfo& info);
  Napi::Value PostRecv(const Napi::CallbackInfo& info);
  Napi::Value Closed(const Napi::CallbackInfo& info);
  Napi::Value CloseJs(const Napi::CallbackInfo& info);

  std::unique_ptr<Srq> srq_;
  PdWrap* pdw_ = nullptr;
  std::vector<RecvWr> recv_wrs_;  // reused between posts
};

}  // namespace rxv
