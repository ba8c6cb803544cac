#include "wrap/qp.h"

#include <type_traits>

#include "util/js_values.h"
#include "wrap/cq.h"
#include "wrap/mr.h"
#include "wrap/pd.h"
#include "wrap/ud_wrs.h"
#include "wrap/wr_codec.h"

namespace rxv {

Napi::Function QpWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&QpWrap::QpNum>("qpNum"),
                         InstanceAccessor<&QpWrap::State>("state"),
                         InstanceAccessor<&QpWrap::Cap>("cap"),
                         InstanceMethod<&QpWrap::Query>("query"),
                         InstanceAccessor<&QpWrap::Closed>("closed"),
                         InstanceMethod<&QpWrap::Modify>("modify"),
                         InstanceMethod<&QpWrap::PostSend>("postSend"),
                         InstanceMethod<&QpWrap::PostRecv>("postRecv"),
                         InstanceMethod<&QpWrap::CloseJs>("close"),
                     });
}

Napi::Object QpWrap::New(Napi::Env env, std::unique_ptr<Qp> qp, Napi::Object pd,
                         PdWrap* pdw, Napi::Object send_cq, Napi::Object recv_cq) {
  Napi::Object o = Wrap(env, std::move(qp), pd);
  QpWrap* w = Unwrap(o);
  SetHidden(o, "__rxvSendCq", send_cq);
  SetHidden(o, "__rxvRecvCq", recv_cq);
  w->pdw_ = pdw;
  w->qp_num_ = w->native()->qp_num();
  return o;
}

Napi::Value QpWrap::QpNum(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), qp_num_);
}

Napi::Value QpWrap::State(const Napi::CallbackInfo& info) {
  Qp* qp = Checked(info.Env(), "ibv_query_qp");
  return Napi::Number::New(info.Env(), qp->state());
}

static Napi::Object CapObject(Napi::Env env, const QpCap& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("maxSendWr", c.max_send_wr);
  o.Set("maxRecvWr", c.max_recv_wr);
  o.Set("maxSendSge", c.max_send_sge);
  o.Set("maxRecvSge", c.max_recv_sge);
  o.Set("maxInlineData", c.max_inline_data);
  return o;
}

Napi::Value QpWrap::Cap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Qp* qp = Checked(env, "ibv_query_qp");
  return CapObject(env, qp->cap());
}

