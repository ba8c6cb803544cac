// The ibverbs provider's data path for work requests: post_send and
// post_recv on a QP, post_recv on an SRQ, and the receive chains both
// build. What is malformed is refused here (rules/work_requests.h) rather
// than left to a driver that may not check.
#include "ibverbs_objects.h"
#include "ibverbs_ud.h"
#include "rules/work_requests.h"

#ifdef RXV_HAVE_IBVERBS

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace rxv {
namespace ibv {

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

void IbvSrq::post_recv(const RecvWr* wrs, size_t n, size_t* bad) {
  if (bad != nullptr) *bad = 0;
  if (n == 0) return;
  if (srq_ == nullptr) fail_closed("ibv_post_srq_recv");
  ibv_recv_wr* bad_wr = nullptr;
  int ret = ibv_post_srq_recv(srq_, recv_.Encode(wrs, n), &bad_wr);  // inline (ops)
  if (ret != 0) {
    const size_t idx = recv_.IndexOf(bad_wr, n);
    if (bad != nullptr) *bad = idx;
    fail(ret > 0 ? ret : EIO, "ibv_post_srq_recv",
         "the SRQ rejected WR " + std::to_string(idx) +
             (ret == ENOMEM ? " (the SRQ is full)" : ret == EINVAL ? " (too many SGEs?)" : ""));
  }
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
