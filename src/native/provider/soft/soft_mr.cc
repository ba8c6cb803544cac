// Memory region deregistration. Taking G waits for the device thread's
// current batch, so once destroy() returns no WR can touch the memory: the
// key is gone from the device table that every access goes through.
#include "soft_objects.h"

namespace rxv {
namespace soft {

static void release(MrCore* m) {
  if (!m->registered) return;
  DeviceCore* dev = m->pd->ctx->dev.get();
  auto it = dev->mrs.find(m->key);
  if (it != dev->mrs.end() && it->second == m) dev->mrs.erase(it);
  m->registered = false;
  --m->pd->nmrs;
  m->pd->ctx->mrs.erase(m);
}

void SoftMr::destroy() {
  Guard g(fabric_mutex());
  release(core.get());
}

SoftMr::~SoftMr() {
  Guard g(fabric_mutex());
  release(core.get());
}

}  // namespace soft
}  // namespace rxv
