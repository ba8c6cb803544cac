#include "wrap/channel.h"

#include "rules/refusals.h"
#include "wrap/cq.h"


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
  return Wrap(env, std::move(ch), context);
}

void ChannelWrap::BeforeDestroy(bool force) {
  if (!force) rules::RefuseBusy(rules::Kind::kChannel, rules::Users::Of(rules::Kind::kCq, cqs_.size()));
}

void ChannelWrap::Released() {
  for (CqWrap* cq : cqs_) cq->DetachChannel();
  cqs_.clear();
}

Napi::Value ChannelWrap::Fd(const Napi::CallbackInfo& info) {
  if (closed()) return Napi::Number::New(info.Env(), -1);
  return Napi::Number::New(info.Env(), native()->fd());
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
    if (!native()->get_event(&cq)) return nullptr;
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

bool ChannelWrap::ServiceFast(napi_env env, napi_value* out) {
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
    SlabBatch r = w->Service(env);
    if (r.value) served_.push_back({cq, r});
  }
  todo.clear();
  fast_.swap(todo);  // keep the capacity
  if (served_.empty()) return false;
  if (served_.size() == 1) {
    // The common wakeup: one CQ on the channel had completions. Handing the
    // values over as they are spares four arrays per wakeup.
    const SlabBatch& b = served_[0].second;
    out[0] = served_[0].first;
    out[1] = b.value;
    return napi_create_uint32(env, b.offset, &out[2]) == napi_ok &&
           napi_create_uint32(env, b.count, &out[3]) == napi_ok;
  }
  const size_t k = served_.size();
  bool ok = true;
  for (size_t a = 0; ok && a < kFastArgs; a++) ok = napi_create_array_with_length(env, k, &out[a]) == napi_ok;
  for (size_t i = 0; ok && i < k; i++) {
    const SlabBatch& b = served_[i].second;
    napi_value offset = nullptr, count = nullptr;
    ok = napi_create_uint32(env, b.offset, &offset) == napi_ok &&
         napi_create_uint32(env, b.count, &count) == napi_ok &&
         napi_set_element(env, out[0], uint32_t(i), served_[i].first) == napi_ok &&
         napi_set_element(env, out[1], uint32_t(i), b.value) == napi_ok &&
         napi_set_element(env, out[2], uint32_t(i), offset) == napi_ok &&
         napi_set_element(env, out[3], uint32_t(i), count) == napi_ok;
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
  napi_value argv[1 + kFastArgs] = {env.Null()};
  if (ServiceFast(env, &argv[1])) poller_.CallNow(env, 1 + kFastArgs, argv);
  return found ? Napi::Value(found->Value()) : env.Null();
}

// setOwner(owner): wakeups go to owner.handleWakeup(events: Cq[] | null,
// fastCqs, fastResults, byteOffsets, counts), one call per wakeup: the
// fast-path CQs serviced and their results (the slab ArrayBuffer holding
// counts[i] completions at byteOffsets[i], or an Error with count 0), as
// parallel arrays (fastResults[i] is fastCqs[i]'s), or the one CQ, its
// result and two numbers as they are, or all four null.
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
  napi_value events;
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
  bool fast = ok && ServiceFast(env, &out.argv[1]);
  if (!ok || (!fast && n_explicit == 0)) return;
  if (!fast) {
    for (size_t a = 1; a <= kFastArgs; a++) napi_get_null(env, &out.argv[a]);
  }
  out.argc = 1 + kFastArgs;
  out.argv[0] = events;
}

}  // namespace rxv
