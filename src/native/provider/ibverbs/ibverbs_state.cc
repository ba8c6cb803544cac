// The ibverbs provider's shared state (ibverbs_state.h): failures, and what a
// context does for all its children at once (forget a parent, destroy the
// orphans, tear down).
#include "ibverbs_state.h"
#include "ibverbs_objects.h"
#include "ibverbs_ud.h"

#ifdef RXV_HAVE_IBVERBS

#include <fcntl.h>

#include <cerrno>
#include <cstdio>

namespace rxv {
namespace ibv {

void fail(int err, const char* verb, const std::string& detail) {
  throw VerbsError(err != 0 ? err : EIO, verb, detail);
}

void fail_closed(const char* verb) {
  throw VerbsError(ENODEV, verb,
                   "the device context was closed (object released)");
}

int set_nonblock(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return errno;
  if ((flags & O_NONBLOCK) == 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return errno;
  return 0;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void ContextState::forget_parent_locked(const void* p) noexcept {
  using rules::Kind;
  for (IbvQp* q : children.List<IbvQp>(Kind::kQp)) {
    if (q->pd_ == p) q->pd_ = nullptr;
    if (q->send_cq_ == p) q->send_cq_ = nullptr;
    if (q->recv_cq_ == p) q->recv_cq_ = nullptr;
    if (q->srq_ == p) q->srq_ = nullptr;
  }
  for (IbvSrq* s : children.List<IbvSrq>(Kind::kSrq))
    if (s->pd_ == p) s->pd_ = nullptr;
  for (IbvMr* m : children.List<IbvMr>(Kind::kMr))
    if (m->pd_ == p) m->pd_ = nullptr;
  for (IbvAh* a : children.List<IbvAh>(Kind::kAh))
    if (a->pd_ == p) a->pd_ = nullptr;
  for (IbvCq* c : children.List<IbvCq>(Kind::kCq))
    if (c->channel_ == p) c->channel_ = nullptr;
  for (OrphanCq& o : orphan_cqs)
    if (o.channel == p) o.channel = nullptr;
}

void ContextState::retry_orphans_locked() noexcept {
  if (ctx == nullptr) return;
  for (auto it = orphan_cqs.begin(); it != orphan_cqs.end();) {
    if (api->destroy_cq(it->cq) != 0) {
      ++it;
      continue;
    }
    if (it->channel != nullptr) it->channel->users.Drop(rules::Kind::kCq);
    it = orphan_cqs.erase(it);
  }
  for (auto it = orphan_channels.begin(); it != orphan_channels.end();)
    it = api->destroy_comp_channel(*it) == 0 ? orphan_channels.erase(it) : it + 1;
}

void ContextState::teardown_locked() noexcept {
  if (ctx == nullptr) return;
  children.Teardown([](rules::Kind, IbvChild* c) { c->release_locked(); });
  retry_orphans_locked();
  ack_pending_locked(nullptr);
  if (!borrowed) api->close_device(ctx);  // also frees whatever a failed release left
  ctx = nullptr;
  keep.reset();
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
