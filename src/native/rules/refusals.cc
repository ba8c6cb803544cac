#include "rules/refusals.h"

#include <cerrno>
#include <string>

#include "provider/provider.h"

namespace rxv {
namespace rules {

namespace {

[[noreturn]] void Busy(const char* verb, const std::string& why) {
  throw VerbsError(EBUSY, verb, why);
}

std::string Count(uint64_t n, const char* what) { return std::to_string(n) + " " + what; }

}  // namespace

void RefuseOverAck(uint64_t n, uint64_t unacked) {
  if (n <= unacked) return;
  throw OverAck("cannot ack " + std::to_string(n) + " events: only " + std::to_string(unacked) +
                " were delivered and not yet acked");
}

void RefuseUnknownAsyncAck(bool delivered) {
  if (delivered) return;
  throw VerbsError(EINVAL, "ibv_ack_async_event",
                   "this event was not delivered by this context or is already acked");
}

void RefuseBusyChannel(size_t cqs) {
  if (cqs) Busy("ibv_destroy_comp_channel", Count(cqs, "CQ(s) still use this completion channel: close them first"));
}

void RefuseBusyCmChannel(size_t ids) {
  if (ids) {
    Busy("rdma_destroy_event_channel",
         Count(ids, "id(s) still use this CM event channel: close them or migrate them first"));
  }
}

void RefuseBusyCq(size_t qps, uint64_t unacked_events, size_t unacked_async) {
  const char* verb = "ibv_destroy_cq";
  if (qps) Busy(verb, Count(qps, "QP(s) still use this CQ"));
  if (unacked_events) {
    Busy(verb, Count(unacked_events,
                     "events not acknowledged (ack every event read from the channel; "
                     "libibverbs would block here forever)"));
  }
  if (unacked_async) Busy(verb, Count(unacked_async, "async event(s) naming this CQ not acknowledged"));
}

void RefuseBusyQp(size_t unacked_async) {
  if (unacked_async) {
    Busy("ibv_destroy_qp", Count(unacked_async, "async event(s) naming this QP not acknowledged"));
  }
}

void RefuseBusyPd(size_t mrs, size_t qps) {
  if (mrs || qps) {
    Busy("ibv_dealloc_pd", Count(mrs, "MR(s) and ") + Count(qps, "QP(s) still use this PD"));
  }
}

void RefuseBusyContext(const OpenChildren& o) {
  if (!(o.pds || o.cqs || o.channels || o.qps || o.mrs)) return;
  Busy("ibv_close_device", Count(o.qps, "QP(s), ") + Count(o.cqs, "CQ(s), ") +
                               Count(o.mrs, "MR(s), ") + Count(o.pds, "PD(s) and ") +
                               Count(o.channels, "channel(s) still open"));
}

}  // namespace rules
}  // namespace rxv
