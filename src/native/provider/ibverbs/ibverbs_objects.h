// The ibverbs provider's objects: thin wrappers over libibverbs handles plus
// the bookkeeping libibverbs does not do for us (unacked event counts, so a
// destroy that would block forever fails with EBUSY instead; child registries,
// so a context torn down with live children releases them in a safe order).
// What they share is in ibverbs_state.h. One file per object, with each
// object's data path apart from its control path: ibverbs_cq.cc creates and
// destroys a CQ, ibverbs_poll.cc polls and arms it; ibverbs_qp.cc creates,
// modifies and destroys a QP, ibverbs_post.cc posts to QPs and SRQs.
#pragma once

#ifdef RXV_HAVE_IBVERBS

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../provider.h"
#include "ibverbs_loader.h"
#include "ibverbs_state.h"
#include "rules/children.h"
#include "rules/event_ledger.h"

namespace rxv {
namespace ibv {

class IbvChannel;
class IbvCq;
class IbvMr;
class IbvPd;
class IbvQp;
class IbvSrq;

// Receive WRs as libibverbs takes them: the chain ibv_post_recv and
// ibv_post_srq_recv read, built in scratch kept between posts.
class RecvChain {
 public:
  // The head of the chain of `n` (> 0) WRs; valid until the next Encode.
  ibv_recv_wr* Encode(const RecvWr* wrs, size_t n);
  // Which of the last `n` encoded WRs `bad` (libibverbs' bad_wr) is; 0 if none.
  size_t IndexOf(const ibv_recv_wr* bad, size_t n) const;

 private:
  std::vector<ibv_recv_wr> wrs_;
  std::vector<ibv_sge> sges_;
};

class IbvChannel final : public Channel, public IbvChild {
 public:
  IbvChannel(StatePtr st, ibv_comp_channel* ch);
  ~IbvChannel() override;
  int fd() const override;
  bool get_event(Cq** cq) override;
  void destroy() override;

  ibv_comp_channel* raw() const { return ch_; }
  void release_locked() noexcept override;  // context teardown; st_->mu held
  rules::Users users;                       // its CQs (guarded by st_->mu)

 private:
  StatePtr st_;
  ibv_comp_channel* ch_;
};

class IbvCq final : public Cq, public IbvChild {
 public:
  IbvCq(StatePtr st, IbvChannel* channel);
  ~IbvCq() override;
  // Second phase of construction (cq_context must be `this`).
  void attach(ibv_cq* cq) { cq_ = cq; }

  int cqe() const override;
  void req_notify(bool solicited_only) override;
  int poll(int max, Wc* out) override;
  void ack_events(uint32_t n) override;
  void destroy() override;
  Channel* channel() const override { return channel_; }

  ibv_cq* raw() const { return cq_; }
  void release_locked() noexcept override;
  // Bookkeeping (guarded by st_->mu except `events`, which only the
  // owning thread touches through get_event/ack_events).
  rules::EventLedger events;    // completion events got and acked
  rules::Users users;           // QPs using this CQ (send or recv)
  IbvChannel* channel_;         // null when none (or orphaned)

 private:
  StatePtr st_;
  ibv_cq* cq_ = nullptr;
};

class IbvMr final : public Mr, public IbvChild {
 public:
  IbvMr(StatePtr st, IbvPd* pd, ibv_mr* mr, uint32_t access);
  ~IbvMr() override;
  uint32_t lkey() const override { return lkey_; }
  uint32_t rkey() const override { return rkey_; }
  uint64_t addr() const override { return addr_; }
  size_t length() const override { return length_; }
  uint32_t access() const override { return access_; }
  void destroy() override;

  void release_locked() noexcept override;
  IbvPd* pd_;  // nulled if the PD object goes away first

 private:
  StatePtr st_;
  ibv_mr* mr_;
  uint32_t lkey_, rkey_, access_;
  uint64_t addr_;
  size_t length_;
};

class IbvQp final : public Qp, public IbvChild {
 public:
  IbvQp(StatePtr st, IbvPd* pd, IbvCq* send_cq, IbvCq* recv_cq);
  uint32_t type = qp_type::RC;  // set before attach
  ~IbvQp() override;
  void attach(ibv_qp* qp, const ibv_qp_cap& cap);

