// Memory region deregistration. Once destroy() returns no WR can touch the
// memory: the key is gone from the device table that every access goes
// through, and a copy already under way (outside G) has finished: both wait
// for the MR's busy count under G.
#include "soft_objects.h"

namespace rxv {
namespace soft {

static void release(MrCore* m) {
  if (!m->registered) return;
  DeviceCore* dev = m->pd->ctx->dev.get();
  auto it = dev->mrs.find(m->key);
  if (it != dev->mrs.end() && it->second == m) dev->mrs.erase(it);
  m->registered = false;
  m->pd->users.Drop(rules::Kind::kMr);
  m->pd->ctx->children.Remove(rules::Kind::kMr, m);
}

void SoftMr::destroy() {
  ULock g(fabric_mutex());
  wait_unused(g, core->busy);
  release(core.get());
}

void SoftMr::mark_detached() {
  Lock g(fabric_mutex());
  core->detached = true;
}

void SoftMr::watch_owner(std::weak_ptr<void> owner) {
  Lock g(fabric_mutex());
  core->owner = std::move(owner);
  core->watched = true;
}

SoftMr::~SoftMr() {
  ULock g(fabric_mutex());
  wait_unused(g, core->busy);
  release(core.get());
}

}  // namespace soft
}  // namespace rxv
