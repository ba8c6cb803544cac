// The echo baseline: a QP answering every receive with a SEND, on its own
// thread, in event mode (poll(2) on its channel, get/ack/arm/poll) or
// busy-poll mode. The JS latency suite and the native ping (ping.cc) both
// play against it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.h"

namespace rxv {
namespace bench {

/** Bytes per receive slot of the ping-pong peers. */
constexpr uint32_t kSlot = 64;

class Echo : public Object {
 public:
  // Creates its QP, CQ and channel on `ctx`/`pd`, connected to the peer.
  Echo(Context* ctx, Pd* pd, uint32_t depth, uint32_t peer_qpn, uint32_t peer_psn, const LocalPath& path);
  ~Echo() override { Shutdown(true); }

  uint32_t qp_num() const { return qp_->qp_num(); }
  uint16_t lid() const { return lid_; }

  void Start(bool events);
  void Stop();
  uint64_t echoed() const { return echoed_.load(); }
  const std::string& error() const { return error_; }

  void Shutdown(bool teardown) override;

 private:
  void PostRecv(uint64_t slot);
  void DrainEvents();
  // Answers what the CQ holds; false when empty.
  bool Service();
  void Run(bool events);

  uint32_t depth_;
  uint16_t lid_ = 0;
  std::vector<uint8_t> mem_;
  std::unique_ptr<Channel> ch_;
  std::unique_ptr<Cq> cq_;
  std::unique_ptr<Mr> mr_;
  std::unique_ptr<Qp> qp_;
  RecvWr recv_;
  SendWr send_;
  std::thread thread_;
  std::atomic<bool> stop_{true};
  std::atomic<uint64_t> echoed_{0};
  std::string error_;
};

}  // namespace bench
}  // namespace rxv
