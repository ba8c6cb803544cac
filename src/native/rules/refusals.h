// The rule book: "fail, never block". libibverbs blocks forever in a
// destroy while events naming the object are unacked, and corrupts its
// counters when acked too often; the kernel refuses to destroy what is still
// in use. Every provider (and the wrap layer above them) asks these rules
// instead of writing its own check, so each refusal has one message.
// Providers sit under this layer as rdma-core's drivers sit under libibverbs:
// they count, the rules decide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "rules/children.h"

namespace rxv {
namespace rules {

// Acking more completion events than were read from the channel and not yet
// acked. A RangeError in JS (util/errors.h): the caller's count is wrong.
class OverAck : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};
void RefuseOverAck(uint64_t n, uint64_t unacked);

// ibv_ack_async_event of an event this context did not deliver, or twice.
void RefuseUnknownAsyncAck(bool delivered);

// These throw VerbsError(EBUSY, the destroy verb, the one message) while
// the object is still in use. Which objects use which, and the generic
// refusal RefuseBusy(kind, users), are in rules/children.h; a CQ and a QP
// are also busy while events naming them are unacked.
void RefuseBusyCq(const Users& qps, uint64_t unacked_events, size_t unacked_async);
void RefuseBusyQp(size_t unacked_async);

}  // namespace rules
}  // namespace rxv
