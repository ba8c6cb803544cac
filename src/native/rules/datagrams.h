// What a UD (datagram) send must be, whatever the provider: a SEND or
// SEND_WITH_IMM naming an address handle. Checked before a WR reaches any
// provider: rdma-core's drivers dereference wr.ud.ah without a look.
#pragma once

#include "provider/provider.h"

namespace rxv {
namespace rules {

// Why `w` cannot be posted on a UD QP, or nullptr when it is well formed.
const char* MalformedUdSendWr(const SendWr& w);

// A send qkey travels as given, high bit included: the spec's "high bit
// set: use the QP's own qkey" is not what rxe does (checked on rxe0, kernel
// 6.1: such a datagram carries the literal qkey), and rxe is the reference.

}  // namespace rules
}  // namespace rxv
