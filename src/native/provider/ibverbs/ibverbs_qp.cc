// Queue pair of the ibverbs provider, control path: create (RC and UD),
// the state, modify, query and destroy, with the counts libibverbs leaves to
// us. Posting is the data path: ibverbs_post.cc.
#include "ibverbs_objects.h"
#include "rules/refusals.h"
#include "rules/work_requests.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <cstring>
#include <string>

namespace rxv {
namespace ibv {

std::unique_ptr<Qp> IbvPd::create_rc_qp(const QpInit& init) {
  return create_qp_of_type(init, qp_type::RC);
}

std::unique_ptr<Qp> IbvPd::create_qp_of_type(const QpInit& init, uint32_t type) {
  if (pd_ == nullptr) fail_closed("ibv_create_qp");
  IbvCq* scq;
  IbvCq* rcq;
  IbvSrq* srq = nullptr;
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    scq = dynamic_cast<IbvCq*>(init.send_cq);
    rcq = dynamic_cast<IbvCq*>(init.recv_cq);
    if (scq == nullptr || rcq == nullptr || !st_->children.Has(rules::Kind::kCq, scq) ||
        !st_->children.Has(rules::Kind::kCq, rcq) || scq->raw() == nullptr ||
        rcq->raw() == nullptr)
      fail(EINVAL, "ibv_create_qp",
           "send_cq and recv_cq must be live CQs of the same device context");
    if (init.srq != nullptr) {
      srq = dynamic_cast<IbvSrq*>(init.srq);
      if (srq == nullptr || !st_->children.Has(rules::Kind::kSrq, srq) || srq->raw() == nullptr)
        fail(EINVAL, "ibv_create_qp", "srq must be a live SRQ of the same device context");
    }
  }
  // Not under st_->mu: on failure `qp` is destroyed here, and its destructor
  // takes the lock.
  auto qp = std::make_unique<IbvQp>(st_, this, scq, rcq);
  ibv_qp_init_attr ia;
  std::memset(&ia, 0, sizeof ia);
  ia.qp_context = qp.get();  // async events map back through qp_context
  ia.send_cq = scq->raw();
  ia.recv_cq = rcq->raw();
  ia.srq = srq != nullptr ? srq->raw() : nullptr;
  ia.cap.max_send_wr = init.cap.max_send_wr;
  ia.cap.max_recv_wr = srq != nullptr ? 0 : init.cap.max_recv_wr;
  ia.cap.max_send_sge = init.cap.max_send_sge;
  ia.cap.max_recv_sge = srq != nullptr ? 0 : init.cap.max_recv_sge;
  ia.cap.max_inline_data = init.cap.max_inline_data;
  ia.qp_type = static_cast<ibv_qp_type>(type);
  qp->type = type;
  ia.sq_sig_all = init.sq_sig_all ? 1 : 0;
  errno = 0;
  ibv_qp* raw = st_->api->create_qp(pd_, &ia);
  if (raw == nullptr)
    fail(errno, "ibv_create_qp",
         std::string(type == qp_type::UD ? "UD" : "RC") + " QP with max_send_wr " + std::to_string(init.cap.max_send_wr) +
             ", max_recv_wr " + std::to_string(init.cap.max_recv_wr) +
             ", max_send_sge " + std::to_string(init.cap.max_send_sge) +
             ", max_recv_sge " + std::to_string(init.cap.max_recv_sge) +
             ", max_inline_data " +
             std::to_string(init.cap.max_inline_data));
  // ibv_create_qp wrote the actual capacities back into ia.cap.
  qp->attach(raw, ia.cap);
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->children.Add(rules::Kind::kQp, qp.get());
  users.Add(rules::Kind::kQp);
  // A QP is one user of a CQ it sends and receives on, as on the soft device.
  scq->users.Add(rules::Kind::kQp);
  if (rcq != scq) rcq->users.Add(rules::Kind::kQp);
  if (srq != nullptr) {
    qp->srq_ = srq;
    srq->users.Add(rules::Kind::kQp);
  }
  return qp;
}

IbvQp::IbvQp(StatePtr st, IbvPd* pd, IbvCq* send_cq, IbvCq* recv_cq)
    : pd_(pd), send_cq_(send_cq), recv_cq_(recv_cq), st_(std::move(st)) {}

IbvQp::~IbvQp() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kQp, this);
}

