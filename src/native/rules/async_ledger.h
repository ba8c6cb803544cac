// The async events a context handed out and that are not yet acked, with
// the CQ or QP each names (none for device and port events). libibverbs'
// ibv_destroy_cq and ibv_destroy_qp wait for those acks forever, so a
// destroy asks Naming() and is refused (rules::RefuseBusyCq/Qp); an ack of an
// event that is not open is refused (rules::RefuseUnknownAsyncAck). `Event`
// is the provider's identity of an event. Not synchronized: its owner says
// which lock guards it.
#pragma once

#include <cstddef>
#include <map>

#include "rules/refusals.h"

namespace rxv {
namespace rules {

template <typename Event>
class AsyncLedger {
 public:
  // `object`: the provider's CQ or QP the event names, or nullptr.
  void Delivered(Event ev, const void* object) { open_.emplace(ev, object); }
  void Acked(Event ev) {
    auto it = open_.find(ev);
    RefuseUnknownAsyncAck(it != open_.end());
    open_.erase(it);
  }
  size_t Naming(const void* object) const {
    size_t n = 0;
    for (const auto& [ev, named] : open_) n += named == object;
    return n;
  }
  // Forgets the events naming `object` (every event when it is nullptr),
  // calling release(ev) for each: the object (or context) goes, and the
  // provider acks them on the device if it must.
  template <typename Release>
  void Forget(const void* object, Release release) {
    for (auto it = open_.begin(); it != open_.end();) {
      if (object == nullptr || it->second == object) {
        release(it->first);
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  std::map<Event, const void*> open_;
};

}  // namespace rules
}  // namespace rxv
