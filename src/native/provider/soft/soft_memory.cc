// The memory a WR reaches, for the device thread: its checks (key, PD,
// access, range) and the copies between scatter lists, a large one with G
// released so that one context's bulk transfer never holds up another's
// verbs.
#include <algorithm>
#include <cstring>

#include "soft_engine.h"

namespace rxv {
namespace soft {

namespace {

// Copies up to this size run under G (cheaper than releasing it); larger
// ones run without it. kTurnBytes bounds the sum of the small ones.
constexpr uint64_t kLockedCopy = 64u << 10;

bool in_bounds(const MrCore* mr, uint64_t addr, uint64_t len) {
  return addr >= mr->addr && len <= mr->length && addr - mr->addr <= mr->length - len;
}

// The MRs whose memory the current WR's copy touches (filled by the checks).
thread_local std::vector<MrCore*> t_mrs;

// Both lists snapshotted: once G is released the rings they live in may be
// flushed and refilled by new posts.
thread_local std::vector<Sge> t_src, t_dst;

}  // namespace

void checks_begin() { t_mrs.clear(); }

// Checks the SGEs the data reaches (the first `reach` bytes): key known on
// this device, MR in the QP's PD and not detached, access allowed, range
// inside the MR. Adds the MRs it passes to t_mrs.
bool check_local(DeviceCore* dev, PdCore* pd, const Sge* sg, uint32_t n, uint32_t need,
                 uint64_t reach) {
  uint64_t off = 0;
  for (uint32_t i = 0; i < n && off < reach; ++i) {
    auto it = dev->mrs.find(sg[i].lkey);
    if (it == dev->mrs.end()) return false;
    MrCore* mr = it->second;
    if (mr->pd.get() != pd || (mr->access & need) != need || mr->gone()) return false;
    if (sg[i].length && !in_bounds(mr, sg[i].addr, sg[i].length)) return false;
    if (sg[i].length) t_mrs.push_back(mr);
    off += sg[i].length;
  }
  return true;
}

// Checks the responder's range [addr, addr + len) under `rkey` as
// check_local does the SGEs. Returns the MR (added to t_mrs), or nullptr.
MrCore* check_remote(QpCore* r, uint32_t rkey, uint64_t addr, uint64_t len, uint32_t need) {
  DeviceCore* dev = r->ctx->dev.get();
  auto it = dev->mrs.find(rkey);
  if (it == dev->mrs.end()) return nullptr;
  MrCore* mr = it->second;
  if (mr->pd != r->pd || (mr->access & need) != need || mr->gone() || !in_bounds(mr, addr, len))
    return nullptr;
  t_mrs.push_back(mr);
  return mr;
}

// Both lists cover at least `total` bytes (checked by the callers).
void sg_copy(const Sge* src, const Sge* dst, uint64_t total) {
  uint64_t so = 0, dof = 0;
  while (total) {
    while (src->length == so) ++src, so = 0;
    while (dst->length == dof) ++dst, dof = 0;
    const uint64_t n = std::min({uint64_t(src->length) - so, uint64_t(dst->length) - dof, total});
    // memmove: requester and responder memory may overlap in one process.
    std::memmove(reinterpret_cast<uint8_t*>(dst->addr) + dof,
                 reinterpret_cast<const uint8_t*>(src->addr) + so, n);
    so += n;
    dof += n;
    total -= n;
  }
}

// The scatter list `sg` less its first `skip` bytes, into `out`.
void sg_skip(const Sge* sg, uint32_t n, uint64_t skip, std::vector<Sge>* out) {
  out->clear();
  for (uint32_t i = 0; i < n; ++i) {
    Sge e = sg[i];
    const uint64_t k = std::min<uint64_t>(skip, e.length);
    e.addr += k;
    e.length -= uint32_t(k);
    skip -= k;
    if (e.length) out->push_back(e);
  }
}

// G held through gl. Moves `total` bytes from src to dst (the MRs involved
// are in t_mrs, checked). A large copy runs with G released: the MRs and the
// responder are marked busy, so dereg and destroy wait for it, and the
// completions staged so far are published first (their CQs may go once G
// is free). The caller re-checks its WRs afterwards: QPs may have been
// flushed or reset meanwhile.
void move_bytes(ULock& gl, QpCore* r, const Sge* src, uint32_t ns, const Sge* dst, uint32_t nd,
                uint64_t total) {
  // A receive taken from an SRQ is copied under G: another device thread
  // may otherwise pick the same head for another QP of the SRQ meanwhile.
  if (total <= kLockedCopy || r->srq) {
    sg_copy(src, dst, total);
    return;
  }
  t_src.assign(src, src + ns);
  t_dst.assign(dst, dst + nd);
  publish_all();
  for (MrCore* m : t_mrs) ++m->busy;
  ++r->busy;
  gl.unlock();
  sg_copy(t_src.data(), t_dst.data(), total);
  gl.lock();
  bool idle = --r->busy == 0;
  for (MrCore* m : t_mrs) idle |= --m->busy == 0;
  if (idle) fabric_cv().notify_all();
}

}  // namespace soft
}  // namespace rxv
