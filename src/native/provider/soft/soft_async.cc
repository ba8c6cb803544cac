// The context's asynchronous event queue (CQ_ERR, QP_FATAL, DEVICE_FATAL,
// PORT_*...). Mirrors the channel: the async fd is readable exactly while
// the queue is non-empty. Delivered events stay "unacked" until
// ack_async_event, and a CQ/QP cannot be destroyed while one names it
// (libibverbs would block in destroy; we report EBUSY instead).
#include "soft_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace soft {

void raise_async(CtxCore* c, uint32_t type, Cq* cq, Qp* qp, uint32_t port, Srq* srq) {
  Lock a(c->amu);
  if (c->afd.fd() < 0) return;  // context closed
  AsyncEvent ev;
  ev.type = type;
  ev.cq = cq;
  ev.qp = qp;
  ev.srq = srq;
  ev.port = port;
  ev.native = reinterpret_cast<void*>(c->next_ev++);
  const bool was_empty = c->aq.empty();
  c->aq.push_back(ev);
  if (was_empty) c->afd.signal();
}

static bool names(const AsyncEvent& ev, const void* obj) {
  return obj && (static_cast<const void*>(ev.cq) == obj || static_cast<const void*>(ev.qp) == obj ||
                 static_cast<const void*>(ev.srq) == obj);
}

// The CQ, QP or SRQ an event names (soft events name at most one).
static const void* named(const AsyncEvent& ev) {
  if (ev.srq) return ev.srq;
  return ev.cq ? static_cast<const void*>(ev.cq) : static_cast<const void*>(ev.qp);
}

size_t async_unacked(CtxCore* c, const void* obj) {
  Lock a(c->amu);
  return obj ? c->delivered.Naming(obj) : 0;
}

void async_purge(CtxCore* c, const void* obj) {
  Lock a(c->amu);
  for (auto it = c->aq.begin(); it != c->aq.end();) {
    if (names(*it, obj))
      it = c->aq.erase(it);
    else
      ++it;
  }
  if (obj) c->delivered.Forget(obj, [](uintptr_t) {});
  if (c->aq.empty()) c->afd.reset();
}

int SoftContext::async_fd() const { return core->afd.fd(); }

bool SoftContext::get_async_event(AsyncEvent* out) {
  CtxCore* c = core.get();
  Lock a(c->amu);
  if (c->afd.fd() < 0) fail(EBADF, "ibv_get_async_event", "the context is closed");
  if (c->aq.empty()) {
    c->afd.reset();  // readiness may have been spurious
    return false;
  }
  AsyncEvent ev = c->aq.front();
  c->aq.pop_front();
  c->delivered.Delivered(reinterpret_cast<uintptr_t>(ev.native), named(ev));
  if (c->aq.empty()) c->afd.reset();
  *out = ev;
  return true;
}

void SoftContext::ack_async_event(const AsyncEvent& ev) {
  CtxCore* c = core.get();
  Lock a(c->amu);
  c->delivered.Acked(reinterpret_cast<uintptr_t>(ev.native));
}

}  // namespace soft
}  // namespace rxv
