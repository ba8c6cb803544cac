// Address handles: a PD's named destinations for UD sends. Nothing counts
// an AH's users (as in the kernel): WRs copy its address when posted.
#include "soft_ud.h"

namespace rxv {
namespace soft {

namespace {

// G held.
void release(AhCore* a) {
  if (a->dead) return;
  a->dead = true;
  a->pd->users.Drop(rules::Kind::kAh);
  a->pd->ctx->children.Remove(rules::Kind::kAh, a);
}

}  // namespace

std::unique_ptr<Ah> SoftPd::create_ah(const AddressVector& av) {
  const char* verb = "ibv_create_ah";
  Lock g(fabric_mutex());
  PdCore* p = core.get();
  if (p->dead) fail(EINVAL, verb, "the PD is destroyed");
  check_alive(p->ctx.get(), verb);
  const DeviceCore* dev = p->ctx->dev.get();
  if (av.port_num < 1 || av.port_num > dev->ports.size()) fail(EINVAL, verb, "no such port");
  if (av.sl > 15) fail(EINVAL, verb, "sl must be 0..15");
  if (av.is_global) {
    // Only index 0 holds a GID on a soft port; the kernel refuses an
    // empty entry the same way.
    if (av.sgid_index != 0)
      fail(EINVAL, verb, "sgid_index " + std::to_string(av.sgid_index) + " names no GID (soft ports have GID 0 only)");
    if (av.flow_label > 0xFFFFF) fail(EINVAL, verb, "flow_label is a 20-bit number");
  } else if (av.dlid == 0) {
    fail(EINVAL, verb, "a LID-routed address needs a non-zero dlid (or a dgid)");
  }
  auto a = std::make_shared<AhCore>();
  a->pd = core;
  a->av = av;
  p->users.Add(rules::Kind::kAh);
  p->ctx->children.Add(rules::Kind::kAh, a.get());
  return std::make_unique<SoftAh>(std::move(a));
}

void SoftAh::destroy() {
  Lock g(fabric_mutex());
  release(core.get());
}

SoftAh::~SoftAh() {
  Lock g(fabric_mutex());
  release(core.get());
}

}  // namespace soft
}  // namespace rxv
