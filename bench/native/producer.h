// The producer baseline: a thread posting signaled RDMA WRITEs on its own QP
// pair whose send CQ is the CQ under test, gated by a credit window read from
// a counter the consumer bumps (so it never overruns the CQ) and optionally
// paced to a rate. The drain and naive baselines drive it over their own CQ;
// JS drives it over a CQ of its own (producer.cc).
#pragma once

#include <napi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.h"

namespace rxv {
namespace bench {

struct ProducerConfig {
  uint64_t total = 0;
  uint32_t window = 1;
  uint32_t burst = 1;
  double rate = 0;  // WRs per second; 0 = as fast as credits allow
  uint32_t spin = 64;  // pause iterations before yielding while out of credits
};

/** Reads { total, window, burst, rate, spin } (window at most `max_window`). */
ProducerConfig ReadConfig(Napi::Object o, uint32_t max_window);

// A QP pair on one PD, both on `cq`: A writes to B's memory with RDMA WRITE
// (signaled: one completion on `cq` per WR; B completes nothing).
class Producer {
 public:
  Producer(Context* ctx, Pd* pd, Cq* cq, uint32_t max_wr, const LocalPath& path);
  ~Producer() { Release(); }

  uint32_t max_wr() const { return max_wr_; }
  void SetCounter(uint32_t* counter) { counter_ = counter; }
  uint32_t* counter() const { return counter_; }
  bool running() const { return thread_.joinable(); }

  void Start(const ProducerConfig& cfg);
  void Stop();
  void Release();
  uint64_t posted() const { return posted_.load(); }
  const std::string& error() const { return error_; }
  double seconds() const { return seconds_; }

 private:
  void Run(ProducerConfig cfg);

  uint32_t max_wr_;
  std::vector<uint8_t> mem_;
  std::unique_ptr<Mr> mr_;
  std::unique_ptr<Qp> a_, b_;
  uint32_t* counter_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> posted_{0};
  std::string error_;
  double seconds_ = 0;
};

}  // namespace bench
}  // namespace rxv
