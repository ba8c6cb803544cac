// Execution of a QP's head WR on the device thread, by opcode: SEND (with
// the responder's receive), RDMA WRITE and READ, UD datagrams, and the
// atomics (soft_atomic.cc); then the requester's completion, or RNR when the
// responder has no receive. The responder side runs here too, under G: no
// responder thread is needed.
#include <algorithm>

#include "soft_engine.h"
#include "soft_ud.h"

namespace rxv {
namespace soft {

namespace {

// IB min_rnr_timer encoding (microseconds), clamped to 100us..1ms: long
// enough to be a real back-off, short enough that tests stay fast.
std::chrono::microseconds rnr_delay(uint8_t code) {
  static const uint32_t us[32] = {655360, 10,    20,    30,    40,     60,     80,     120,
                                  160,    240,   320,   480,   640,    960,    1280,   1920,
                                  2560,   3840,  5120,  7680,  10240,  15360,  20480,  30720,
                                  40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return std::chrono::microseconds(std::clamp<uint32_t>(us[code & 31], 100, 1000));
}

}  // namespace

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

// The responder refuses s's head WR (a NAK): r goes to the error state,
// raising `async_type` there, and the WR completes with `status`. The WR is
// done: returns true, for the execute functions to return.
bool nak(QpCore* s, QpCore* r, uint64_t seq, uint32_t async_type, uint32_t status) {
  qp_to_error(r, async_type);
  finish(s, seq, status, 0);
  return true;
}

namespace {

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

// The responder's head receive cannot take the message (too small, or its
// memory refused): it completes with `status` and r goes to the error
// state, as on rxe and mlx5.
void recv_fail(QpCore* r, QpCore* s, uint64_t rseq, uint32_t status, bool solicited) {
  recv_complete(r, s, rseq, status, wc_opcode::RECV, 0, false, 0, solicited);
  qp_to_error(r, kNoEvent);
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
    // rxe 6.1 reports the status as LOC_QP_OP_ERR.
    recv_fail(r, s, rseq, wc_status::LOC_LEN_ERR, sol);
    finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
    return true;
  }
  if (!check_local(r->ctx->dev.get(), r->pd.get(), rsg, rns, access_flag::LOCAL_WRITE, need)) {
    recv_fail(r, s, rseq, wc_status::LOC_PROT_ERR, sol);
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

// A SEND (with or without immediate) of s's head WR to responder r: into
// the responder's head receive, or RNR when it has none.
bool execute_send(ULock& gl, QpCore* s, QpCore* r, const SendSlot& w, const Sge* lsg, uint32_t lns,
                  uint64_t total, uint64_t* moved) {
  const bool sol = w.flags & send_flag::SOLICITED;
  const bool imm = w.opcode == wr_opcode::SEND_WITH_IMM;
  uint32_t ridx;
  uint64_t rseq;
  if (!recv_head(r, &ridx, &rseq)) return rnr(s, r, w.seq);
  // Occupied slots only change under G, which we hold.
  const Sge* rsg = recv_sges(r, ridx);
  const uint32_t rns = recv_nsge(r, ridx);
  if (total > sge_total(rsg, rns)) {
    recv_fail(r, s, rseq, wc_status::LOC_LEN_ERR, sol);
    finish(s, w.seq, wc_status::REM_INV_REQ_ERR, 0);
    return true;
  }
  if (!check_local(r->ctx->dev.get(), r->pd.get(), rsg, rns, access_flag::LOCAL_WRITE, total)) {
    recv_fail(r, s, rseq, wc_status::LOC_PROT_ERR, sol);
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

// An RDMA WRITE (with or without immediate) or READ of s's head WR on
// responder r. They differ in the access they need, the direction of the
// copy, READ's need for responder resources and the immediate's receive;
// the checks, the move and the completion are one path.
bool execute_rdma(ULock& gl, QpCore* s, QpCore* r, const SendSlot& w, const Sge* lsg, uint32_t lns,
                  uint64_t total, uint64_t* moved) {
  const bool read = w.opcode == wr_opcode::RDMA_READ;
  const bool imm = w.opcode == wr_opcode::RDMA_WRITE_WITH_IMM;
  const uint32_t need = read ? uint32_t(access_flag::REMOTE_READ) : uint32_t(access_flag::REMOTE_WRITE);
  // A responder QP not enabled for the access NAKs an invalid request and
  // reports it as an async QP error. Without responder resources
  // (max_dest_rd_atomic 0) no READ may be outstanding at the responder, so
  // it refuses each one, as rxe does.
  if (!(r->attr.access_flags & need) || (read && !r->attr.max_dest_rd_atomic))
    return nak(s, r, w.seq, async_event::QP_REQ_ERR, wc_status::REM_INV_REQ_ERR);
  uint32_t ridx = 0;
  uint64_t rseq = 0;
  if (imm && !recv_head(r, &ridx, &rseq)) return rnr(s, r, w.seq);
  if (total) {
    if (!check_remote(r, w.rkey, w.remote_addr, total, need))
      return nak(s, r, w.seq, async_event::QP_ACCESS_ERR, wc_status::REM_ACCESS_ERR);
    Sge remote;
    remote.addr = w.remote_addr;
    remote.length = uint32_t(total);
    if (read)
      move_bytes(gl, r, &remote, 1, lsg, lns, total);
    else
      move_bytes(gl, r, lsg, lns, &remote, 1, total);
    *moved += total;
  }
  // byte_len of RECV_RDMA_WITH_IMM is the write's length (rxe, mlx5).
  if (imm && !recv_complete(r, s, rseq, wc_status::SUCCESS, wc_opcode::RECV_RDMA_WITH_IMM,
                            uint32_t(total), true, w.imm, w.flags & send_flag::SOLICITED)) {
    finish(s, w.seq, wc_status::RETRY_EXC_ERR, 0);
    return true;
  }
  finish(s, w.seq, wc_status::SUCCESS, uint32_t(total));
  return true;
}

}  // namespace

// Executes the head WR of s (G held through gl; it may be released for the
// copy). Returns false when it must wait (RNR). Adds the bytes it moved to
// *moved.
bool execute_head(ULock& gl, QpCore* s, uint64_t* moved) {
  const uint32_t idx = s->sq_head;
  const SendSlot w = s->sq[idx];
  const uint32_t op = w.opcode;
  const bool inl = w.flags & send_flag::INLINE;
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
  checks_begin();
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
    case wr_opcode::SEND_WITH_IMM:
      return execute_send(gl, s, r, w, lsg, lns, total, moved);
    case wr_opcode::RDMA_WRITE:
    case wr_opcode::RDMA_WRITE_WITH_IMM:
    case wr_opcode::RDMA_READ:
      return execute_rdma(gl, s, r, w, lsg, lns, total, moved);
    case wr_opcode::ATOMIC_CMP_AND_SWP:
    case wr_opcode::ATOMIC_FETCH_AND_ADD:
      return execute_atomic(s, r, w, lsg);
    default:  // rejected at post time
      finish(s, w.seq, wc_status::LOC_QP_OP_ERR, 0);
      return true;
  }
}

}  // namespace soft
}  // namespace rxv
