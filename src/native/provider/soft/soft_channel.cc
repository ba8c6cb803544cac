// Completion channel: a queue of CQ events behind an eventfd. The fd is
// readable while the queue is non-empty (written on empty -> non-empty,
// drained when get_event empties it), so a level-triggered uv_poll sees the
// same thing it sees on the kernel's channel fd. The one exception: a write
// that lands after the consumer took its event leaves the fd readable over
// an empty queue, one spurious wakeup, which the kernel's fd has too.
#include <algorithm>

#include "soft_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace soft {

void ch_push(ChCore* ch, CqCore* cq, int times) {
  {
    Lock l(ch->mu);
    if (ch->dead) return;
    const bool was_empty = ch->q.empty();
    for (int i = 0; i < times; ++i) ch->q.push_back(cq);
    if (!was_empty) return;
    ch->unread_signals++;
  }
  // Outside mu: the write wakes the consumer, whose get_event takes mu. G,
  // which every producer holds, keeps the fd from being closed meanwhile.
  ch->efd.signal();
}

void ch_clear_signal(ChCore* ch) {
  if (ch->unread_signals == 0) return;  // every write was read: the fd is clear
  const uint64_t took = ch->efd.reset();
  ch->unread_signals -= std::min(took, ch->unread_signals);
}

ChCore* ch_of(Channel* ch, const char* verb) {
  auto* s = dynamic_cast<SoftChannel*>(ch);
  if (!s) fail(EINVAL, verb, "not a soft completion channel");
  if (s->core->dead) fail(EINVAL, verb, "the completion channel is destroyed");
  return s->core.get();
}

int SoftChannel::fd() const { return core->efd.fd(); }

bool SoftChannel::get_event(Cq** out) {
  ChCore* c = core.get();
  Lock l(c->mu);
  if (c->dead) fail(EBADF, "ibv_get_cq_event", "the completion channel is destroyed");
  if (c->q.empty()) {
    ch_clear_signal(c);  // a spurious wakeup: clear it so the poller rests
    return false;
  }
  CqCore* cq = c->q.front();
  c->q.pop_front();
  cq->events.Read();
  // Cleared with the last event, so the caller's next call (the one that
  // finds the queue empty) costs no read.
  if (c->q.empty()) ch_clear_signal(c);
  *out = cq->handle;
  return true;
}

static void release(ChCore* c) {
  {
    Lock l(c->mu);
    c->dead = true;
    c->q.clear();
    c->efd.close();
  }
  c->ctx->children.Remove(rules::Kind::kChannel, c);
  c->handle = nullptr;
}

void SoftChannel::destroy() {
  Lock g(fabric_mutex());
  ChCore* c = core.get();
  if (c->dead) return;
  rules::RefuseBusy(rules::Kind::kChannel, c->users);
  release(c);
}

SoftChannel::~SoftChannel() {
  Lock g(fabric_mutex());
  if (!core->dead) release(core.get());
}

}  // namespace soft
}  // namespace rxv
