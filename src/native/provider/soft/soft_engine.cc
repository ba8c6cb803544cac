// The device thread: one per open context, playing the NIC for that
// context's QPs. It executes each QP's send queue in order, moving real
// bytes between registered memory and writing completions on both sides.
// The responder side (receive queue, responder's CQ) is driven by the
// requester's thread under G; no responder thread is needed.
//
// The thread sleeps on a condition variable when nothing is runnable and
// wakes for: a post to an RTS QP, a receive posted where a requester waits
// in RNR, a timer (finite RNR retry, injected delay), or stop.
//
// G is process-wide: every context's verbs take it. So a turn is bounded by
// bytes as well as WRs, and a payload above kLockedCopy is copied with G
// released (the MRs and QPs it uses marked busy, see soft_core.h): one
// context's bulk transfers never make another context's verbs wait.
//
// This file is the thread; what it runs is soft_execute.cc (by opcode),
// soft_memory.cc (checks and copies) and soft_atomic.cc (soft_engine.h).
#include <algorithm>

#include "soft_engine.h"
#include "soft_objects.h"

namespace rxv {
namespace soft {

namespace {

constexpr int kBatch = 256;   // WRs per hold of G before letting verbs in
constexpr int kPerQp = 64;    // WRs per QP per turn, for fairness
// Bytes per turn (at least one WR always runs): bounds how long G is held
// for small copies and how long one QP's big WRs keep the others waiting.
constexpr uint64_t kTurnBytes = 1u << 20;

// CQs holding staged completions from the current turn of this thread.
thread_local std::vector<CqCore*> t_dirty;

}  // namespace

void stage(CqCore* cq, const Wc& wc, bool solicited, bool responder) {
  if (cq->staged.empty()) t_dirty.push_back(cq);
  cq->staged.push_back(CqCore::Staged{wc, solicited});
  cq->staged_resp |= responder;
}

// Publishes the turn's completions, responder CQs first: once a requester
// sees its completion, the responder's is already pollable, as on a wire
// where the ACK follows the responder's work.
void publish_all() {
  for (CqCore* cq : t_dirty)
    if (cq->staged_resp) cq_publish(cq);
  for (CqCore* cq : t_dirty) cq_publish(cq);
  t_dirty.clear();
}

void add_timer(QpCore* q, Clock::time_point at) {
  CtxCore* c = q->ctx.get();
  Lock r(c->rmu);
  if (q->in_timed) return;
  q->in_timed = true;
  q->wake_at = at;
  c->timed.push_back(q);
}

namespace {

bool timed(QpCore* q) {
  Lock r(q->ctx->rmu);
  return q->in_timed;
}

uint32_t sq_pending(QpCore* q) {
  Lock l(q->mu);
  return q->sq_count;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

bool runnable(QpCore* q) {
  return !q->dead && q->state == qp_state::RTS && !q->blocked_on &&
         !q->ctx->fatal.load(std::memory_order_relaxed) && sq_pending(q);
}

// G held through gl. Runs up to `max` WRs of q, stopping early once the
// turn's byte budget is spent. Returns how many completed.
int run_qp(ULock& gl, QpCore* q, int max, uint64_t* budget) {
  if (timed(q)) return 0;  // the timer reschedules it
  int n = 0;
  while (n < max && *budget) {
    if (!runnable(q)) return n;
    // The head slot is occupied, and only G holders consume.
    const int64_t nb = q->sq[q->sq_head].not_before_ns;
    if (nb) {
      const int64_t now = now_ns();
      if (now < nb) {
        add_timer(q, Clock::now() + std::chrono::nanoseconds(nb - now));
        return n;
      }
    }
    uint64_t moved = 0;
    const bool done = execute_head(gl, q, &moved);
    *budget -= std::min(*budget, moved);
    if (!done) return n;
    ++n;
  }
  if (runnable(q)) schedule(q);  // more to do: back of the line
  return n;
}

void engine_main(CtxCore* c) {
  std::mutex& g = fabric_mutex();
  std::vector<QpCore*> turn;
  for (;;) {
    {
      // Sleep without G: posts and polls never wait for an idle device.
      ULock r(c->rmu);
      for (;;) {
        if (c->stop) return;
        if (!c->ready.empty()) break;
        Clock::time_point next = Clock::time_point::max();
        for (QpCore* q : c->timed) next = std::min(next, q->wake_at);
        if (next <= Clock::now()) break;
        c->idle = true;
        if (next == Clock::time_point::max())
          c->cv.wait(r);
        else
          c->cv.wait_until(r, next);
        c->idle = false;
      }
    }
    ULock gl(g);
    {
      // Pick the turn under G as well, so no QP in it can be destroyed
      // before it runs (destroy takes G and unschedules).
      Lock r(c->rmu);
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < c->timed.size();) {
        QpCore* q = c->timed[i];
        if (q->wake_at <= now) {
          c->timed[i] = c->timed.back();
          c->timed.pop_back();
          q->in_timed = false;
          if (!q->in_ready) {
            c->ready.push_back(q);
            q->in_ready = true;
          }
        } else {
          ++i;
        }
      }
      turn.clear();
      while (!c->ready.empty() && turn.size() < kBatch / kPerQp) {
        QpCore* q = c->ready.front();
        c->ready.pop_front();
        q->in_ready = false;
        ++q->busy;  // G may be released during the turn: destroy waits
        turn.push_back(q);
      }
    }
    uint64_t budget = kTurnBytes;
    for (QpCore* q : turn) {
      if (budget)
        run_qp(gl, q, kPerQp, &budget);
      else if (runnable(q))
        schedule(q);  // the turn's bytes are spent: back of the line
      publish_all();
      if (--q->busy == 0) fabric_cv().notify_all();
    }
  }
}

}  // namespace

void schedule(QpCore* q) {
  CtxCore* c = q->ctx.get();
  Lock r(c->rmu);
  if (q->in_ready || q->in_timed || c->stop) return;
  c->ready.push_back(q);
  q->in_ready = true;
  if (c->idle) {
    c->idle = false;  // one wake-up is enough
    c->cv.notify_one();
  }
}

void unschedule(QpCore* q) {
  CtxCore* c = q->ctx.get();
  {
    Lock r(c->rmu);
    if (q->in_ready) {
      c->ready.erase(std::find(c->ready.begin(), c->ready.end(), q));
      q->in_ready = false;
    }
    if (q->in_timed) {
      c->timed.erase(std::find(c->timed.begin(), c->timed.end(), q));
      q->in_timed = false;
    }
  }
  if (QpCore* r = q->blocked_on) {
    Lock l(r->mu);
    r->waiters.erase(std::find(r->waiters.begin(), r->waiters.end(), q));
    q->blocked_on = nullptr;
  }
}

void kick_waiters(QpCore* r) {
  std::vector<QpCore*> w;
  {
    Lock l(r->mu);
    if (r->waiters.empty()) return;
    w.swap(r->waiters);
  }
  for (QpCore* s : w) {
    s->blocked_on = nullptr;
    schedule(s);
  }
}

void engine_start(CtxCore* c) { c->thread = std::thread(engine_main, c); }

void engine_stop(CtxCore* c) {
  {
    Lock r(c->rmu);
    c->stop = true;
    c->cv.notify_all();
  }
  if (c->thread.joinable()) c->thread.join();
}

}  // namespace soft
}  // namespace rxv
