// Fault injection (rxv::Faults), for tests that need the failures real
// hardware produces rarely: overrun, error completions, odd events, races,
// slow devices, device and port failures.
#include "soft_cm_bridge.h"
#include "soft_objects.h"

namespace rxv {
namespace soft {

void SoftContext::overrun(Cq* cq) {
  Lock g(fabric_mutex());
  cq_overrun(cq_of(cq, "soft_fault_overrun"));
}

void SoftContext::error_completion(Cq* cq, const Wc& wc) {
  Lock g(fabric_mutex());
  cq_push(cq_of(cq, "soft_fault_error_completion"), wc, false);
}

void SoftContext::empty_event(Cq* cq) {
  Lock g(fabric_mutex());
  CqCore* c = cq_of(cq, "soft_fault_empty_event");
  if (!c->ch) fail(EINVAL, "soft_fault_empty_event", "the CQ has no completion channel");
  ch_push(c->ch.get(), c, 1);
}

void SoftContext::spurious_wakeup(Channel* ch) {
  Lock g(fabric_mutex());
  ChCore* c = ch_of(ch, "soft_fault_spurious_wakeup");
  Lock l(c->mu);
  c->unread_signals++;
  c->efd.signal();
}

void SoftContext::completion_before_arm(Cq* cq, const Wc& wc) {
  Lock g(fabric_mutex());
  CqCore* c = cq_of(cq, "soft_fault_completion_before_arm");
  Lock l(c->mu);
  c->before_arm.push_back(wc);
  c->has_before_arm.store(true, std::memory_order_release);
}

void SoftContext::delay_us(uint32_t us) {
  Lock g(fabric_mutex());
  core->delay_us = us;
}

void SoftContext::duplicate_events(bool on) {
  Lock g(fabric_mutex());
  core->dup_events = on;
}

// Device-wide, like a dying NIC: every context open on the device gets
// DEVICE_FATAL. A context opened later sees a fresh (recovered) device.
// The soft CM hears of it after G is released (its ids get DEVICE_REMOVAL).
void SoftContext::device_fatal() {
  {
    Lock g(fabric_mutex());
    for (CtxCore* c : std::vector<CtxCore*>(core->dev->contexts)) make_fatal(c);
  }
  notify_device_fatal(core->dev->name);
}

// Port events concern port 1 and every context open on the device.
// PORT_ERR takes the port down (peers then get RETRY_EXC_ERR), PORT_ACTIVE
// brings it back.
void SoftContext::port_event(uint32_t type) {
  using namespace async_event;
  if (type != PORT_ACTIVE && type != PORT_ERR && type != LID_CHANGE && type != PKEY_CHANGE &&
      type != SM_CHANGE && type != CLIENT_REREGISTER && type != GID_CHANGE)
    fail(EINVAL, "soft_fault_port_event", "not a port event type");
  Lock g(fabric_mutex());
  DeviceCore* d = core->dev.get();
  if (type == PORT_ERR) d->ports[0].state = port_state::DOWN;
  if (type == PORT_ACTIVE) d->ports[0].state = port_state::ACTIVE;
  bump_routes();
  for (CtxCore* c : d->contexts) raise_async(c, type, nullptr, nullptr, 1);
}

}  // namespace soft
}  // namespace rxv
