// The device thread: one per open context, playing the NIC for that
// context's QPs. It executes each QP's send queue in order, moving real
// bytes between registered memory and writing completions on both sides.
// The responder side (receive queue, responder's CQ) is driven by the
// requester's thread under G; no responder thread is needed.
//
// The thread sleeps on a condition variable when nothing is runnable and
// wakes for: a post to an RTS QP, a receive posted where a requester waits
// in RNR, a timer (finite RNR retry, injected delay), or stop.
//
// G is process-wide: every context's verbs take it. So a turn is bounded by
// bytes as well as WRs, and a payload above kLockedCopy is copied with G
// released (the MRs and QPs it uses marked busy, see soft_core.h): one
// context's bulk transfers never make another context's verbs wait.
#include <algorithm>
#include <cstring>

#include "soft_objects.h"
#include "soft_ud.h"

namespace rxv {
namespace soft {

namespace {

constexpr int kBatch = 256;   // WRs per hold of G before letting verbs in
constexpr int kPerQp = 64;    // WRs per QP per turn, for fairness
// Bytes per turn (at least one WR always runs): bounds how long G is held
// for small copies and how long one QP's big WRs keep the others waiting.
constexpr uint64_t kTurnBytes = 1u << 20;
// Copies up to this size run under G (cheaper than releasing it); larger
// ones run without it. kTurnBytes bounds the sum of the small ones.
constexpr uint64_t kLockedCopy = 64u << 10;
// IB min_rnr_timer encoding (microseconds), clamped to 100us..1ms: long
// enough to be a real back-off, short enough that tests stay fast.
std::chrono::microseconds rnr_delay(uint8_t code) {
  static const uint32_t us[32] = {655360, 10,    20,    30,    40,     60,     80,     120,
                                  160,    240,   320,   480,   640,    960,    1280,   1920,
                                  2560,   3840,  5120,  7680,  10240,  15360,  20480,  30720,
                                  40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return std::chrono::microseconds(std::clamp<uint32_t>(us[code & 31], 100, 1000));
}

// CQs holding staged completions from the current turn of this thread.
thread_local std::vector<CqCore*> t_dirty;

void stage(CqCore* cq, const Wc& wc, bool solicited, bool responder) {
  if (cq->staged.empty()) t_dirty.push_back(cq);
  cq->staged.push_back(CqCore::Staged{wc, solicited});
  cq->staged_resp |= responder;
}

// Publishes the turn's completions, responder CQs first: once a requester
// sees its completion, the responder's is already pollable, as on a wire
// where the ACK follows the responder's work.
void publish_all() {
  for (CqCore* cq : t_dirty)
    if (cq->staged_resp) cq_publish(cq);
  for (CqCore* cq : t_dirty) cq_publish(cq);
  t_dirty.clear();
}

void add_timer(QpCore* q, Clock::time_point at) {
  CtxCore* c = q->ctx.get();
  Lock r(c->rmu);
  if (q->in_timed) return;
  q->in_timed = true;
  q->wake_at = at;
  c->timed.push_back(q);
}

bool timed(QpCore* q) {
  Lock r(q->ctx->rmu);
  return q->in_timed;
}

uint32_t sq_pending(QpCore* q) {
  Lock l(q->mu);
  return q->sq_count;
}

uint64_t sge_total(const Sge* sg, uint32_t n) {
  uint64_t t = 0;
  for (uint32_t i = 0; i < n; ++i) t += sg[i].length;
  return t;
}

bool in_bounds(const MrCore* mr, uint64_t addr, uint64_t len) {
  return addr >= mr->addr && len <= mr->length && addr - mr->addr <= mr->length - len;
}

// The MRs whose memory the current WR's copy touches (filled by the checks).
thread_local std::vector<MrCore*> t_mrs;

// Checks the SGEs the data reaches (the first `reach` bytes): key known on
// this device, MR in the QP's PD and not detached, access allowed, range
// inside the MR. Adds the MRs it passes to t_mrs.
bool check_local(DeviceCore* dev, PdCore* pd, const Sge* sg, uint32_t n, uint32_t need,
                 uint64_t reach) {
  uint64_t off = 0;
  for (uint32_t i = 0; i < n && off < reach; ++i) {
    auto it = dev->mrs.find(sg[i].lkey);
    if (it == dev->mrs.end()) return false;
    MrCore* mr = it->second;
    if (mr->pd.get() != pd || (mr->access & need) != need || mr->gone()) return false;
    if (sg[i].length && !in_bounds(mr, sg[i].addr, sg[i].length)) return false;
    if (sg[i].length) t_mrs.push_back(mr);
    off += sg[i].length;
  }
  return true;
}

bool check_remote(QpCore* r, uint32_t rkey, uint64_t addr, uint64_t len, uint32_t need) {
  DeviceCore* dev = r->ctx->dev.get();
  auto it = dev->mrs.find(rkey);
  if (it == dev->mrs.end()) return false;
  MrCore* mr = it->second;
  if (mr->pd != r->pd || (mr->access & need) != need || mr->gone() || !in_bounds(mr, addr, len))
    return false;
  t_mrs.push_back(mr);
  return true;
}

// Both lists cover at least `total` bytes (checked by the callers).
void sg_copy(const Sge* src, const Sge* dst, uint64_t total) {
  uint64_t so = 0, dof = 0;
  while (total) {
    while (src->length == so) ++src, so = 0;
    while (dst->length == dof) ++dst, dof = 0;
    const uint64_t n = std::min({uint64_t(src->length) - so, uint64_t(dst->length) - dof, total});
    // memmove: requester and responder memory may overlap in one process.
    std::memmove(reinterpret_cast<uint8_t*>(dst->addr) + dof,
                 reinterpret_cast<const uint8_t*>(src->addr) + so, n);
    so += n;
    dof += n;
    total -= n;
  }
}

// Both lists snapshotted: once G is released the rings they live in may be
// flushed and refilled by new posts.
thread_local std::vector<Sge> t_src, t_dst;

// G held through gl. Moves `total` bytes from src to dst (the MRs involved
// are in t_mrs, checked). A large copy runs with G released: the MRs and the
// responder are marked busy, so dereg and destroy wait for it, and the
// completions staged so far are published first (their CQs may go once G
// is free). The caller re-checks its WRs afterwards: QPs may have been
// flushed or reset meanwhile.
void move_bytes(ULock& gl, QpCore* r, const Sge* src, uint32_t ns, const Sge* dst, uint32_t nd,
                uint64_t total) {
  // A receive taken from an SRQ is copied under G: another device thread
  // may otherwise pick the same head for another QP of the SRQ meanwhile.
  if (total <= kLockedCopy || r->srq) {
    sg_copy(src, dst, total);
    return;
  }
  t_src.assign(src, src + ns);
  t_dst.assign(dst, dst + nd);
  publish_all();
  for (MrCore* m : t_mrs) ++m->busy;
  ++r->busy;
  gl.unlock();
  sg_copy(t_src.data(), t_dst.data(), total);
  gl.lock();
  bool idle = --r->busy == 0;
  for (MrCore* m : t_mrs) idle |= --m->busy == 0;
  if (idle) fabric_cv().notify_all();
}

// Completes the requester's head WR. The responder-side work that preceded
// it may have flushed this QP (a shared CQ overran); then the WR already
// completed with WR_FLUSH_ERR and `seq` no longer matches.
void finish(QpCore* s, uint64_t seq, uint32_t status, uint32_t byte_len) {
  SendSlot w;
  {
    Lock l(s->mu);
    if (!s->sq_count || s->sq[s->sq_head].seq != seq) return;
    w = s->sq[s->sq_head];
    s->sq_head = s->sq_head + 1 == s->sq.size() ? 0 : s->sq_head + 1;
    --s->sq_count;
  }
  s->rnr_count = 0;
  if (status != wc_status::SUCCESS || (w.flags & send_flag::SIGNALED) || s->sig_all) {
    Wc wc;
    wc.wr_id = w.wr_id;
    wc.status = status;
    wc.opcode = wc_opcode_of(w.opcode);
    wc.byte_len = status == wc_status::SUCCESS ? byte_len : 0;
    wc.qp_num = s->qpn;
    stage(s->scq.get(), wc, false, false);
  }
  if (status != wc_status::SUCCESS) qp_to_error(s, kNoEvent);
}

// The sender's identity a receive completion carries: the LID of the port
// the message left from (soft ports are InfiniBand: every packet has a LRH)
// and the SL it travelled on, the UD WR's address or the RC QP's path.
// Soft ports have LMC 0, so no destination path bits.
void stamp_sender(const QpCore* s, const SendSlot* ud, Wc* wc) {
  const uint32_t port = ud ? ud->av.port_num : s->attr.port_num;
  const DeviceCore* dev = s->ctx->dev.get();
  if (port >= 1 && port <= dev->ports.size()) wc->slid = dev->ports[port - 1].lid;
  wc->sl = uint8_t((ud ? ud->av.sl : s->attr.ah.sl) & 0xF);
}

// Consumes the responder's head receive WR if it is still the one with
// `seq` (a copy outside G may have seen it flushed); false when it is not.
// `ud`: the datagram's WR (its address says where it came from), else RC.
bool recv_complete(QpCore* r, QpCore* s, uint64_t seq, uint32_t status, uint32_t opcode,
                   uint32_t byte_len, bool has_imm, uint32_t imm, bool solicited,
                   uint32_t flags = 0, const SendSlot* ud = nullptr) {
  RecvSlot w;
  if (r->srq) {
    if (!srq_take(r->srq.get(), seq, &w)) return false;
  } else {
    Lock l(r->mu);
    if (!r->rq_count || r->rq[r->rq_head].seq != seq) return false;
    w = r->rq[r->rq_head];
    r->rq_head = r->rq_head + 1 == r->rq.size() ? 0 : r->rq_head + 1;
    --r->rq_count;
  }
  Wc wc;
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.qp_num = r->qpn;
  wc.src_qp = s->qpn;
  if (status == wc_status::SUCCESS) {
    wc.byte_len = byte_len;
    wc.wc_flags = flags;
    stamp_sender(s, ud, &wc);
    if (has_imm) {
      wc.imm = imm;
      wc.wc_flags |= wc_flag::WITH_IMM;
    }
  }
  stage(r->rcq.get(), wc, solicited, true);
  return true;
}

// The responder's head receive (index and seq); false when its RQ is empty.
bool recv_head(QpCore* r, uint32_t* idx, uint64_t* seq) {
  if (r->srq) return srq_head(r->srq.get(), idx, seq);
  Lock l(r->mu);
  if (!r->rq_count) return false;
  *idx = r->rq_head;
  *seq = r->rq[r->rq_head].seq;
  return true;
}

// Receiver not ready. Returns false: the head WR waits (timer or waiter
// list); true when the retries are spent and the WR completed in error.
bool rnr(QpCore* s, QpCore* r, uint64_t seq) {
  if (s->attr.rnr_retry == 7) {  // 7 = retry forever, as in IB
    if (r->srq) {
      if (!srq_park(r->srq.get(), s, r)) schedule(s);
      return false;
    }
    {
      // Registered under r->mu, where post_recv checks for waiters.
      Lock l(r->mu);
      if (!r->rq_count) {
        s->blocked_on = r;
        r->waiters.push_back(s);
        return false;
      }
    }
    schedule(s);  // a receive arrived meanwhile: retry at once
    return false;
  }
  if (s->rnr_count < s->attr.rnr_retry) {
    ++s->rnr_count;
    add_timer(s, Clock::now() + rnr_delay(r->attr.min_rnr_timer));
    return false;
  }
  finish(s, seq, wc_status::RNR_RETRY_EXC_ERR, 0);
  return true;
}

// The scatter list `sg` less its first `skip` bytes, into `out`.
void sg_skip(const Sge* sg, uint32_t n, uint64_t skip, std::vector<Sge>* out) {
  out->clear();
  for (uint32_t i = 0; i < n; ++i) {
    Sge e = sg[i];
    const uint64_t k = std::min<uint64_t>(skip, e.length);
    e.addr += k;
    e.length -= uint32_t(k);
    skip -= k;
    if (e.length) out->push_back(e);
  }
}

// A UD datagram (soft_ud.h says what the model follows). The sender's
// completion is SUCCESS whatever happens past its own port; the receiver's
// receive completes only when the datagram was accepted. UD messages are
// at most one MTU, so the copy always runs under G.
bool execute_ud(QpCore* s, const SendSlot& w, const Sge* lsg, uint32_t lns, uint64_t total) {
  const bool sol = w.flags & send_flag::SOLICITED;
  const bool imm = w.opcode == wr_opcode::SEND_WITH_IMM;
  if (total > ud_mtu_bytes(s)) {
    finish(s, w.seq, wc_status::SUCCESS, 0);  // nothing is sent (C10-93.1.1)
    return true;
  }
  QpCore* r = ud_route(s, w);
  uint32_t ridx;
  uint64_t rseq;
  if (!r || !recv_head(r, &ridx, &rseq)) {  // UD has no RNR: dropped
    finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
    return true;
  }
  const Sge* rsg = recv_sges(r, ridx);
  const uint32_t rns = recv_nsge(r, ridx);
  const uint64_t need = kGrhBytes + total;
  if (need > sge_total(rsg, rns)) {
    // The receive fails and the QP goes to the error state, as on rxe and
    // mlx5 (rxe 6.1 reports the status as LOC_QP_OP_ERR).
    recv_complete(r, s, rseq, wc_status::LOC_LEN_ERR, wc_opcode::RECV, 0, false, 0, sol);
    qp_to_error(r, kNoEvent);
    finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
    return true;
  }
  if (!check_local(r->ctx->dev.get(), r->pd.get(), rsg, rns, access_flag::LOCAL_WRITE, need)) {
    recv_complete(r, s, rseq, wc_status::LOC_PROT_ERR, wc_opcode::RECV, 0, false, 0, sol);
    qp_to_error(r, kNoEvent);
    finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
    return true;
  }
  uint8_t grh[kGrhBytes];
  const bool global = ud_grh(s, w, total, imm, grh);
  if (global) {
    Sge g;
    g.addr = reinterpret_cast<uint64_t>(grh);
    g.length = kGrhBytes;
    sg_copy(&g, rsg, kGrhBytes);
  }
  if (total) {
    static thread_local std::vector<Sge> payload_dst;
    sg_skip(rsg, rns, kGrhBytes, &payload_dst);
    sg_copy(lsg, payload_dst.data(), total);
  }
  recv_complete(r, s, rseq, wc_status::SUCCESS, wc_opcode::RECV, uint32_t(need), imm, w.imm, sol,
                global ? uint32_t(wc_flag::GRH) : 0u, &w);
  finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
  return true;
}

// An atomic of s's head WR `w` on responder r (G held; the local SGEs are
// checked and total 8 bytes, the remote address is aligned: post-time rules).
// Returns false when it must wait. Models rxe: no initiator depth
// (max_rd_atomic 0) and the WR never leaves; no responder resources
// (max_dest_rd_atomic 0) or no REMOTE_ATOMIC on the QP is an invalid
// request; a bad rkey, range or MR access is a remote access error.
bool execute_atomic(QpCore* s, QpCore* r, const SendSlot& w, const Sge* lsg) {
  if (!s->attr.max_rd_atomic) return false;  // a later post or modify reschedules it
  if (!(r->attr.access_flags & access_flag::REMOTE_ATOMIC) || !r->attr.max_dest_rd_atomic) {
    qp_to_error(r, async_event::QP_REQ_ERR);
    finish(s, w.seq, wc_status::REM_INV_REQ_ERR, 0);
    return true;
  }
  if (!check_remote(r, w.rkey, w.remote_addr, sizeof(uint64_t), access_flag::REMOTE_ATOMIC)) {
    qp_to_error(r, async_event::QP_ACCESS_ERR);
    finish(s, w.seq, wc_status::REM_ACCESS_ERR, 0);
    return true;
  }
  // A large copy into or out of this MR runs without G: wait it out, so the
  // atomic is indivisible against RDMA WRITEs too.
  if (t_mrs.back()->busy) {
    add_timer(s, Clock::now() + std::chrono::microseconds(50));
    return false;
  }
  uint64_t orig = atomic_apply(w.opcode, reinterpret_cast<uint64_t*>(w.remote_addr), w.compare_add, w.swap);
  Sge src;
  src.addr = reinterpret_cast<uint64_t>(&orig);
  src.length = sizeof orig;
  sg_copy(&src, lsg, sizeof orig);
  finish(s, w.seq, wc_status::SUCCESS, sizeof orig);
  return true;
}

// Executes the head WR of s (G held through gl; it may be released for the
// copy). Returns false when it must wait (RNR). Adds the bytes it moved to
// *moved.
bool execute_head(ULock& gl, QpCore* s, uint64_t* moved) {
  const uint32_t idx = s->sq_head;
  const SendSlot w = s->sq[idx];
  const uint32_t op = w.opcode;
  const bool inl = w.flags & send_flag::INLINE;
  const bool sol = w.flags & send_flag::SOLICITED;
  const bool imm = op == wr_opcode::SEND_WITH_IMM || op == wr_opcode::RDMA_WRITE_WITH_IMM;
  Sge inline_sge;
  const Sge* lsg;
  uint32_t lns;
  if (inl) {
    inline_sge.addr = reinterpret_cast<uint64_t>(s->sq_inline(idx));
    inline_sge.length = w.inline_len;
    lsg = &inline_sge;
    lns = 1;
  } else {
    lsg = s->sq_sges(idx);
    lns = w.nsge;
  }
  const uint64_t total = sge_total(lsg, lns);
  t_mrs.clear();
  if (total > kMaxMsgSize) {
    finish(s, w.seq, wc_status::LOC_LEN_ERR, 0);
    return true;
  }
  // The device writes the local buffer of a READ or an atomic; it only reads the others.
  const bool writes_local = op == wr_opcode::RDMA_READ || is_atomic(op);
  if (!inl && !check_local(s->ctx->dev.get(), s->pd.get(), lsg, lns,
                           writes_local ? uint32_t(access_flag::LOCAL_WRITE) : 0u, UINT64_MAX)) {
    finish(s, w.seq, wc_status::LOC_PROT_ERR, 0);
    return true;
  }
  if (s->type == qp_type::UD) return execute_ud(s, w, lsg, lns, total);
  QpCore* r = route(s);
  if (!r) {
    // Nobody answers: real hardware retries retry_cnt times, then gives up.
    finish(s, w.seq, wc_status::RETRY_EXC_ERR, 0);
    return true;
  }

  switch (op) {
    case wr_opcode::SEND:
    case wr_opcode::SEND_WITH_IMM: {
      uint32_t ridx;
      uint64_t rseq;
      if (!recv_head(r, &ridx, &rseq)) return rnr(s, r, w.seq);
      // Occupied slots only change under G, which we hold.
      const Sge* rsg = recv_sges(r, ridx);
      const uint32_t rns = recv_nsge(r, ridx);
      if (total > sge_total(rsg, rns)) {
        recv_complete(r, s, rseq, wc_status::LOC_LEN_ERR, wc_opcode::RECV, 0, false, 0, sol);
        qp_to_error(r, kNoEvent);
        finish(s, w.seq, wc_status::REM_INV_REQ_ERR, 0);
        return true;
      }
      if (!check_local(r->ctx->dev.get(), r->pd.get(), rsg, rns, access_flag::LOCAL_WRITE, total)) {
        recv_complete(r, s, rseq, wc_status::LOC_PROT_ERR, wc_opcode::RECV, 0, false, 0, sol);
        qp_to_error(r, kNoEvent);
        finish(s, w.seq, wc_status::REM_OP_ERR, 0);
        return true;
      }
      move_bytes(gl, r, lsg, lns, rsg, rns, total);
      *moved += total;
      // The responder was flushed or reset during the copy: no one took it.
      if (!recv_complete(r, s, rseq, wc_status::SUCCESS, wc_opcode::RECV, uint32_t(total), imm, w.imm, sol)) {
        finish(s, w.seq, wc_status::RETRY_EXC_ERR, 0);
        return true;
      }
      finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
      return true;
    }
    case wr_opcode::RDMA_WRITE:
    case wr_opcode::RDMA_WRITE_WITH_IMM: {
      if (!(r->attr.access_flags & access_flag::REMOTE_WRITE)) {
        // The responder QP was not enabled for RDMA WRITE: NAK invalid
        // request; the responder reports it as an async QP error.
        qp_to_error(r, async_event::QP_REQ_ERR);
        finish(s, w.seq, wc_status::REM_INV_REQ_ERR, 0);
        return true;
      }
      uint32_t ridx = 0;
      uint64_t rseq = 0;
      if (imm && !recv_head(r, &ridx, &rseq)) return rnr(s, r, w.seq);
      if (total && !check_remote(r, w.rkey, w.remote_addr, total, access_flag::REMOTE_WRITE)) {
        qp_to_error(r, async_event::QP_ACCESS_ERR);
        finish(s, w.seq, wc_status::REM_ACCESS_ERR, 0);
        return true;
      }
      if (total) {
        Sge dst;
        dst.addr = w.remote_addr;
        dst.length = uint32_t(total);
        move_bytes(gl, r, lsg, lns, &dst, 1, total);
        *moved += total;
      }
      // byte_len of RECV_RDMA_WITH_IMM is the write's length (rxe, mlx5).
      if (imm && !recv_complete(r, s, rseq, wc_status::SUCCESS, wc_opcode::RECV_RDMA_WITH_IMM,
                                uint32_t(total), true, w.imm, sol)) {
        finish(s, w.seq, wc_status::RETRY_EXC_ERR, 0);
        return true;
      }
      finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
      return true;
    }
    case wr_opcode::RDMA_READ: {
      // No responder resources (max_dest_rd_atomic 0): no READ may be
      // outstanding at the responder, so it refuses each one, as rxe does.
      if (!(r->attr.access_flags & access_flag::REMOTE_READ) || !r->attr.max_dest_rd_atomic) {
        qp_to_error(r, async_event::QP_REQ_ERR);
        finish(s, w.seq, wc_status::REM_INV_REQ_ERR, 0);
        return true;
      }
      if (total && !check_remote(r, w.rkey, w.remote_addr, total, access_flag::REMOTE_READ)) {
        qp_to_error(r, async_event::QP_ACCESS_ERR);
        finish(s, w.seq, wc_status::REM_ACCESS_ERR, 0);
        return true;
      }
      if (total) {
        Sge src;
        src.addr = w.remote_addr;
        src.length = uint32_t(total);
        move_bytes(gl, r, &src, 1, lsg, lns, total);
        *moved += total;
      }
      finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
      return true;
    }
    case wr_opcode::ATOMIC_CMP_AND_SWP:
    case wr_opcode::ATOMIC_FETCH_AND_ADD:
      return execute_atomic(s, r, w, lsg);
    default:  // rejected at post time
      finish(s, w.seq, wc_status::LOC_QP_OP_ERR, 0);
      return true;
  }
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

bool runnable(QpCore* q) {
  return !q->dead && q->state == qp_state::RTS && !q->blocked_on &&
         !q->ctx->fatal.load(std::memory_order_relaxed) && sq_pending(q);
}

// G held through gl. Runs up to `max` WRs of q, stopping early once the
// turn's byte budget is spent. Returns how many completed.
int run_qp(ULock& gl, QpCore* q, int max, uint64_t* budget) {
  if (timed(q)) return 0;  // the timer reschedules it
  int n = 0;
  while (n < max && *budget) {
    if (!runnable(q)) return n;
    // The head slot is occupied, and only G holders consume.
    const int64_t nb = q->sq[q->sq_head].not_before_ns;
    if (nb) {
      const int64_t now = now_ns();
      if (now < nb) {
        add_timer(q, Clock::now() + std::chrono::nanoseconds(nb - now));
        return n;
      }
    }
    uint64_t moved = 0;
    const bool done = execute_head(gl, q, &moved);
    *budget -= std::min(*budget, moved);
    if (!done) return n;
    ++n;
  }
  if (runnable(q)) schedule(q);  // more to do: back of the line
  return n;
}

void engine_main(CtxCore* c) {
  std::mutex& g = fabric_mutex();
  std::vector<QpCore*> turn;
  for (;;) {
    {
      // Sleep without G: posts and polls never wait for an idle device.
      ULock r(c->rmu);
      for (;;) {
        if (c->stop) return;
        if (!c->ready.empty()) break;
        Clock::time_point next = Clock::time_point::max();
        for (QpCore* q : c->timed) next = std::min(next, q->wake_at);
        if (next <= Clock::now()) break;
        c->idle = true;
        if (next == Clock::time_point::max())
          c->cv.wait(r);
        else
          c->cv.wait_until(r, next);
        c->idle = false;
      }
    }
    ULock gl(g);
    {
      // Pick the turn under G as well, so no QP in it can be destroyed
      // before it runs (destroy takes G and unschedules).
      Lock r(c->rmu);
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < c->timed.size();) {
        QpCore* q = c->timed[i];
        if (q->wake_at <= now) {
          c->timed[i] = c->timed.back();
          c->timed.pop_back();
          q->in_timed = false;
          if (!q->in_ready) {
            c->ready.push_back(q);
            q->in_ready = true;
          }
        } else {
          ++i;
        }
      }
      turn.clear();
      while (!c->ready.empty() && turn.size() < kBatch / kPerQp) {
        QpCore* q = c->ready.front();
        c->ready.pop_front();
        q->in_ready = false;
        ++q->busy;  // G may be released during the turn: destroy waits
        turn.push_back(q);
      }
    }
    uint64_t budget = kTurnBytes;
    for (QpCore* q : turn) {
      if (budget)
        run_qp(gl, q, kPerQp, &budget);
      else if (runnable(q))
        schedule(q);  // the turn's bytes are spent: back of the line
      publish_all();
      if (--q->busy == 0) fabric_cv().notify_all();
    }
  }
}

}  // namespace

void schedule(QpCore* q) {
  CtxCore* c = q->ctx.get();
  Lock r(c->rmu);
  if (q->in_ready || q->in_timed || c->stop) return;
  c->ready.push_back(q);
  q->in_ready = true;
  if (c->idle) {
    c->idle = false;  // one wake-up is enough
    c->cv.notify_one();
  }
}

void unschedule(QpCore* q) {
  CtxCore* c = q->ctx.get();
  {
    Lock r(c->rmu);
    if (q->in_ready) {
      c->ready.erase(std::find(c->ready.begin(), c->ready.end(), q));
      q->in_ready = false;
    }
    if (q->in_timed) {
      c->timed.erase(std::find(c->timed.begin(), c->timed.end(), q));
      q->in_timed = false;
    }
  }
  if (QpCore* r = q->blocked_on) {
    Lock l(r->mu);
    r->waiters.erase(std::find(r->waiters.begin(), r->waiters.end(), q));
    q->blocked_on = nullptr;
  }
}

void kick_waiters(QpCore* r) {
  std::vector<QpCore*> w;
  {
    Lock l(r->mu);
    if (r->waiters.empty()) return;
    w.swap(r->waiters);
  }
  for (QpCore* s : w) {
    s->blocked_on = nullptr;
    schedule(s);
  }
}

void engine_start(CtxCore* c) { c->thread = std::thread(engine_main, c); }

void engine_stop(CtxCore* c) {
  {
    Lock r(c->rmu);
    c->stop = true;
    c->cv.notify_all();
  }
  if (c->thread.joinable()) c->thread.join();
}

}  // namespace soft
}  // namespace rxv
