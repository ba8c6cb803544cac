#include "wrap/cm_id.h"

#include "wrap/cm_channel.h"
#include "wrap/cm_js.h"
#include "wrap/context.h"
#include "wrap/qp.h"

namespace rxv {

Napi::Function CmIdWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&CmIdWrap::Closed>("closed"),
                         InstanceAccessor<&CmIdWrap::Channel>("channel"),
                         InstanceAccessor<&CmIdWrap::LocalAddress>("localAddress"),
                         InstanceAccessor<&CmIdWrap::PeerAddress>("peerAddress"),
                         InstanceMethod<&CmIdWrap::Bind>("bind"),
                         InstanceMethod<&CmIdWrap::Listen>("listen"),
                         InstanceMethod<&CmIdWrap::ResolveAddr>("resolveAddr"),
                         InstanceMethod<&CmIdWrap::ResolveRoute>("resolveRoute"),
                         InstanceMethod<&CmIdWrap::OpenContext>("openContext"),
                         InstanceMethod<&CmIdWrap::ServesContext>("servesContext"),
                         InstanceMethod<&CmIdWrap::ModifyQp>("modifyQp"),
                         InstanceMethod<&CmIdWrap::Connect>("connect"),
                         InstanceMethod<&CmIdWrap::Accept>("accept"),
                         InstanceMethod<&CmIdWrap::Reject>("reject"),
                         InstanceMethod<&CmIdWrap::Establish>("establish"),
                         InstanceMethod<&CmIdWrap::Disconnect>("disconnect"),
                         InstanceMethod<&CmIdWrap::Migrate>("migrate"),
                         InstanceMethod<&CmIdWrap::CloseJs>("close"),
                     });
}

Napi::Object CmIdWrap::New(Napi::Env env, std::unique_ptr<cm::Id> id, Napi::Object channel) {
  CmChannelWrap* chw = CmChannelWrap::Unwrap(channel);
  Napi::Object o = Wrap(env, std::move(id));
  CmIdWrap* w = Unwrap(o);
  // The channel is a parent: the id keeps it alive. Writable, because
  // migrate() moves the id to another channel.
  o.DefineProperty(Napi::PropertyDescriptor::Value(kParentKey, channel, napi_writable));
  w->chw_ = chw;
  chw->AddId(w);
  return o;
}

void CmIdWrap::Released() {
  route_ms_ = -1;
  if (!establish_qp_.IsEmpty()) establish_qp_.Reset();
  if (chw_) chw_->RemoveId(this);
  chw_ = nullptr;
}

Napi::Value CmIdWrap::Channel(const Napi::CallbackInfo& info) { return GetHidden(Value(), kParentKey); }

Napi::Value CmIdWrap::LocalAddress(const Napi::CallbackInfo& info) {
  if (closed()) return info.Env().Null();
  return cm::AddressValue(info.Env(), native()->local());
}

Napi::Value CmIdWrap::PeerAddress(const Napi::CallbackInfo& info) {
  if (closed()) return info.Env().Null();
  return cm::AddressValue(info.Env(), native()->peer());
}

Napi::Value CmIdWrap::Bind(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::SockAddr a = cm::ReadAddress(env, info[0], "addr");
  cm::Id* id = Checked(env, "rdma_bind_addr");
  Guard(env, [&] { id->bind(a); });
  return env.Undefined();
}

Napi::Value CmIdWrap::Listen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t backlog = ArgI32(info, 0, "backlog", 0, INT32_MAX);
  cm::Id* id = Checked(env, "rdma_listen");
  Guard(env, [&] { id->listen(backlog); });
  return env.Undefined();
}

// resolveAddr(dst, timeoutMs, src?, routeTimeoutMs?)
Napi::Value CmIdWrap::ResolveAddr(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::SockAddr dst = cm::ReadAddress(env, info[0], "dst");
  int timeout = cm::ReadTimeout(env, info[1], "timeoutMs");
  bool has_src = !info[2].IsUndefined() && !info[2].IsNull();
  cm::SockAddr src;
  if (has_src) src = cm::ReadAddress(env, info[2], "src");
  int route = info[3].IsUndefined() ? -1 : cm::ReadTimeout(env, info[3], "routeTimeoutMs");
  cm::Id* id = Checked(env, "rdma_resolve_addr");
  Guard(env, [&] { id->resolve_addr(has_src ? &src : nullptr, dst, timeout); });
  route_ms_ = route;
  return env.Undefined();
}

Napi::Value CmIdWrap::ResolveRoute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int timeout = cm::ReadTimeout(env, info[0], "timeoutMs");
  cm::Id* id = Checked(env, "rdma_resolve_route");
  Guard(env, [&] { id->resolve_route(timeout); });
  return env.Undefined();
}

Napi::Value CmIdWrap::OpenContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::Id* id = Checked(env, "rdma_cm_id.verbs");
  auto ctx = Guard(env, [&] { return id->open_context(); });
  return ContextWrap::New(env, std::move(ctx));
}

