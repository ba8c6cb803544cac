// Context: an open device (ibv_context). Its async event fd is watched by a
// Poller (poller.h); every event is acked as it is read, before JS sees it.
#pragma once

#include <napi.h>

#include <memory>

#include "provider/provider.h"
#include "wrap/poller.h"
#include "wrap/wrap.h"

namespace rxv {

class ContextWrap : public TaggedWrap<ContextWrap>, public Lifetime {
 public:
  static constexpr const char* kClassName = "Context";
  static constexpr napi_type_tag kTypeTag = {0xeaa8221c56420e6full, 0xea88f76aeb0dd4b2ull};
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Context> ctx);

  explicit ContextWrap(const Napi::CallbackInfo& info);
  ~ContextWrap() override { CloseQuietly(); }
  ContextWrap(const ContextWrap&) = delete;
  ContextWrap& operator=(const ContextWrap&) = delete;

  Context* ctx() const { return ctx_.get(); }
  Context* Checked(Napi::Env env, const char* verb) const {
    ThrowIfClosed(env, verb);
    return ctx_.get();
  }
  void Close(bool force) override;

 private:
  const char* kind() const override { return "context"; }
  Napi::Value DeviceName(const Napi::CallbackInfo& info);
  Napi::Value ProviderName(const Napi::CallbackInfo& info);
  Napi::Value Closed(const Napi::CallbackInfo& info);
  Napi::Value QueryDevice(const Napi::CallbackInfo& info);
  Napi::Value QueryPort(const Napi::CallbackInfo& info);
  Napi::Value QueryGid(const Napi::CallbackInfo& info);
  Napi::Value AllocPd(const Napi::CallbackInfo& info);
  Napi::Value CreateCompChannel(const Napi::CallbackInfo& info);
  Napi::Value CreateCq(const Napi::CallbackInfo& info);
  Napi::Value WatchAsync(const Napi::CallbackInfo& info);
  Napi::Value ReadAsyncEvents(const Napi::CallbackInfo& info);
  Napi::Value FaultsJs(const Napi::CallbackInfo& info);
  Napi::Value CloseJs(const Napi::CallbackInfo& info);

  Napi::Array DrainAsync(Napi::Env env);
  // One wakeup's reading (Poller::Read).
  void ReadAsync(napi_env env, Poller::Wakeup& out);

  std::unique_ptr<Context> ctx_;
  // Async events go to the owner's handleAsync(events). Never held: async
  // events alone never keep a context (or the process) alive.
  Poller async_poller_;
};

}  // namespace rxv
