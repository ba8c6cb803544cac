// Handle classes: the soft provider's implementations of the provider.h
// interfaces. Each is a thin owner of a shared core (see soft_core.h), so
// the addon may destroy handles in any order without dangling pointers.
#pragma once

#include <memory>
#include <string>

#include "soft_core.h"

namespace rxv {
namespace soft {

class SoftChannel final : public Channel {
 public:
  explicit SoftChannel(std::shared_ptr<ChCore> c) : core(std::move(c)) {}
  ~SoftChannel() override;
  int fd() const override;
  bool get_event(Cq** cq) override;
  void destroy() override;
  std::shared_ptr<ChCore> core;
};

class SoftCq final : public Cq {
 public:
  explicit SoftCq(std::shared_ptr<CqCore> c) : core(std::move(c)) {}
  ~SoftCq() override;
  int cqe() const override;
  void req_notify(bool solicited_only) override;
  int poll(int max, Wc* out) override;
  bool changed_since(uint64_t* mark) override;
  void ack_events(uint32_t n) override;
  void destroy() override;
  Channel* channel() const override;
  std::shared_ptr<CqCore> core;
};

class SoftMr final : public Mr {
 public:
  explicit SoftMr(std::shared_ptr<MrCore> c) : core(std::move(c)) {}
  ~SoftMr() override;
  uint32_t lkey() const override { return core->key; }
  uint32_t rkey() const override { return core->key; }
  uint64_t addr() const override { return core->addr; }
  size_t length() const override { return size_t(core->length); }
  uint32_t access() const override { return core->access; }
  void destroy() override;
  void mark_detached() override;
  void watch_owner(std::weak_ptr<void> owner) override;
  std::shared_ptr<MrCore> core;
};

class SoftQp final : public Qp {
 public:
  explicit SoftQp(std::shared_ptr<QpCore> c) : core(std::move(c)) {}
  ~SoftQp() override;
  uint32_t qp_num() const override { return core->qpn; }
  uint32_t state() const override;
  QpCap cap() const override { return core->cap; }
  void modify(const QpAttr& attr, uint32_t mask) override;
  QpAttr query() override;
  void post_send(const SendWr* wrs, size_t n, size_t* bad) override;
  void post_recv(const RecvWr* wrs, size_t n, size_t* bad) override;
  void destroy() override;
  std::shared_ptr<QpCore> core;
};

class SoftSrq final : public Srq {
 public:
  explicit SoftSrq(std::shared_ptr<SrqCore> c) : core(std::move(c)) {}
  ~SoftSrq() override;
  SrqAttr query() override;
  void arm(uint32_t limit) override;
  void post_recv(const RecvWr* wrs, size_t n, size_t* bad) override;
  void destroy() override;
  std::shared_ptr<SrqCore> core;
};

class SoftPd final : public Pd {
 public:
  explicit SoftPd(std::shared_ptr<PdCore> c) : core(std::move(c)) {}
  ~SoftPd() override;
  std::unique_ptr<Mr> reg_mr(void* addr, size_t length, uint32_t access) override;
  std::unique_ptr<Qp> create_rc_qp(const QpInit& init) override;
  std::unique_ptr<Srq> create_srq(const SrqAttr& attr) override;
  std::unique_ptr<Qp> create_ud_qp(const QpInit& init) override;  // soft_ud_qp.cc
  std::unique_ptr<Ah> create_ah(const AddressVector& av) override;  // soft_ah.cc
  void destroy() override;
  std::shared_ptr<PdCore> core;
};

class SoftContext final : public Context, public Faults {
 public:
  explicit SoftContext(std::shared_ptr<CtxCore> c) : core(std::move(c)) {}
  ~SoftContext() override;
  const DeviceInfo& info() const override { return core->dev->info; }
  DeviceAttr query_device() override;
  PortAttr query_port(uint8_t port) override;
  Gid query_gid(uint8_t port, int index) override;
  std::unique_ptr<Pd> alloc_pd() override;
  std::unique_ptr<Channel> create_channel() override;
  std::unique_ptr<Cq> create_cq(int cqe, Channel* channel, int comp_vector) override;
  int async_fd() const override;
  bool get_async_event(AsyncEvent* out) override;
  void ack_async_event(const AsyncEvent& ev) override;
  Faults* faults() override { return this; }
  void destroy() override;

  // Faults (soft_faults.cc)
  void overrun(Cq* cq) override;
  void error_completion(Cq* cq, const Wc& wc) override;
  void empty_event(Cq* cq) override;
  void spurious_wakeup(Channel* ch) override;
  void completion_before_arm(Cq* cq, const Wc& wc) override;
  void delay_us(uint32_t us) override;
  void duplicate_events(bool on) override;
  void device_fatal() override;
  void port_event(uint32_t type) override;

  std::shared_ptr<CtxCore> core;

 private:
  void teardown(bool force);
};

// Helpers shared by the handle files.
std::unique_ptr<Context> open_context(const std::string& name);
std::unique_ptr<Qp> create_qp(const std::shared_ptr<PdCore>& pd, const Pd::QpInit& init,
                              uint32_t type = qp_type::RC);
std::unique_ptr<Srq> create_srq(const std::shared_ptr<PdCore>& pd, const SrqAttr& attr);
// The soft core behind an Srq handle, or EINVAL (foreign or destroyed). G held.
SrqCore* srq_of(Srq* srq, const char* verb);
// The soft core behind a Cq/Channel handle, or EINVAL (foreign or destroyed).
CqCore* cq_of(Cq* cq, const char* verb);
ChCore* ch_of(Channel* ch, const char* verb);
inline void check_alive(const CtxCore* c, const char* verb) {
  if (c->fatal.load(std::memory_order_acquire))
    fail(EIO, verb, "the device is in a fatal state (DEVICE_FATAL); only destroy, ack and poll still work");
}

}  // namespace soft
}  // namespace rxv
