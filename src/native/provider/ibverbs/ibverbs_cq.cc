// Completion queue of the ibverbs provider, control path: construction,
// release and destroy (refused while QPs or unacked events use it). Its
// data path (poll, arm, ack) is ibverbs_poll.cc.
#include "ibverbs_objects.h"
#include "rules/refusals.h"

#ifdef RXV_HAVE_IBVERBS

namespace rxv {
namespace ibv {

IbvCq::IbvCq(StatePtr st, IbvChannel* channel)
    : channel_(channel), st_(std::move(st)) {}

IbvCq::~IbvCq() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kCq, this);
  st_->forget_parent_locked(this);
}

void IbvCq::release_locked() noexcept {
  if (cq_ == nullptr) return;
  // Unacked events would make ibv_destroy_cq wait forever: ack them first.
  if (uint64_t n = events.AckAll()) st_->api->ack_cq_events(cq_, static_cast<unsigned>(n));
  st_->ack_pending_locked(this);
  if (st_->api->destroy_cq(cq_) != 0) {
    // Fails (EBUSY) while QPs use it: then it waits for them as an orphan.
    st_->orphan_cqs.push_back({cq_, channel_});
  } else {
    if (channel_ != nullptr) channel_->users.Drop(rules::Kind::kCq);
    st_->retry_orphans_locked();  // it may have been a channel's last CQ
  }
  cq_ = nullptr;
}

int IbvCq::cqe() const { return cq_ != nullptr ? cq_->cqe : 0; }

void IbvCq::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (cq_ == nullptr) return;
  rules::RefuseBusyCq(users, events.unacked(), st_->pending_async.Naming(this));
  int ret = st_->api->destroy_cq(cq_);
  if (ret != 0) fail(ret, "ibv_destroy_cq", "");
  if (channel_ != nullptr) channel_->users.Drop(rules::Kind::kCq);
  st_->retry_orphans_locked();
  cq_ = nullptr;
  st_->children.Remove(rules::Kind::kCq, this);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
