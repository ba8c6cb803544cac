// The soft CM's model: a process-wide, in-process connection manager for
// soft devices with librdmacm's event sequence (ids without a QP; see
// cm_provider.h). Private to cm/soft/.
//
// Locking: one mutex (cm_mutex()) guards every channel queue, every id's
// state and links, the address table and the port table. It is a leaf with
// respect to the soft device: the soft CM never holds it while calling into
// the device (open_context, Qp::modify), and the device never calls the CM
// with its own lock held (soft_cm_bridge.h).
// Lifetimes: handles (SoftCmChannel, SoftCmId) own their state through
// shared_ptr; an id's state holds its channel's state. The raw links between
// states (peer, listener, port table, channel membership) are cleared under
// the lock before a state can die. Handles queued inside events (the new id
// of a CONNECT_REQUEST) are owned by the queue; whatever must be deleted
// while the lock is held is moved to a Graveyard and deleted after it is
// released (a handle's destructor takes the lock).
//
// Behaviour chosen where the kernel gives no single answer (the TS layer's
// documentation repeats it for users):
// - Addresses: soft0 answers on 127.0.0.1 and ::1; other soft devices on
//   the addresses given to createSoftDevice. Binding 0.0.0.0 means every
//   IPv4 address of every soft device, :: every address.
// - Unknown address: ADDR_ERROR with -EHOSTUNREACH at once; an address in
//   198.18.0.0/15 (the benchmarking range, never routed) that no device has
//   is a black hole: ADDR_ERROR with -ETIMEDOUT after timeout_ms.
// - No listener on the port: REJECTED, status 8 (invalid service id).
// - Backlog: CONNECT_REQUESTs queued on the listener's channel and not yet
//   read count against it (as the kernel's ucma does); beyond it a request
//   is rejected (status 28, no private data). Backlog 0 means the default, 1024.
// - A peer that goes away before the connection is established (its id
//   destroyed, its listener destroyed with the request unread): REJECTED,
//   status 28, no private data. A passive id whose request was read but
//   not accepted hears nothing (the kernel's ucma drops a new id's events
//   until accept: seen across two rxe hosts); its accept fails with
//   EINVAL. After ESTABLISHED: DISCONNECTED.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "cm/cm_address.h"
#include "cm/cm_provider.h"

namespace rxv {
namespace cm {
namespace softcm {

using Lock = std::lock_guard<std::mutex>;
std::mutex& cm_mutex();

constexpr int32_t kRejectConsumer = 28;        // IB CM: consumer defined
constexpr int32_t kRejectInvalidService = 8;   // IB CM: invalid service id
constexpr int kDefaultBacklog = 1024;

struct IdState;
class SoftCmId;
class SoftCmChannel;

// Handles to delete once the lock is released.
using Graveyard = std::vector<std::unique_ptr<Id>>;

class EventFd {
 public:
  EventFd();
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int fd() const { return fd_; }
  void signal();
  void reset();

 private:
  int fd_ = -1;
};

struct ChState {
  SoftCmChannel* handle = nullptr;
  EventFd efd;
  std::deque<Event> q;
  std::unordered_set<IdState*> ids;  // every id whose events come here
  bool dead = false;
};

enum class St {
  Idle, Bound, Listening, AddrQuery, AddrResolved, RouteResolved,
  Connecting,    // active: REQ sent
  ReqReceived,   // passive: the request is delivered (or queued)
  Accepted,      // passive: REP sent, waiting for the RTU
  Responded,     // active: CONNECT_RESPONSE queued, establish() to answer
  Connected, Disconnected, Rejected, Removed, Destroyed
};

struct IdState {
  std::shared_ptr<ChState> ch;
  SoftCmId* handle = nullptr;
  uint32_t ps = port_space::TCP;
  St st = St::Idle;
  std::string device;    // the soft device; "" when none or wildcard
  std::string peer_device;
  Addr local, peer;      // local.valid() once bound / resolved
  bool holds_port = false;
  int backlog = 0;
  int queued_requests = 0;       // listener: CONNECT_REQUESTs not yet read
  IdState* peer_id = nullptr;    // the other end while a connection exists
  IdState* listener = nullptr;   // passive: its listener while the request is queued
  ConnParam mine, theirs;
  bool active = false;   // connect() was called on it (the retry count is its own)
  uint32_t my_psn = 0, their_psn = 0;
  uint64_t timer_gen = 0;
};

// ---- addresses and ports (soft_cm_addresses.cc; lock held) -------------------
// The device answering on `a` ("" when none).
std::string device_of(const Addr& a);
// Whether `a` lies in the black-hole range (198.18.0.0/15).
bool blackholed(const Addr& a);
// Takes `a.port` (0: an ephemeral port, written back) for `id`.
void take_port(IdState* id, Addr* a, const char* verb);
void release_port(IdState* id);
// The listener for a connection to `dst`, or null.
IdState* find_listener(const Addr& dst);

// ---- events (soft_cm_channel.cc; lock held) ---------------------------------
void push_event(ChState* ch, Event ev);
Event make_event(uint32_t type, IdState* id, int32_t status = 0);
// Drops queued events about `id` (as id or as listener); the new ids of
// dropped requests go to `dead` after being torn down.
void purge_events(IdState* id, Graveyard* dead);

// ---- ids (soft_cm_id.cc; lock held) ----------------------------------------
// Every live id of the process (device removal walks them).
std::unordered_set<IdState*>& all_ids();
// Tears the id down: its port, its links (the peer is told), its queued
// events. Idempotent.
void destroy_locked(IdState* id, Graveyard* dead);
// DEVICE_REMOVAL for every id on `device` (takes the lock).
void device_removed(const std::string& device);

// ---- timers (soft_cm_timer.cc) ----------------------------------------------
// After `ms`, calls expire(id, gen) with the lock held, unless the id died.
void arm_timer(const std::shared_ptr<IdState>& id, uint64_t gen, int ms);
void timer_expired(IdState* id, uint64_t gen);

class SoftCmChannel final : public Channel {
 public:
  SoftCmChannel();
  ~SoftCmChannel() override;
  int fd() const override;
  bool get_event(Event* out) override;
  void destroy() override;
  std::shared_ptr<ChState> state;
};

class SoftCmId final : public Id {
 public:
  explicit SoftCmId(std::shared_ptr<IdState> s) : state(std::move(s)) {}
  ~SoftCmId() override;
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
  Channel* channel() const override;
  void destroy() override;
  std::shared_ptr<IdState> state;
};

}  // namespace softcm
}  // namespace cm
}  // namespace rxv
