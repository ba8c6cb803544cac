#include "wrap/srq.h"

#include "wrap/pd.h"
#include "wrap/qp.h"

namespace rxv {

Napi::Function SrqWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&SrqWrap::Closed>("closed"),
                         InstanceMethod<&SrqWrap::Query>("query"),
                         InstanceMethod<&SrqWrap::Arm>("arm"),
                         InstanceMethod<&SrqWrap::PostRecv>("postRecv"),
                         InstanceMethod<&SrqWrap::CloseJs>("close"),
                     });
}

Napi::Object SrqWrap::New(Napi::Env env, std::unique_ptr<Srq> srq, Napi::Object pd, PdWrap* pdw) {
  Napi::Object o = Wrap(env, std::move(srq), pd);
  Unwrap(o)->pdw_ = pdw;
  return o;
}

Napi::Value SrqWrap::Query(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Srq* srq = Checked(env, "ibv_query_srq");
  SrqAttr a = Guard(env, [&] { return srq->query(); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("maxWr", a.max_wr);
  o.Set("maxSge", a.max_sge);
  o.Set("limit", a.srq_limit);
  return o;
}

// arm(limit): ibv_modify_srq with IBV_SRQ_LIMIT.
Napi::Value SrqWrap::Arm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t limit = ArgU32(info, 0, "limit", 0, 1u << 24);
  Srq* srq = Checked(env, "ibv_modify_srq");
  Guard(env, [&] { srq->arm(limit); });
  return env.Undefined();
}

// postRecv(packed, count): ibv_post_srq_recv.
Napi::Value SrqWrap::PostRecv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t count = 0;
  DecodeRecvArgs(info, &recv_wrs_, &count);
  Srq* srq = Checked(env, "ibv_post_srq_recv");
  PostRecvsChecked(env, pdw_, recv_wrs_, count, "ibv_post_srq_recv",
                   [srq](const RecvWr* w, size_t n, size_t* b) { srq->post_recv(w, n, b); });
  return env.Undefined();
}

}  // namespace rxv
