// What a UD (datagram) send must be, whatever the provider: a SEND or
// SEND_WITH_IMM naming an address handle. Checked before a WR reaches any
// provider: rdma-core's drivers dereference wr.ud.ah without a look.
#pragma once

#include "provider/provider.h"

namespace rxv {
namespace rules {

// Why `w` cannot be posted on a UD QP, or nullptr when it is well formed.
const char* MalformedUdSendWr(const SendWr& w);

// The qkey a datagram carries: a send qkey with the high bit set means
// "use the sending QP's own qkey" (IB spec 10.2.5, as rxe does).
inline uint32_t EffectiveQkey(uint32_t send_qkey, uint32_t own_qkey) {
  return (send_qkey & 0x80000000u) ? own_qkey : send_qkey;
}

}  // namespace rules
}  // namespace rxv