// query(): ibv_query_qp, in the numbers and names of modify's attr (the TS
// layer turns codes into names and bytes).
Napi::Value QpWrap::Query(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Qp* qp = Checked(env, "ibv_query_qp");
  const QpAttr a = Guard(env, [&] { return qp->query(); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("qpState", a.state);
  o.Set("pathMtu", a.path_mtu);
  o.Set("destQpNum", a.dest_qp_num);
  o.Set("rqPsn", a.rq_psn);
  o.Set("sqPsn", a.sq_psn);
  o.Set("retryCnt", a.retry_cnt);
  o.Set("rnrRetry", a.rnr_retry);
  o.Set("minRnrTimer", a.min_rnr_timer);
  o.Set("timeout", a.timeout);
  o.Set("maxRdAtomic", a.max_rd_atomic);
  o.Set("maxDestRdAtomic", a.max_dest_rd_atomic);
  o.Set("accessFlags", a.access_flags);
  o.Set("portNum", a.port_num);
  o.Set("pkeyIndex", a.pkey_index);
  o.Set("qkey", a.qkey);
  o.Set("cap", CapObject(env, a.cap));
  Napi::Object ah = Napi::Object::New(env);
  ah.Set("dlid", a.ah.dlid);
  ah.Set("sl", a.ah.sl);
  ah.Set("portNum", a.ah.port_num);
  if (a.ah.is_global) {
    ah.Set("dgid", GidString(env, a.ah.dgid));
    ah.Set("sgidIndex", a.ah.sgid_index);
    ah.Set("hopLimit", a.ah.hop_limit);
    ah.Set("trafficClass", a.ah.traffic_class);
    ah.Set("flowLabel", a.ah.flow_label);
  }
  o.Set("ah", ah);
  return o;
}

static uint32_t Field(Napi::Env env, Napi::Object o, const char* key,
                      uint32_t dflt, uint32_t max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  return ValueU32(env, v, key, 0, max);
}

// modify(attr, mask): ibv_modify_qp with rdma-core's IBV_QP_* mask bits.
// attr is read in full (its getters may run any JS) before the QP is taken.
Napi::Value QpWrap::Modify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "attr must be an object");
  Napi::Object o = info[0].As<Napi::Object>();
  uint32_t mask = ArgU32(info, 1, "attribute mask", 0, (1u << 21) - 1);
  // Absent fields keep QpAttr's defaults (provider.h), written once.
  QpAttr a;
  a.state = Field(env, o, "qpState", a.state, 6);
  a.access_flags = Field(env, o, "accessFlags", a.access_flags, 0xffff);
  a.pkey_index = static_cast<uint16_t>(Field(env, o, "pkeyIndex", a.pkey_index, 0xffff));
  a.port_num = static_cast<uint8_t>(Field(env, o, "portNum", a.port_num, 255));
  a.path_mtu = Field(env, o, "pathMtu", a.path_mtu, 5);
  a.dest_qp_num = Field(env, o, "destQpNum", a.dest_qp_num, 0xffffff);
  a.rq_psn = Field(env, o, "rqPsn", a.rq_psn, 0xffffff);
  a.sq_psn = Field(env, o, "sqPsn", a.sq_psn, 0xffffff);
  a.max_rd_atomic = static_cast<uint8_t>(Field(env, o, "maxRdAtomic", a.max_rd_atomic, 255));
  a.max_dest_rd_atomic = static_cast<uint8_t>(Field(env, o, "maxDestRdAtomic", a.max_dest_rd_atomic, 255));
  a.min_rnr_timer = static_cast<uint8_t>(Field(env, o, "minRnrTimer", a.min_rnr_timer, 31));
  a.timeout = static_cast<uint8_t>(Field(env, o, "timeout", a.timeout, 31));
  a.retry_cnt = static_cast<uint8_t>(Field(env, o, "retryCnt", a.retry_cnt, 7));
  a.rnr_retry = static_cast<uint8_t>(Field(env, o, "rnrRetry", a.rnr_retry, 7));
  a.qkey = Field(env, o, "qkey", 0, 0xffffffff);
  Napi::Value ahv = o.Get("ah");
  if (ahv.IsObject()) {
    Napi::Object ah = ahv.As<Napi::Object>();
    a.ah.dlid = static_cast<uint16_t>(Field(env, ah, "dlid", 0, 0xffff));
    a.ah.sl = static_cast<uint8_t>(Field(env, ah, "sl", 0, 15));
    a.ah.port_num = static_cast<uint8_t>(Field(env, ah, "portNum", a.port_num, 255));
    a.ah.sgid_index = static_cast<uint8_t>(Field(env, ah, "sgidIndex", 0, 255));
    a.ah.hop_limit = static_cast<uint8_t>(Field(env, ah, "hopLimit", 1, 255));
    a.ah.traffic_class = static_cast<uint8_t>(Field(env, ah, "trafficClass", 0, 255));
    a.ah.flow_label = Field(env, ah, "flowLabel", 0, 0xfffff);
    Napi::Value dgid = ah.Get("dgid");
    if (!dgid.IsUndefined() && !dgid.IsNull()) {
      if (!dgid.IsString()) throw Napi::TypeError::New(env, "ah.dgid must be a GID string");
      if (!ParseGid(dgid.As<Napi::String>().Utf8Value(), a.ah.dgid)) {
        throw Napi::RangeError::New(env, "ah.dgid must be 32 hex digits, e.g. fe80:0000:...:0001");
      }
      a.ah.is_global = true;
    }
  } else if (!ahv.IsUndefined()) {
    throw Napi::TypeError::New(env, "ah must be an object");
  }
  // Only now, every getter having run (any of them may have closed this QP).
  Qp* qp = Checked(env, "ibv_modify_qp");
  Guard(env, [&] { qp->modify(a, mask); });
  return env.Undefined();
}

// Bytes per element of a typed array type (napi_get_typedarray_info gives
// a length in elements).
static size_t ElementBytes(napi_typedarray_type t) {
  switch (t) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;  // float64, bigint64, biguint64
  }
}

// The packed WRs: a typed array (what the library passes: one Node-API call
// gives its data at its offset and its length), an ArrayBuffer or a
// DataView. A detached buffer reads as empty, and decoding refuses it.
static void BufferArg(const Napi::CallbackInfo& info, const uint8_t** data,
                      size_t* len) {
  napi_env env = info.Env();
  napi_value v = info[0];
  bool is = false;
  void* p = nullptr;
  if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type type;
    size_t n = 0;
    if (napi_get_typedarray_info(env, v, &type, &n, &p, nullptr, nullptr) != napi_ok) {
      throw Napi::Error::New(info.Env());
    }
    *len = n * ElementBytes(type);
  } else if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
    if (napi_get_arraybuffer_info(env, v, &p, len) != napi_ok) throw Napi::Error::New(info.Env());
  } else if (napi_is_dataview(env, v, &is) == napi_ok && is) {
    if (napi_get_dataview_info(env, v, len, &p, nullptr, nullptr) != napi_ok) throw Napi::Error::New(info.Env());
  } else {
    throw Napi::TypeError::New(info.Env(), "packed work requests must be an ArrayBuffer or a view");
  }
  *data = static_cast<const uint8_t*>(p);
  if (!p) *len = 0;
}

static Napi::Error PostError(Napi::Env env, const VerbsError& e, size_t bad) {
  Napi::Error err = FromVerbsError(env, e);
  err.Set("badWr", Napi::Number::New(env, static_cast<double>(bad)));
  return err;
}

