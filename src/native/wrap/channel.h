// CompletionChannel: the channel fd, watched by a Poller (poller.h). Each
// wakeup reads events until EAGAIN (or the per-wakeup budget), services
// fast-path CQs natively, and makes one call into JS.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "provider/provider.h"
#include "util/batch_slab.h"
#include "wrap/poller.h"
#include "wrap/wrap.h"

namespace rxv {

class CqWrap;

class ChannelWrap : public ProviderWrap<ChannelWrap, Channel> {
 public:
  static constexpr const char* kClassName = "CompletionChannel";
  static constexpr napi_type_tag kTypeTag = {0x4965b4abc4ecbf8eull, 0x41f831d5310d522eull};
  static constexpr rules::Kind kKind = rules::Kind::kChannel;
  static constexpr const char* kWhat = "completion channel";
  static constexpr const char* kMadeBy = "context.createCompChannel()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::channel_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Channel> ch,
                          Napi::Object context);

  using ProviderWrap::ProviderWrap;
  ~ChannelWrap() override { CloseQuietly(); }

  Napi::Value context_object() { return GetHidden(Value(), kParentKey); }
  void AddCq(CqWrap* cq) { cqs_.insert(cq); }
  void RemoveCq(CqWrap* cq) { cqs_.erase(cq); }

 private:
  friend ProviderWrap;
  void BeforeDestroy(bool force);
  Poller* watcher() { return &poller_; }
  // CQs left when the channel goes at teardown or GC must not point at it.
  void Released();

  Napi::Value Fd(const Napi::CallbackInfo& info);
  Napi::Value TryGetEvent(const Napi::CallbackInfo& info);
  Napi::Value SetOwner(const Napi::CallbackInfo& info);
  Napi::Value Watch(const Napi::CallbackInfo& info);
  Napi::Value Watching(const Napi::CallbackInfo& info);
  Napi::Value RefJs(const Napi::CallbackInfo& info);
  Napi::Value UnrefJs(const Napi::CallbackInfo& info);
  Napi::Value HasRef(const Napi::CallbackInfo& info);
  Napi::Value Budget(const Napi::CallbackInfo& info);
  void SetBudget(const Napi::CallbackInfo& info, const Napi::Value& v);
  Napi::Value Wakeups(const Napi::CallbackInfo& info);

  // One wakeup's reading (Poller::Read).
  void Read(napi_env env, Poller::Wakeup& out);
  // Reads one event; fast-path events are counted and queued for service.
  // Returns the CQ of an explicit event, or nullptr when none is left.
  CqWrap* ReadOne(bool* got_any);
  // Services queued fast-path CQs into the last kFastArgs arguments of a
  // wakeup: four parallel arrays, the CQs and their results (a slab, or an
  // Error), the byte offsets and the counts of the batches (0 for an
  // Error); or the CQ, its result and two numbers when only one had
  // anything. False when none had anything. Raw Node-API (see
  // util/deliver.h).
  static constexpr size_t kFastArgs = 4;
  bool ServiceFast(napi_env env, napi_value* out);
  void ApplyRef();

  std::set<CqWrap*> cqs_;
  // Wakeups go to the owner's handleWakeup(events, fastCqs, fastResults,
  // byteOffsets, counts). The owner is weak,
  // except while watching (held): a subscription then owns the channel.
  Poller poller_{addon_, "completion channel", "rx-verbs:channel"};
  bool want_ref_ = true;
  uint32_t budget_ = 1024;
  std::vector<CqWrap*> explicit_;  // reused across wakeups
  std::vector<CqWrap*> fast_;
  std::vector<std::pair<napi_value, SlabBatch>> served_;  // ServiceFast's, reused
};

}  // namespace rxv
