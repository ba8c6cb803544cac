#include "wrap/cm_channel.h"

#include <vector>

#include "rules/refusals.h"
#include "wrap/cm_id.h"

namespace rxv {

namespace {
// Events read per wakeup (and per readEvents call): a storm of connection
// requests cannot starve the loop; the fd stays readable for the rest.
constexpr uint32_t kBudget = 256;

// The JS object of a wrapper, or an empty one when the GC collected it (its
// finalizer has not run yet).
Napi::Object LiveObject(napi_env env, CmIdWrap* w) {
  if (w == nullptr) return Napi::Object();
  napi_value v = nullptr;
  if (napi_get_reference_value(env, static_cast<napi_ref>(*w), &v) != napi_ok || v == nullptr) {
    return Napi::Object();
  }
  return Napi::Object(env, v);
}
}  // namespace

Napi::Function CmChannelWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&CmChannelWrap::ProviderName>("provider"),
                         InstanceAccessor<&CmChannelWrap::Fd>("fd"),
                         InstanceAccessor<&CmChannelWrap::Closed>("closed"),
                         InstanceMethod<&CmChannelWrap::SetOwner>("setOwner"),
                         InstanceMethod<&CmChannelWrap::Watch>("watch"),
                         InstanceMethod<&CmChannelWrap::RefJs>("ref"),
                         InstanceMethod<&CmChannelWrap::UnrefJs>("unref"),
                         InstanceMethod<&CmChannelWrap::ReadEvents>("readEvents"),
                         InstanceMethod<&CmChannelWrap::CreateId>("createId"),
                         InstanceMethod<&CmChannelWrap::CloseJs>("close"),
                     });
}

Napi::Object CmChannelWrap::New(Napi::Env env, cm::CmProvider& provider, std::unique_ptr<cm::Channel> ch) {
  Napi::Object o = Wrap(env, std::move(ch));
  Unwrap(o)->provider_ = &provider;
  return o;
}

void CmChannelWrap::BeforeDestroy(bool force) {
  if (!force) rules::RefuseBusy(rules::Kind::kCmChannel, rules::Users::Of(rules::Kind::kCmId, ids_.size()));
  for (CmIdWrap* id : std::vector<CmIdWrap*>(ids_.begin(), ids_.end())) id->Close(true);
  ids_.clear();
}

Napi::Value CmChannelWrap::ProviderName(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), provider_ ? provider_->name() : "");
}

Napi::Value CmChannelWrap::Fd(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), closed() ? -1 : native()->fd());
}

// setOwner(owner): wakeups go to owner.handleCmEvents(events).
Napi::Value CmChannelWrap::SetOwner(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function handler = Poller::HandlerOf(env, info[0], "handleCmEvents");
  Checked(env, "setOwner");
  poller_.SetOwner(env, info[0].As<Napi::Object>(), handler);
  return env.Undefined();
}

// watch(on): reads the fd while on. Only then can it keep the process
// alive, and only while not unref()'d.
Napi::Value CmChannelWrap::Watch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool on = ArgBool(info, 0, "on", true);
  cm::Channel* ch = Checked(env, "watch");
  if (on) {
    if (!poller_.has_owner()) throw ErrnoError(env, EINVAL, "watch", "set an owner (setOwner) before watching");
    poller_.Start(env, ch->fd(), [this](napi_env e, Poller::Wakeup& out) { Read(e, out); });
  } else {
    poller_.Stop();
  }
  poller_.Hold(on);
  ApplyRef();
  return env.Undefined();
}

Napi::Value CmChannelWrap::RefJs(const Napi::CallbackInfo& info) {
  want_ref_ = true;
  ApplyRef();
  return Value();
}

Napi::Value CmChannelWrap::UnrefJs(const Napi::CallbackInfo& info) {
  want_ref_ = false;
  ApplyRef();
  return Value();
}

// createId(portSpace = TCP)
Napi::Value CmChannelWrap::CreateId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t ps = info[0].IsUndefined() ? cm::port_space::TCP : ArgU32(info, 0, "portSpace");
  if (ps != cm::port_space::TCP && ps != cm::port_space::UDP) {
    throw Napi::RangeError::New(env, "portSpace must be TCP (0x0106) or UDP (0x0111)");
  }
  cm::Channel* ch = Checked(env, "rdma_create_id");
  auto id = Guard(env, [&] { return provider_->create_id(ch, ps); });
  return CmIdWrap::New(env, std::move(id), Value());
}

Napi::Value CmChannelWrap::ReadEvents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Checked(env, "rdma_get_cm_event");
  return ReadBatch(env, kBudget);
}

// One event as JS sees it; undefined when no one is left to tell (its id's
// wrapper was collected): a request is then refused by closing its new id.
Napi::Value CmChannelWrap::EventValue(Napi::Env env, cm::Event& ev) {
  Napi::Object id, listener;
  if (ev.type == cm::event_type::CONNECT_REQUEST) {
    listener = LiveObject(env, ev.listener ? static_cast<CmIdWrap*>(ev.listener->user) : nullptr);
    if (listener.IsEmpty() || !ev.new_id) return env.Undefined();  // the new id dies with the event
    id = CmIdWrap::New(env, std::move(ev.new_id), Value());
  } else {
    id = LiveObject(env, ev.id ? static_cast<CmIdWrap*>(ev.id->user) : nullptr);
    if (id.IsEmpty()) return env.Undefined();
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", ev.type);
  o.Set("status", ev.status);
  o.Set("id", id);
  if (!listener.IsEmpty()) o.Set("listener", listener);
  const std::vector<uint8_t>& pd = ev.param.private_data;
  o.Set("privateData", Napi::Buffer<uint8_t>::Copy(env, pd.data(), pd.size()));
  o.Set("responderResources", ev.param.responder_resources);
  o.Set("initiatorDepth", ev.param.initiator_depth);
  o.Set("retryCount", ev.param.retry_count);
  o.Set("rnrRetryCount", ev.param.rnr_retry_count);
  o.Set("qpNum", ev.param.qp_num);
  o.Set("srq", ev.param.srq);
  return o;
}

Napi::Array CmChannelWrap::ReadBatch(Napi::Env env, uint32_t budget) {
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  for (uint32_t i = 0; i < budget && !closed(); i++) {
    cm::Event ev;
    if (!Guard(env, [&] { return native()->get_event(&ev); })) break;
    CmIdWrap::StepOutcome step;
    if (ev.type != cm::event_type::CONNECT_REQUEST && ev.id && ev.id->user) {
      step = static_cast<CmIdWrap*>(ev.id->user)->TakeStep(ev);
      if (step.swallow) continue;
    }
    Napi::Value v = EventValue(env, ev);
    if (v.IsUndefined()) continue;
    if (step.established) v.As<Napi::Object>().Set("established", true);
    if (step.error) v.As<Napi::Object>().Set("error", FromVerbsError(env, *step.error).Value());
    out.Set(n++, v);
  }
  return out;
}

void CmChannelWrap::Read(napi_env env, Poller::Wakeup& out) {
  if (closed()) return;
  Napi::Array events;
  try {
    events = ReadBatch(Napi::Env(env), kBudget);
  } catch (const Napi::Error& e) {
    VerbsError v(EIO, "rdma_get_cm_event", e.Message());
    poller_.Failed(v);
    return;
  }
  if (events.Length() == 0) return;  // spurious readiness, or nothing for JS
  out.read_any = true;
  out.argc = 1;
  out.argv[0] = events;
}

}  // namespace rxv
