// What no provider may post, whatever the device's limits: a send opcode or
// send flags rx-verbs does not know. Limits that belong to a device (SGE
// counts, inline size, queue depth) are the provider's (the soft device
// checks them; rdma-core's driver and the kernel do on real hardware).
#pragma once

#include "provider/provider.h"

namespace rxv {
namespace rules {

// Why `w` cannot be posted, or nullptr when it is well formed.
const char* MalformedSendWr(const SendWr& w);

// Why an atomic WR cannot be posted (misaligned remote address, a local
// buffer that is not 8 bytes, INLINE), or nullptr.
const char* MalformedAtomic(const SendWr& w);

// rdma-core's name of a QP state ("RESET" ... "ERR"; "UNKNOWN" otherwise).
const char* QpStateName(uint32_t state);

}  // namespace rules
}  // namespace rxv
