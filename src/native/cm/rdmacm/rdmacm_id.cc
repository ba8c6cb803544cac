// The rdma_cm provider's ids. QPs are never attached (cm_provider.h):
// modify_qp asks librdmacm for the attributes (rdma_init_qp_attr) and moves
// a QP our verbs code made on the id's own device context.
#include <cerrno>
#include <cstring>

#include "cm/cm_address.h"
#include "cm/rdmacm/rdmacm_objects.h"

#ifdef RXV_RDMACM_BUILT

#include "provider/ibverbs/ibverbs_objects.h"

namespace rxv {
namespace cm {
namespace rdmacm {

namespace {

Addr parse_or_fail(const SockAddr& a, const char* verb) {
  Addr out;
  if (!parse_addr(a.host, a.port, &out))
    throw VerbsError(EINVAL, verb, "'" + a.host + "' is not a numeric IPv4 or IPv6 address");
  return out;
}

rdma_conn_param to_native(const ConnParam& p) {
  rdma_conn_param c;
  std::memset(&c, 0, sizeof c);
  c.private_data = p.private_data.empty() ? nullptr : p.private_data.data();
  c.private_data_len = static_cast<uint8_t>(p.private_data.size());
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.retry_count = p.retry_count;
  c.rnr_retry_count = p.rnr_retry_count;
  c.qp_num = p.qp_num;
  c.srq = p.srq ? 1 : 0;
  return c;
}

SockAddr sock_of(const sockaddr* sa) {
  Addr a = from_native(sa);
  return a.valid() ? a.to_sock() : SockAddr{};
}

void check(int rc, const char* verb) {
  if (rc != 0) fail_errno(verb);
}

}  // namespace

RdmacmId::RdmacmId(const Api* a, rdma_cm_id* id, RdmacmChannel* ch) : a_(a), id_(id), ch_(ch) {
  id_->context = static_cast<Id*>(this);
  ++ch_->ids;
}

RdmacmId::~RdmacmId() {
  try {
    destroy();
  } catch (...) {
  }
}

void RdmacmId::destroy() {
  if (id_ == nullptr) return;
  // Every event of this id was acked when read: this does not block.
  errno = 0;
  if (a_->destroy_id(id_) != 0) fail_errno("rdma_destroy_id");
  id_ = nullptr;
  --ch_->ids;
}

rdma_cm_id* RdmacmId::live(const char* verb) const {
  if (id_ == nullptr) throw VerbsError(EBADF, verb, "the id is destroyed");
  errno = 0;
  return id_;
}

void RdmacmId::bind(const SockAddr& addr) {
  Addr a = parse_or_fail(addr, "rdma_bind_addr");
  sockaddr_storage ss;
  a.to_native(&ss);
  check(a_->bind_addr(live("rdma_bind_addr"), reinterpret_cast<sockaddr*>(&ss)), "rdma_bind_addr");
}

void RdmacmId::listen(int backlog) { check(a_->listen(live("rdma_listen"), backlog), "rdma_listen"); }

void RdmacmId::resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) {
  const char* verb = "rdma_resolve_addr";
  Addr d = parse_or_fail(dst, verb);
  sockaddr_storage sd, ss;
  d.to_native(&sd);
  sockaddr* sp = nullptr;
  if (src != nullptr) {
    parse_or_fail(*src, verb).to_native(&ss);
    sp = reinterpret_cast<sockaddr*>(&ss);
  }
  check(a_->resolve_addr(live(verb), sp, reinterpret_cast<sockaddr*>(&sd), timeout_ms), verb);
}

void RdmacmId::resolve_route(int timeout_ms) {
  check(a_->resolve_route(live("rdma_resolve_route"), timeout_ms), "rdma_resolve_route");
}

std::unique_ptr<Context> RdmacmId::open_context() {
  rdma_cm_id* id = live("rdma_cm_id.verbs");
  if (id->verbs == nullptr)
    throw VerbsError(ENODEV, "rdma_cm_id.verbs",
                     "the id has no device yet: bind it to a device's address, resolve an address, or take "
                     "it from a CONNECT_REQUEST");
  std::string why;
  const ibv::Api* ia = ibv::api(&why);
  if (ia == nullptr) throw VerbsError(ENODEV, "rdma_cm_id.verbs", why);
  // librdmacm closes a device once nothing uses it: our reference to its
  // device list keeps the context open while the verbs objects live.
  int n = 0;
  ibv_context** list = a_->get_devices(&n);
  const Api* a = a_;
  std::shared_ptr<void> keep(list, [a](void* l) {
    if (l != nullptr) a->free_devices(static_cast<ibv_context**>(l));
  });
  return ibv::borrow_context(ia, id->verbs, std::move(keep));
}

bool RdmacmId::serves(Context* ctx) {
  rdma_cm_id* id = live("rdma_cm_id.verbs");
  auto* c = dynamic_cast<ibv::IbvContext*>(ctx);
  return c != nullptr && id->verbs != nullptr && c->raw() == id->verbs;
}

void RdmacmId::modify_qp(Qp* qp, uint32_t state, int rnr_retry) {
  const char* verb = "rdma_init_qp_attr";
  rdma_cm_id* id = live(verb);
  auto* q = dynamic_cast<ibv::IbvQp*>(qp);
  if (q == nullptr || q->raw() == nullptr)
    throw VerbsError(EINVAL, verb, "the QP is not a live rdma-core QP");
  if (q->raw()->context != id->verbs)
    throw VerbsError(EINVAL, verb, "the QP was not created on the id's device context: use openContext()");
  ibv_qp_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.qp_state = static_cast<ibv_qp_state>(state);
  int mask = IBV_QP_STATE;
  if (state != IBV_QPS_ERR) {
    errno = 0;
    check(a_->init_qp_attr(id, &attr, &mask), verb);
    if (state == IBV_QPS_RTS && rnr_retry >= 0) attr.rnr_retry = static_cast<uint8_t>(rnr_retry);
  }
  const ibv::Api* ia = ibv::api();
  int rc = ia->modify_qp(q->raw(), &attr, mask);
  if (rc != 0) throw VerbsError(rc > 0 ? rc : EINVAL, "ibv_modify_qp", "moving the QP as the CM says");
}

void RdmacmId::connect(const ConnParam& p) {
  rdma_conn_param c = to_native(p);
  check(a_->connect(live("rdma_connect"), &c), "rdma_connect");
}

void RdmacmId::accept(const ConnParam& p) {
  rdma_conn_param c = to_native(p);
  check(a_->accept(live("rdma_accept"), &c), "rdma_accept");
}

void RdmacmId::reject(const std::vector<uint8_t>& pd) {
  check(a_->reject(live("rdma_reject"), pd.empty() ? nullptr : pd.data(), static_cast<uint8_t>(pd.size())),
        "rdma_reject");
}

void RdmacmId::establish() { check(a_->establish(live("rdma_establish")), "rdma_establish"); }

void RdmacmId::disconnect() { check(a_->disconnect(live("rdma_disconnect")), "rdma_disconnect"); }

void RdmacmId::migrate(Channel* to) {
  auto* dst = dynamic_cast<RdmacmChannel*>(to);
  if (dst == nullptr || dst->raw() == nullptr)
    throw VerbsError(EINVAL, "rdma_migrate_id", "the channel is not a live rdma_cm event channel");
  rdma_cm_id* id = live("rdma_migrate_id");
  if (dst == ch_) return;
  check(a_->migrate_id(id, dst->raw()), "rdma_migrate_id");
  --ch_->ids;
  ch_ = dst;
  ++ch_->ids;
}

SockAddr RdmacmId::local() {
  if (id_ == nullptr) return SockAddr{};
  return sock_of(&id_->route.addr.src_addr);
}

SockAddr RdmacmId::peer() {
  if (id_ == nullptr) return SockAddr{};
  return sock_of(&id_->route.addr.dst_addr);
}

}  // namespace rdmacm
}  // namespace cm
}  // namespace rxv

#endif  // RXV_RDMACM_BUILT
