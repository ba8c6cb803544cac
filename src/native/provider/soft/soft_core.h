// Internal model of the embedded software RDMA device ("soft" provider).
// Private to provider/soft/; nothing outside this folder includes it.
//
// Scope: the soft device works within ONE process only. "The wire" is this
// process's address space: QPs on any soft device find each other through
// the process-wide fabric below (destination LID or GID, then QP number),
// and the bytes move with memmove between registered memory.
//
// Locking (always acquire in this order, never the reverse):
//   1. fabric_mutex() ("G"): devices, routing, MR keys, every membership
//      (QPs of a CQ, children of a context), QP state changes and every
//      consumption of a work queue (execution, flush). A device thread holds
//      G while it executes a turn of WRs, so a verb that takes G (dereg,
//      destroy, modify) is synchronised with "the NIC" for free.
//   2. QpCore::mu: the QP's work rings and state reads. post_send/post_recv
//      take only this (never G on the success path), so a posting thread
//      never waits for the device thread's batch.
//   3. CtxCore::rmu: the device thread's ready list, timers and sleep.
//   4. CqCore::mu: the completion ring and the arm state. poll() and the
//      plain req_notify() take only this lock.
//   5. ChCore::mu: a channel's event queue and the per-CQ event counters.
//   CtxCore::amu (async events) is a leaf: taken alone or under G.
// Data movement: a device thread copies large payloads with G released
// (soft_memory.cc, move_bytes), so unrelated contexts never wait on it.
// While it does, every MR whose memory the copy touches and both QPs have
// `busy` > 0 (G); whatever would free or reuse them (dereg, QP destroy)
// first waits on fabric_cv() until `busy` is 0, so a copy never touches
// freed memory.
// Lifetimes: handles (the objects the addon owns through unique_ptr) hold a
// shared_ptr to their core; a core holds shared_ptrs to its parents only.
// No cycles, and any destruction order is memory-safe. Non-owning raw
// pointers (routing tables, ready lists, channel event queues) are removed
// under the lock that guards them before the object they name can die.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../provider.h"
#include "rules/async_ledger.h"
#include "rules/children.h"
#include "rules/event_ledger.h"

namespace rxv {
namespace soft {

using Clock = std::chrono::steady_clock;
using Lock = std::lock_guard<std::mutex>;
using ULock = std::unique_lock<std::mutex>;

struct DeviceCore;
struct CtxCore;
struct ChCore;
struct CqCore;
struct PdCore;
struct MrCore;
struct QpCore;
struct SrqCore;

constexpr int kGidTableLen = 4;
constexpr uint32_t kPkeyTableLen = 128;
constexpr uint32_t kMaxRdAtomic = 16;
constexpr int kNumCompVectors = 64;
constexpr uint64_t kMaxMsgSize = 1ull << 31;
constexpr uint32_t kNoEvent = UINT32_MAX;

std::mutex& fabric_mutex();
// Notified (under G) whenever a `busy` count drops to zero.
std::condition_variable& fabric_cv();
// G held through `g`. Waits until no in-flight copy uses the object.
inline void wait_unused(ULock& g, const uint32_t& busy) {
  while (busy) fabric_cv().wait(g);
}

[[noreturn]] void fail(int err, const char* verb, const std::string& detail = "");

// Non-blocking eventfd whose readability mirrors "a queue is non-empty".
class EventFd {
 public:
  EventFd() = default;
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  void open(const char* verb);
  void close();
  void signal();
  // Clears the fd; returns how many signals that took (0: it was clear).
  uint64_t reset();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// ---- fabric and devices (all fields under G) -------------------------------
struct DeviceCore {
  std::string name;
  SoftDeviceOptions opts;
  DeviceInfo info;
  struct Port {
    uint16_t lid = 0;
    uint64_t guid = 0;
    Gid gid0;
    uint32_t state = port_state::ACTIVE;
  };
  std::vector<Port> ports;
  std::unordered_map<uint32_t, QpCore*> qps;  // by qp_num
  std::unordered_map<uint32_t, MrCore*> mrs;  // by key (lkey == rkey)
  std::vector<CtxCore*> contexts;              // open contexts
  uint32_t next_qpn = 0x11;
  uint64_t rng = 0;

