#include "channel.h"

#include "cq.h"
#include "rules/refusals.h"


namespace rxv {

Napi::Function ChannelWrap::Init(Napi::Env env) {
  return DefineClass(
      env, kClassName,
      {
          InstanceAccessor<&ChannelWrap::Fd>("fd"),
          InstanceAccessor<&ChannelWrap::Closed>("closed"),
          InstanceAccessor<&ChannelWrap::Watching>("watching"),
          InstanceAccessor<&ChannelWrap::HasRef>("hasRef"),
          InstanceAccessor<&ChannelWrap::Budget, &ChannelWrap::SetBudget>("budget"),
          InstanceAccessor<&ChannelWrap::Wakeups>("wakeups"),
          InstanceMethod<&ChannelWrap::TryGetEvent>("tryGetEvent"),
          InstanceMethod<&ChannelWrap::SetOwner>("setOwner"),
          InstanceMethod<&ChannelWrap::Watch>("watch"),
          InstanceMethod<&ChannelWrap::RefJs>("ref"),
          InstanceMethod<&ChannelWrap::UnrefJs>("unref"),
          InstanceMethod<&ChannelWrap::CloseJs>("close"),
      });
}

Napi::Object ChannelWrap::New(Napi::Env env, std::unique_ptr<Channel> ch,
                              Napi::Object context) {
  Channel* raw = ch.release();
  Napi::Object o;
  try {
    o = Addon::Get(env)->channel_ctor.New({MakeToken(env, raw)});
  } catch (...) {
    try { raw->destroy(); } catch (...) {}
    delete raw;
    throw;
  }
  SetHidden(o, kParentKey, context);
  return o;
}

ChannelWrap::ChannelWrap(const Napi::CallbackInfo& info)
    : TaggedWrap<ChannelWrap>(info),
      Lifetime(info.Env()),
      poller_(addon_, "completion channel", "rx-verbs:channel") {
  Channel* raw = TakeToken<Channel>(info);
  if (!raw) {
    BeginClose();
    throw Napi::TypeError::New(
        info.Env(),
        "CompletionChannel cannot be constructed directly: use context.createCompChannel()");
  }
  ch_.reset(raw);
  ch_->user = this;
}

void ChannelWrap::Close(bool force) {
  if (closed()) return;
  if (!force) rules::RefuseBusy(rules::Kind::kChannel, rules::Users::Of(rules::Kind::kCq, cqs_.size()));
  // The fd dies with the channel: stop reading it first, and read again if
  // the channel refuses to go.
  bool was_reading = poller_.Pause();
  try {
    ch_->destroy();
  } catch (const VerbsError&) {
    if (!force) {
      if (was_reading) poller_.Resume();
      throw;
    }
  }
  BeginClose();
  poller_.Close();
  DetachCqs();
  ch_.reset();
}

// CQs left when the channel goes at teardown or GC must not point at it.
void ChannelWrap::DetachCqs() {
  for (CqWrap* cq : cqs_) cq->DetachChannel();
  cqs_.clear();
}

Napi::Value ChannelWrap::CloseJs(const Napi::CallbackInfo& info) {
  Guard(info.Env(), [&] { Close(false); });
  return info.Env().Undefined();
}

Napi::Value ChannelWrap::Closed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), closed());
}

Napi::Value ChannelWrap::Fd(const Napi::CallbackInfo& info) {
  if (closed()) return Napi::Number::New(info.Env(), -1);
  return Napi::Number::New(info.Env(), ch_->fd());
}

Napi::Value ChannelWrap::Budget(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), budget_);
}

void ChannelWrap::SetBudget(const Napi::CallbackInfo& info, const Napi::Value& v) {
  budget_ = ValueU32(info.Env(), v, "budget", 1, 1u << 24);
}

Napi::Value ChannelWrap::Wakeups(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("total", static_cast<double>(poller_.wakeups()));
  o.Set("spurious", static_cast<double>(poller_.spurious()));
  return o;
}

// The JS object of a CQ, or nullptr when the GC has collected it (its
// finalizer, which acks its events and unhooks it, has not run yet): its
// events are left to that finalizer, and the rest of the wakeup goes on.
static napi_value LiveWrapper(napi_env env, CqWrap& w) {
  napi_value v = nullptr;
  if (napi_get_reference_value(env, static_cast<napi_ref>(w), &v) != napi_ok) return nullptr;
  return v;
}

CqWrap* ChannelWrap::ReadOne(bool* got_any) {
  for (;;) {
    Cq* cq = nullptr;
    if (!ch_->get_event(&cq)) return nullptr;
    *got_any = true;
    auto* w = cq ? static_cast<CqWrap*>(cq->user) : nullptr;
    if (!w) continue;  // its CQ is being released at teardown
    w->CountEvent();
    if (!w->fast_path()) return w;
    w->AckBatched();
    if (!w->queued_for_service) {
      w->queued_for_service = true;
      fast_.push_back(w);
    }
    return w;
  }
}