void IbvQp::attach(ibv_qp* qp, const ibv_qp_cap& cap) {
  qp_ = qp;
  qp_num_ = qp->qp_num;
  cap_.max_send_wr = cap.max_send_wr;
  cap_.max_recv_wr = cap.max_recv_wr;
  cap_.max_send_sge = cap.max_send_sge;
  cap_.max_recv_sge = cap.max_recv_sge;
  cap_.max_inline_data = cap.max_inline_data;
}

namespace {
void drop_qp_refs(IbvQp* q) {
  if (q->pd_ != nullptr) q->pd_->users.Drop(rules::Kind::kQp);
  if (q->send_cq_ != nullptr) q->send_cq_->users.Drop(rules::Kind::kQp);
  if (q->recv_cq_ != nullptr && q->recv_cq_ != q->send_cq_) q->recv_cq_->users.Drop(rules::Kind::kQp);
  if (q->srq_ != nullptr) q->srq_->users.Drop(rules::Kind::kQp);
}
}  // namespace

void IbvQp::release_locked() noexcept {
  if (qp_ == nullptr) return;
  st_->ack_pending_locked(this);
  if (st_->api->destroy_qp(qp_) == 0) {
    drop_qp_refs(this);
    st_->retry_orphans_locked();  // it may have been an orphan CQ's last QP
  }
  qp_ = nullptr;
}

uint32_t IbvQp::state() const {
  if (qp_ == nullptr) return qp_state::ERR;
  ibv_qp_attr attr;
  ibv_qp_init_attr init;
  std::memset(&attr, 0, sizeof attr);
  // The kernel's view (catches transitions to ERR it made on its own);
  // libibverbs' cached qp->state as a fallback.
  if (st_->api->query_qp(qp_, &attr, IBV_QP_STATE, &init) == 0)
    return attr.qp_state;
  return qp_->state;
}

void IbvQp::modify(const QpAttr& a, uint32_t mask) {
  if (qp_ == nullptr) fail_closed("ibv_modify_qp");
  using namespace qp_attr_mask;
  constexpr uint32_t kSupported =
      STATE | ACCESS_FLAGS | PKEY_INDEX | PORT | AV | PATH_MTU | TIMEOUT |
      RETRY_CNT | RNR_RETRY | RQ_PSN | MAX_QP_RD_ATOMIC | MIN_RNR_TIMER |
      SQ_PSN | MAX_DEST_RD_ATOMIC | DEST_QPN | QKEY;
  if (mask & ~kSupported)
    fail(EINVAL, "ibv_modify_qp",
         "unsupported attribute mask bits " + hex(mask & ~kSupported) +
             " (QpAttr has no fields for them)");
  ibv_qp_attr q;
  std::memset(&q, 0, sizeof q);
  if (mask & STATE) q.qp_state = static_cast<ibv_qp_state>(a.state);
  if (mask & ACCESS_FLAGS) q.qp_access_flags = a.access_flags;
  if (mask & PKEY_INDEX) q.pkey_index = a.pkey_index;
  if (mask & PORT) q.port_num = a.port_num;
  if (mask & PATH_MTU) q.path_mtu = static_cast<ibv_mtu>(a.path_mtu);
  if (mask & DEST_QPN) q.dest_qp_num = a.dest_qp_num;
  if (mask & RQ_PSN) q.rq_psn = a.rq_psn;
  if (mask & SQ_PSN) q.sq_psn = a.sq_psn;
  if (mask & MAX_QP_RD_ATOMIC) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & MAX_DEST_RD_ATOMIC) q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & MIN_RNR_TIMER) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & TIMEOUT) q.timeout = a.timeout;
  if (mask & RETRY_CNT) q.retry_cnt = a.retry_cnt;
  if (mask & RNR_RETRY) q.rnr_retry = a.rnr_retry;
  if (mask & QKEY) q.qkey = a.qkey;
  if (mask & AV) {
    ibv_ah_attr& ah = q.ah_attr;
    ah.dlid = a.ah.dlid;
    ah.sl = a.ah.sl;
    ah.src_path_bits = 0;
    ah.static_rate = 0;
    ah.port_num = a.ah.port_num;
    ah.is_global = a.ah.is_global ? 1 : 0;
    if (a.ah.is_global) {
      std::memcpy(ah.grh.dgid.raw, a.ah.dgid, sizeof a.ah.dgid);
      ah.grh.sgid_index = a.ah.sgid_index;
      ah.grh.hop_limit = a.ah.hop_limit;
      ah.grh.traffic_class = a.ah.traffic_class;
      ah.grh.flow_label = a.ah.flow_label;
    }
  }
  // Mask bits are rdma-core's IBV_QP_* values: passed straight through.
  int ret = st_->api->modify_qp(qp_, &q, static_cast<int>(mask));
  if (ret != 0) {
    std::string detail = "QP " + std::to_string(qp_num_) + " from " +
                         rules::QpStateName(qp_->state);
    if (mask & STATE) detail += std::string(" to ") + rules::QpStateName(a.state);
    detail += ", mask " + hex(mask);
    fail(ret > 0 ? ret : (errno != 0 ? errno : EIO), "ibv_modify_qp", detail);
  }
}

