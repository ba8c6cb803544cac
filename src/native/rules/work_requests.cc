#include "rules/work_requests.h"

namespace rxv {
namespace rules {

const char* MalformedSendWr(const SendWr& w) {
  switch (w.opcode) {
    case wr_opcode::SEND: case wr_opcode::SEND_WITH_IMM: case wr_opcode::RDMA_WRITE:
    case wr_opcode::RDMA_WRITE_WITH_IMM: case wr_opcode::RDMA_READ:
    case wr_opcode::ATOMIC_CMP_AND_SWP: case wr_opcode::ATOMIC_FETCH_AND_ADD:
      break;
    default:
      return "unsupported opcode (SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, "
             "ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD)";
  }
  constexpr uint32_t kKnown =
      send_flag::FENCE | send_flag::SIGNALED | send_flag::SOLICITED | send_flag::INLINE;
  if (w.send_flags & ~kKnown) return "unknown send flags (FENCE, SIGNALED, SOLICITED, INLINE)";
  if (w.opcode == wr_opcode::ATOMIC_CMP_AND_SWP || w.opcode == wr_opcode::ATOMIC_FETCH_AND_ADD)
    return MalformedAtomic(w);
  return nullptr;
}

const char* MalformedAtomic(const SendWr& w) {
  // rxe's provider refuses a misaligned target or a short buffer at post
  // time; hardware would fail the WR later or write 8 bytes whatever the
  // length. One rule everywhere: the word and the buffer are 8 bytes.
  if (w.remote_addr & 7) return "an atomic's remote address must be 8-byte aligned";
  uint64_t total = 0;
  for (const Sge& s : w.sg) total += s.length;
  if (total != 8) return "an atomic's local buffer (the sum of its SGE lengths) must be exactly 8 bytes";
  if (w.send_flags & send_flag::INLINE) return "INLINE is not valid for atomics (the device writes the buffer)";
  return nullptr;
}

const char* QpStateName(uint32_t state) {
  static const char* const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state < sizeof(names) / sizeof(names[0]) ? names[state] : "UNKNOWN";
}

}  // namespace rules
}  // namespace rxv
