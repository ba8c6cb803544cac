// What the device thread's pieces share: soft_engine.cc is the thread
// itself (its turns, timers and sleep), soft_memory.cc checks the memory a
// WR reaches and moves its bytes, soft_execute.cc executes a QP's head WR
// by opcode, and soft_atomic.cc the atomics. All of it runs on a device
// thread holding G (a large copy releases it: move_bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "soft_core.h"

namespace rxv {
namespace soft {

// ---- the turn (soft_engine.cc) ---------------------------------------------
// Queues a completion on `cq` until the turn publishes it (publish_all).
void stage(CqCore* cq, const Wc& wc, bool solicited, bool responder);
void publish_all();
// Puts q on its context's timers: its head WR runs again at `at`.
void add_timer(QpCore* q, Clock::time_point at);

// ---- memory (soft_memory.cc) -----------------------------------------------
inline uint64_t sge_total(const Sge* sg, uint32_t n) {
  uint64_t t = 0;
  for (uint32_t i = 0; i < n; ++i) t += sg[i].length;
  return t;
}
// Starts a WR's checks: the MRs they pass from here on are its copy's.
void checks_begin();
bool check_local(DeviceCore* dev, PdCore* pd, const Sge* sg, uint32_t n, uint32_t need,
                 uint64_t reach);
MrCore* check_remote(QpCore* r, uint32_t rkey, uint64_t addr, uint64_t len, uint32_t need);
void sg_copy(const Sge* src, const Sge* dst, uint64_t total);
void sg_skip(const Sge* sg, uint32_t n, uint64_t skip, std::vector<Sge>* out);
void move_bytes(ULock& gl, QpCore* r, const Sge* src, uint32_t ns, const Sge* dst, uint32_t nd,
                uint64_t total);

// ---- execution (soft_execute.cc) -------------------------------------------
bool execute_head(ULock& gl, QpCore* s, uint64_t* moved);
void finish(QpCore* s, uint64_t seq, uint32_t status, uint32_t byte_len);
bool nak(QpCore* s, QpCore* r, uint64_t seq, uint32_t async_type, uint32_t status);

// ---- atomics (soft_atomic.cc) ----------------------------------------------
bool execute_atomic(QpCore* s, QpCore* r, const SendSlot& w, const Sge* lsg);

}  // namespace soft
}  // namespace rxv
