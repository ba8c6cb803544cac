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
#include "soft_objects.h"

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

}  // namespace soft
}  // namespace rxv