  uint32_t new_key();
  uint32_t new_qpn();
};

struct Fabric {
  std::vector<std::shared_ptr<DeviceCore>> devices;
  // Bumped whenever a routing input changes (QP state, QP gone, port
  // state), so QPs can cache their resolved peer between changes.
  uint64_t route_gen = 1;
  uint32_t next_lid = 1;
};
Fabric& fabric();
void ensure_default_device();
std::shared_ptr<DeviceCore> find_device(const std::string& name);
void bump_routes();
// The responder for s's current destination, or null when nothing answers
// there (unknown LID/GID or QP, QP not in RTR/RTS, port down, device dead).
QpCore* route(QpCore* s);

// The common base of the cores a context lists as its children
// (rules::Registry casts down from it by kind).
struct ChildCore {};

// ---- context -------------------------------------------------------------
struct CtxCore {
  std::shared_ptr<DeviceCore> dev;
  std::atomic<bool> fatal{false};
  bool closed = false;  // G

  // Device thread state (rmu).
  std::thread thread;
  std::mutex rmu;
  std::condition_variable cv;
  bool stop = false;
  bool idle = false;
  std::deque<QpCore*> ready;
  std::vector<QpCore*> timed;

  std::atomic<uint32_t> delay_us{0};
  bool dup_events = false;  // G

  // Children (G), every kind: QPs and MRs too, though a PD also counts them.
  rules::Registry<ChildCore> children;

  // Async events (amu).
  std::mutex amu;
  EventFd afd;
  std::deque<AsyncEvent> aq;
  rules::AsyncLedger<uintptr_t> delivered;  // not yet acked
  uintptr_t next_ev = 1;
};

void raise_async(CtxCore* c, uint32_t type, Cq* cq, Qp* qp, uint32_t port, Srq* srq = nullptr);
size_t async_unacked(CtxCore* c, const void* obj);
void async_purge(CtxCore* c, const void* obj);
// G held. Marks the context dead: DEVICE_FATAL, every QP flushed.
void make_fatal(CtxCore* c);

// ---- channel -------------------------------------------------------------
struct ChCore : ChildCore {
  std::shared_ptr<CtxCore> ctx;
  Channel* handle = nullptr;  // G
  rules::Users users;         // G: its CQs
  std::mutex mu;
  bool dead = false;  // mu (and G)
  // Written under G (which keeps it open) but outside mu: the write wakes
  // the consumer, which must not then sleep on mu while the writer is still
  // in the syscall. Read (reset) under mu.
  EventFd efd;
  std::deque<CqCore*> q;  // mu
  // mu: signals decided (one per write) that no read has taken yet. Zero
  // means the fd is clear, and get_event skips the read. A read takes what
  // has landed; a write still on its way lands later (one spurious wakeup).
  uint64_t unread_signals = 0;
};
// Queues `times` events for cq (takes ch->mu; G held).
void ch_push(ChCore* ch, CqCore* cq, int times);
// The queue is empty: clears the fd unless it is known clear (mu held).
void ch_clear_signal(ChCore* ch);

// ---- completion queue ------------------------------------------------------
struct CqCore : ChildCore {
  std::shared_ptr<CtxCore> ctx;
  std::shared_ptr<ChCore> ch;
  Cq* handle = nullptr;  // G
  uint32_t depth = 0;
  std::vector<QpCore*> qps;  // G: QPs using it (as send and/or recv CQ)

  std::mutex mu;
  bool dead = false;  // mu (and G)
  bool error = false;
  bool armed = false;
  bool sol_only = false;
  std::vector<Wc> ring;
  uint32_t head = 0;
  uint32_t count = 0;
  std::vector<Wc> before_arm;
  std::atomic<bool> has_before_arm{false};
  // Bumped (under mu) whenever a poll could find something new: completions
  // added, the CQ broken or destroyed. Read without mu by spinning pollers.
  std::atomic<uint64_t> changes{0};

  rules::EventLedger events;  // ch->mu

