// Faults: a soft device's fault injection hooks as named methods, reached
// through context.faults. Every method reads all its arguments (a work
// completion's getters included) before it takes the context, CQ or channel;
// on a device without fault injection each fails with EOPNOTSUPP.
#pragma once

#include <napi.h>

#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class ContextWrap;

class FaultsWrap : public TaggedWrap<FaultsWrap> {
 public:
  static constexpr const char* kClassName = "Faults";
  static constexpr napi_type_tag kTypeTag = {0x5d3f8e1a2b7c4d60ull, 0x9a41c2e7f0b83d15ull};
  static Napi::Function Init(Napi::Env env);
  // The faults of the context `ctx` (whose JS object it keeps alive).
  static Napi::Object New(Napi::Env env, ContextWrap* ctx);

  explicit FaultsWrap(const Napi::CallbackInfo& info);

 private:
  // The device's hooks, or EOPNOTSUPP (and EBADF once the context is closed).
  Faults* Hooks(Napi::Env env);

  Napi::Value Overrun(const Napi::CallbackInfo& info);
  Napi::Value ErrorCompletion(const Napi::CallbackInfo& info);
  Napi::Value EmptyEvent(const Napi::CallbackInfo& info);
  Napi::Value CompletionBeforeArm(const Napi::CallbackInfo& info);
  Napi::Value SpuriousWakeup(const Napi::CallbackInfo& info);
  Napi::Value DelayUs(const Napi::CallbackInfo& info);
  Napi::Value DuplicateEvents(const Napi::CallbackInfo& info);
  Napi::Value DeviceFatal(const Napi::CallbackInfo& info);
  Napi::Value PortEvent(const Napi::CallbackInfo& info);

  ContextWrap* ctx_ = nullptr;
};

}  // namespace rxv
