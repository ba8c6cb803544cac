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

// Each of these throws VerbsError(EBUSY, the destroy verb, the one message)
// when the count says the object is still in use.
void RefuseBusyChannel(size_t cqs);
// A CM event channel still used by ids (rdma_destroy_event_channel would
// leave them without a channel; librdmacm gives no error, we do).
void RefuseBusyCmChannel(size_t ids);
void RefuseBusyCq(size_t qps, uint64_t unacked_events, size_t unacked_async);
void RefuseBusyQp(size_t unacked_async);
void RefuseBusyPd(size_t mrs, size_t qps);
// What a context still has open, by kind (a provider may not count them all).
struct OpenChildren {
  size_t pds = 0, cqs = 0, channels = 0, qps = 0, mrs = 0;
};
void RefuseBusyContext(const OpenChildren& open);

}  // namespace rules
}  // namespace rxv