  // G: completions the device thread produced in its current turn, not yet
  // visible to poll (published together under one ring lock).
  struct Staged {
    Wc wc;
    bool solicited;
  };
  std::vector<Staged> staged;
  bool staged_resp = false;  // holds responder-side completions
};
// G held. Adds a completion now (after anything staged on this CQ, to keep
// order); a full CQ overruns.
void cq_push(CqCore* cq, const Wc& wc, bool solicited);
// G held. Makes the staged completions visible.
void cq_publish(CqCore* cq);
// G held. CQ to error, CQ_ERR, every QP on it to ERR with QP_FATAL.
void cq_overrun(CqCore* cq);

// ---- protection domain and memory regions ---------------------------------
struct PdCore : ChildCore {
  std::shared_ptr<CtxCore> ctx;
  rules::Users users;  // G: its MRs and QPs
  bool dead = false;  // G
};

struct MrCore : ChildCore {
  std::shared_ptr<PdCore> pd;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t key = 0;
  bool registered = false;  // G: present in dev->mrs
  // G: the JS buffer behind it was detached (the addon saw it), or the
  // holder the addon asked us to watch is the memory's last one (no JS
  // ArrayBuffer owns it any more). Either way the device refuses to touch it.
  bool detached = false;
  bool watched = false;
  std::weak_ptr<void> owner;
  bool gone() const { return detached || (watched && owner.use_count() <= 1); }
  uint32_t busy = 0;  // G: in-flight copies using this memory
};

// ---- queue pair ------------------------------------------------------------
struct SendSlot {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t seq = 0;
  int64_t not_before_ns = 0;  // fault delay; 0 = run as soon as possible
  uint32_t opcode = 0;
  uint32_t flags = 0;
  uint32_t imm = 0;
  uint32_t rkey = 0;
  uint32_t nsge = 0;
  uint32_t inline_len = 0;
  // UD: the address handle's address, copied at post (the AH may go before
  // the WR runs), and the destination QP and qkey.
  AddressVector av;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  uint64_t compare_add = 0;  // atomics only
  uint64_t swap = 0;
};
struct RecvSlot {
  uint64_t wr_id = 0;
  uint64_t seq = 0;  // tells a copy outside G that its receive is still the head
  uint32_t nsge = 0;
};

struct QpCore : ChildCore {
  std::shared_ptr<CtxCore> ctx;
  std::shared_ptr<PdCore> pd;
  std::shared_ptr<CqCore> scq;
  std::shared_ptr<CqCore> rcq;
  std::shared_ptr<SrqCore> srq;  // receives come from it when set (own RQ empty)
  Qp* handle = nullptr;
  uint32_t qpn = 0;
  uint32_t type = qp_type::RC;  // set before the QP is published; then fixed
  QpCap cap;
  bool sig_all = false;

  // Written under G and mu; read under either.
  uint32_t state = qp_state::RESET;
  bool dead = false;
  // G.
  QpAttr attr;
  bool registered = false;  // present in dev->qps

  // Work queues: rings of preallocated slots (no allocation per post).
  // Indices under mu. Posters fill free slots; only G holders consume, so a
  // G holder may read an occupied slot without mu.
  std::mutex mu;
  std::vector<SendSlot> sq;
  std::vector<Sge> sq_sge;
  std::vector<uint8_t> sq_inl;
  uint32_t sq_head = 0;
  uint32_t sq_count = 0;
  uint64_t sq_seq = 0;
  std::vector<RecvSlot> rq;
  std::vector<Sge> rq_sge;
  uint32_t rq_head = 0;
  uint32_t rq_count = 0;
  uint64_t rq_seq = 0;

  Sge* sq_sges(uint32_t i) { return sq_sge.data() + size_t(i) * cap.max_send_sge; }
  uint8_t* sq_inline(uint32_t i) { return sq_inl.data() + size_t(i) * cap.max_inline_data; }
  Sge* rq_sges(uint32_t i) { return rq_sge.data() + size_t(i) * cap.max_recv_sge; }

