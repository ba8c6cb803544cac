// The ibverbs provider's shared state: what a context and all its children
// hold together (the registry that tears them down in a safe order, the
// orphans whose destroy must wait, the async events not yet acked), and
// the failures every object throws.
//
// Threading: one Context and its children are used from one thread at a time
// (the addon's environment thread). The registry mutex only guards the
// teardown paths against a child destructed concurrently elsewhere.
#pragma once

#ifdef RXV_HAVE_IBVERBS

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../provider.h"
#include "ibverbs_loader.h"
#include "rules/async_ledger.h"
#include "rules/children.h"

namespace rxv {
namespace ibv {

class IbvChannel;

// errno-style failure -> VerbsError (err 0 becomes EIO so codes are never 0).
[[noreturn]] void fail(int err, const char* verb, const std::string& detail);

// What every object of this provider is to its context's registry: a child
// the context's teardown releases (rules::Registry walks them in the safe
// order). Caller holds the context's mu.
class IbvChild {
 public:
  virtual ~IbvChild() = default;
  virtual void release_locked() noexcept = 0;
};

// Shared by a context and all its children. Outlives the Context object while
// children exist (they hold it through shared_ptr).
struct ContextState {
  const Api* api = nullptr;
  ibv_context* ctx = nullptr;  // null once closed
  std::string device;          // name, for messages
  // A context librdmacm opened and lends us (borrow_context): never closed
  // here; `keep` holds librdmacm's device open while we use it.
  bool borrowed = false;
  std::shared_ptr<void> keep;
  std::mutex mu;
  rules::Registry<IbvChild> children;
  // Handles whose wrapper went away (GC finalizers run in any order) while
  // other objects still used them, so their destroy verb said EBUSY. They
  // are destroyed once their users are (retry_orphans_locked): a channel
  // is a file descriptor of its own, which closing the device does not close.
  struct OrphanCq {
    ibv_cq* cq;
    IbvChannel* channel;  // its wrapper, for its users; null once gone
  };
  std::vector<OrphanCq> orphan_cqs;
  std::vector<ibv_comp_channel*> orphan_channels;
  // Async events returned by get_async_event and not yet acked (heap copies;
  // AsyncEvent::native points at one), by the IbvCq or IbvQp they name.
  rules::AsyncLedger<ibv_async_event*> pending_async;

  // Releases every child still registered, in the rule book's teardown
  // order, acks pending events and closes the device. Best effort,
  // never throws. Caller holds mu.
  void teardown_locked() noexcept;
  // Parent `p` is going away: null every child's pointer to it.
  void forget_parent_locked(const void* p) noexcept;
  // Destroys the orphans nothing uses any more (CQs first: they hold their
  // channel). Called after every destroy that may have freed one.
  void retry_orphans_locked() noexcept;
  // Acks (and frees) the pending async events naming `object` (a CQ or QP
  // going away), or every one when it is nullptr.
  void ack_pending_locked(const void* object) noexcept {
    pending_async.Forget(object, [this](ibv_async_event* ev) {
      api->ack_async_event(ev);
      delete ev;
    });
  }
};
using StatePtr = std::shared_ptr<ContextState>;

// Thrown by any verb on an object whose context was torn down under it.
[[noreturn]] void fail_closed(const char* verb);

// Sets O_NONBLOCK on fd; returns 0 or errno.
int set_nonblock(int fd);
// `v` as 0x-prefixed hex, for messages (keys, addresses, flags, masks).
std::string hex(uint64_t v);

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
