// The helpers every baseline shares (common.h).
#include "common.h"

#include "baselines.h"

#include <time.h>

#include <cstring>

#include "util/errors.h"
#include "util/js_values.h"
#include "util/uv_guard.h"
#include "wrap/borrow.h"

namespace rxv {
namespace bench {

double ThreadCpuSeconds() {
  timespec ts{0, 0};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

LocalPath PathTo(Context* ctx, int gid_index) {
  LocalPath p;
  p.lid = ctx->query_port(1).lid;
  if (gid_index >= 0) {
    p.gid_index = gid_index;
    p.gid = ctx->query_gid(1, gid_index);
  }
  return p;
}

void Connect(Qp* q, uint32_t dest_qpn, const LocalPath& path, uint32_t rq_psn, uint32_t sq_psn) {
  QpAttr a;
  a.state = qp_state::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.access_flags = kAccessAll;
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::PKEY_INDEX | qp_attr_mask::PORT |
                   qp_attr_mask::ACCESS_FLAGS);
  a.state = qp_state::RTR;
  a.path_mtu = 3;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah.dlid = path.lid;
  a.ah.port_num = 1;
  if (path.gid_index >= 0) {
    a.ah.is_global = true;
    std::memcpy(a.ah.dgid, path.gid.raw, sizeof a.ah.dgid);
    a.ah.sgid_index = static_cast<uint8_t>(path.gid_index);
    a.ah.hop_limit = 1;
  }
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::AV | qp_attr_mask::PATH_MTU |
                   qp_attr_mask::DEST_QPN | qp_attr_mask::RQ_PSN |
                   qp_attr_mask::MAX_DEST_RD_ATOMIC | qp_attr_mask::MIN_RNR_TIMER);
  a.state = qp_state::RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = sq_psn;
  a.max_rd_atomic = 1;
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::TIMEOUT | qp_attr_mask::RETRY_CNT |
                   qp_attr_mask::RNR_RETRY | qp_attr_mask::SQ_PSN |
                   qp_attr_mask::MAX_QP_RD_ATOMIC);
}

// ---- handles ----------------------------------------------------------------
const napi_type_tag kTag = {0x7278766265636831ull, 0x68616e646c653031ull};  // "rxvbech1handle01"

void Object::OnCleanup(void* arg) {
  auto* self = static_cast<Object*>(arg);
  NoEscape(self->env, "bench cleanup", [self] {
    self->hook = false;
    self->Shutdown(true);
  });
}

Napi::External<Object> MakeHandle(Napi::Env env, std::unique_ptr<Object> obj) {
  Object* raw = obj.get();
  auto ext = Napi::External<Object>::New(env, raw, [](Napi::Env e, Object* o) {
    NoEscape(e, "bench finalizer", [o] {
      o->RemoveHook();
      o->Shutdown(false);
    });
    delete o;
  });
  obj.release();
  raw->AddHook(env);
  napi_type_tag_object(env, ext, &kTag);
  return ext;
}

// ---- arguments ------------------------------------------------------------------
Napi::Object ArgsObject(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined()) return Napi::Object::New(info.Env());
  if (!info[i].IsObject()) throw Napi::TypeError::New(info.Env(), "args must be an object");
  return info[i].As<Napi::Object>();
}

uint32_t U32(Napi::Object o, const char* key, uint32_t dflt, uint32_t min, uint32_t max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  return ValueU32(o.Env(), v, key, min, max);
}

double Num(Napi::Object o, const char* key, double dflt, double min, double max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1e300;
  if (!(d >= min && d <= max)) {
    throw Napi::RangeError::New(o.Env(), std::string(key) + " must be a number in [" +
                                             std::to_string(min) + ", " +
                                             std::to_string(max) + "]");
  }
  return d;
}

std::string Str(Napi::Object o, const char* key, const std::string& dflt) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  if (!v.IsString()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

// The product's objects come through its one door for this addon
// (src/native/wrap/borrow.h).
Context* BenchContextArg(Napi::Env env, Napi::Value v) {
  return borrow::ContextOf(env, v, "context", "bench");
}

int GidIndexArg(Napi::Object o) {
  if (o.Get("gidIndex").IsUndefined()) return -1;
  return static_cast<int>(U32(o, "gidIndex", 0, 0, 255));
}

std::unique_ptr<Context> OpenBenchDevice(const std::string& name) {
  for (const DeviceInfo& d : soft_provider().list_devices()) {
    if (d.name == name) return soft_provider().open(name);
  }
  return ibverbs_provider().open(name);
}

Pd* PdArg(Napi::Env env, Napi::Value v) {
  return borrow::PdOf(env, v, "pd", "bench");
}

Cq* CqArg(Napi::Env env, Napi::Value v) {
  return borrow::CqOf(env, v, "cq", "bench");
}

Napi::Value ThreadCpu(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), ThreadCpuSeconds());
}

// ---- rig ----------------------------------------------------------------------------
Rig::Rig(const std::string& device, uint32_t cqe, bool with_channel, int gid_index) {
  ctx = OpenBenchDevice(device);
  path = PathTo(ctx.get(), gid_index);
  if (with_channel) ch = ctx->create_channel();
  cq = ctx->create_cq(static_cast<int>(cqe), ch.get(), 0);
  pd = ctx->alloc_pd();
}

void Rig::AckAll() {
  if (cq && unacked) {
    try {
      cq->ack_events(unacked);
    } catch (...) {
    }
    unacked = 0;
  }
}

void Rig::DrainEvents() {
  if (!ch) return;
  try {
    Cq* c = nullptr;
    while (ch->get_event(&c)) unacked++;
  } catch (...) {
  }
  AckAll();
}

void Rig::Release() {
  DrainEvents();
  DestroyQuietly(cq);
  DestroyQuietly(ch);
  DestroyQuietly(pd);
  DestroyQuietly(ctx);
}

}  // namespace bench
}  // namespace rxv
