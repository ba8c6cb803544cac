// Channel, CQ, MR, PD and QP of the ibverbs provider.
#include "ibverbs_objects.h"
#include "ibverbs_ud.h"
#include "rules/refusals.h"
#include "rules/work_requests.h"

#ifdef RXV_HAVE_IBVERBS

#include <arpa/inet.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rxv {
namespace ibv {

// ---- helpers ---------------------------------------------------------------

void fail(int err, const char* verb, const std::string& detail) {
  throw VerbsError(err != 0 ? err : EIO, verb, detail);
}

void fail_closed(const char* verb) {
  throw VerbsError(ENODEV, verb,
                   "the device context was closed (object released)");
}

int set_nonblock(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return errno;
  if ((flags & O_NONBLOCK) == 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return errno;
  return 0;
}

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void ContextState::forget_parent_locked(const void* p) noexcept {
  using rules::Kind;
  for (IbvQp* q : children.List<IbvQp>(Kind::kQp)) {
    if (q->pd_ == p) q->pd_ = nullptr;
    if (q->send_cq_ == p) q->send_cq_ = nullptr;
    if (q->recv_cq_ == p) q->recv_cq_ = nullptr;
    if (q->srq_ == p) q->srq_ = nullptr;
  }
  for (IbvSrq* s : children.List<IbvSrq>(Kind::kSrq))
    if (s->pd_ == p) s->pd_ = nullptr;
  for (IbvMr* m : children.List<IbvMr>(Kind::kMr))
    if (m->pd_ == p) m->pd_ = nullptr;
  for (IbvAh* a : children.List<IbvAh>(Kind::kAh))
    if (a->pd_ == p) a->pd_ = nullptr;
  for (IbvCq* c : children.List<IbvCq>(Kind::kCq))
    if (c->channel_ == p) c->channel_ = nullptr;
  for (OrphanCq& o : orphan_cqs)
    if (o.channel == p) o.channel = nullptr;
}

void ContextState::retry_orphans_locked() noexcept {
  if (ctx == nullptr) return;
  for (auto it = orphan_cqs.begin(); it != orphan_cqs.end();) {
    if (api->destroy_cq(it->cq) != 0) {
      ++it;
      continue;
    }
    if (it->channel != nullptr) it->channel->users.Drop(rules::Kind::kCq);
    it = orphan_cqs.erase(it);
  }
  for (auto it = orphan_channels.begin(); it != orphan_channels.end();)
    it = api->destroy_comp_channel(*it) == 0 ? orphan_channels.erase(it) : it + 1;
}

void ContextState::teardown_locked() noexcept {
  if (ctx == nullptr) return;
  children.Teardown([](rules::Kind, IbvChild* c) { c->release_locked(); });
  retry_orphans_locked();
  ack_pending_locked(nullptr);
  if (!borrowed) api->close_device(ctx);  // also frees whatever a failed release left
  ctx = nullptr;
  keep.reset();
}

// ---- Channel ---------------------------------------------------------------

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

// ---- CQ --------------------------------------------------------------------

IbvCq::IbvCq(StatePtr st, IbvChannel* channel)
    : channel_(channel), st_(std::move(st)) {}

IbvCq::~IbvCq() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kCq, this);
  st_->forget_parent_locked(this);
}

void IbvCq::release_locked() noexcept {
  if (cq_ == nullptr) return;
  // Unacked events would make ibv_destroy_cq wait forever: ack them first.
  if (uint64_t n = events.AckAll()) st_->api->ack_cq_events(cq_, static_cast<unsigned>(n));
  st_->ack_pending_locked(this);
  if (st_->api->destroy_cq(cq_) != 0) {
    // Fails (EBUSY) while QPs use it: then it waits for them as an orphan.
    st_->orphan_cqs.push_back({cq_, channel_});
  } else {
    if (channel_ != nullptr) channel_->users.Drop(rules::Kind::kCq);
    st_->retry_orphans_locked();  // it may have been a channel's last CQ
  }
  cq_ = nullptr;
}

int IbvCq::cqe() const { return cq_ != nullptr ? cq_->cqe : 0; }

void IbvCq::req_notify(bool solicited_only) {
  if (cq_ == nullptr) fail_closed("ibv_req_notify_cq");
  int ret = ibv_req_notify_cq(cq_, solicited_only ? 1 : 0);  // inline (ops)
  if (ret != 0)
    fail(ret > 0 ? ret : EIO, "ibv_req_notify_cq",
         solicited_only ? "arming for solicited completions" : "arming");
}