QpAttr IbvQp::query() {
  if (qp_ == nullptr) fail_closed("ibv_query_qp");
  using namespace qp_attr_mask;
  // Everything modify can set, and the capacities (providers fill the whole
  // ibv_qp_attr whatever the mask; the mask says what we read).
  constexpr uint32_t kMask = STATE | ACCESS_FLAGS | PKEY_INDEX | PORT | QKEY | AV | PATH_MTU |
                             TIMEOUT | RETRY_CNT | RNR_RETRY | RQ_PSN | MAX_QP_RD_ATOMIC |
                             MIN_RNR_TIMER | SQ_PSN | MAX_DEST_RD_ATOMIC | CAP | DEST_QPN;
  ibv_qp_attr q;
  ibv_qp_init_attr init;
  std::memset(&q, 0, sizeof q);
  std::memset(&init, 0, sizeof init);
  errno = 0;
  int ret = st_->api->query_qp(qp_, &q, static_cast<int>(kMask), &init);
  if (ret != 0)
    fail(ret > 0 ? ret : (errno != 0 ? errno : EIO), "ibv_query_qp", "QP " + std::to_string(qp_num_));
  QpAttr a;
  a.state = q.qp_state;
  a.access_flags = static_cast<uint32_t>(q.qp_access_flags);
  a.pkey_index = q.pkey_index;
  a.port_num = q.port_num;
  a.path_mtu = q.path_mtu;
  a.dest_qp_num = q.dest_qp_num;
  a.rq_psn = q.rq_psn;
  a.sq_psn = q.sq_psn;
  a.max_rd_atomic = q.max_rd_atomic;
  a.max_dest_rd_atomic = q.max_dest_rd_atomic;
  a.min_rnr_timer = q.min_rnr_timer;
  a.timeout = q.timeout;
  a.retry_cnt = q.retry_cnt;
  a.rnr_retry = q.rnr_retry;
  a.qkey = q.qkey;
  a.ah.dlid = q.ah_attr.dlid;
  a.ah.sl = q.ah_attr.sl;
  a.ah.port_num = q.ah_attr.port_num;
  a.ah.is_global = q.ah_attr.is_global != 0;
  if (a.ah.is_global) {
    std::memcpy(a.ah.dgid, q.ah_attr.grh.dgid.raw, sizeof a.ah.dgid);
    a.ah.sgid_index = q.ah_attr.grh.sgid_index;
    a.ah.hop_limit = q.ah_attr.grh.hop_limit;
    a.ah.traffic_class = q.ah_attr.grh.traffic_class;
    a.ah.flow_label = q.ah_attr.grh.flow_label;
  }
  a.cap.max_send_wr = q.cap.max_send_wr;
  a.cap.max_recv_wr = q.cap.max_recv_wr;
  a.cap.max_send_sge = q.cap.max_send_sge;
  a.cap.max_recv_sge = q.cap.max_recv_sge;
  a.cap.max_inline_data = q.cap.max_inline_data;
  return a;
}

void IbvQp::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (qp_ == nullptr) return;
  // ibv_destroy_qp waits until every async event read for the QP is acked.
  rules::RefuseBusyQp(st_->pending_async.Naming(this));
  int ret = st_->api->destroy_qp(qp_);
  if (ret != 0) fail(ret, "ibv_destroy_qp", "QP " + std::to_string(qp_num_));
  drop_qp_refs(this);
  st_->retry_orphans_locked();  // it may have been an orphan CQ's last QP
  qp_ = nullptr;
  st_->children.Remove(rules::Kind::kQp, this);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