bool ChannelWrap::ServiceFast(napi_env env, napi_value* cqs, napi_value* results) {
  if (fast_.empty()) return false;
  std::vector<CqWrap*> todo;
  todo.swap(fast_);
  // (CQ, result) pairs; values live in the wakeup's handle scope.
  served_.clear();
  for (CqWrap* w : todo) {
    w->queued_for_service = false;
    if (w->closed()) continue;
    napi_value cq = LiveWrapper(env, *w);
    if (!cq) continue;
    napi_value r = w->Service(env);
    if (r) served_.push_back({cq, r});
  }
  todo.clear();
  fast_.swap(todo);  // keep the capacity
  if (served_.empty()) return false;
  if (served_.size() == 1) {
    // The common wakeup: one CQ on the channel had completions. Handing the
    // pair over as is spares two arrays per wakeup.
    *cqs = served_[0].first;
    *results = served_[0].second;
    return true;
  }
  const size_t k = served_.size();
  bool ok = napi_create_array_with_length(env, k, cqs) == napi_ok &&
            napi_create_array_with_length(env, k, results) == napi_ok;
  for (size_t i = 0; ok && i < k; i++) {
    ok = napi_set_element(env, *cqs, uint32_t(i), served_[i].first) == napi_ok &&
         napi_set_element(env, *results, uint32_t(i), served_[i].second) == napi_ok;
  }
  return ok;
}

// tryGetEvent(): the non-blocking ibv_get_cq_event. Returns the CQ of the
// next explicit event, or null. Fast-path events met on the way are consumed
// as the watcher would (ack, re-arm, poll) and delivered to the wakeup
// callback synchronously, so no event is lost to either side.
Napi::Value ChannelWrap::TryGetEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Checked(env, "ibv_get_cq_event");
  CqWrap* found = nullptr;
  Guard(env, [&] {
    for (uint32_t i = 0; i < budget_; i++) {
      bool got = false;
      CqWrap* w = ReadOne(&got);
      if (!got) break;
      if (w && !w->fast_path()) {
        found = w;
        break;
      }
    }
  });
  napi_value argv[3] = {env.Null(), nullptr, nullptr};
  if (ServiceFast(env, &argv[1], &argv[2])) poller_.CallNow(env, 3, argv);
  return found ? Napi::Value(found->Value()) : env.Null();
}

// setOwner(owner): wakeups go to owner.handleWakeup(events: Cq[] | null,
// fastCqs, fastResults), one call per wakeup: the fast-path CQs serviced and
// their results (Uint8Array | Error), as parallel arrays (fastResults[i] is
// fastCqs[i]'s), or the one CQ and its result as they are, or both null.
Napi::Value ChannelWrap::SetOwner(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function handler = Poller::HandlerOf(env, info[0], "handleWakeup");
  Checked(env, "setOwner");
  poller_.SetOwner(env, info[0].As<Napi::Object>(), handler);
  return env.Undefined();
}

void ChannelWrap::ApplyRef() { poller_.KeepAlive(poller_.held() && want_ref_); }

// watch(on): start/stop reading the fd. The handle keeps the process alive
// only while watching (something subscribed or armed) and not unref()'d.
Napi::Value ChannelWrap::Watch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool on = ArgBool(info, 0, "on", true);
  Channel* ch = Checked(env, "watch");
  if (on) {
    if (!poller_.has_owner()) {
      throw ErrnoError(env, EINVAL, "watch", "set an owner (setOwner) before watching");
    }
    poller_.Start(env, ch->fd(), [this](napi_env e, Poller::Wakeup& out) { Read(e, out); });
  } else {
    poller_.Stop();
  }
  poller_.Hold(on);
  ApplyRef();
  return env.Undefined();
}

Napi::Value ChannelWrap::Watching(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), poller_.held());
}

Napi::Value ChannelWrap::RefJs(const Napi::CallbackInfo& info) {
  want_ref_ = true;
  ApplyRef();
  return Value();
}

Napi::Value ChannelWrap::UnrefJs(const Napi::CallbackInfo& info) {
  want_ref_ = false;
  ApplyRef();
  return Value();
}

Napi::Value ChannelWrap::HasRef(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), want_ref_);
}

void ChannelWrap::Read(napi_env env, Poller::Wakeup& out) {
  if (closed()) return;
  explicit_.clear();
  try {
    // The budget bounds one wakeup; the fd stays readable for the next.
    for (uint32_t i = 0; i < budget_; i++) {
      bool got = false;
      CqWrap* w = ReadOne(&got);
      if (!got) break;
      out.read_any = true;
      if (w && !w->fast_path()) explicit_.push_back(w);
    }
  } catch (const VerbsError& e) {
    poller_.Failed(e);  // what was read still goes out
  }
  if (!out.read_any) return;
  napi_value events, fast_cqs = nullptr, fast_results = nullptr;
  napi_get_null(env, &events);
  bool ok = true;
  uint32_t n_explicit = 0;
  if (!explicit_.empty()) {
    ok = napi_create_array(env, &events) == napi_ok;
    for (size_t i = 0; ok && i < explicit_.size(); i++) {
      napi_value cq = LiveWrapper(env, *explicit_[i]);
      if (cq) ok = napi_set_element(env, events, n_explicit++, cq) == napi_ok;
    }
    if (n_explicit == 0) napi_get_null(env, &events);
  }
  bool fast = ok && ServiceFast(env, &fast_cqs, &fast_results);
  if (!ok || (!fast && n_explicit == 0)) return;
  if (!fast) {
    napi_get_null(env, &fast_cqs);
    napi_get_null(env, &fast_results);
  }
  out.argc = 3;
  out.argv[0] = events;
  out.argv[1] = fast_cqs;
  out.argv[2] = fast_results;
}

}  // namespace rxv