int IbvCq::poll(int max, Wc* out) {
  if (cq_ == nullptr) fail_closed("ibv_poll_cq");
  constexpr int kChunk = 32;
  ibv_wc wc[kChunk];
  int total = 0;
  while (total < max) {
    int want = max - total < kChunk ? max - total : kChunk;
    int n = ibv_poll_cq(cq_, want, wc);  // inline (ops)
    if (n < 0) {
      if (total > 0) return total;  // report what we got; next poll throws
      fail(EIO, "ibv_poll_cq",
           "the CQ is in error (overrun?), provider returned " +
               std::to_string(n));
    }
    for (int i = 0; i < n; ++i) {
      const ibv_wc& s = wc[i];
      Wc& d = out[total + i];
      d = Wc{};
      d.wr_id = s.wr_id;
      d.status = s.status;
      d.vendor_err = s.vendor_err;
      d.qp_num = s.qp_num;
      // Only wr_id, status, qp_num and vendor_err are defined on an error
      // completion; leave the rest 0 rather than pass garbage on.
      if (s.status == IBV_WC_SUCCESS) {
        d.opcode = s.opcode;
        d.byte_len = s.byte_len;
        d.src_qp = s.src_qp;
        d.wc_flags = s.wc_flags;
        d.slid = s.slid;
        d.sl = s.sl;
        d.dlid_path_bits = s.dlid_path_bits;
        // imm_data is network byte order (__be32) in libibverbs; Wc::imm is
        // the host-order value (post_send converts back with htonl), so an
        // immediate posted as X is received as X on both providers.
        if (s.wc_flags & IBV_WC_WITH_IMM) d.imm = ntohl(s.imm_data);
      }
    }
    total += n;
    if (n < want) break;
  }
  return total;
}

void IbvCq::ack_events(uint32_t n) {
  if (n == 0) return;
  if (cq_ == nullptr) fail_closed("ibv_ack_cq_events");
  // Over-acking would corrupt libibverbs' counters and make ibv_destroy_cq
  // wait forever.
  events.Ack(n);
  st_->api->ack_cq_events(cq_, n);
}

void IbvCq::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (cq_ == nullptr) return;
  rules::RefuseBusyCq(users, events.unacked(), st_->pending_async.Naming(this));
  int ret = st_->api->destroy_cq(cq_);
  if (ret != 0) fail(ret, "ibv_destroy_cq", "");
  if (channel_ != nullptr) channel_->users.Drop(rules::Kind::kCq);
  st_->retry_orphans_locked();
  cq_ = nullptr;
  st_->children.Remove(rules::Kind::kCq, this);
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

// ---- PD --------------------------------------------------------------------

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

void IbvPd::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (pd_ == nullptr) return;
  rules::RefuseBusy(rules::Kind::kPd, users);
  int ret = st_->api->dealloc_pd(pd_);
  if (ret != 0) fail(ret, "ibv_dealloc_pd", "");
  pd_ = nullptr;
  st_->children.Remove(rules::Kind::kPd, this);
}

// ---- QP --------------------------------------------------------------------

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

// A WR's scatter/gather list as libibverbs takes it: copied into the
// chain's ibv_sge array at `*cursor`, which moves past it. One rule for
// send and receive WRs.
template <typename List, typename IbvWr>
void CopySges(const List& sg, IbvWr* d, ibv_sge** cursor) {
  d->num_sge = static_cast<int>(sg.size());
  d->sg_list = sg.empty() ? nullptr : *cursor;
  for (const Sge& s : sg) {
    (*cursor)->addr = s.addr;
    (*cursor)->length = s.length;
    (*cursor)->lkey = s.lkey;
    ++*cursor;
  }
}

