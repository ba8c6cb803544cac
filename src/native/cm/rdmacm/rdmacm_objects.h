// The rdma_cm provider's objects: thin owners of librdmacm's event channel
// and ids. Each event is copied and acked as it is read (get_event), so
// rdma_destroy_id and rdma_migrate_id, which wait for every event of their
// id to be acked, never block. Used from one thread (the environment's).
#pragma once

#include "cm/rdmacm/rdmacm_loader.h"

#ifdef RXV_RDMACM_BUILT

#include "cm/cm_provider.h"

namespace rxv {
namespace cm {
namespace rdmacm {

[[noreturn]] void fail_errno(const char* verb, const std::string& detail = "");

class RdmacmChannel final : public Channel {
 public:
  RdmacmChannel(const Api* a, rdma_event_channel* ch) : a_(a), ch_(ch) {}
  ~RdmacmChannel() override;
  int fd() const override { return ch_ ? ch_->fd : -1; }
  bool get_event(Event* out) override;
  void destroy() override;
  rdma_event_channel* raw() const { return ch_; }
  size_t ids = 0;  // ids whose events come here

 private:
  const Api* a_;
  rdma_event_channel* ch_;
};

class RdmacmId final : public Id {
 public:
  RdmacmId(const Api* a, rdma_cm_id* id, RdmacmChannel* ch);
  ~RdmacmId() override;
  void bind(const SockAddr& addr) override;
  void listen(int backlog) override;
  void resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) override;
  void resolve_route(int timeout_ms) override;
  std::unique_ptr<Context> open_context() override;
  bool serves(Context* ctx) override;
  void modify_qp(Qp* qp, uint32_t state, int rnr_retry) override;
  void connect(const ConnParam& p) override;
  void accept(const ConnParam& p) override;
  void reject(const std::vector<uint8_t>& private_data) override;
  void establish() override;
  void disconnect() override;
  void migrate(Channel* to) override;
  SockAddr local() override;
  SockAddr peer() override;
  Channel* channel() const override { return ch_; }
  void destroy() override;

 private:
  rdma_cm_id* live(const char* verb) const;
  const Api* a_;
  rdma_cm_id* id_;
  RdmacmChannel* ch_;
};

}  // namespace rdmacm
}  // namespace cm
}  // namespace rxv

#endif  // RXV_RDMACM_BUILT
