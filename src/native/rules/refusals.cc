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

void RefuseBusy(Kind self, const Users& users) {
  if (!users.any()) return;
  std::string list;
  size_t listed = 0, kinds = 0;
  for (size_t i = 0; i < kKinds; ++i) kinds += users[static_cast<Kind>(i)] != 0;
  for (size_t i = 0; i < kKinds; ++i) {
    const Kind k = static_cast<Kind>(i);
    if (!users[k]) continue;
    if (listed) list += ++listed == kinds ? " and " : ", ";
    else ++listed;
    list += Count(users[k], (std::string(Noun(k)) + "(s)").c_str());
  }
  Busy(DestroyVerb(self), list + " still use this " + Noun(self) + ": close them first");
}

void RefuseBusyCq(const Users& users, uint64_t unacked_events, size_t unacked_async) {
  RefuseBusy(Kind::kCq, users);
  const char* verb = DestroyVerb(Kind::kCq);
  if (unacked_events) {
    Busy(verb, Count(unacked_events,
                     "events not acknowledged (ack every event read from the channel; "
                     "libibverbs would block here forever)"));
  }
  if (unacked_async) Busy(verb, Count(unacked_async, "async event(s) naming this CQ not acknowledged"));
}

void RefuseBusyQp(size_t unacked_async) {
  if (unacked_async) {
    Busy(DestroyVerb(Kind::kQp), Count(unacked_async, "async event(s) naming this QP not acknowledged"));
  }
}

}  // namespace rules
}  // namespace rxv
