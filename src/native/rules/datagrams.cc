#include "rules/datagrams.h"

namespace rxv {
namespace rules {

const char* MalformedUdSendWr(const SendWr& w) {
  if (w.opcode != wr_opcode::SEND && w.opcode != wr_opcode::SEND_WITH_IMM)
    return "a UD QP sends only SEND and SEND_WITH_IMM";
  if (w.ah == nullptr) return "a UD send needs an address handle (ah)";
  if (w.remote_qpn > 0xFFFFFF) return "remote_qpn is a 24-bit number";
  return nullptr;
}

}  // namespace rules
}  // namespace rxv
