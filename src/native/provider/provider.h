// The Provider interface: every verbs call the addon makes goes through it.
// Two implementations exist: ibverbs/ (rdma-core, loaded lazily) and soft/
// (the embedded device). Everything above this header cannot tell them apart.
//
// Conventions shared by every implementation:
// - Numeric constants (opcodes, statuses, states, flags, event types) use
//   rdma-core's values, so the ibverbs provider passes them straight through.
// - A failed verb throws VerbsError{errno, verb}. A failed destroy() leaves the
//   object alive and usable (so the caller can fix the cause and retry).
// - Objects are owned by the caller through unique_ptr; destroy() must have
//   succeeded (or the parent context be torn down) before the destructor runs.
//   Destructors never throw and release what they still hold on a best-effort
//   basis (environment teardown).
// - `user` fields are opaque to providers: the addon stores its wrapper there
//   and reads it back from events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace rxv {

class VerbsError : public std::exception {
 public:
  VerbsError(int err, std::string verb, std::string detail = "")
      : err_(err), verb_(std::move(verb)), detail_(std::move(detail)) {
    message_ = verb_ + " failed";
    if (!detail_.empty()) message_ += ": " + detail_;
  }
  int err() const { return err_; }
  const std::string& verb() const { return verb_; }
  const std::string& detail() const { return detail_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int err_;
  std::string verb_;
  std::string detail_;
  std::string message_;
};

// ---- constants (rdma-core values) ----------------------------------------
namespace wc_status {
enum : uint32_t {
  SUCCESS = 0, LOC_LEN_ERR, LOC_QP_OP_ERR, LOC_EEC_OP_ERR, LOC_PROT_ERR,
  WR_FLUSH_ERR, MW_BIND_ERR, BAD_RESP_ERR, LOC_ACCESS_ERR, REM_INV_REQ_ERR,
  REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR, RNR_RETRY_EXC_ERR,
  LOC_RDD_VIOL_ERR, REM_INV_RD_REQ_ERR, REM_ABORT_ERR, INV_EECN_ERR,
  INV_EEC_STATE_ERR, FATAL_ERR, RESP_TIMEOUT_ERR, GENERAL_ERR,
  TM_ERR, TM_RNDV_INCOMPLETE
};
}
namespace wc_opcode {
enum : uint32_t {
  SEND = 0, RDMA_WRITE = 1, RDMA_READ = 2, COMP_SWAP = 3, FETCH_ADD = 4,
  BIND_MW = 5, LOCAL_INV = 6, TSO = 7,
  RECV = 128, RECV_RDMA_WITH_IMM = 129
};
}
namespace wc_flag {
enum : uint32_t { GRH = 1, WITH_IMM = 2 };
}
namespace wr_opcode {
enum : uint32_t {
  RDMA_WRITE = 0, RDMA_WRITE_WITH_IMM = 1, SEND = 2, SEND_WITH_IMM = 3,
  RDMA_READ = 4, ATOMIC_CMP_AND_SWP = 5, ATOMIC_FETCH_AND_ADD = 6
};
}
namespace send_flag {
enum : uint32_t { FENCE = 1, SIGNALED = 2, SOLICITED = 4, INLINE = 8 };
}
namespace access_flag {
enum : uint32_t {
  LOCAL_WRITE = 1, REMOTE_WRITE = 2, REMOTE_READ = 4, REMOTE_ATOMIC = 8
};
}
namespace qp_state {
enum : uint32_t { RESET = 0, INIT, RTR, RTS, SQD, SQE, ERR };
}
namespace async_event {
enum : uint32_t {
  CQ_ERR = 0, QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED,
  PATH_MIG, PATH_MIG_ERR, DEVICE_FATAL, PORT_ACTIVE, PORT_ERR, LID_CHANGE,
  PKEY_CHANGE, SM_CHANGE, SRQ_ERR, SRQ_LIMIT_REACHED, QP_LAST_WQE_REACHED,
  CLIENT_REREGISTER, GID_CHANGE
};
}
namespace port_state {
enum : uint32_t { NOP = 0, DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER };
}
namespace link_layer {
enum : uint32_t { UNSPECIFIED = 0, INFINIBAND = 1, ETHERNET = 2 };
}
// ibv_qp_type values.
namespace qp_type {
enum : uint32_t { RC = 2, UD = 4 };
}
// Bytes in front of every UD receive: the GRH (or the IP header on RoCE).
constexpr uint32_t kGrhBytes = 40;

// ---- plain data ------------------------------------------------------------
class Ah;

struct Wc {
  uint64_t wr_id = 0;
  uint32_t status = 0;
  uint32_t opcode = 0;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm = 0;      // host order (libibverbs' __be32 converted): what was posted
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t wc_flags = 0;
  // Who sent a received message (successful receives only; 0 otherwise):
  // the sending port's LID (0 on RoCE), the service level it travelled on,
  // and the destination LID's path bits.
  uint16_t slid = 0;
  uint8_t sl = 0;
  uint8_t dlid_path_bits = 0;
};

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct SendWr {
  uint64_t wr_id = 0;
  uint32_t opcode = wr_opcode::SEND;
  uint32_t send_flags = 0;
  uint32_t imm = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Atomics: the operands, 64-bit integers in host order (the remote word
  // is read and written in the responder's host order, as rdma-core does).
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  std::vector<Sge> sg;
  // UD only (ibv_send_wr's wr.ud): where the datagram goes. `ah` is the
  // provider's own Ah of the QP's PD, or null (refused at post).
  Ah* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
};

struct RecvWr {
  uint64_t wr_id = 0;
  std::vector<Sge> sg;
};

struct QpCap {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
};

// Attributes for Qp::modify(). Only fields named by `mask` bits are used;
// bit values are rdma-core's IBV_QP_* mask bits.
namespace qp_attr_mask {
enum : uint32_t {
  STATE = 1 << 0, CUR_STATE = 1 << 1, EN_SQD_ASYNC_NOTIFY = 1 << 2,
  ACCESS_FLAGS = 1 << 3, PKEY_INDEX = 1 << 4, PORT = 1 << 5, QKEY = 1 << 6,
  AV = 1 << 7, PATH_MTU = 1 << 8, TIMEOUT = 1 << 9, RETRY_CNT = 1 << 10,
  RNR_RETRY = 1 << 11, RQ_PSN = 1 << 12, MAX_QP_RD_ATOMIC = 1 << 13,
  ALT_PATH = 1 << 14, MIN_RNR_TIMER = 1 << 15, SQ_PSN = 1 << 16,
  MAX_DEST_RD_ATOMIC = 1 << 17, PATH_MIG_STATE = 1 << 18, CAP = 1 << 19,
  DEST_QPN = 1 << 20
};
}
struct AddressVector {
  uint16_t dlid = 0;
  uint8_t sl = 0;
  uint8_t port_num = 1;
  bool is_global = false;
  uint8_t dgid[16] = {0};
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 1;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
};
struct QpAttr {
  uint32_t state = qp_state::RESET;
  uint32_t access_flags = 0;
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  uint32_t path_mtu = 3;  // IBV_MTU_1024
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint8_t max_rd_atomic = 1;
  uint8_t max_dest_rd_atomic = 1;
  uint8_t min_rnr_timer = 12;
  uint8_t timeout = 14;
  // DEFAULT_RETRY_COUNT and DEFAULT_RNR_RETRY_COUNT of src/core/constants.ts,
  // where their reasons are written (rxe retries for ever at retry_cnt 7).
  uint8_t retry_cnt = 6;
  uint8_t rnr_retry = 7;
  AddressVector ah;
  uint32_t qkey = 0;  // UD
  QpCap cap;          // Qp::query() only: modify never resizes a QP
};

struct DeviceAttr {
  std::string fw_ver;
  uint64_t node_guid = 0;
  uint64_t sys_image_guid = 0;
  uint64_t max_mr_size = 0;
  uint32_t vendor_id = 0;
  uint32_t vendor_part_id = 0;
  uint32_t hw_ver = 0;
  int32_t max_qp = 0;
  int32_t max_qp_wr = 0;
  int32_t max_sge = 0;
  int32_t max_cq = 0;
  int32_t max_cqe = 0;
  int32_t max_mr = 0;
  int32_t max_pd = 0;
  uint32_t phys_port_cnt = 0;
  // ibv_atomic_cap: 0 NONE, 1 HCA (atomic against other atomics of this
  // device), 2 GLOB (against the CPU too).
  uint32_t atomic_cap = 0;
  int32_t max_qp_rd_atom = 0;       // as responder (max_dest_rd_atomic)
  int32_t max_qp_init_rd_atom = 0;  // as requester (max_rd_atomic)
};

namespace atomic_cap {
enum : uint32_t { NONE = 0, HCA = 1, GLOB = 2 };
}

struct PortAttr {
  uint32_t state = port_state::DOWN;
  uint32_t max_mtu = 0;     // ibv_mtu enum value (1=256 .. 5=4096)
  uint32_t active_mtu = 0;
  int32_t gid_tbl_len = 0;
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t lmc = 0;
  uint8_t link_layer = link_layer::UNSPECIFIED;
  uint8_t active_width = 0;
  uint8_t active_speed = 0;
  uint8_t phys_state = 0;
};

struct Gid {
  uint8_t raw[16] = {0};
};

class Cq;
class Qp;
class Srq;

struct AsyncEvent {
  uint32_t type = 0;
  Cq* cq = nullptr;    // for CQ_ERR
  Qp* qp = nullptr;    // for QP_* events
  Srq* srq = nullptr;  // for SRQ_LIMIT_REACHED, SRQ_ERR
  uint32_t port = 0;   // for PORT_* events
  void* native = nullptr;  // provider bookkeeping for ack
};

struct DeviceInfo {
  std::string name;
  std::string provider;   // "soft" or "ibverbs"
  std::string transport;  // "InfiniBand", "Ethernet" (RoCE), ...
  uint64_t node_guid = 0;
};

// ---- objects ---------------------------------------------------------------
class Channel {
 public:
  virtual ~Channel() = default;
  // The pollable descriptor: readable while events are pending.
  virtual int fd() const = 0;
  // Non-blocking: false when no event is pending (EAGAIN). Throws on a hard
  // failure.
  virtual bool get_event(Cq** cq) = 0;
  // Throws EBUSY while CQs still use the channel.
  virtual void destroy() = 0;
  void* user = nullptr;
};

class Cq {
 public:
  virtual ~Cq() = default;
  virtual int cqe() const = 0;  // actual depth
  // Arms once (see docs/ARCHITECTURE.md, Providers). Throws on a broken CQ.
  virtual void req_notify(bool solicited_only) = 0;
  // Non-blocking; returns how many were written (0 when empty). Throws when
  // the CQ is in error (overrun).
  virtual int poll(int max, Wc* out) = 0;
  // For a consumer that busy-polls: whether a poll may now find what the
  // one after the last `*mark` did not (a completion added, the CQ broken),
  // taking a new mark. Spinning on it keeps the spinner off the lock the
  // device needs to add the completion it waits for. A provider that cannot
  // tell answers true (poll every time).
  virtual bool changed_since(uint64_t* mark) { return true; }
  virtual void ack_events(uint32_t n) = 0;
  // Throws EBUSY when QPs still use it or events are unacked.
  virtual void destroy() = 0;
  virtual Channel* channel() const = 0;
  void* user = nullptr;
};

class Mr {
 public:
  virtual ~Mr() = default;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
  virtual uint64_t addr() const = 0;
  virtual size_t length() const = 0;
  virtual uint32_t access() const = 0;
  virtual void destroy() = 0;  // ibv_dereg_mr
  // The memory's owner (a JS ArrayBuffer) was detached: a provider that
  // executes WRs itself refuses to touch this MR from now on (protection
  // errors). Hardware cannot be told; the default does nothing.
  virtual void mark_detached() {}
  // `owner` holds the memory for the addon; while it has no other holder
  // (no JS ArrayBuffer owns the memory any more) a provider that runs WRs
  // itself treats the MR as detached. Hardware cannot be told.
  virtual void watch_owner(std::weak_ptr<void> owner) {}
  void* user = nullptr;
};

class Qp {
 public:
  virtual ~Qp() = default;
  virtual uint32_t qp_num() const = 0;
  virtual uint32_t state() const = 0;
  virtual QpCap cap() const = 0;
  virtual void modify(const QpAttr& attr, uint32_t mask) = 0;
  // ibv_query_qp: the current state and every attribute modify sets, as the
  // device holds them now (what was set, or what the device chose), and the
  // capacities. A never-set attribute reads as the device reports it.
  virtual QpAttr query() = 0;
  // On failure *bad is the index of the first WR not posted (earlier ones
  // were), and the call throws.
  virtual void post_send(const SendWr* wrs, size_t n, size_t* bad) = 0;
  virtual void post_recv(const RecvWr* wrs, size_t n, size_t* bad) = 0;
  virtual void destroy() = 0;
  void* user = nullptr;
};

// A shared receive queue's sizes (ibv_srq_attr). srq_limit 0 = not armed.
struct SrqAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 1;
  uint32_t srq_limit = 0;
};

// A shared receive queue: receives any QP created on it consumes, one per
// incoming message, in posting order.
class Srq {
 public:
  virtual ~Srq() = default;
  // ibv_query_srq: the granted sizes and the current limit (0 once the
  // limit event fired).
  virtual SrqAttr query() = 0;
  // ibv_modify_srq(IBV_SRQ_LIMIT): SRQ_LIMIT_REACHED once, when fewer than
  // `limit` receives remain; 0 disarms. EINVAL above max_wr (rules/srq.h).
  virtual void arm(uint32_t limit) = 0;
  // As Qp::post_recv (ENOMEM when full, EINVAL for too many SGEs).
  virtual void post_recv(const RecvWr* wrs, size_t n, size_t* bad) = 0;
  // EBUSY while QPs use it.
  virtual void destroy() = 0;
  void* user = nullptr;
};

// An address handle (ibv_ah): where UD datagrams go. Providers copy its
// address into each WR at post time (as hardware copies it into the WQE), so
// destroying it never races a posted WR; nothing counts its users.
class Ah {
 public:
  virtual ~Ah() = default;
  virtual const AddressVector& av() const = 0;
  virtual void destroy() = 0;  // ibv_destroy_ah
  void* user = nullptr;
};

class Pd {
 public:
  virtual ~Pd() = default;
  // The memory is owned by the caller and must stay valid until the Mr is
  // destroyed.
  virtual std::unique_ptr<Mr> reg_mr(void* addr, size_t length,
                                     uint32_t access) = 0;
  struct QpInit {
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    QpCap cap;
    bool sq_sig_all = false;
    // Receives come from this SRQ (cap's receive sizes are then ignored and
    // the QP's own receive queue refuses posts).
    Srq* srq = nullptr;
  };
  virtual std::unique_ptr<Qp> create_rc_qp(const QpInit& init) = 0;
  // ibv_create_srq. `attr.srq_limit` arms the limit event at once; above
  // the granted max_wr it is EINVAL, as arm() refuses it (rules/srq.h).
  virtual std::unique_ptr<Srq> create_srq(const SrqAttr& attr) = 0;
  // A UD QP (its qkey is set by modify, from INIT on).
  virtual std::unique_ptr<Qp> create_ud_qp(const QpInit& init) = 0;
  virtual std::unique_ptr<Ah> create_ah(const AddressVector& av) = 0;
  virtual void destroy() = 0;  // EBUSY while MRs, QPs, SRQs or AHs remain
  void* user = nullptr;
};

// Fault injection, implemented by the soft device only (other providers
// return nullptr from Context::faults()).
class Faults {
 public:
  virtual ~Faults() = default;
  // Makes the CQ overflow now (as if one more completion than its depth came).
  virtual void overrun(Cq* cq) = 0;
  // Adds a completion with this status to the CQ (and raises its event if armed).
  virtual void error_completion(Cq* cq, const Wc& wc) = 0;
  // Queues an event for the CQ on its channel without a completion (an empty
  // event); it still must be acked.
  virtual void empty_event(Cq* cq) = 0;
  // Makes the channel fd readable with no event behind it.
  virtual void spurious_wakeup(Channel* ch) = 0;
  // Next time the CQ is armed, this completion lands just before the arm takes
  // effect (so the arm does not see it as new).
  virtual void completion_before_arm(Cq* cq, const Wc& wc) = 0;
  // The device delays every WR execution by this many microseconds.
  virtual void delay_us(uint32_t us) = 0;
  // Every later event is delivered twice (duplicated/spurious events).
  virtual void duplicate_events(bool on) = 0;
  // Device fatal: raises DEVICE_FATAL, every later verb fails with EIO.
  virtual void device_fatal() = 0;
  // Raises a port event (PORT_ACTIVE / PORT_ERR).
  virtual void port_event(uint32_t type) = 0;
};

class Context {
 public:
  virtual ~Context() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual DeviceAttr query_device() = 0;
  virtual PortAttr query_port(uint8_t port) = 0;
  virtual Gid query_gid(uint8_t port, int index) = 0;
  virtual std::unique_ptr<Pd> alloc_pd() = 0;
  virtual std::unique_ptr<Channel> create_channel() = 0;
  // channel may be null (no events). cq_context is the provider's Cq itself.
  virtual std::unique_ptr<Cq> create_cq(int cqe, Channel* channel,
                                        int comp_vector) = 0;
  // The async event descriptor (non-blocking).
  virtual int async_fd() const = 0;
  virtual bool get_async_event(AsyncEvent* out) = 0;
  virtual void ack_async_event(const AsyncEvent& ev) = 0;
  virtual Faults* faults() { return nullptr; }
  // Throws EBUSY while children remain.
  virtual void destroy() = 0;
  void* user = nullptr;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  // Empty when the provider is unavailable (never throws for that).
  virtual std::vector<DeviceInfo> list_devices() = 0;
  // Throws ENODEV (with a detail naming what is missing) when absent.
  virtual std::unique_ptr<Context> open(const std::string& name) = 0;
};

// Soft devices are process-wide (like hardware): soft0 always exists.
struct SoftDeviceOptions {
  std::string name;
  uint32_t ports = 1;
  uint32_t max_cqe = 65536;
  uint32_t max_qp_wr = 16384;
  uint32_t max_sge = 16;
  uint32_t max_inline = 256;
};
Provider& soft_provider();
// Creates another soft device; EEXIST when the name is taken.
void create_soft_device(const SoftDeviceOptions& opts);
Provider& ibverbs_provider();

}  // namespace rxv
