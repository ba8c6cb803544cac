// Protection domain of the ibverbs provider and the memory regions it
// registers. Its QPs, SRQs and AHs are created in their own files
// (ibverbs_qp.cc, ibverbs_srq.cc, ibverbs_ud.cc).
#include "ibverbs_objects.h"
#include "rules/refusals.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <string>

namespace rxv {
namespace ibv {

IbvPd::IbvPd(StatePtr st, ibv_pd* pd) : st_(std::move(st)), pd_(pd) {}

IbvPd::~IbvPd() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kPd, this);
  st_->forget_parent_locked(this);
}

void IbvPd::release_locked() noexcept {
  if (pd_ == nullptr) return;
  st_->api->dealloc_pd(pd_);  // EBUSY with live children: reclaimed at close
  pd_ = nullptr;
}

std::unique_ptr<Mr> IbvPd::reg_mr(void* addr, size_t length,
                                  uint32_t access) {
  if (pd_ == nullptr) fail_closed("ibv_reg_mr");
  constexpr uint32_t kKnown = access_flag::LOCAL_WRITE |
                              access_flag::REMOTE_WRITE |
                              access_flag::REMOTE_READ |
                              access_flag::REMOTE_ATOMIC;
  if (access & ~kKnown)
    fail(EINVAL, "ibv_reg_mr", "unknown access flags " + hex(access & ~kKnown));
  errno = 0;
  // The exported ibv_reg_mr (not the verbs.h macro): plain access flags only.
  ibv_mr* mr = st_->api->reg_mr(pd_, addr, length, static_cast<int>(access));
  if (mr == nullptr)
    fail(errno, "ibv_reg_mr",
         "registering " + std::to_string(length) + " bytes at " +
             hex(reinterpret_cast<uintptr_t>(addr)) + " with access " +
             hex(access));
  std::lock_guard<std::mutex> lock(st_->mu);
  auto out = std::make_unique<IbvMr>(st_, this, mr, access);
  st_->children.Add(rules::Kind::kMr, out.get());
  users.Add(rules::Kind::kMr);
  return out;
}

void IbvPd::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (pd_ == nullptr) return;
  rules::RefuseBusy(rules::Kind::kPd, users);
  int ret = st_->api->dealloc_pd(pd_);
  if (ret != 0) fail(ret, "ibv_dealloc_pd", "");
  pd_ = nullptr;
  st_->children.Remove(rules::Kind::kPd, this);
}

// ---- MR --------------------------------------------------------------------

IbvMr::IbvMr(StatePtr st, IbvPd* pd, ibv_mr* mr, uint32_t access)
    : pd_(pd),
      st_(std::move(st)),
      mr_(mr),
      lkey_(mr->lkey),
      rkey_(mr->rkey),
      access_(access),
      addr_(reinterpret_cast<uintptr_t>(mr->addr)),
      length_(mr->length) {}

IbvMr::~IbvMr() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kMr, this);
}

void IbvMr::release_locked() noexcept {
  if (mr_ == nullptr) return;
  if (st_->api->dereg_mr(mr_) == 0 && pd_ != nullptr) pd_->users.Drop(rules::Kind::kMr);
  mr_ = nullptr;
}

void IbvMr::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (mr_ == nullptr) return;
  int ret = st_->api->dereg_mr(mr_);
  if (ret != 0) fail(ret, "ibv_dereg_mr", "lkey " + hex(lkey_));
  if (pd_ != nullptr) pd_->users.Drop(rules::Kind::kMr);
  mr_ = nullptr;
  st_->children.Remove(rules::Kind::kMr, this);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
