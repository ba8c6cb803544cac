// Protection domain: owns MRs and QPs for access checks; destroy is refused
// while either remains.
#include "soft_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace soft {

std::unique_ptr<Mr> SoftPd::reg_mr(void* addr, size_t length, uint32_t access) {
  const char* verb = "ibv_reg_mr";
  Lock g(fabric_mutex());
  PdCore* p = core.get();
  if (p->dead) fail(EINVAL, verb, "the PD is destroyed");
  check_alive(p->ctx.get(), verb);
  // MW_BIND and RELAXED_ORDERING are accepted as no-ops; anything else we do
  // not model (zero-based, on-demand...) is refused rather than ignored.
  constexpr uint32_t kKnown = access_flag::LOCAL_WRITE | access_flag::REMOTE_WRITE |
                              access_flag::REMOTE_READ | access_flag::REMOTE_ATOMIC | 16u |
                              (1u << 20);
  if (access & ~kKnown) fail(EINVAL, verb, "unsupported access flags");
  if ((access & (access_flag::REMOTE_WRITE | access_flag::REMOTE_ATOMIC)) &&
      !(access & access_flag::LOCAL_WRITE))
    fail(EINVAL, verb, "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE");
  if (!addr && length) fail(EINVAL, verb, "null address with a non-zero length");
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a + length < a) fail(EINVAL, verb, "the range wraps around the address space");
  DeviceCore* dev = p->ctx->dev.get();
  auto m = std::make_shared<MrCore>();
  m->pd = core;
  m->addr = a;
  m->length = length;
  m->access = access;
  m->key = dev->new_key();
  dev->mrs.emplace(m->key, m.get());
  m->registered = true;
  p->users.Add(rules::Kind::kMr);
  p->ctx->children.Add(rules::Kind::kMr, m.get());
  return std::make_unique<SoftMr>(std::move(m));
}

std::unique_ptr<Qp> SoftPd::create_rc_qp(const QpInit& init) { return create_qp(core, init); }

void SoftPd::destroy() {
  Lock g(fabric_mutex());
  PdCore* p = core.get();
  if (p->dead) return;
  rules::RefuseBusy(rules::Kind::kPd, p->users);
  p->dead = true;
  p->ctx->children.Remove(rules::Kind::kPd, p);
}

SoftPd::~SoftPd() {
  Lock g(fabric_mutex());
  if (!core->dead) {
    core->dead = true;
    core->ctx->children.Remove(rules::Kind::kPd, core.get());
  }
}

}  // namespace soft
}  // namespace rxv
