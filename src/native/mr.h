// Mr: a registered memory region. Holds the JS buffer it covers, so the
// memory outlives the registration.
#pragma once

#include <napi.h>

#include <memory>

#include "provider/provider.h"
#include "util/wrap.h"

namespace rxv {

class PdWrap;

class MrWrap : public TaggedWrap<MrWrap>, public Lifetime {
 public:
  static constexpr const char* kClassName = "Mr";
  static constexpr napi_type_tag kTypeTag = {0xaf82a87e7ae6da81ull, 0x6c03644f9edbc369ull};
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Mr> mr, Napi::Object pd,
                          PdWrap* pdw, Napi::Object buffer);

  explicit MrWrap(const Napi::CallbackInfo& info);
  ~MrWrap() override { Close(true); }
  MrWrap(const MrWrap&) = delete;
  MrWrap& operator=(const MrWrap&) = delete;

  Mr* mr() const { return mr_.get(); }
  void DetachPd() { pdw_ = nullptr; }
  void Close(bool force) override;

 private:
  const char* kind() const override { return "memory region"; }
  Napi::Value Lkey(const Napi::CallbackInfo& info);
  Napi::Value Rkey(const Napi::CallbackInfo& info);
  Napi::Value Addr(const Napi::CallbackInfo& info);
  Napi::Value Length(const Napi::CallbackInfo& info);
  Napi::Value Access(const Napi::CallbackInfo& info);
  Napi::Value Closed(const Napi::CallbackInfo& info);
  Napi::Value CloseJs(const Napi::CallbackInfo& info);

  std::unique_ptr<Mr> mr_;
  // Persistent on purpose: the device may write into the memory until the
  // MR is destroyed, so it must not be collected first. (A leaf: it refers
  // to nothing of ours, so this creates no uncollectable cycle.)
  Napi::ObjectReference buffer_;
  PdWrap* pdw_ = nullptr;
  uint32_t lkey_ = 0;
};

}  // namespace rxv
