// RC queue pair: creation, the modify state machine (rdma-core/kernel mask
// rules), synchronous validation of posts, flush to the error state, and
// destroy. Execution of posted WRs is the device thread's (soft_execute.cc).
#include <algorithm>
#include <cstring>

#include "soft_objects.h"
#include "soft_ud.h"
#include "rules/refusals.h"
#include "rules/work_requests.h"

namespace rxv {
namespace soft {

namespace {

namespace m = qp_attr_mask;

std::string mask_names(uint32_t mask) {
  static const char* const names[] = {
      "STATE",        "CUR_STATE",   "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS",     "PKEY_INDEX",
      "PORT",         "QKEY",        "AV",                  "PATH_MTU",         "TIMEOUT",
      "RETRY_CNT",    "RNR_RETRY",   "RQ_PSN",              "MAX_QP_RD_ATOMIC", "ALT_PATH",
      "MIN_RNR_TIMER", "SQ_PSN",     "MAX_DEST_RD_ATOMIC",  "PATH_MIG_STATE",   "CAP",
      "DEST_QPN"};
  std::string out;
  for (int i = 0; i < 21; ++i)
    if (mask & (1u << i)) out += (out.empty() ? "" : "|") + std::string(names[i]);
  return out;
}

struct Transition {
  bool ok = false;
  uint32_t req = 0;
  uint32_t opt = 0;
};

// The RC rows of the IB spec's QP state table, as the kernel enforces them
// (ib_modify_qp_is_ok): required bits must all be present, and no bit may
// appear that is neither required nor optional.
Transition transition(uint32_t cur, uint32_t next) {
  using namespace qp_state;
  if (next == RESET || next == ERR) return {true, 0, 0};
  switch (cur) {
    case RESET:
      if (next == INIT) return {true, m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS, 0};
      break;
    case INIT:
      if (next == INIT) return {true, 0, m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS};
      if (next == RTR)
        return {true,
                m::AV | m::PATH_MTU | m::DEST_QPN | m::RQ_PSN | m::MAX_DEST_RD_ATOMIC |
                    m::MIN_RNR_TIMER,
                m::ALT_PATH | m::ACCESS_FLAGS | m::PKEY_INDEX};
      break;
    case RTR:
      if (next == RTS)
        return {true, m::SQ_PSN | m::TIMEOUT | m::RETRY_CNT | m::RNR_RETRY | m::MAX_QP_RD_ATOMIC,
                m::CUR_STATE | m::ALT_PATH | m::ACCESS_FLAGS | m::MIN_RNR_TIMER |
                    m::PATH_MIG_STATE};
      break;
    case RTS:
      if (next == RTS)
        return {true, 0,
                m::CUR_STATE | m::ACCESS_FLAGS | m::ALT_PATH | m::PATH_MIG_STATE |
                    m::MIN_RNR_TIMER};
      break;
    default:
      break;
  }
  return {};
}

void clear_queues(QpCore* q) {
  Lock l(q->mu);
  q->sq_head = q->sq_count = 0;
  q->rq_head = q->rq_count = 0;
}

// Pops one WR at a time and pushes after releasing mu: a push can overrun a
// CQ and re-enter qp_to_error for this QP, which then finds only what is
// still queued.
void flush(QpCore* q) {
  for (;;) {
    SendSlot w;
    {
      Lock l(q->mu);
      if (!q->sq_count) break;
      w = q->sq[q->sq_head];
      q->sq_head = q->sq_head + 1 == q->sq.size() ? 0 : q->sq_head + 1;
      --q->sq_count;
    }
    Wc wc;
    wc.wr_id = w.wr_id;
    wc.status = wc_status::WR_FLUSH_ERR;
    wc.opcode = wc_opcode_of(w.opcode);
    wc.qp_num = q->qpn;
    cq_push(q->scq.get(), wc, false);
  }
  q->rnr_count = 0;
  for (;;) {
    RecvSlot w;
    {
      Lock l(q->mu);
      if (!q->rq_count) break;
      w = q->rq[q->rq_head];
      q->rq_head = q->rq_head + 1 == q->rq.size() ? 0 : q->rq_head + 1;
      --q->rq_count;
    }
    Wc wc;
    wc.wr_id = w.wr_id;
    wc.status = wc_status::WR_FLUSH_ERR;
    wc.opcode = wc_opcode::RECV;
    wc.qp_num = q->qpn;
    cq_push(q->rcq.get(), wc, false);
  }
}

void set_state(QpCore* q, uint32_t st) {
  Lock l(q->mu);
  q->state = st;
}

void check_cap(bool ok, const char* what) {
  if (!ok) fail(EINVAL, "ibv_create_qp", what);
}

}  // namespace

void qp_to_error(QpCore* q, uint32_t async_type) {
  if (q->state == qp_state::ERR || q->dead) return;
  set_state(q, qp_state::ERR);
  bump_routes();
  unschedule(q);
  kick_waiters(q);
  if (async_type != kNoEvent && q->handle) raise_async(q->ctx.get(), async_type, nullptr, q->handle, 0);
  flush(q);
  // Its receives belong to the SRQ and stay there; the owner learns that no
  // more will be consumed for this QP (rxe raises it as the QP enters ERR).
  if (q->srq && q->handle)
    raise_async(q->ctx.get(), async_event::QP_LAST_WQE_REACHED, nullptr, q->handle, 0);
}

void qp_unroute(QpCore* q) {
  if (q->registered) {
    auto& tbl = q->ctx->dev->qps;
    auto it = tbl.find(q->qpn);
    if (it != tbl.end() && it->second == q) tbl.erase(it);
    q->registered = false;
  }
  unschedule(q);
  kick_waiters(q);
  bump_routes();
}

std::unique_ptr<Qp> create_qp(const std::shared_ptr<PdCore>& pd, const Pd::QpInit& init,
                              uint32_t type) {
  const char* verb = "ibv_create_qp";
  Lock g(fabric_mutex());
  if (pd->dead) fail(EINVAL, verb, "the PD is destroyed");
  CtxCore* ctx = pd->ctx.get();
  check_alive(ctx, verb);
  if (!init.send_cq || !init.recv_cq) fail(EINVAL, verb, "send_cq and recv_cq are required");
  CqCore* scq = cq_of(init.send_cq, verb);
  CqCore* rcq = cq_of(init.recv_cq, verb);
  if (scq->ctx.get() != ctx || rcq->ctx.get() != ctx)
    fail(EINVAL, verb, "the CQs belong to another context");
  const SoftDeviceOptions& o = ctx->dev->opts;
  SrqCore* srq = init.srq ? srq_of(init.srq, verb) : nullptr;
  if (srq && srq->ctx.get() != ctx) fail(EINVAL, verb, "the SRQ belongs to another context");
  if (srq && srq->pd != pd) fail(EINVAL, verb, "the SRQ belongs to another PD");
  QpCap c = init.cap;
  if (srq) c.max_recv_wr = c.max_recv_sge = 0;  // the SRQ's sizes apply
  check_cap(c.max_send_wr <= o.max_qp_wr, "max_send_wr exceeds the device's max_qp_wr");
  check_cap(c.max_recv_wr <= o.max_qp_wr, "max_recv_wr exceeds the device's max_qp_wr");
  check_cap(c.max_send_sge <= o.max_sge, "max_send_sge exceeds the device's max_sge");
  check_cap(c.max_recv_sge <= o.max_sge, "max_recv_sge exceeds the device's max_sge");
  check_cap(c.max_inline_data <= o.max_inline, "max_inline_data exceeds the device's limit");

  auto q = std::make_shared<QpCore>();
  q->ctx = pd->ctx;
  q->pd = pd;
  q->scq = static_cast<SoftCq*>(init.send_cq)->core;
  q->rcq = static_cast<SoftCq*>(init.recv_cq)->core;
  if (srq) q->srq = static_cast<SoftSrq*>(init.srq)->core;
  q->type = type;
  q->cap = c;
  q->sig_all = init.sq_sig_all;
  q->sq.resize(c.max_send_wr);
  q->sq_sge.resize(size_t(c.max_send_wr) * c.max_send_sge);
  q->sq_inl.resize(size_t(c.max_send_wr) * c.max_inline_data);
  q->rq.resize(c.max_recv_wr);
  q->rq_sge.resize(size_t(c.max_recv_wr) * c.max_recv_sge);

  DeviceCore* dev = ctx->dev.get();
  q->qpn = dev->new_qpn();
  dev->qps.emplace(q->qpn, q.get());
  q->registered = true;
  scq->qps.push_back(q.get());
  if (rcq != scq) rcq->qps.push_back(q.get());
  if (srq) {
    srq->qps.push_back(q.get());
    srq->users.Add(rules::Kind::kQp);
  }
  pd->users.Add(rules::Kind::kQp);
  ctx->children.Add(rules::Kind::kQp, q.get());
  bump_routes();
  auto h = std::make_unique<SoftQp>(q);
  q->handle = h.get();
  return h;
}

uint32_t SoftQp::state() const {
  Lock l(core->mu);
  return core->state;
}

void SoftQp::modify(const QpAttr& a, uint32_t mask) {
  const char* verb = "ibv_modify_qp";
  Lock g(fabric_mutex());
  QpCore* q = core.get();
  if (q->dead) fail(EINVAL, verb, "the QP is destroyed");
  check_alive(q->ctx.get(), verb);
  const uint32_t cur = q->state;
  const uint32_t next = (mask & m::STATE) ? a.state : cur;
  if (next > qp_state::ERR) fail(EINVAL, verb, "unknown target state");
  Transition t = transition(cur, next);
  if (q->type == qp_type::UD) {
    const UdRow row = ud_transition(cur, next);
    t = {row.ok, row.req, row.opt};
  }
  const std::string arrow = std::string(rules::QpStateName(cur)) + " -> " + rules::QpStateName(next);
  if (!t.ok) fail(EINVAL, verb, "illegal transition " + arrow);
  if ((mask & t.req) != t.req)
    fail(EINVAL, verb, "missing required attribute(s) for " + arrow + ": " + mask_names(t.req & ~mask));
  if (mask & ~(t.req | t.opt | m::STATE))
    fail(EINVAL, verb,
         "attribute(s) not allowed for " + arrow + ": " + mask_names(mask & ~(t.req | t.opt | m::STATE)));

  const DeviceCore* dev = q->ctx->dev.get();
  auto bad = [&](bool cond, const char* what) {
    if (cond) fail(EINVAL, verb, what);
  };
  if (mask & m::ACCESS_FLAGS)
    bad(a.access_flags & ~uint32_t(access_flag::LOCAL_WRITE | access_flag::REMOTE_WRITE |
                                   access_flag::REMOTE_READ | access_flag::REMOTE_ATOMIC),
        "unknown QP access flags");
  if (mask & m::PORT) bad(a.port_num < 1 || a.port_num > dev->ports.size(), "no such port");
  if (mask & m::PKEY_INDEX) bad(a.pkey_index >= kPkeyTableLen, "pkey_index out of range");
  if (mask & m::PATH_MTU) bad(a.path_mtu < 1 || a.path_mtu > 5, "path_mtu must be 1..5 (256..4096)");
  if (mask & m::DEST_QPN) bad(a.dest_qp_num > 0xFFFFFF, "dest_qp_num is a 24-bit number");
  if (mask & m::AV) bad(a.ah.is_global && a.ah.sgid_index >= kGidTableLen, "sgid_index out of range");
  if (mask & m::MIN_RNR_TIMER) bad(a.min_rnr_timer > 31, "min_rnr_timer must be 0..31");
  if (mask & m::TIMEOUT) bad(a.timeout > 31, "timeout must be 0..31");
  if (mask & m::RETRY_CNT) bad(a.retry_cnt > 7, "retry_cnt must be 0..7");
  if (mask & m::RNR_RETRY) bad(a.rnr_retry > 7, "rnr_retry must be 0..7");
  if (mask & m::MAX_QP_RD_ATOMIC) bad(a.max_rd_atomic > kMaxRdAtomic, "max_rd_atomic too large");
  if (mask & m::MAX_DEST_RD_ATOMIC)
    bad(a.max_dest_rd_atomic > kMaxRdAtomic, "max_dest_rd_atomic too large");

  if (next == qp_state::RESET) {
    // Like the kernel: outstanding WRs are discarded without completions.
    unschedule(q);
    clear_queues(q);
    q->rnr_count = 0;
    q->attr = QpAttr();
    set_state(q, qp_state::RESET);
    kick_waiters(q);
    bump_routes();
    return;
  }
  if (next == qp_state::ERR) {
    qp_to_error(q, kNoEvent);
    return;
  }
  QpAttr& s = q->attr;
  if (mask & m::ACCESS_FLAGS) s.access_flags = a.access_flags;
  if (mask & m::PKEY_INDEX) s.pkey_index = a.pkey_index;
  if (mask & m::PORT) s.port_num = a.port_num;
  if (mask & m::PATH_MTU) s.path_mtu = a.path_mtu;
  if (mask & m::DEST_QPN) s.dest_qp_num = a.dest_qp_num;
  if (mask & m::RQ_PSN) s.rq_psn = a.rq_psn;
  if (mask & m::SQ_PSN) s.sq_psn = a.sq_psn;
  if (mask & m::MAX_QP_RD_ATOMIC) s.max_rd_atomic = a.max_rd_atomic;
  if (mask & m::MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & m::MIN_RNR_TIMER) s.min_rnr_timer = a.min_rnr_timer;
  if (mask & m::TIMEOUT) s.timeout = a.timeout;
  if (mask & m::RETRY_CNT) s.retry_cnt = a.retry_cnt;
  if (mask & m::RNR_RETRY) s.rnr_retry = a.rnr_retry;
  if (mask & m::AV) s.ah = a.ah;
  if (mask & m::QKEY) s.qkey = a.qkey;
  set_state(q, next);
  bump_routes();
}

// The stored attributes are what modify accepted (a RESET clears them);
// the state is read under mu, where the device thread changes it too.
QpAttr SoftQp::query() {
  const char* verb = "ibv_query_qp";
  Lock g(fabric_mutex());
  QpCore* q = core.get();
  if (q->dead) fail(EINVAL, verb, "the QP is destroyed");
  check_alive(q->ctx.get(), verb);
  QpAttr a = q->attr;
  a.cap = q->cap;
  Lock l(q->mu);
  a.state = q->state;
  return a;
}

// Posting takes only the QP's ring lock: validation and the copy into a
// slot, then a doorbell for the device thread. G is needed only to complete
// WRs at once on an errored QP (rare).
void SoftQp::post_send(const SendWr* wrs, size_t n, size_t* bad) {
  const char* verb = "ibv_post_send";
  QpCore* q = core.get();
  if (bad) *bad = 0;
  check_alive(q->ctx.get(), verb);
  const int64_t delay = q->ctx->delay_us.load(std::memory_order_relaxed);
  const int64_t now_ns =
      delay ? std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count()
            : 0;
  std::vector<Wc> flushed;
  size_t posted = 0;
  int err = 0;
  const char* why = nullptr;
  bool appended = false;
  {
    Lock l(q->mu);
    if (q->dead) err = EINVAL, why = "the QP is destroyed";
    for (; !err && posted < n; ++posted) {
      const SendWr& w = wrs[posted];
      const uint32_t op = w.opcode;
      if ((why = rules::MalformedSendWr(w))) {
        err = EINVAL;
        break;
      }
      if (w.sg.size() > q->cap.max_send_sge) {
        err = EINVAL, why = "more SGEs than the QP's max_send_sge";
        break;
      }
      if (q->type == qp_type::UD && (why = ud_refuse(q, w))) {
        err = EINVAL;
        break;
      }
      const bool inl = w.send_flags & send_flag::INLINE;
      uint64_t inl_len = 0;
      if (inl) {
        if (op == wr_opcode::RDMA_READ) {
          err = EINVAL, why = "INLINE is only valid for SEND and RDMA_WRITE";
          break;
        }
        for (const Sge& sg : w.sg) {
          if (!sg.addr && sg.length) err = EINVAL, why = "inline SGE with a null address";
          inl_len += sg.length;
        }
        if (err) break;
        if (inl_len > q->cap.max_inline_data) {
          err = EINVAL, why = "inline data larger than the QP's max_inline_data";
          break;
        }
      }
      if (q->state == qp_state::ERR) {
        // Hardware accepts posts on an errored QP and flushes them at once.
        Wc wc;
        wc.wr_id = w.wr_id;
        wc.status = wc_status::WR_FLUSH_ERR;
        wc.opcode = wc_opcode_of(op);
        wc.qp_num = q->qpn;
        flushed.push_back(wc);
        continue;
      }
      if (q->state != qp_state::RTS) {
        err = EINVAL, why = "the QP is not in RTS";
        break;
      }
      if (q->sq_count >= q->sq.size()) {
        err = ENOMEM, why = "the send queue is full (max_send_wr WRs outstanding)";
        break;
      }
      uint32_t idx = q->sq_head + q->sq_count;
      if (idx >= q->sq.size()) idx -= uint32_t(q->sq.size());
      SendSlot& s = q->sq[idx];
      s.wr_id = w.wr_id;
      s.remote_addr = w.remote_addr;
      s.seq = ++q->sq_seq;
      s.not_before_ns = delay ? now_ns + delay * 1000 : 0;
      s.opcode = op;
      s.flags = w.send_flags;
      s.imm = w.imm;
      s.rkey = w.rkey;
      if (q->type == qp_type::UD) ud_address(w, &s);
      s.compare_add = w.compare_add;
      s.swap = w.swap;
      if (inl) {
        // Copied now: the caller may reuse the buffer as soon as we return.
        uint8_t* dst = q->sq_inline(idx);
        for (const Sge& sg : w.sg) {
          if (sg.length) std::memcpy(dst, reinterpret_cast<const void*>(sg.addr), sg.length);
          dst += sg.length;
        }
        s.inline_len = uint32_t(inl_len);
        s.nsge = 0;
      } else {
        s.inline_len = 0;
        s.nsge = uint32_t(w.sg.size());
        if (s.nsge) std::memcpy(q->sq_sges(idx), w.sg.data(), s.nsge * sizeof(Sge));
      }
      ++q->sq_count;
      appended = true;
    }
  }
  if (!flushed.empty()) {
    Lock g(fabric_mutex());
    for (const Wc& wc : flushed) cq_push(q->scq.get(), wc, false);
  }
  if (appended) schedule(q);
  if (err) {
    if (bad) *bad = posted;
    fail(err, verb, why);
  }
}

void SoftQp::post_recv(const RecvWr* wrs, size_t n, size_t* bad) {
  const char* verb = "ibv_post_recv";
  QpCore* q = core.get();
  if (bad) *bad = 0;
  check_alive(q->ctx.get(), verb);
  std::vector<Wc> flushed;
  size_t posted = 0;
  int err = 0;
  const char* why = nullptr;
  bool kick = false;
  {
    Lock l(q->mu);
    if (q->dead) err = EINVAL, why = "the QP is destroyed";
    // As rxe: a QP on an SRQ has no receive queue of its own.
    if (!err && q->srq) err = EINVAL, why = "the QP receives from an SRQ: post receives to the SRQ";
    for (; !err && posted < n; ++posted) {
      const RecvWr& w = wrs[posted];
      if (w.sg.size() > q->cap.max_recv_sge) {
        err = EINVAL, why = "more SGEs than the QP's max_recv_sge";
        break;
      }
      if (q->state == qp_state::ERR) {
        Wc wc;
        wc.wr_id = w.wr_id;
        wc.status = wc_status::WR_FLUSH_ERR;
        wc.opcode = wc_opcode::RECV;
        wc.qp_num = q->qpn;
        flushed.push_back(wc);
        continue;
      }
      if (q->state == qp_state::RESET) {
        err = EINVAL, why = "the QP is in RESET (receives may be posted from INIT on)";
        break;
      }
      if (q->rq_count >= q->rq.size()) {
        err = ENOMEM, why = "the receive queue is full (max_recv_wr WRs outstanding)";
        break;
      }
      uint32_t idx = q->rq_head + q->rq_count;
      if (idx >= q->rq.size()) idx -= uint32_t(q->rq.size());
      RecvSlot& s = q->rq[idx];
      s.wr_id = w.wr_id;
      s.seq = ++q->rq_seq;
      s.nsge = uint32_t(w.sg.size());
      if (s.nsge) std::memcpy(q->rq_sges(idx), w.sg.data(), s.nsge * sizeof(Sge));
      ++q->rq_count;
    }
    // Requesters parked in an infinite RNR wait register under this lock,
    // so this check cannot miss one.
    kick = posted && !q->waiters.empty();
  }
  if (!flushed.empty() || kick) {
    Lock g(fabric_mutex());
    for (const Wc& wc : flushed) cq_push(q->rcq.get(), wc, false);
    if (kick) kick_waiters(q);
  }
  if (err) {
    if (bad) *bad = posted;
    fail(err, verb, why);
  }
}

// G held. Hardware lets a QP go at any time; peers that send to it later
// simply get no answer (RETRY_EXC_ERR).
static void release(QpCore* q) {
  CtxCore* ctx = q->ctx.get();
  async_purge(ctx, q->handle);
  qp_unroute(q);
  for (CqCore* cq : {q->scq.get(), q->rcq.get()}) {
    auto it = std::find(cq->qps.begin(), cq->qps.end(), q);
    if (it != cq->qps.end()) cq->qps.erase(it);
    if (q->scq == q->rcq) break;
  }
  if (SrqCore* srq = q->srq.get()) {
    auto it = std::find(srq->qps.begin(), srq->qps.end(), q);
    if (it != srq->qps.end()) {
      srq->qps.erase(it);
      srq->users.Drop(rules::Kind::kQp);
    }
  }
  clear_queues(q);
  q->pd->users.Drop(rules::Kind::kQp);
  ctx->children.Remove(rules::Kind::kQp, q);
  {
    Lock l(q->mu);
    q->state = qp_state::RESET;
    q->dead = true;
  }
  q->handle = nullptr;
}

void SoftQp::destroy() {
  ULock g(fabric_mutex());
  QpCore* q = core.get();
  if (q->dead) return;
  wait_unused(g, q->busy);
  if (q->dead) return;
  rules::RefuseBusyQp(async_unacked(q->ctx.get(), q->handle));
  release(q);
}

SoftQp::~SoftQp() {
  ULock g(fabric_mutex());
  wait_unused(g, core->busy);
  if (!core->dead) release(core.get());
}

}  // namespace soft
}  // namespace rxv
