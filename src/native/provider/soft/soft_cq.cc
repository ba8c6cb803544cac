// Completion queue: a fixed-depth ring under its own mutex, the one-shot
// arm, and overrun. Producers (the device thread, flushes, faults) always
// hold G; the consumer (poll) takes only the ring mutex.
#include <algorithm>
#include <cstring>

#include "soft_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace soft {

// Appends n completions under one ring lock. Items past an overrun are lost
// with the CQ.
static void push_batch(CqCore* cq, const CqCore::Staged* items, size_t n) {
  bool fire = false;
  bool overrun = false;
  {
    Lock l(cq->mu);
    if (cq->dead || cq->error) return;  // a broken CQ loses what comes later
    for (size_t i = 0; i < n; ++i) {
      if (cq->count == cq->depth) {
        overrun = true;
        break;
      }
      uint32_t tail = cq->head + cq->count;
      if (tail >= cq->depth) tail -= cq->depth;
      cq->ring[tail] = items[i].wc;
      ++cq->count;
      // Errors satisfy a solicited-only arm too (IB spec: "solicited or
      // unsuccessful").
      if (cq->armed &&
          (!cq->sol_only || items[i].solicited || items[i].wc.status != wc_status::SUCCESS)) {
        cq->armed = false;
        fire = true;
      }
    }
    cq->changes.fetch_add(1, std::memory_order_release);
  }
  if (fire && cq->ch) ch_push(cq->ch.get(), cq, cq->ctx->dup_events ? 2 : 1);
  if (overrun) cq_overrun(cq);
}

void cq_publish(CqCore* cq) {
  if (cq->staged.empty()) return;
  std::vector<CqCore::Staged> items;
  items.swap(cq->staged);
  cq->staged_resp = false;
  push_batch(cq, items.data(), items.size());
  // Keep the capacity: the next turn stages into it without allocating.
  items.clear();
  if (cq->staged.empty()) cq->staged.swap(items);
}

void cq_push(CqCore* cq, const Wc& wc, bool solicited) {
  cq_publish(cq);
  const CqCore::Staged item{wc, solicited};
  push_batch(cq, &item, 1);
}

void cq_overrun(CqCore* cq) {
  {
    Lock l(cq->mu);
    if (cq->error || cq->dead) return;
    cq->error = true;
    cq->armed = false;
    cq->changes.fetch_add(1, std::memory_order_release);
  }
  if (cq->handle) raise_async(cq->ctx.get(), async_event::CQ_ERR, cq->handle, nullptr, 0);
  // Copy: flushing pushes to other CQs, which may overrun in turn and walk
  // their own QP lists; ours must not change under our feet.
  std::vector<QpCore*> qps = cq->qps;
  for (QpCore* q : qps) qp_to_error(q, async_event::QP_FATAL);
}

CqCore* cq_of(Cq* cq, const char* verb) {
  auto* s = dynamic_cast<SoftCq*>(cq);
  if (!s) fail(EINVAL, verb, "not a soft CQ");
  if (s->core->dead) fail(EINVAL, verb, "the CQ is destroyed");
  return s->core.get();
}

int SoftCq::cqe() const { return int(core->depth); }

Channel* SoftCq::channel() const {
  Lock g(fabric_mutex());
  return core->ch ? core->ch->handle : nullptr;
}

static void arm(CqCore* c, bool solicited_only) {
  Lock l(c->mu);
  if (c->dead) fail(EINVAL, "ibv_req_notify_cq", "the CQ is destroyed");
  if (c->error) fail(EIO, "ibv_req_notify_cq", "the CQ is in error (overrun)");
  // Arming for "any" while armed for "solicited" widens the arm, as
  // hardware does; the reverse never narrows it.
  c->sol_only = c->armed ? (c->sol_only && solicited_only) : solicited_only;
  c->armed = true;
}

void SoftCq::req_notify(bool solicited_only) {
  CqCore* c = core.get();
  check_alive(c->ctx.get(), "ibv_req_notify_cq");
  if (!c->has_before_arm.load(std::memory_order_acquire)) {
    arm(c, solicited_only);
    return;
  }
  // Fault: completions land in the window between the caller's last poll
  // and the arm taking effect, so this arm does not see them.
  Lock g(fabric_mutex());
  std::vector<Wc> pending;
  {
    Lock l(c->mu);
    pending.swap(c->before_arm);
    c->has_before_arm.store(false, std::memory_order_release);
  }
  for (const Wc& wc : pending) cq_push(c, wc, false);
  arm(c, solicited_only);
}

int SoftCq::poll(int max, Wc* out) {
  CqCore* c = core.get();
  if (max <= 0) return 0;
  ULock l(c->mu);
  if (c->error || c->dead) {
    const bool dead = c->dead;
    l.unlock();
    if (dead) fail(EINVAL, "ibv_poll_cq", "the CQ is destroyed");
    fail(EIO, "ibv_poll_cq", "the CQ is in error (overrun): completions were lost");
  }
  const uint32_t n = std::min(c->count, uint32_t(max));
  const uint32_t first = std::min(n, c->depth - c->head);
  std::memcpy(out, &c->ring[c->head], first * sizeof(Wc));
  if (n > first) std::memcpy(out + first, &c->ring[0], (n - first) * sizeof(Wc));
  c->head += n;
  if (c->head >= c->depth) c->head -= c->depth;
  c->count -= n;
  return int(n);
}

bool SoftCq::changed_since(uint64_t* mark) {
  const uint64_t now = core->changes.load(std::memory_order_acquire);
  if (now == *mark) return false;
  *mark = now;
  return true;
}

void SoftCq::ack_events(uint32_t n) {
  CqCore* c = core.get();
  if (!c->ch) {
    if (n) fail(EINVAL, "ibv_ack_cq_events", "the CQ has no completion channel");
    return;
  }
  Lock l(c->ch->mu);
  c->events.Ack(n);
}

// G held. force: the handle is going away regardless (destructor).
static void release(CqCore* c, bool force) {
  CtxCore* ctx = c->ctx.get();
  if (!force) {
    rules::RefuseBusyCq(rules::Users::Of(rules::Kind::kQp, c->qps.size()), 0,
                        async_unacked(ctx, c->handle));
  }
  if (ChCore* ch = c->ch.get()) {
    Lock l(ch->mu);
    if (!force) rules::RefuseBusyCq({}, c->events.unacked(), 0);
    // Pending events of this CQ die with it, as in the kernel.
    ch->q.erase(std::remove(ch->q.begin(), ch->q.end(), c), ch->q.end());
    if (ch->q.empty()) ch_clear_signal(ch);
    ch->users.Drop(rules::Kind::kCq);
  }
  async_purge(ctx, c->handle);
  {
    Lock l(c->mu);
    c->dead = true;
    c->armed = false;
    c->changes.fetch_add(1, std::memory_order_release);
  }
  ctx->children.Remove(rules::Kind::kCq, c);
  c->handle = nullptr;
}

void SoftCq::destroy() {
  Lock g(fabric_mutex());
  if (core->dead) return;
  release(core.get(), false);
}

SoftCq::~SoftCq() {
  Lock g(fabric_mutex());
  if (!core->dead) release(core.get(), true);
}

}  // namespace soft
}  // namespace rxv