// servesContext(context): whether QPs made on it can serve this id.
Napi::Value CmIdWrap::ServesContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ContextWrap* cw = UnwrapArg<ContextWrap>(env, info[0], "context");
  cm::Id* id = Checked(env, "rdma_cm_id.verbs");
  Context* ctx = cw->Checked(env, "rdma_cm_id.verbs");
  return Napi::Boolean::New(env, Guard(env, [&] { return id->serves(ctx); }));
}

// modifyQp(qp, state, rnrRetry?): rnrRetry (0-7) is this QP's own at RTS.
Napi::Value CmIdWrap::ModifyQp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  QpWrap* qpw = UnwrapArg<QpWrap>(env, info[0], "qp");
  uint32_t state = ArgU32(info, 1, "state");
  if (state != qp_state::INIT && state != qp_state::RTR && state != qp_state::RTS && state != qp_state::ERR) {
    throw Napi::RangeError::New(env, "state must be INIT (1), RTR (2), RTS (3) or ERR (6)");
  }
  int rnr = cm::ReadOptionalRnrRetry(env, info[2], "rnrRetry");
  cm::Id* id = Checked(env, "rdma_init_qp_attr");
  Qp* qp = qpw->Checked(env, "ibv_modify_qp");
  Guard(env, [&] { id->modify_qp(qp, state, rnr); });
  return env.Undefined();
}

// connect(param, qp?): with qp, CONNECT_RESPONSE moves it to RTS and establishes (TakeStep).
Napi::Value CmIdWrap::Connect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::ConnParam p = cm::ReadConnParam(env, info[0], cm::private_data_max::CONNECT);
  bool has_qp = !info[1].IsUndefined();
  if (has_qp) UnwrapArg<QpWrap>(env, info[1], "qp")->Checked(env, "rdma_connect");
  cm::Id* id = Checked(env, "rdma_connect");
  Guard(env, [&] { id->connect(p); });
  if (has_qp) {
    establish_qp_ = Napi::Persistent(info[1].As<Napi::Object>());
    // Our connect's RNR retry count is its own QP's too, not only the peer's.
    establish_rnr_ = p.rnr_retry_count;
  }
  return env.Undefined();
}

CmIdWrap::StepOutcome CmIdWrap::TakeStep(cm::Event& ev) {
  StepOutcome out;
  if (closed() || ev.status != 0) return out;
  try {
    if (ev.type == cm::event_type::ADDR_RESOLVED && route_ms_ >= 0) {
      int ms = route_ms_;
      route_ms_ = -1;
      native()->resolve_route(ms);
      out.swallow = true;  // ROUTE_RESOLVED or ROUTE_ERROR follows
    } else if (ev.type == cm::event_type::CONNECT_RESPONSE && !establish_qp_.IsEmpty()) {
      QpWrap* qpw = QpWrap::Unwrap(establish_qp_.Value());
      establish_qp_.Reset();
      if (qpw == nullptr || qpw->closed()) return out;  // JS finds the QP closed itself
      Qp* qp = qpw->native();
      // INIT again: the request went out before the CM knew the responder
      // resources, so the first INIT granted no remote access; now it can.
      for (uint32_t state : {qp_state::INIT, qp_state::RTR, qp_state::RTS}) native()->modify_qp(qp, state, establish_rnr_);
      native()->establish();
      out.established = true;
    }
  } catch (const VerbsError& e) {
    out.error = e;
  }
  return out;
}

Napi::Value CmIdWrap::Accept(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::ConnParam p = cm::ReadConnParam(env, info[0], cm::private_data_max::ACCEPT);
  cm::Id* id = Checked(env, "rdma_accept");
  Guard(env, [&] { id->accept(p); });
  return env.Undefined();
}

Napi::Value CmIdWrap::Reject(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<uint8_t> pd = cm::ReadPrivateData(env, info[0], cm::private_data_max::REJECT, "privateData");
  cm::Id* id = Checked(env, "rdma_reject");
  Guard(env, [&] { id->reject(pd); });
  return env.Undefined();
}

Napi::Value CmIdWrap::Establish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::Id* id = Checked(env, "rdma_establish");
  Guard(env, [&] { id->establish(); });
  return env.Undefined();
}

Napi::Value CmIdWrap::Disconnect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  cm::Id* id = Checked(env, "rdma_disconnect");
  Guard(env, [&] { id->disconnect(); });
  return env.Undefined();
}

Napi::Value CmIdWrap::Migrate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CmChannelWrap* dst = UnwrapArg<CmChannelWrap>(env, info[0], "channel");
  Napi::Object dst_obj = info[0].As<Napi::Object>();
  cm::Id* id = Checked(env, "rdma_migrate_id");
  cm::Channel* ch = dst->Checked(env, "rdma_migrate_id");
  if (chw_ && dst->provider() != chw_->provider()) {
    throw ErrnoError(env, EINVAL, "rdma_migrate_id", "the channel belongs to another CM provider");
  }
  Guard(env, [&] { id->migrate(ch); });
  if (chw_) chw_->RemoveId(this);
  chw_ = dst;
  dst->AddId(this);
  Value().Set(kParentKey, dst_obj);
  return env.Undefined();
}

}  // namespace rxv
