// CmChannel: a CM event channel (librdmacm's or the soft CM's), watched by
// the one Poller (poller.h). Each wakeup reads what is pending (every event
// already copied and acked by the provider) and makes one call,
// owner.handleCmEvents(events).
#pragma once

#include <napi.h>

#include <memory>
#include <set>

#include "cm/cm_provider.h"
#include "wrap/poller.h"
#include "wrap/wrap.h"

namespace rxv {

class CmIdWrap;

class CmChannelWrap : public ProviderWrap<CmChannelWrap, cm::Channel> {
 public:
  static constexpr const char* kClassName = "CmChannel";
  static constexpr napi_type_tag kTypeTag = {0x5c1d7e0a93b24f61ull, 0xb7e2c4d90f3a8e15ull};
  static constexpr rules::Kind kKind = rules::Kind::kCmChannel;
  static constexpr const char* kWhat = "CM event channel";
  static constexpr const char* kMadeBy = "createCmChannel()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::cm_channel_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, cm::CmProvider& provider, std::unique_ptr<cm::Channel> ch);

  using ProviderWrap::ProviderWrap;
  ~CmChannelWrap() override { CloseQuietly(); }

  cm::CmProvider* provider() const { return provider_; }
  void AddId(CmIdWrap* id) { ids_.insert(id); }
  void RemoveId(CmIdWrap* id) { ids_.erase(id); }

 private:
  friend ProviderWrap;
  // A channel without ids: its destructor releases it.
  static void Discard(cm::Channel* raw) { delete raw; }
  // EBUSY while ids use it; at teardown or GC the ids left go first (ids
  // before their channel).
  void BeforeDestroy(bool force);
  Poller* watcher() { return &poller_; }

  Napi::Value ProviderName(const Napi::CallbackInfo& info);
  Napi::Value Fd(const Napi::CallbackInfo& info);
  Napi::Value SetOwner(const Napi::CallbackInfo& info);
  Napi::Value Watch(const Napi::CallbackInfo& info);
  Napi::Value RefJs(const Napi::CallbackInfo& info);
  Napi::Value UnrefJs(const Napi::CallbackInfo& info);
  Napi::Value ReadEvents(const Napi::CallbackInfo& info);
  Napi::Value CreateId(const Napi::CallbackInfo& info);

  // Reads up to `budget` events into a JS array (possibly empty).
  Napi::Array ReadBatch(Napi::Env env, uint32_t budget);
  Napi::Value EventValue(Napi::Env env, cm::Event& ev);
  // One wakeup's reading (Poller::Read).
  void Read(napi_env env, Poller::Wakeup& out);
  void ApplyRef() { poller_.KeepAlive(poller_.held() && want_ref_); }

  cm::CmProvider* provider_ = nullptr;
  std::set<CmIdWrap*> ids_;
  // Wakeups go to owner.handleCmEvents(events): weak, held while watching.
  Poller poller_{addon_, "CM event channel", "rx-verbs:cm"};
  bool want_ref_ = true;
};

}  // namespace rxv