  uint32_t qp_num() const override { return qp_num_; }
  uint32_t state() const override;
  QpCap cap() const override { return cap_; }
  void modify(const QpAttr& attr, uint32_t mask) override;
  QpAttr query() override;
  void post_send(const SendWr* wrs, size_t n, size_t* bad) override;
  void post_recv(const RecvWr* wrs, size_t n, size_t* bad) override;
  void destroy() override;

  ibv_qp* raw() const { return qp_; }
  void release_locked() noexcept override;
  // Parents; nulled if their objects go away first (contract violation at
  // teardown), so a late destructor never touches freed memory.
  IbvPd* pd_;
  IbvCq* send_cq_;
  IbvCq* recv_cq_;
  IbvSrq* srq_ = nullptr;  // receives come from it when set

 private:
  StatePtr st_;
  ibv_qp* qp_ = nullptr;
  uint32_t qp_num_ = 0;
  QpCap cap_;
  // Reusable translation buffers for post_send/post_recv (grow only).
  std::vector<ibv_send_wr> send_wrs_;
  std::vector<ibv_sge> sges_;
  RecvChain recv_;
};

class IbvPd final : public Pd, public IbvChild {
 public:
  IbvPd(StatePtr st, ibv_pd* pd);
  ~IbvPd() override;
  std::unique_ptr<Mr> reg_mr(void* addr, size_t length,
                             uint32_t access) override;
  std::unique_ptr<Qp> create_rc_qp(const QpInit& init) override;
  std::unique_ptr<Srq> create_srq(const SrqAttr& attr) override;  // ibverbs_srq.cc
  std::unique_ptr<Qp> create_ud_qp(const QpInit& init) override;   // ibverbs_ud.cc
  std::unique_ptr<Ah> create_ah(const AddressVector& av) override;  // ibverbs_ud.cc
  std::unique_ptr<Qp> create_qp_of_type(const QpInit& init, uint32_t type);
  void destroy() override;

  ibv_pd* raw() const { return pd_; }
  void release_locked() noexcept override;
  rules::Users users;  // its MRs and QPs (st_->mu)

 private:
  StatePtr st_;
  ibv_pd* pd_;
};

class IbvContext final : public Context {
 public:
  IbvContext(const Api* api, ibv_context* ctx, DeviceInfo info);
  ~IbvContext() override;
  const DeviceInfo& info() const override { return info_; }
  DeviceAttr query_device() override;
  PortAttr query_port(uint8_t port) override;
  Gid query_gid(uint8_t port, int index) override;
  std::unique_ptr<Pd> alloc_pd() override;
  std::unique_ptr<Channel> create_channel() override;
  std::unique_ptr<Cq> create_cq(int cqe, Channel* channel,
                                int comp_vector) override;
  int async_fd() const override;
  bool get_async_event(AsyncEvent* out) override;
  void ack_async_event(const AsyncEvent& ev) override;
  void destroy() override;
  // The rdma-core context (null once closed): rdma_cm asks whether it is an id's own.
  ibv_context* raw() const { return st_->ctx; }

 private:
  friend std::unique_ptr<Context> borrow_context(const Api*, ibv_context*, std::shared_ptr<void>);
  ibv_context* live(const char* verb) const;
  StatePtr st_;
  DeviceInfo info_;
};

class IbvSrq final : public Srq, public IbvChild {
 public:
  IbvSrq(StatePtr st, IbvPd* pd);
  ~IbvSrq() override;
  void attach(ibv_srq* srq) { srq_ = srq; }
  SrqAttr query() override;
  void arm(uint32_t limit) override;
  // arm(), failing as `verb` (ibv_create_srq arms through it too).
  void arm_as(uint32_t limit, const char* verb);
  void post_recv(const RecvWr* wrs, size_t n, size_t* bad) override;
  void destroy() override;

  ibv_srq* raw() const { return srq_; }
  void release_locked() noexcept override;
  IbvPd* pd_;           // nulled if the PD object goes away first
  rules::Users users;   // QPs created on it (st_->mu)

 private:
  StatePtr st_;
  ibv_srq* srq_ = nullptr;
  RecvChain recv_;
};

// A Context over an ibv_context someone else opened (librdmacm's): every
// verb works on it, and close releases our children but not the device.
std::unique_ptr<Context> borrow_context(const Api* api, ibv_context* ctx,
                                        std::shared_ptr<void> keep);

// "InfiniBand", "Ethernet", "iWARP", ... for a device (may open it briefly to
// read port 1's link layer).
std::string transport_of(const Api& a, ibv_device* dev);

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
