// The count of completion events read from a channel for one CQ and not yet
// acked: what ibv_ack_cq_events may ack (rules::RefuseOverAck) and what must
// be acked before the CQ can go (rules::RefuseBusyCq). Not synchronized: its
// owner says which lock guards it.
#pragma once

#include <cstdint>

#include "rules/refusals.h"

namespace rxv {
namespace rules {

class EventLedger {
 public:
  void Read(uint64_t n = 1) { read_ += n; }
  // Throws OverAck when n exceeds what is unacked.
  void Ack(uint64_t n) {
    RefuseOverAck(n, unacked());
    acked_ += n;
  }
  // Everything read is acked (the caller acks them on the device).
  uint64_t AckAll() {
    uint64_t n = unacked();
    acked_ = read_;
    return n;
  }
  uint64_t unacked() const { return read_ - acked_; }
  uint64_t read() const { return read_; }
  uint64_t acked() const { return acked_; }

 private:
  uint64_t read_ = 0;
  uint64_t acked_ = 0;
};

}  // namespace rules
}  // namespace rxv
