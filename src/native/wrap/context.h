// Context: an open device (ibv_context). Its async event fd is watched by a
// Poller (poller.h); every event is acked as it is read, before JS sees it.
#pragma once

#include <napi.h>

#include <memory>

#include "provider/provider.h"
#include "wrap/poller.h"
#include "wrap/wrap.h"

namespace rxv {

class ContextWrap : public ProviderWrap<ContextWrap, Context> {
 public:
  static constexpr const char* kClassName = "Context";
  static constexpr napi_type_tag kTypeTag = {0xeaa8221c56420e6full, 0xea88f76aeb0dd4b2ull};
  static constexpr rules::Kind kKind = rules::Kind::kContext;
  static constexpr const char* kWhat = "context";
  static constexpr const char* kMadeBy = "openDevice()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::context_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Context> ctx);

  using ProviderWrap::ProviderWrap;
  ~ContextWrap() override { CloseQuietly(); }

 private:
  friend ProviderWrap;
  // A context no wrapper took is only deleted (its destructor releases it).
  static void Discard(Context* raw) { delete raw; }
  // The fd dies with the context: it is not read while the context goes,
  // and read again if the context refuses to (EBUSY while children remain).
  Poller* watcher() { return &async_poller_; }

  Napi::Value DeviceName(const Napi::CallbackInfo& info);
  Napi::Value ProviderName(const Napi::CallbackInfo& info);
  Napi::Value QueryDevice(const Napi::CallbackInfo& info);
  Napi::Value QueryPort(const Napi::CallbackInfo& info);
  Napi::Value QueryGid(const Napi::CallbackInfo& info);
  Napi::Value AllocPd(const Napi::CallbackInfo& info);
  Napi::Value CreateCompChannel(const Napi::CallbackInfo& info);
  Napi::Value CreateCq(const Napi::CallbackInfo& info);
  Napi::Value WatchAsync(const Napi::CallbackInfo& info);
  Napi::Value ReadAsyncEvents(const Napi::CallbackInfo& info);
  Napi::Value FaultsJs(const Napi::CallbackInfo& info);

  Napi::Array DrainAsync(Napi::Env env);
  // One wakeup's reading (Poller::Read).
  void ReadAsync(napi_env env, Poller::Wakeup& out);

  // Async events go to the owner's handleAsync(events). Never held: async
  // events alone never keep a context (or the process) alive.
  Poller async_poller_{addon_, "async events", "rx-verbs:async"};
};

}  // namespace rxv
