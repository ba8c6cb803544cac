// The ibverbs provider's shared receive queue: ibv_create_srq and friends,
// plus the counts libibverbs leaves to us (QPs created on it, so destroying
// it while they live is EBUSY from the rule book rather than the kernel's
// bare errno).
#include "ibverbs_objects.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <cstring>

#include "rules/refusals.h"
#include "rules/srq.h"

namespace rxv {
namespace ibv {

std::unique_ptr<Srq> IbvPd::create_srq(const SrqAttr& attr) {
  if (pd_ == nullptr) fail_closed("ibv_create_srq");
  auto srq = std::make_unique<IbvSrq>(st_, this);
  ibv_srq_init_attr ia;
  std::memset(&ia, 0, sizeof ia);
  ia.srq_context = srq.get();  // async events map back through srq_context
  ia.attr.max_wr = attr.max_wr;
  ia.attr.max_sge = attr.max_sge;
  // The limit is armed below, once the SRQ exists: libibverbs documents
  // srq_limit as ignored by ibv_create_srq (mlx5 ignores it), and the rule
  // checks it against what the device granted.
  ia.attr.srq_limit = 0;
  errno = 0;
  ibv_srq* raw = st_->api->create_srq(pd_, &ia);
  if (raw == nullptr)
    fail(errno, "ibv_create_srq",
         "max_wr " + std::to_string(attr.max_wr) + ", max_sge " + std::to_string(attr.max_sge));
  srq->attach(raw);
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    st_->children.Add(rules::Kind::kSrq, srq.get());
    users.Add(rules::Kind::kSrq);
  }
  // On a refusal `srq` goes out of scope: its destructor destroys the SRQ
  // and drops the counts just added.
  if (attr.srq_limit != 0) srq->arm_as(attr.srq_limit, "ibv_create_srq");
  return srq;
}

IbvSrq::IbvSrq(StatePtr st, IbvPd* pd) : pd_(pd), st_(std::move(st)) {}

IbvSrq::~IbvSrq() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kSrq, this);
  st_->forget_parent_locked(this);
}

void IbvSrq::release_locked() noexcept {
  if (srq_ == nullptr) return;
  st_->ack_pending_locked(this);
  if (st_->api->destroy_srq(srq_) == 0 && pd_ != nullptr) pd_->users.Drop(rules::Kind::kSrq);
  srq_ = nullptr;
}

SrqAttr IbvSrq::query() {
  if (srq_ == nullptr) fail_closed("ibv_query_srq");
  ibv_srq_attr a;
  std::memset(&a, 0, sizeof a);
  int ret = st_->api->query_srq(srq_, &a);
  if (ret != 0) fail(ret, "ibv_query_srq", "");
  SrqAttr out;
  out.max_wr = a.max_wr;
  out.max_sge = a.max_sge;
  out.srq_limit = a.srq_limit;
  return out;
}

void IbvSrq::arm(uint32_t limit) { arm_as(limit, "ibv_modify_srq"); }

void IbvSrq::arm_as(uint32_t limit, const char* verb) {
  if (srq_ == nullptr) fail_closed(verb);
  if (limit != 0) rules::RefuseSrqLimit(verb, limit, query().max_wr);
  ibv_srq_attr a;
  std::memset(&a, 0, sizeof a);
  a.srq_limit = limit;
  int ret = st_->api->modify_srq(srq_, &a, IBV_SRQ_LIMIT);
  if (ret != 0) fail(ret, verb, "srq_limit " + std::to_string(limit));
}

void IbvSrq::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (srq_ == nullptr) return;
  rules::RefuseBusy(rules::Kind::kSrq, users);
  st_->ack_pending_locked(this);
  int ret = st_->api->destroy_srq(srq_);
  if (ret != 0) fail(ret, "ibv_destroy_srq", "");
  if (pd_ != nullptr) pd_->users.Drop(rules::Kind::kSrq);
  srq_ = nullptr;
  st_->children.Remove(rules::Kind::kSrq, this);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
