#include "wrap/pd.h"

#include "wrap/cq.h"
#include "wrap/mr.h"
#include "wrap/qp.h"
#include "wrap/srq.h"

namespace rxv {

Napi::Function PdWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceMethod<&PdWrap::RegisterMemory>("registerMemory"),
                         InstanceMethod<&PdWrap::AllocMemory>("allocMemory"),
                         InstanceMethod<&PdWrap::CreateQp>("createQp"),
                         InstanceMethod<&PdWrap::CreateSrq>("createSrq"),
                         InstanceMethod<&PdWrap::CreateAh>("createAh"),
                         InstanceAccessor<&PdWrap::Closed>("closed"),
                         InstanceMethod<&PdWrap::CloseJs>("close"),
                     });
}

Napi::Object PdWrap::New(Napi::Env env, std::unique_ptr<Pd> pd,
                         Napi::Object context) {
  return Wrap(env, std::move(pd), context);
}

void PdWrap::Released() {
  for (auto& [lkey, mr] : mrs_) mr->DetachPd();
  mrs_.clear();
}

bool PdWrap::CoversLocal(uint32_t lkey, uint64_t addr, uint64_t len) const {
  auto it = mrs_.find(lkey);
  if (it == mrs_.end() || it->second->closed()) return false;
  Mr* mr = it->second->native();
  uint64_t start = mr->addr();
  return addr >= start && len <= mr->length() && addr - start <= mr->length() - len;
}

// registerMemory(buffer, access): Buffer, TypedArray, DataView or
// ArrayBuffer (resizable ones refused). Reading a buffer's geometry runs no
// JS, so both arguments are plain values before the PD is looked at.
Napi::Value PdWrap::RegisterMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PinnedMemory mem = PinUserMemory(env, info[0]);
  uint32_t access = ArgU32(info, 1, "access flags", 0, 0xffff);
  Pd* pd = Checked(env, "ibv_reg_mr");
  auto mr = Guard(env, [&] { return pd->reg_mr(mem.data, mem.length, access); });
  return MrWrap::New(env, std::move(mr), Value(), this, std::move(mem), false);
}

// Largest allocMemory: what a Node Buffer can view (buffer.constants.MAX_LENGTH).
constexpr uint64_t kMaxAlloc = 1ull << 32;

// allocMemory(size, access) -> { mr, buffer }: page-aligned memory the
// library owns, registered; `buffer` is an ArrayBuffer over it.
Napi::Value PdWrap::AllocMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Value sv = info[0];
  if (!sv.IsNumber()) throw Napi::TypeError::New(env, "size must be a number of bytes");
  const double size = sv.As<Napi::Number>().DoubleValue();
  if (!(size >= 1 && size <= double(kMaxAlloc)) || size != static_cast<double>(static_cast<uint64_t>(size)))
    throw Napi::RangeError::New(env, "size must be an integer from 1 to " + std::to_string(kMaxAlloc));
  uint32_t access = ArgU32(info, 1, "access flags", 0, 0xffff);
  Pd* pd = Checked(env, "ibv_reg_mr");
  PinnedMemory mem = AllocPinnedMemory(env, static_cast<size_t>(size));
  Napi::Object buffer = mem.owner;
  auto mr = Guard(env, [&] { return pd->reg_mr(mem.data, mem.length, access); });
  Napi::Object out = Napi::Object::New(env);
  out.Set("mr", MrWrap::New(env, std::move(mr), Value(), this, std::move(mem), true));
  out.Set("buffer", buffer);
  return out;
}

bool PdWrap::DetachedSge(uint32_t lkey) const {
  auto it = mrs_.find(lkey);
  return it != mrs_.end() && it->second->CheckDetached();
}

static uint32_t CapField(Napi::Env env, Napi::Object cap, const char* key,
                         uint32_t dflt) {
  Napi::Value v = cap.Get(key);
  if (v.IsUndefined()) return dflt;
  std::string what = std::string("cap.") + key;
  return ValueU32(env, v, what.c_str(), 0, 1u << 24);
}

// createQp(sendCq, recvCq, cap, sqSigAll, srq, type): an RC or UD QP, on an
// SRQ when one is given (UD included: its receives take the GRH room from
// the SRQ's buffers like any other). The cap getters may
// run any JS (closing this PD or the CQs): every argument is read before the
// native objects are taken.
Napi::Value PdWrap::CreateQp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CqWrap* scq = UnwrapArg<CqWrap>(env, info[0], "sendCq");
  CqWrap* rcq = UnwrapArg<CqWrap>(env, info[1], "recvCq");
  if (!info[2].IsUndefined() && !info[2].IsObject()) {
    throw Napi::TypeError::New(env, "cap must be an object");
  }
  Pd::QpInit init;
  Napi::Object cap = info[2].IsObject() ? info[2].As<Napi::Object>() : Napi::Object::New(env);
  init.cap.max_send_wr = CapField(env, cap, "maxSendWr", 64);
  init.cap.max_recv_wr = CapField(env, cap, "maxRecvWr", 64);
  init.cap.max_send_sge = CapField(env, cap, "maxSendSge", 1);
  init.cap.max_recv_sge = CapField(env, cap, "maxRecvSge", 1);
  init.cap.max_inline_data = CapField(env, cap, "maxInlineData", 0);
  init.sq_sig_all = ArgBool(info, 3, "sqSigAll", false);
  SrqWrap* srqw = info[4].IsUndefined() || info[4].IsNull() ? nullptr : UnwrapArg<SrqWrap>(env, info[4], "srq");
  const uint32_t type = info[5].IsUndefined() ? qp_type::RC : ArgU32(info, 5, "QP type", 0, 0xff);
  if (type != qp_type::RC && type != qp_type::UD)
    throw Napi::RangeError::New(env, "QP type must be 2 (RC) or 4 (UD)");
  Pd* pd = Checked(env, "ibv_create_qp");
  if (srqw) {
    init.srq = srqw->Checked(env, "ibv_create_qp");
    if (srqw->pdw() != this) throw ErrnoError(env, EINVAL, "ibv_create_qp", "the SRQ belongs to another PD");
  }
  init.send_cq = scq->Checked(env, "ibv_create_qp");
  init.recv_cq = rcq->Checked(env, "ibv_create_qp");
  if (scq->context_object() != context_object() ||
      rcq->context_object() != context_object()) {
    throw ErrnoError(env, EINVAL, "ibv_create_qp",
                     "the CQs belong to another context than the PD");
  }
  auto qp = Guard(env, [&] {
    return type == qp_type::UD ? pd->create_ud_qp(init) : pd->create_rc_qp(init);
  });
  Napi::Object o = QpWrap::New(env, std::move(qp), Value(), this, info[0].As<Napi::Object>(),
                               info[1].As<Napi::Object>());
  QpWrap::Unwrap(o)->set_type(type);
  if (srqw) SetHidden(o, "__rxvSrq", info[4]);  // the QP keeps its SRQ alive
  return o;
}

// createSrq(maxWr, maxSge, limit): ibv_create_srq. Plain numbers, read
// before the PD is taken.
Napi::Value PdWrap::CreateSrq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SrqAttr a;
  a.max_wr = ArgU32(info, 0, "maxWr", 1, 1u << 24);
  a.max_sge = ArgU32(info, 1, "maxSge", 0, 1u << 16);
  a.srq_limit = ArgU32(info, 2, "limit", 0, 1u << 24);
  Pd* pd = Checked(env, "ibv_create_srq");
  auto srq = Guard(env, [&] { return pd->create_srq(a); });
  return SrqWrap::New(env, std::move(srq), Value(), this);
}

}  // namespace rxv