void IbvQp::post_send(const SendWr* wrs, size_t n, size_t* bad) {
  if (bad != nullptr) *bad = 0;
  if (n == 0) return;
  if (qp_ == nullptr) fail_closed("ibv_post_send");
  // WRs before the first malformed one are posted (as a chain), then the
  // malformed one is reported at its index.
  size_t lim = 0;
  size_t total_sge = 0;
  for (; lim < n; ++lim) {
    const SendWr& w = wrs[lim];
    if (rules::MalformedSendWr(w) || w.sg.size() > 0x7fffffffu) break;
    if (type == qp_type::UD && ud_refuse(w, qp_->pd)) break;
    total_sge += w.sg.size();
  }
  if (lim > 0) {
    if (send_wrs_.size() < lim) send_wrs_.resize(lim);
    if (sges_.size() < total_sge) sges_.resize(total_sge);
    ibv_sge* sge = sges_.data();
    for (size_t i = 0; i < lim; ++i) {
      const SendWr& w = wrs[i];
      ibv_send_wr& d = send_wrs_[i];
      std::memset(&d, 0, sizeof d);
      d.wr_id = w.wr_id;  // full 64 bits
      d.next = i + 1 < lim ? &send_wrs_[i + 1] : nullptr;
      CopySges(w.sg, &d, &sge);
      d.opcode = static_cast<ibv_wr_opcode>(w.opcode);
      d.send_flags = w.send_flags;
      if (w.opcode == wr_opcode::SEND_WITH_IMM ||
          w.opcode == wr_opcode::RDMA_WRITE_WITH_IMM)
        d.imm_data = htonl(w.imm);  // host order in SendWr, __be32 on the wire
      if (w.opcode == wr_opcode::RDMA_WRITE ||
          w.opcode == wr_opcode::RDMA_WRITE_WITH_IMM ||
          w.opcode == wr_opcode::RDMA_READ) {
        d.wr.rdma.remote_addr = w.remote_addr;
        d.wr.rdma.rkey = w.rkey;
      }
      if (type == qp_type::UD) ud_address(w, &d);
      if (w.opcode == wr_opcode::ATOMIC_CMP_AND_SWP ||
          w.opcode == wr_opcode::ATOMIC_FETCH_AND_ADD) {
        d.wr.atomic.remote_addr = w.remote_addr;
        d.wr.atomic.compare_add = w.compare_add;  // host order, as libibverbs takes them
        d.wr.atomic.swap = w.swap;
        d.wr.atomic.rkey = w.rkey;
      }
    }
    ibv_send_wr* bad_wr = nullptr;
    int ret = ibv_post_send(qp_, send_wrs_.data(), &bad_wr);  // inline (ops)
    if (ret != 0) {
      size_t idx = 0;
      if (bad_wr >= send_wrs_.data() && bad_wr < send_wrs_.data() + lim)
        idx = static_cast<size_t>(bad_wr - send_wrs_.data());
      if (bad != nullptr) *bad = idx;
      fail(ret > 0 ? ret : EIO, "ibv_post_send",
           "QP " + std::to_string(qp_num_) + " rejected WR " +
               std::to_string(idx) + " (wr_id " + hex(wrs[idx].wr_id) +
               ", opcode " + std::to_string(wrs[idx].opcode) +
               ", send queue full, too many SGEs or inline data too large?)");
    }
  }
  if (lim < n) {
    if (bad != nullptr) *bad = lim;
    const char* why = rules::MalformedSendWr(wrs[lim]);
    if (!why && type == qp_type::UD) why = ud_refuse(wrs[lim], qp_->pd);
    fail(EINVAL, "ibv_post_send",
         "WR " + std::to_string(lim) + ": " + (why ? why : "too many SGEs"));
  }
}

void IbvQp::post_recv(const RecvWr* wrs, size_t n, size_t* bad) {
  if (bad != nullptr) *bad = 0;
  if (n == 0) return;
  if (qp_ == nullptr) fail_closed("ibv_post_recv");
  // Not every provider checks (rxe does, with EINVAL): refuse it for all.
  if (srq_ != nullptr)
    fail(EINVAL, "ibv_post_recv", "the QP receives from an SRQ: post receives to the SRQ");
  ibv_recv_wr* bad_wr = nullptr;
  int ret = ibv_post_recv(qp_, recv_.Encode(wrs, n), &bad_wr);  // inline (ops)
  if (ret != 0) {
    const size_t idx = recv_.IndexOf(bad_wr, n);
    if (bad != nullptr) *bad = idx;
    fail(ret > 0 ? ret : EIO, "ibv_post_recv",
         "QP " + std::to_string(qp_num_) + " rejected WR " +
             std::to_string(idx) + " (wr_id " + hex(wrs[idx].wr_id) +
             ", receive queue full or too many SGEs?)");
  }
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

ibv_recv_wr* RecvChain::Encode(const RecvWr* wrs, size_t n) {
  size_t total_sge = 0;
  for (size_t i = 0; i < n; ++i) total_sge += wrs[i].sg.size();
  if (wrs_.size() < n) wrs_.resize(n);
  if (sges_.size() < total_sge) sges_.resize(total_sge);
  ibv_sge* sge = sges_.data();
  for (size_t i = 0; i < n; ++i) {
    const RecvWr& w = wrs[i];
    ibv_recv_wr& d = wrs_[i];
    std::memset(&d, 0, sizeof d);
    d.wr_id = w.wr_id;
    d.next = i + 1 < n ? &wrs_[i + 1] : nullptr;
    CopySges(w.sg, &d, &sge);
  }
  return wrs_.data();
}

size_t RecvChain::IndexOf(const ibv_recv_wr* bad, size_t n) const {
  if (bad >= wrs_.data() && bad < wrs_.data() + n) return static_cast<size_t>(bad - wrs_.data());
  return 0;
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
