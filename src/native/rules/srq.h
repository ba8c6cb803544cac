// A shared receive queue's limit, for every provider: the limit event fires
// when fewer than `limit` receives remain in the ring, so a limit above the
// ring's capacity could never be met. Refused alike when the SRQ is created
// with a limit (ibv_create_srq) and when it is armed (ibv_modify_srq).
#pragma once

#include <cstdint>

namespace rxv {
namespace rules {

// VerbsError(EINVAL, verb, "srq_limit exceeds max_wr") when limit > max_wr,
// the capacity the device granted.
void RefuseSrqLimit(const char* verb, uint32_t limit, uint32_t max_wr);

}  // namespace rules
}  // namespace rxv
