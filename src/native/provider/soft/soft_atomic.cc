// The responder's side of an RC atomic: one read-modify-write of an aligned
// 64-bit word, in the responder's host order (what rxe does; the wire's big
// endian is the NIC's business, never the memory's).
//
// What is indivisible: the device thread runs every atomic holding G, and
// the word changes through one hardware read-modify-write. So an atomic is
// indivisible against every other atomic on every soft device of the
// process, and against every RDMA WRITE or READ of any soft QP: small
// copies also run under G, and a large copy (run without G) marks its MRs
// busy, which the engine waits out before an atomic on one of them. The
// CPU's own plain stores to the word are not ordered against it (only
// JavaScript's Atomics on a shared buffer are), so the device reports
// IBV_ATOMIC_HCA, as rxe does.
//
// Executing one (execute_atomic) is the requester's turn on the device
// thread: the responder's checks, the wait for a large copy, the completion.
#include "soft_engine.h"

namespace rxv {
namespace soft {

uint64_t atomic_apply(uint32_t wr_op, uint64_t* word, uint64_t compare_add, uint64_t swap) {
  if (wr_op == wr_opcode::ATOMIC_FETCH_AND_ADD)
    return __atomic_fetch_add(word, compare_add, __ATOMIC_SEQ_CST);  // wraps modulo 2^64
  uint64_t expected = compare_add;
  // On failure `expected` receives the current value: the original either way.
  __atomic_compare_exchange_n(word, &expected, swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}

// An atomic of s's head WR `w` on responder r (G held; the local SGEs are
// checked and total 8 bytes, the remote address is aligned: post-time rules).
// Returns false when it must wait. Models rxe: no initiator depth
// (max_rd_atomic 0) and the WR never leaves; no responder resources
// (max_dest_rd_atomic 0) or no REMOTE_ATOMIC on the QP is an invalid
// request; a bad rkey, range or MR access is a remote access error.
bool execute_atomic(QpCore* s, QpCore* r, const SendSlot& w, const Sge* lsg) {
  if (!s->attr.max_rd_atomic) return false;  // a later post or modify reschedules it
  if (!(r->attr.access_flags & access_flag::REMOTE_ATOMIC) || !r->attr.max_dest_rd_atomic)
    return nak(s, r, w.seq, async_event::QP_REQ_ERR, wc_status::REM_INV_REQ_ERR);
  MrCore* mr = check_remote(r, w.rkey, w.remote_addr, sizeof(uint64_t), access_flag::REMOTE_ATOMIC);
  if (!mr) return nak(s, r, w.seq, async_event::QP_ACCESS_ERR, wc_status::REM_ACCESS_ERR);
  // A large copy into or out of this MR runs without G: wait it out, so the
  // atomic is indivisible against RDMA WRITEs too.
  if (mr->busy) {
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

}  // namespace soft
}  // namespace rxv
