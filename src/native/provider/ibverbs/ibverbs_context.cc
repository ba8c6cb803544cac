// Context of the ibverbs provider: queries, object creation, async events.
#include "ibverbs_objects.h"
#include "rules/refusals.h"

#ifdef RXV_HAVE_IBVERBS

#include <endian.h>

#include <cerrno>
#include <cstring>

namespace rxv {
namespace ibv {

IbvContext::IbvContext(const Api* api, ibv_context* ctx, DeviceInfo info)
    : st_(std::make_shared<ContextState>()), info_(std::move(info)) {
  st_->api = api;
  st_->ctx = ctx;
  st_->device = info_.name;
}

IbvContext::~IbvContext() {
  // Environment teardown: release children still alive in the safe order
  // (rules/children.h), ack pending events, close. Children outliving
  // us see null handles and only unregister.
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->teardown_locked();
}

ibv_context* IbvContext::live(const char* verb) const {
  if (st_->ctx == nullptr) fail_closed(verb);
  return st_->ctx;
}

DeviceAttr IbvContext::query_device() {
  ibv_context* ctx = live("ibv_query_device");
  ibv_device_attr a;
  std::memset(&a, 0, sizeof a);
  int ret = st_->api->query_device(ctx, &a);
  if (ret != 0) fail(ret, "ibv_query_device", st_->device);
  DeviceAttr d;
  d.fw_ver.assign(a.fw_ver, strnlen(a.fw_ver, sizeof a.fw_ver));
  // GUIDs are __be64 in libibverbs; host order here (prints as ibv_devinfo).
  d.node_guid = be64toh(a.node_guid);
  d.sys_image_guid = be64toh(a.sys_image_guid);
  d.max_mr_size = a.max_mr_size;
  d.vendor_id = a.vendor_id;
  d.vendor_part_id = a.vendor_part_id;
  d.hw_ver = a.hw_ver;
  d.max_qp = a.max_qp;
  d.max_qp_wr = a.max_qp_wr;
  d.max_sge = a.max_sge;
  d.max_cq = a.max_cq;
  d.max_cqe = a.max_cqe;
  d.max_mr = a.max_mr;
  d.max_pd = a.max_pd;
  d.phys_port_cnt = a.phys_port_cnt;
  d.atomic_cap = a.atomic_cap;
  d.max_qp_rd_atom = a.max_qp_rd_atom;
  d.max_qp_init_rd_atom = a.max_qp_init_rd_atom;
  return d;
}

PortAttr IbvContext::query_port(uint8_t port) {
  ibv_context* ctx = live("ibv_query_port");
  ibv_port_attr a;
  int ret = ibv::query_port(*st_->api, ctx, port, &a);
  if (ret != 0)
    fail(ret, "ibv_query_port", st_->device + " port " + std::to_string(port));
  PortAttr p;
  p.state = a.state;
  p.max_mtu = a.max_mtu;
  p.active_mtu = a.active_mtu;
  p.gid_tbl_len = a.gid_tbl_len;
  p.lid = a.lid;
  p.sm_lid = a.sm_lid;
  p.lmc = a.lmc;
  p.link_layer = a.link_layer;
  p.active_width = a.active_width;
  p.active_speed = a.active_speed;
  p.phys_state = a.phys_state;
  return p;
}

Gid IbvContext::query_gid(uint8_t port, int index) {
  ibv_context* ctx = live("ibv_query_gid");
  ibv_gid g;
  std::memset(&g, 0, sizeof g);
  errno = 0;
  if (st_->api->query_gid(ctx, port, index, &g) != 0)
    fail(errno != 0 ? errno : EINVAL, "ibv_query_gid",
         st_->device + " port " + std::to_string(port) + " index " +
             std::to_string(index));
  Gid out;
  std::memcpy(out.raw, g.raw, sizeof out.raw);
  return out;
}

std::unique_ptr<Pd> IbvContext::alloc_pd() {
  ibv_context* ctx = live("ibv_alloc_pd");
  errno = 0;
  ibv_pd* pd = st_->api->alloc_pd(ctx);
  if (pd == nullptr) fail(errno, "ibv_alloc_pd", st_->device);
  std::lock_guard<std::mutex> lock(st_->mu);
  auto out = std::make_unique<IbvPd>(st_, pd);
  st_->children.Add(rules::Kind::kPd, out.get());
  return out;
}

std::unique_ptr<Channel> IbvContext::create_channel() {
  ibv_context* ctx = live("ibv_create_comp_channel");
  errno = 0;
  ibv_comp_channel* ch = st_->api->create_comp_channel(ctx);
  if (ch == nullptr) fail(errno, "ibv_create_comp_channel", st_->device);
  // Non-blocking, so get_event() says EAGAIN instead of blocking the loop.
  int err = set_nonblock(ch->fd);
  if (err != 0) {
    st_->api->destroy_comp_channel(ch);
    fail(err, "ibv_create_comp_channel",
         "fcntl(O_NONBLOCK) on the channel fd failed");
  }
  std::lock_guard<std::mutex> lock(st_->mu);
  auto out = std::make_unique<IbvChannel>(st_, ch);
  st_->children.Add(rules::Kind::kChannel, out.get());
  return out;
}

std::unique_ptr<Cq> IbvContext::create_cq(int cqe, Channel* channel,
                                          int comp_vector) {
  ibv_context* ctx = live("ibv_create_cq");
  IbvChannel* ch = nullptr;
  if (channel != nullptr) {
    std::lock_guard<std::mutex> lock(st_->mu);
    ch = dynamic_cast<IbvChannel*>(channel);
    if (ch == nullptr || !st_->children.Has(rules::Kind::kChannel, ch) || ch->raw() == nullptr)
      fail(EINVAL, "ibv_create_cq",
           "the channel is not a live channel of this device context");
  }
  // Not under st_->mu: on failure `cq` is destroyed here, and its destructor
  // takes the lock.
  auto cq = std::make_unique<IbvCq>(st_, ch);
  errno = 0;
  // cq_context = the provider Cq: events map back to it without a lookup.
  ibv_cq* raw = st_->api->create_cq(ctx, cqe, cq.get(),
                                    ch != nullptr ? ch->raw() : nullptr,
                                    comp_vector);
  if (raw == nullptr)
    fail(errno, "ibv_create_cq",
         "cqe " + std::to_string(cqe) + ", comp_vector " +
             std::to_string(comp_vector) + " (max " +
             std::to_string(ctx->num_comp_vectors - 1) + ")");
  cq->attach(raw);
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->children.Add(rules::Kind::kCq, cq.get());
  if (ch != nullptr) ch->users.Add(rules::Kind::kCq);
  return cq;
}

int IbvContext::async_fd() const {
  return st_->ctx != nullptr ? st_->ctx->async_fd : -1;
}

bool IbvContext::get_async_event(AsyncEvent* out) {
  ibv_context* ctx = live("ibv_get_async_event");
  ibv_async_event ev;
  for (;;) {
    std::memset(&ev, 0, sizeof ev);
    errno = 0;
    if (st_->api->get_async_event(ctx, &ev) == 0) break;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return false;
    fail(err, "ibv_get_async_event", st_->device);
  }
  std::lock_guard<std::mutex> lock(st_->mu);
  auto* copy = new ibv_async_event(ev);  // freed by ack (or teardown)
  *out = AsyncEvent{};
  out->type = ev.event_type;  // rdma-core's enum values, passed through
  out->native = copy;
  const void* named = nullptr;  // the IbvCq or IbvQp it names, if ours
  switch (ev.event_type) {
    case IBV_EVENT_CQ_ERR: {
      auto* c = static_cast<IbvCq*>(ev.element.cq->cq_context);
      if (st_->children.Has(rules::Kind::kCq, c)) out->cq = c, named = c;
      break;
    }
    case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED: {
      auto* q = static_cast<IbvQp*>(ev.element.qp->qp_context);
      if (st_->children.Has(rules::Kind::kQp, q)) out->qp = q, named = q;
      break;
    }
    case IBV_EVENT_PORT_ACTIVE: case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE: case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE: case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      out->port = static_cast<uint32_t>(ev.element.port_num);
      break;
    case IBV_EVENT_SRQ_ERR: case IBV_EVENT_SRQ_LIMIT_REACHED: {
      auto* s = static_cast<IbvSrq*>(ev.element.srq->srq_context);
      if (st_->children.Has(rules::Kind::kSrq, s)) out->srq = s, named = s;
      break;
    }
    default:  // DEVICE_FATAL, WQ events (we create none): no element
      break;
  }
  st_->pending_async.Delivered(copy, named);
  return true;
}

void IbvContext::ack_async_event(const AsyncEvent& e) {
  std::lock_guard<std::mutex> lock(st_->mu);
  auto* ev = static_cast<ibv_async_event*>(e.native);
  // Looked up by our own copy, never by the caller's fields.
  st_->pending_async.Acked(ev);
  st_->api->ack_async_event(ev);
  delete ev;
}

void IbvContext::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (st_->ctx == nullptr) return;
  rules::RefuseBusy(rules::Kind::kContext, st_->children.Open());
  st_->ack_pending_locked(nullptr);
  errno = 0;
  int ret = st_->borrowed ? 0 : st_->api->close_device(st_->ctx);
  if (ret != 0) fail(ret > 0 ? ret : errno, "ibv_close_device", st_->device);
  st_->ctx = nullptr;
  st_->keep.reset();
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
