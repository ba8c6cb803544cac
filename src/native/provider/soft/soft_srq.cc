// Shared receive queue: one ring of receives that every QP created on it
// draws from, one receive per incoming message, in posting order, whichever
// QP the message arrives on. The limit event, validation and errnos follow
// rxe (rdma-core's providers/rxe and the kernel's rxe_srq.c): a full ring is
// ENOMEM, too many SGEs EINVAL, a limit above the ring's capacity EINVAL
// (rules/srq.h: when armed, as rxe, and at creation, where rxe does not
// look), and SRQ_LIMIT_REACHED fires once when a consumption leaves fewer
// receives than the armed limit, which then disarms itself.
#include <cstring>

#include "soft_objects.h"
#include "rules/refusals.h"
#include "rules/srq.h"

namespace rxv {
namespace soft {

SrqCore* srq_of(Srq* srq, const char* verb) {
  auto* s = dynamic_cast<SoftSrq*>(srq);
  if (!s) fail(EINVAL, verb, "not a soft SRQ");
  if (s->core->dead) fail(EINVAL, verb, "the SRQ is destroyed");
  return s->core.get();
}

std::unique_ptr<Srq> create_srq(const std::shared_ptr<PdCore>& pd, const SrqAttr& attr) {
  const char* verb = "ibv_create_srq";
  Lock g(fabric_mutex());
  if (pd->dead) fail(EINVAL, verb, "the PD is destroyed");
  CtxCore* ctx = pd->ctx.get();
  check_alive(ctx, verb);
  const SoftDeviceOptions& o = ctx->dev->opts;
  if (attr.max_wr < 1 || attr.max_wr > o.max_qp_wr)
    fail(EINVAL, verb, "max_wr must be 1.." + std::to_string(o.max_qp_wr));
  if (attr.max_sge > o.max_sge) fail(EINVAL, verb, "max_sge exceeds the device's max_sge");
  rules::RefuseSrqLimit(verb, attr.srq_limit, attr.max_wr);  // the ring holds max_wr exactly
  auto q = std::make_shared<SrqCore>();
  q->ctx = pd->ctx;
  q->pd = pd;
  q->max_sge = attr.max_sge;
  q->ring.resize(attr.max_wr);
  q->sge.resize(size_t(attr.max_wr) * attr.max_sge);
  q->limit = attr.srq_limit;
  pd->users.Add(rules::Kind::kSrq);
  ctx->children.Add(rules::Kind::kSrq, q.get());
  auto h = std::make_unique<SoftSrq>(q);
  q->handle = h.get();
  return h;
}

std::unique_ptr<Srq> SoftPd::create_srq(const SrqAttr& attr) { return soft::create_srq(core, attr); }

SrqAttr SoftSrq::query() {
  SrqCore* q = core.get();
  Lock l(q->mu);
  if (q->dead) fail(EINVAL, "ibv_query_srq", "the SRQ is destroyed");
  SrqAttr a;
  a.max_wr = uint32_t(q->ring.size());
  a.max_sge = q->max_sge;
  a.srq_limit = q->limit;
  return a;
}

void SoftSrq::arm(uint32_t limit) {
  const char* verb = "ibv_modify_srq";
  SrqCore* q = core.get();
  check_alive(q->ctx.get(), verb);
  Lock l(q->mu);
  if (q->dead) fail(EINVAL, verb, "the SRQ is destroyed");
  rules::RefuseSrqLimit(verb, limit, uint32_t(q->ring.size()));
  // Armed below the current fill it waits; armed above it, nothing fires
  // until the next consumption (as rxe: the check runs when a receive is taken).
  q->limit = limit;
}

void SoftSrq::post_recv(const RecvWr* wrs, size_t n, size_t* bad) {
  const char* verb = "ibv_post_srq_recv";
  SrqCore* q = core.get();
  if (bad) *bad = 0;
  check_alive(q->ctx.get(), verb);
  size_t posted = 0;
  int err = 0;
  const char* why = nullptr;
  bool kick = false;
  {
    Lock l(q->mu);
    if (q->dead) err = EINVAL, why = "the SRQ is destroyed";
    for (; !err && posted < n; ++posted) {
      const RecvWr& w = wrs[posted];
      if (q->count >= q->ring.size()) {
        err = ENOMEM, why = "the SRQ is full (max_wr receives outstanding)";
        break;
      }
      if (w.sg.size() > q->max_sge) {
        err = EINVAL, why = "more SGEs than the SRQ's max_sge";
        break;
      }
      uint32_t idx = q->head + q->count;
      if (idx >= q->ring.size()) idx -= uint32_t(q->ring.size());
      RecvSlot& s = q->ring[idx];
      s.wr_id = w.wr_id;
      s.seq = ++q->seq;
      s.nsge = uint32_t(w.sg.size());
      if (s.nsge) std::memcpy(q->sges(idx), w.sg.data(), s.nsge * sizeof(Sge));
      ++q->count;
    }
    // A parked requester registered under this lock (srq_park), so this
    // check cannot miss one.
    kick = posted && q->waiting;
    if (kick) q->waiting = false;
  }
  if (kick) {
    Lock g(fabric_mutex());
    for (QpCore* r : q->qps) kick_waiters(r);
  }
  if (err) {
    if (bad) *bad = posted;
    fail(err, verb, why);
  }
}

bool srq_head(SrqCore* q, uint32_t* idx, uint64_t* seq) {
  Lock l(q->mu);
  if (!q->count) return false;
  *idx = q->head;
  *seq = q->ring[q->head].seq;
  return true;
}

bool srq_take(SrqCore* q, uint64_t seq, RecvSlot* out) {
  Lock l(q->mu);
  if (!q->count || q->ring[q->head].seq != seq) return false;
  *out = q->ring[q->head];
  q->head = q->head + 1 == q->ring.size() ? 0 : q->head + 1;
  --q->count;
  if (q->limit && q->count < q->limit) {
    q->limit = 0;
    if (q->handle) raise_async(q->ctx.get(), async_event::SRQ_LIMIT_REACHED, nullptr, nullptr, 0, q->handle);
  }
  return true;
}

bool srq_park(SrqCore* q, QpCore* s, QpCore* r) {
  Lock l(q->mu);
  if (q->count) return false;
  q->waiting = true;
  Lock rl(r->mu);
  s->blocked_on = r;
  r->waiters.push_back(s);
  return true;
}

// G held. A QP created on the SRQ no longer counts as its user.
static void release(SrqCore* q) {
  CtxCore* ctx = q->ctx.get();
  async_purge(ctx, q->handle);
  q->pd->users.Drop(rules::Kind::kSrq);
  ctx->children.Remove(rules::Kind::kSrq, q);
  {
    Lock l(q->mu);
    q->dead = true;
    q->count = 0;
  }
  q->handle = nullptr;
}

void SoftSrq::destroy() {
  Lock g(fabric_mutex());
  SrqCore* q = core.get();
  if (q->dead) return;
  rules::RefuseBusy(rules::Kind::kSrq, q->users);
  release(q);
}

SoftSrq::~SoftSrq() {
  Lock g(fabric_mutex());
  if (!core->dead) release(core.get());
}

}  // namespace soft
}  // namespace rxv