// The first WR with a scatter/gather entry on memory whose JS buffer was
// detached (`count` when none). Such a WR must not reach the device: the
// memory is no longer the buffer the user registered. MRs a WR names by
// rkey are checked too, so a device that runs WRs itself refuses them.
template <typename Wr>
static size_t FirstDetached(Napi::Env env, PdWrap* pdw, const std::vector<Wr>& wrs, size_t count,
                            std::string* why) {
  for (size_t i = 0; i < count; i++) {
    const Wr& wr = wrs[i];
    if constexpr (std::is_same_v<Wr, SendWr>) {
      if (wr.opcode == wr_opcode::RDMA_WRITE || wr.opcode == wr_opcode::RDMA_WRITE_WITH_IMM ||
          wr.opcode == wr_opcode::RDMA_READ || wr.opcode == wr_opcode::ATOMIC_CMP_AND_SWP ||
          wr.opcode == wr_opcode::ATOMIC_FETCH_AND_ADD)
        MrWrap::MarkDetached(env, wr.rkey);
    }
    for (size_t j = 0; j < wr.sg.size(); j++) {
      if (!pdw->DetachedSge(wr.sg[j].lkey)) continue;
      *why = "work request " + std::to_string(i) + ": scatter/gather entry " + std::to_string(j) +
             " uses a memory region (lkey " + std::to_string(wr.sg[j].lkey) +
             ") whose ArrayBuffer was detached (transferred); deregister it";
      return i;
    }
  }
  return count;
}

// Posts wrs[0, count): those before the first WR on detached memory go to
// the provider, then that one fails with EFAULT (badWr = its index), as a
// provider reports a bad WR.
template <typename Wr, typename Post>
static void PostChecked(Napi::Env env, PdWrap* pdw, const std::vector<Wr>& wrs, size_t count,
                        const char* verb, Post post) {
  std::string why;
  const size_t bad = FirstDetached(env, pdw, wrs, count, &why);
  size_t bad_index = 0;
  try {
    if (bad) post(wrs.data(), bad, &bad_index);
  } catch (const VerbsError& e) {
    throw PostError(env, e, bad_index);
  }
  if (bad < count) throw PostError(env, VerbsError(EFAULT, verb, why), bad);
}

// postSend(packed, count)
Napi::Value QpWrap::PostSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint8_t* data = nullptr;
  size_t len = 0;
  BufferArg(info, &data, &len);
  uint32_t count = ArgU32(info, 1, "count", 1, 1u << 20);
  std::vector<AhWrap*> ahs = ReadAhs(env, info[2]);
  Qp* qp = Checked(env, "ibv_post_send");
  std::string bad = DecodeSendWrs(data, len, count, &send_wrs_);
  if (!bad.empty()) throw Napi::RangeError::New(env, bad);
  if (type_ == qp_type::UD) ResolveUdWrs(env, ahs, &send_wrs_, count);
  // Inline data is copied from user addresses at post time, before any key
  // check a device could make: prove here it lies inside this PD's memory.
  for (uint32_t i = 0; i < count; i++) {
    const SendWr& wr = send_wrs_[i];
    if (!(wr.send_flags & send_flag::INLINE)) continue;
    for (const Sge& s : wr.sg) {
      if (!pdw_->CoversLocal(s.lkey, s.addr, s.length)) {
        throw PostError(env, VerbsError(EFAULT, "ibv_post_send",
                                        "inline data of work request " + std::to_string(i) +
                                            " is not inside a registered region of this PD"),
                        i);
      }
    }
  }
  PostChecked(env, pdw_, send_wrs_, count, "ibv_post_send",
              [qp](const SendWr* w, size_t n, size_t* b) { qp->post_send(w, n, b); });
  return env.Undefined();
}

// postRecv(packed, count)
Napi::Value QpWrap::PostRecv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint8_t* data = nullptr;
  size_t len = 0;
  BufferArg(info, &data, &len);
  uint32_t count = ArgU32(info, 1, "count", 1, 1u << 20);
  Qp* qp = Checked(env, "ibv_post_recv");
  std::string bad = DecodeRecvWrs(data, len, count, &recv_wrs_);
  if (!bad.empty()) throw Napi::RangeError::New(env, bad);
  PostChecked(env, pdw_, recv_wrs_, count, "ibv_post_recv",
              [qp](const RecvWr* w, size_t n, size_t* b) { qp->post_recv(w, n, b); });
  return env.Undefined();
}

}  // namespace rxv

namespace rxv {

// The receive half of the posting rules, for the SRQ (srq.cc): one packed
// buffer, one decode, one detached-memory check, whatever receives them.
void DecodeRecvArgs(const Napi::CallbackInfo& info, std::vector<RecvWr>* wrs, uint32_t* count) {
  const uint8_t* data = nullptr;
  size_t len = 0;
  BufferArg(info, &data, &len);
  *count = ArgU32(info, 1, "count", 1, 1u << 20);
  std::string bad = DecodeRecvWrs(data, len, *count, wrs);
  if (!bad.empty()) throw Napi::RangeError::New(info.Env(), bad);
}

void PostRecvsChecked(Napi::Env env, PdWrap* pdw, const std::vector<RecvWr>& wrs, size_t count,
                      const char* verb, const std::function<void(const RecvWr*, size_t, size_t*)>& post) {
  PostChecked(env, pdw, wrs, count, verb, post);
}

}  // namespace rxv