  // Device thread bookkeeping.
  bool in_ready = false;              // rmu
  bool in_timed = false;              // rmu
  Clock::time_point wake_at;          // rmu
  uint32_t rnr_count = 0;             // G: RNR retries spent on the head WR
  QpCore* blocked_on = nullptr;       // G: infinite RNR wait on this responder
  std::vector<QpCore*> waiters;       // G+mu: requesters waiting for our receives
  uint64_t route_gen = 0;
  QpCore* route_cache = nullptr;
  // G: a device thread holds it in its turn or copies to it without G;
  // destroy waits for 0 (see "Data movement" above).
  uint32_t busy = 0;
};

// The requester's completion opcode for a WR opcode.
inline uint32_t wc_opcode_of(uint32_t wr_op) {
  switch (wr_op) {
    case wr_opcode::RDMA_WRITE:
    case wr_opcode::RDMA_WRITE_WITH_IMM:
      return wc_opcode::RDMA_WRITE;
    case wr_opcode::RDMA_READ:
      return wc_opcode::RDMA_READ;
    case wr_opcode::ATOMIC_CMP_AND_SWP:
      return wc_opcode::COMP_SWAP;
    case wr_opcode::ATOMIC_FETCH_AND_ADD:
      return wc_opcode::FETCH_ADD;
    default:
      return wc_opcode::SEND;
  }
}

// ---- shared receive queue (soft_srq.cc) -------------------------------------
// Its ring lock `mu` sits at level 2 of the lock order, beside QpCore::mu:
// taken before a QP's mu (never after), and nothing but amu under it.
// Posting takes only mu; only G holders consume, so a G holder may read an
// occupied slot without mu.
struct SrqCore : ChildCore {
  std::shared_ptr<CtxCore> ctx;
  std::shared_ptr<PdCore> pd;
  Srq* handle = nullptr;       // G
  std::vector<QpCore*> qps;    // G: QPs created on it
  rules::Users users;          // G: the same, counted for the rule book
  uint32_t max_sge = 1;

  std::mutex mu;
  bool dead = false;           // mu (and G)
  std::vector<RecvSlot> ring;
  std::vector<Sge> sge;
  uint32_t head = 0;
  uint32_t count = 0;
  uint64_t seq = 0;
  uint32_t limit = 0;          // armed limit; 0 = not armed
  bool waiting = false;        // a requester parked on one of its QPs (RNR forever)

  Sge* sges(uint32_t i) { return sge.data() + size_t(i) * max_sge; }
};
// G held. The head receive of the SRQ (index and seq); false when empty.
bool srq_head(SrqCore* q, uint32_t* idx, uint64_t* seq);
// G held. Pops the head if it is still `seq` (raising the limit event when
// the SRQ drops below its armed limit); false when it is not.
bool srq_take(SrqCore* q, uint64_t seq, RecvSlot* out);
// G held. Parks requester s on responder r until the SRQ gets a receive;
// false when one arrived meanwhile (retry at once).
bool srq_park(SrqCore* q, QpCore* s, QpCore* r);

// The receive a responder consumes next, wherever its receives come from.
// G held; the slot at `idx` is occupied (recv_head said so).
inline const Sge* recv_sges(QpCore* r, uint32_t idx) {
  return r->srq ? r->srq->sges(idx) : r->rq_sges(idx);
}
inline uint32_t recv_nsge(QpCore* r, uint32_t idx) {
  return r->srq ? r->srq->ring[idx].nsge : r->rq[idx].nsge;
}

// G held.
void qp_to_error(QpCore* q, uint32_t async_type);
// G held. Removes the QP from routing and the device thread (no completions).
void qp_unroute(QpCore* q);

// ---- device thread (soft_engine.cc) ----------------------------------------
void engine_start(CtxCore* c);
void engine_stop(CtxCore* c);  // G NOT held; joins the thread
void schedule(QpCore* q);      // any context; takes rmu
void unschedule(QpCore* q);    // G held
void kick_waiters(QpCore* r);  // G held: r's RQ or state changed

// ---- atomics (soft_atomic.cc) ----------------------------------------------
inline bool is_atomic(uint32_t wr_op) {
  return wr_op == wr_opcode::ATOMIC_CMP_AND_SWP || wr_op == wr_opcode::ATOMIC_FETCH_AND_ADD;
}
// G held; `word` 8-byte aligned inside a checked MR. Applies the atomic
// indivisibly and returns the word's original value.
uint64_t atomic_apply(uint32_t wr_op, uint64_t* word, uint64_t compare_add, uint64_t swap);

}  // namespace soft
}  // namespace rxv
