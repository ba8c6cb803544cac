// Qp: an RC queue pair. Work requests arrive from JS packed in one buffer
// (see wr_codec.h), so posting N requests is one call and no per-WR objects.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <vector>

#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class PdWrap;

class QpWrap : public ProviderWrap<QpWrap, Qp> {
 public:
  static constexpr const char* kClassName = "Qp";
  static constexpr napi_type_tag kTypeTag = {0x9fd86e6a1dab3691ull, 0x695cbbde8c958d84ull};
  static constexpr rules::Kind kKind = rules::Kind::kQp;
  static constexpr const char* kWhat = "queue pair";
  static constexpr const char* kMadeBy = "pd.createQp()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::qp_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Qp> qp, Napi::Object pd,
                          PdWrap* pdw, Napi::Object send_cq, Napi::Object recv_cq);

  using ProviderWrap::ProviderWrap;
  ~QpWrap() override { CloseQuietly(); }

  void set_type(uint32_t type) { type_ = type; }

 private:
  Napi::Value QpNum(const Napi::CallbackInfo& info);
  Napi::Value State(const Napi::CallbackInfo& info);
  Napi::Value Cap(const Napi::CallbackInfo& info);
  Napi::Value Query(const Napi::CallbackInfo& info);
  Napi::Value Modify(const Napi::CallbackInfo& info);
  Napi::Value PostSend(const Napi::CallbackInfo& info);
  Napi::Value PostRecv(const Napi::CallbackInfo& info);

  PdWrap* pdw_ = nullptr;
  uint32_t qp_num_ = 0;
  uint32_t type_ = qp_type::RC;
  std::vector<SendWr> send_wrs_;  // reused between posts
  std::vector<RecvWr> recv_wrs_;
};

// Reads postRecv's (packed, count) arguments into `wrs` (RangeError when
// malformed); no JS runs. For every receiver of packed receive WRs.
void DecodeRecvArgs(const Napi::CallbackInfo& info, std::vector<RecvWr>* wrs, uint32_t* count);
// Posts wrs[0, count) through `post`, refusing (EFAULT, badWr) the first WR
// on memory whose JS buffer was detached, as QpWrap::PostRecv does.
void PostRecvsChecked(Napi::Env env, PdWrap* pdw, const std::vector<RecvWr>& wrs, size_t count,
                      const char* verb, const std::function<void(const RecvWr*, size_t, size_t*)>& post);

}  // namespace rxv
