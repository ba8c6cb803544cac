// The CM seam: every connection-manager call the addon makes goes through it,
// as every verbs call goes through provider/provider.h. Two implementations:
// rdmacm/ (librdmacm, loaded with dlopen like libibverbs) and soft/ (an
// in-process CM for soft devices with the same event sequence).
//
// Conventions (those of provider.h, plus):
// - Event types, port spaces and statuses use librdmacm's values.
// - Channel::get_event() copies everything the event carries and acks it
//   natively before it returns, so nothing above can leave an event unacked
//   and destroying an id never blocks.
// - QPs are never attached to an id (no rdma_create_qp): the caller creates
//   them with Pd::create_rc_qp on the id's device and moves them with
//   Id::modify_qp, so the verbs path (fast path, operators) is the same for
//   connected and hand-wired QPs. Hence the active side answers
//   CONNECT_RESPONSE with establish() (rdma_establish), and gets no
//   ESTABLISHED event after it: the kernel reports none to an id without a
//   QP (librdmacm makes that event itself only for ids that own one). The
//   passive side gets ESTABLISHED when the RTU arrives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "provider/provider.h"

namespace rxv {
namespace cm {

namespace event_type {
enum : uint32_t {
  ADDR_RESOLVED = 0, ADDR_ERROR, ROUTE_RESOLVED, ROUTE_ERROR, CONNECT_REQUEST,
  CONNECT_RESPONSE, CONNECT_ERROR, UNREACHABLE, REJECTED, ESTABLISHED,
  DISCONNECTED, DEVICE_REMOVAL, MULTICAST_JOIN, MULTICAST_ERROR, ADDR_CHANGE,
  TIMEWAIT_EXIT
};
}
namespace port_space {
enum : uint32_t { TCP = 0x0106, UDP = 0x0111 };
}
// Private data limits of the TCP port space (IB CM sizes minus the rdma_cm
// header): what a RangeError is raised for before anything is sent.
namespace private_data_max {
enum : uint32_t { CONNECT = 56, ACCEPT = 196, REJECT = 148 };
}

// A numeric IPv4 or IPv6 address (no names are resolved) and a port.
struct SockAddr {
  std::string host;
  uint16_t port = 0;
};

struct ConnParam {
  std::vector<uint8_t> private_data;
  uint8_t responder_resources = 1;
  uint8_t initiator_depth = 1;
  // DEFAULT_RETRY_COUNT and DEFAULT_RNR_RETRY_COUNT of src/core/constants.ts,
  // where their reasons are written (rxe retries for ever at retry_count 7).
  uint8_t retry_count = 6;
  uint8_t rnr_retry_count = 7;
  uint32_t qp_num = 0;
  bool srq = false;
};

class Id;

// One event, copied. For CONNECT_REQUEST `new_id` owns the id of the new
// connection (on the listener's channel) and `listener` is the listening id;
// for every other event `id` is the id it concerns.
struct Event {
  uint32_t type = 0;
  int32_t status = 0;  // 0, a negative errno, or the peer's reject reason
  Id* id = nullptr;
  Id* listener = nullptr;
  std::unique_ptr<Id> new_id;
  ConnParam param;  // private data and the peer's connection parameters
};

class Channel {
 public:
  virtual ~Channel() = default;
  virtual int fd() const = 0;
  // Non-blocking: false when nothing is pending. Copies and acks natively.
  virtual bool get_event(Event* out) = 0;
  // Throws EBUSY while ids still use the channel.
  virtual void destroy() = 0;
  void* user = nullptr;
};

class Id {
 public:
  virtual ~Id() = default;
  virtual void bind(const SockAddr& addr) = 0;
  virtual void listen(int backlog) = 0;
  virtual void resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) = 0;
  virtual void resolve_route(int timeout_ms) = 0;
  // A verbs context on the device this id is bound to (after bind to a
  // device's address, ADDR_RESOLVED or CONNECT_REQUEST); ENODEV before. For
  // librdmacm it borrows the CM's own ibv_context (rdma_cm requires it).
  virtual std::unique_ptr<Context> open_context() = 0;
  // Whether QPs made on `ctx` can serve this id (what modify_qp demands):
  // lets a caller keep one context per device instead of opening one per id.
  virtual bool serves(Context* ctx) = 0;
  // Moves a QP made on that device to `state` (INIT, RTR, RTS or ERR) with
  // the attributes the CM derives for this connection (rdma_init_qp_attr).
  // `rnr_retry` (0-7; -1: the CM's) replaces the RNR retry count at RTS:
  // the CM gives each side the count its peer's message carried, so a
  // caller's own choice reaches its own QP only this way.
  virtual void modify_qp(Qp* qp, uint32_t state, int rnr_retry = -1) = 0;
  virtual void connect(const ConnParam& p) = 0;
  virtual void accept(const ConnParam& p) = 0;
  virtual void reject(const std::vector<uint8_t>& private_data) = 0;
  virtual void establish() = 0;
  virtual void disconnect() = 0;
  // Later events of this id go to `to` (rdma_migrate_id).
  virtual void migrate(Channel* to) = 0;
  virtual SockAddr local() = 0;
  virtual SockAddr peer() = 0;
  virtual Channel* channel() const = 0;
  // Never blocks (events are acked when read).
  virtual void destroy() = 0;
  void* user = nullptr;
};

class CmProvider {
 public:
  virtual ~CmProvider() = default;
  virtual const char* name() const = 0;
  // Throws ENODEV naming what is missing (librdmacm.so.1, headers at build).
  virtual std::unique_ptr<Channel> create_channel() = 0;
  virtual std::unique_ptr<Id> create_id(Channel* channel, uint32_t ps) = 0;
};

CmProvider& rdmacm_provider();
CmProvider& soft_cm_provider();

}  // namespace cm
}  // namespace rxv
