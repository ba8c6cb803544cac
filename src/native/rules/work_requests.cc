#include "rules/work_requests.h"

namespace rxv {
namespace rules {

const char* MalformedSendWr(const SendWr& w) {
  switch (w.opcode) {
    case wr_opcode::SEND: case wr_opcode::SEND_WITH_IMM: case wr_opcode::RDMA_WRITE:
    case wr_opcode::RDMA_WRITE_WITH_IMM: case wr_opcode::RDMA_READ:
      break;
    default:
      return "unsupported opcode (SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ)";
  }
  constexpr uint32_t kKnown =
      send_flag::FENCE | send_flag::SIGNALED | send_flag::SOLICITED | send_flag::INLINE;
  if (w.send_flags & ~kKnown) return "unknown send flags (FENCE, SIGNALED, SOLICITED, INLINE)";
  return nullptr;
}

const char* QpStateName(uint32_t state) {
  static const char* const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state < sizeof(names) / sizeof(names[0]) ? names[state] : "UNKNOWN";
}

}  // namespace rules
}  // namespace rxv
