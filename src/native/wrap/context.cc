#include "wrap/context.h"

#include <cerrno>

#include "util/js_values.h"
#include "wrap/channel.h"
#include "wrap/cq.h"
#include "wrap/faults.h"
#include "wrap/pd.h"
#include "wrap/qp.h"
#include "wrap/srq.h"

namespace rxv {

Napi::Function ContextWrap::Init(Napi::Env env) {
  return DefineClass(
      env, kClassName,
      {
          InstanceAccessor<&ContextWrap::DeviceName>("deviceName"),
          InstanceAccessor<&ContextWrap::ProviderName>("provider"),
          InstanceAccessor<&ContextWrap::Closed>("closed"),
          InstanceMethod<&ContextWrap::QueryDevice>("queryDevice"),
          InstanceMethod<&ContextWrap::QueryPort>("queryPort"),
          InstanceMethod<&ContextWrap::QueryGid>("queryGid"),
          InstanceMethod<&ContextWrap::AllocPd>("allocPd"),
          InstanceMethod<&ContextWrap::CreateCompChannel>("createCompChannel"),
          InstanceMethod<&ContextWrap::CreateCq>("createCq"),
          InstanceMethod<&ContextWrap::WatchAsync>("watchAsync"),
          InstanceMethod<&ContextWrap::ReadAsyncEvents>("readAsyncEvents"),
          InstanceAccessor<&ContextWrap::FaultsJs>("faults"),
          InstanceMethod<&ContextWrap::CloseJs>("close"),
      });
}

Napi::Object ContextWrap::New(Napi::Env env, std::unique_ptr<Context> ctx) {
  return Wrap(env, std::move(ctx));
}

Napi::Value ContextWrap::DeviceName(const Napi::CallbackInfo& info) {
  Context* c = Checked(info.Env(), "deviceName");
  return Napi::String::New(info.Env(), c->info().name);
}

Napi::Value ContextWrap::ProviderName(const Napi::CallbackInfo& info) {
  Context* c = Checked(info.Env(), "provider");
  return Napi::String::New(info.Env(), c->info().provider);
}

Napi::Value ContextWrap::QueryDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Context* c = Checked(env, "ibv_query_device");
  DeviceAttr a = Guard(env, [&] { return c->query_device(); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("fwVer", a.fw_ver);
  o.Set("nodeGuid", GuidString(env, a.node_guid));
  o.Set("sysImageGuid", GuidString(env, a.sys_image_guid));
  o.Set("maxMrSize", Napi::BigInt::New(env, a.max_mr_size));
  o.Set("vendorId", a.vendor_id);
  o.Set("vendorPartId", a.vendor_part_id);
  o.Set("hwVer", a.hw_ver);
  o.Set("maxQp", a.max_qp);
  o.Set("maxQpWr", a.max_qp_wr);
  o.Set("maxSge", a.max_sge);
  o.Set("maxCq", a.max_cq);
  o.Set("maxCqe", a.max_cqe);
  o.Set("maxMr", a.max_mr);
  o.Set("maxPd", a.max_pd);
  o.Set("physPortCnt", a.phys_port_cnt);
  static const char* const kAtomicCaps[] = {"NONE", "HCA", "GLOB"};
  o.Set("atomicCap", a.atomic_cap < 3 ? kAtomicCaps[a.atomic_cap] : "UNKNOWN");
  o.Set("maxQpRdAtom", a.max_qp_rd_atom);
  o.Set("maxQpInitRdAtom", a.max_qp_init_rd_atom);
  return o;
}

Napi::Value ContextWrap::QueryPort(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t port = ArgU32(info, 0, "port", 1, 255);
  Context* c = Checked(env, "ibv_query_port");
  PortAttr a = Guard(env, [&] { return c->query_port(static_cast<uint8_t>(port)); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("state", a.state);
  o.Set("maxMtu", a.max_mtu);
  o.Set("activeMtu", a.active_mtu);
  o.Set("gidTblLen", a.gid_tbl_len);
  o.Set("lid", a.lid);
  o.Set("smLid", a.sm_lid);
  o.Set("lmc", a.lmc);
  o.Set("linkLayer", a.link_layer);
  o.Set("activeWidth", a.active_width);
  o.Set("activeSpeed", a.active_speed);
  o.Set("physState", a.phys_state);
  return o;
}

Napi::Value ContextWrap::QueryGid(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t port = ArgU32(info, 0, "port", 1, 255);
  uint32_t index = ArgU32(info, 1, "gid index", 0, 65535);
  Context* c = Checked(env, "ibv_query_gid");
  Gid g = Guard(env, [&] {
    return c->query_gid(static_cast<uint8_t>(port), static_cast<int>(index));
  });
  return GidString(env, g.raw);
}

Napi::Value ContextWrap::AllocPd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Context* c = Checked(env, "ibv_alloc_pd");
  auto pd = Guard(env, [&] { return c->alloc_pd(); });
  return PdWrap::New(env, std::move(pd), Value());
}

Napi::Value ContextWrap::CreateCompChannel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Context* c = Checked(env, "ibv_create_comp_channel");
  auto ch = Guard(env, [&] { return c->create_channel(); });
  return ChannelWrap::New(env, std::move(ch), Value());
}

// createCq(cqe, channel | null, compVector)
Napi::Value ContextWrap::CreateCq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Arguments first (wrap/wrap.h), then the native objects.
  uint32_t cqe = ArgU32(info, 0, "cqe", 1, 1u << 30);
  ChannelWrap* chw = nullptr;
  if (!info[1].IsNull() && !info[1].IsUndefined()) {
    chw = UnwrapArg<ChannelWrap>(env, info[1], "channel");
  }
  uint32_t vec = info[2].IsUndefined() ? 0 : ArgU32(info, 2, "compVector", 0, 1024);
  Context* c = Checked(env, "ibv_create_cq");
  if (chw) {
    chw->Checked(env, "ibv_create_cq");
    if (chw->context_object() != Value()) {
      throw ErrnoError(env, EINVAL, "ibv_create_cq",
                       "the channel belongs to another context");
    }
  }
  auto cq = Guard(env, [&] {
    return c->create_cq(static_cast<int>(cqe), chw ? chw->native() : nullptr,
                        static_cast<int>(vec));
  });
  return CqWrap::New(env, std::move(cq), Value(), chw);
}

// The JS object of a wrapper an event names; empty when the GC has collected
// it but its finalizer (which unhooks it from the native object) has not run
// yet: then there is no one left to tell.
template <typename W>
static Napi::Object LiveObject(W* w) {
  return w ? w->Value() : Napi::Object();
}

Napi::Array ContextWrap::DrainAsync(Napi::Env env) {
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  AsyncEvent ev;
  // Bounded so a storm of async events cannot starve the loop.
  for (uint32_t read = 0; read < 1024 && native() && native()->get_async_event(&ev); read++) {
    // Everything is taken from the event, then it is acked at once: nothing
    // below (JS values can fail to be made) may leave it unacked.
    auto* cqw = ev.cq ? static_cast<CqWrap*>(ev.cq->user) : nullptr;
    auto* qpw = ev.qp ? static_cast<QpWrap*>(ev.qp->user) : nullptr;
    auto* srqw = ev.srq ? static_cast<SrqWrap*>(ev.srq->user) : nullptr;
    if (cqw && ev.type == async_event::CQ_ERR) cqw->MarkBroken();
    const uint32_t type = ev.type;
    const uint32_t port = ev.port;
    native()->ack_async_event(ev);
    Napi::Object cq = LiveObject(cqw), qp = LiveObject(qpw), srq = LiveObject(srqw);
    // An event about a wrapper the GC collected is dropped (one about an
    // object already released still goes out, without it).
    if ((cqw && cq.IsEmpty()) || (qpw && qp.IsEmpty()) || (srqw && srq.IsEmpty())) continue;
    Napi::Object o = Napi::Object::New(env);
    o.Set("type", type);
    if (!cq.IsEmpty()) o.Set("cq", cq);
    if (!qp.IsEmpty()) o.Set("qp", qp);
    if (!srq.IsEmpty()) o.Set("srq", srq);
    if (port) o.Set("port", port);
    out.Set(n++, o);
  }
  return out;
}

// readAsyncEvents(): reads and acks pending async events, non-blocking.
Napi::Value ContextWrap::ReadAsyncEvents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Checked(env, "ibv_get_async_event");
  return Guard(env, [&] { return DrainAsync(env); });
}

