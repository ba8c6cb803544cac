// The rdma_cm provider: librdmacm's event channel, and cm::rdmacm_provider().
#include <fcntl.h>

#include <cerrno>
#include <memory>

#include "cm/cm_provider.h"
#include "cm/rdmacm/rdmacm_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace cm {

#ifdef RXV_RDMACM_BUILT
namespace rdmacm {

void fail_errno(const char* verb, const std::string& detail) {
  int err = errno != 0 ? errno : EIO;
  throw VerbsError(err, verb, detail);
}

RdmacmChannel::~RdmacmChannel() {
  if (ch_ != nullptr) a_->destroy_event_channel(ch_);
}

void RdmacmChannel::destroy() {
  if (ch_ == nullptr) return;
  rules::RefuseBusy(rules::Kind::kCmChannel, rules::Users::Of(rules::Kind::kCmId, ids));
  a_->destroy_event_channel(ch_);
  ch_ = nullptr;
}

static void copy_param(const rdma_conn_param& c, ConnParam* out) {
  if (c.private_data != nullptr && c.private_data_len > 0) {
    const auto* p = static_cast<const uint8_t*>(c.private_data);
    out->private_data.assign(p, p + c.private_data_len);
  }
  out->responder_resources = c.responder_resources;
  out->initiator_depth = c.initiator_depth;
  out->retry_count = c.retry_count;
  out->rnr_retry_count = c.rnr_retry_count;
  out->qp_num = c.qp_num;
  out->srq = c.srq != 0;
}

bool RdmacmChannel::get_event(Event* out) {
  if (ch_ == nullptr) throw VerbsError(EBADF, "rdma_get_cm_event", "the event channel is destroyed");
  rdma_cm_event* ev = nullptr;
  for (;;) {
    errno = 0;
    if (a_->get_cm_event(ch_, &ev) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    fail_errno("rdma_get_cm_event");
  }
  // Everything is copied, then the event is acked, whatever happens here.
  try {
    *out = Event{};
    out->type = ev->event;
    out->status = ev->status;
    if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      // The new id inherits the listener's context: it gets its own.
      out->listener = static_cast<Id*>(ev->listen_id->context);
      auto nid = std::make_unique<RdmacmId>(a_, ev->id, this);
      out->id = nid.get();
      out->new_id = std::move(nid);
    } else {
      out->id = static_cast<Id*>(ev->id->context);
    }
    if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN && ev->event != RDMA_CM_EVENT_MULTICAST_ERROR)
      copy_param(ev->param.conn, &out->param);
  } catch (...) {
    a_->ack_cm_event(ev);
    throw;
  }
  a_->ack_cm_event(ev);
  return true;
}

}  // namespace rdmacm

namespace {

class RdmacmProvider final : public CmProvider {
 public:
  const char* name() const override { return "rdmacm"; }

  std::unique_ptr<Channel> create_channel() override {
    std::string why;
    const rdmacm::Api* a = rdmacm::api(&why);
    if (a == nullptr) throw VerbsError(ENODEV, "rdma_create_event_channel", why);
    int err = 0;
    rdma_event_channel* ch = rdmacm::open_event_channel(a, &err, &why);
    if (ch == nullptr) throw VerbsError(err, "rdma_create_event_channel", why);
    // Non-blocking: get_event() says EAGAIN instead of blocking the loop.
    int flags = fcntl(ch->fd, F_GETFL);
    if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      int err = errno;
      a->destroy_event_channel(ch);
      throw VerbsError(err, "rdma_create_event_channel", "fcntl(O_NONBLOCK) on the channel fd failed");
    }
    return std::make_unique<rdmacm::RdmacmChannel>(a, ch);
  }

  std::unique_ptr<Id> create_id(Channel* channel, uint32_t ps) override {
    auto* ch = dynamic_cast<rdmacm::RdmacmChannel*>(channel);
    if (ch == nullptr || ch->raw() == nullptr)
      throw VerbsError(EINVAL, "rdma_create_id", "the channel is not a live rdma_cm event channel");
    const rdmacm::Api* a = rdmacm::api();
    rdma_cm_id* id = nullptr;
    errno = 0;
    if (a->create_id(ch->raw(), &id, nullptr, static_cast<rdma_port_space>(ps)) != 0)
      rdmacm::fail_errno("rdma_create_id");
    return std::make_unique<rdmacm::RdmacmId>(a, id, ch);
  }
};

}  // namespace

#else  // !RXV_RDMACM_BUILT

namespace {

class RdmacmProvider final : public CmProvider {
 public:
  const char* name() const override { return "rdmacm"; }
  std::unique_ptr<Channel> create_channel() override {
    std::string why;
    rdmacm_available(&why);
    throw VerbsError(ENODEV, "rdma_create_event_channel", why);
  }
  std::unique_ptr<Id> create_id(Channel*, uint32_t) override {
    throw VerbsError(ENODEV, "rdma_create_id", "librdmacm is not available");
  }
};

}  // namespace

#endif

CmProvider& rdmacm_provider() {
  static RdmacmProvider* p = new RdmacmProvider;
  return *p;
}

}  // namespace cm
}  // namespace rxv
