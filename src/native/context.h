// Context: an open device (ibv_context). Also watches the context's async
// event fd, acking every event it reads before handing it to JS.
#pragma once

#include <napi.h>

#include <memory>

#include "provider/provider.h"
#include "util/uv_poll_handle.h"
#include "util/wrap.h"

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
  Napi::Value Inject(const Napi::CallbackInfo& info);
  Napi::Value CloseJs(const Napi::CallbackInfo& info);

  Napi::Array DrainAsync(Napi::Env env);
  void OnAsyncReadable();

  std::unique_ptr<Context> ctx_;
  UvPoll async_poll_;
  // The JS object whose handleAsync(events) receives async events (weak:
  // async events alone never keep a context alive).
  Napi::ObjectReference owner_;
  std::unique_ptr<Napi::AsyncContext> async_ctx_;
};

}  // namespace rxv