// watchAsync(owner | null): watches the async fd, handing events to
// owner.handleAsync(events). Never keeps the process alive: async events
// alone are no reason to stay up.
Napi::Value ContextWrap::WatchAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool stop = info[0].IsNull() || info[0].IsUndefined();
  Napi::Function handler;
  if (!stop) handler = Poller::HandlerOf(env, info[0], "handleAsync");
  Context* c = Checked(env, "ibv_get_async_event");
  if (stop) {
    async_poller_.Stop();
    async_poller_.ClearOwner();
    return env.Undefined();
  }
  async_poller_.SetOwner(env, info[0].As<Napi::Object>(), handler);
  async_poller_.Start(env, c->async_fd(),
                      [this](napi_env e, Poller::Wakeup& out) { ReadAsync(e, out); });
  async_poller_.KeepAlive(false);
  return env.Undefined();
}

void ContextWrap::ReadAsync(napi_env env, Poller::Wakeup& out) {
  if (closed()) return;
  Napi::Array events;
  try {
    events = DrainAsync(Napi::Env(env));
  } catch (const VerbsError& e) {
    async_poller_.Failed(e);
    return;
  }
  if (events.Length() == 0) return;  // spurious readiness
  out.read_any = true;
  out.argc = 1;
  out.argv[0] = events;
}

// faults: the device's fault injection hooks (faults.h).
Napi::Value ContextWrap::FaultsJs(const Napi::CallbackInfo& info) {
  return FaultsWrap::New(info.Env(), this);
}

}  // namespace rxv
