// Completion channel of the ibverbs provider: the fd CQ events arrive on,
// read to EAGAIN (get_event), and destroyed once no CQ uses it.
#include "ibverbs_objects.h"
#include "rules/refusals.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <string>

namespace rxv {
namespace ibv {

IbvChannel::IbvChannel(StatePtr st, ibv_comp_channel* ch)
    : st_(std::move(st)), ch_(ch) {}

IbvChannel::~IbvChannel() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kChannel, this);
  st_->forget_parent_locked(this);
}

void IbvChannel::release_locked() noexcept {
  if (ch_ == nullptr) return;
  // Fails (EBUSY) while CQs use it: then it waits for them as an orphan.
  if (st_->api->destroy_comp_channel(ch_) != 0) st_->orphan_channels.push_back(ch_);
  ch_ = nullptr;
}

int IbvChannel::fd() const { return ch_ != nullptr ? ch_->fd : -1; }

bool IbvChannel::get_event(Cq** cq) {
  if (ch_ == nullptr) fail_closed("ibv_get_cq_event");
  for (;;) {
    ibv_cq* raw = nullptr;
    void* cq_ctx = nullptr;
    errno = 0;
    if (st_->api->get_cq_event(ch_, &raw, &cq_ctx) == 0) {
      // cq_context is the IbvCq itself (set by create_cq).
      auto* c = static_cast<IbvCq*>(cq_ctx);
      c->events.Read();
      *cq = c;
      return true;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return false;
    fail(err, "ibv_get_cq_event",
         "reading completion channel fd " + std::to_string(ch_->fd));
  }
}

void IbvChannel::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (ch_ == nullptr) return;
  rules::RefuseBusy(rules::Kind::kChannel, users);
  int ret = st_->api->destroy_comp_channel(ch_);
  if (ret != 0) fail(ret, "ibv_destroy_comp_channel", "");
  ch_ = nullptr;
  st_->children.Remove(rules::Kind::kChannel, this);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
