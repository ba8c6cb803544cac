// The soft CM's ids: librdmacm's state machine for ids without a QP, played
// between two ids of this process (see soft_cm_core.h for the choices).
#include <algorithm>
#include <cerrno>
#include <random>

#include "cm/soft/soft_cm_core.h"
#include "provider/soft/soft_cm_bridge.h"

namespace rxv {
namespace cm {
namespace softcm {

std::unordered_set<IdState*>& all_ids() {
  static auto* s = new std::unordered_set<IdState*>;
  return *s;
}

namespace {

[[noreturn]] void fail(int err, const char* verb, const std::string& why) { throw VerbsError(err, verb, why); }

void check_alive(const IdState* s, const char* verb) {
  if (s->st == St::Destroyed) fail(EBADF, verb, "the id is destroyed");
  if (s->st == St::Removed) fail(ENODEV, verb, "the id's device was removed (DEVICE_REMOVAL)");
}

Addr parse_or_fail(const SockAddr& a, const char* verb) {
  Addr out;
  if (!parse_addr(a.host, a.port, &out)) fail(EINVAL, verb, "'" + a.host + "' is not a numeric IPv4 or IPv6 address");
  return out;
}

void check_private_data(const std::vector<uint8_t>& pd, uint32_t max, const char* verb) {
  if (pd.size() > max)
    fail(EINVAL, verb, "private data of " + std::to_string(pd.size()) + " bytes (at most " + std::to_string(max) + ")");
}

uint32_t new_psn() {
  static std::mt19937 rng{std::random_device{}()};
  return rng() & 0xffffff;
}

// What the other side's event says: the sender's initiator depth is the
// receiver's responder resources and the reverse (as the IB CM reports them).
ConnParam as_seen_by_peer(const ConnParam& p) {
  ConnParam q = p;
  q.responder_resources = p.initiator_depth;
  q.initiator_depth = p.responder_resources;
  return q;
}

bool established(St s) { return s == St::Connected; }
bool connection_pending(St s) {
  return s == St::Connecting || s == St::ReqReceived || s == St::Accepted || s == St::Responded;
}

void unlink(IdState* a) {
  if (a->peer_id) a->peer_id->peer_id = nullptr;
  a->peer_id = nullptr;
}

// `gone`'s side of a connection ended without a DREQ (destroyed, removed):
// the peer is told as the IB CM would tell it.
void tell_peer_gone(IdState* gone, St was) {
  IdState* p = gone->peer_id;
  if (!p) return;
  unlink(gone);
  if (p->st == St::Destroyed || p->st == St::Removed) return;
  if (established(was) || established(p->st)) {
    p->st = St::Disconnected;
    push_event(p->ch.get(), make_event(event_type::DISCONNECTED, p));
  } else if (p->listener) {
    // Its request is still queued, unread: it is withdrawn.
  } else if (p->st == St::ReqReceived) {
    // Read but not accepted: the kernel's ucma drops the events of a new id
    // until accept, so nothing is said; accept() then fails with EINVAL.
    p->st = St::Rejected;
  } else {
    p->st = St::Rejected;
    push_event(p->ch.get(), make_event(event_type::REJECTED, p, kRejectConsumer));
  }
}

}  // namespace

void destroy_locked(IdState* s, Graveyard* dead) {
  if (s->st == St::Destroyed) return;
  const St was = s->st;
  s->st = St::Destroyed;
  ++s->timer_gen;
  IdState* p = s->peer_id;
  if (p && p->listener) {
    // The peer's request is still queued: withdraw it with its id.
    unlink(s);
    destroy_locked(p, dead);
  } else {
    tell_peer_gone(s, was);
  }
  purge_events(s, dead);
  release_port(s);
  if (s->ch) s->ch->ids.erase(s);
  all_ids().erase(s);
}

void device_removed(const std::string& device) {
  Lock l(cm_mutex());
  // Every id of the device is marked first: a connection whose both ends
  // were on it (a loopback) gets DEVICE_REMOVAL on each end, never a
  // DISCONNECTED from its other end, whichever end is visited first.
  std::vector<std::pair<IdState*, St>> removed;
  for (IdState* s : all_ids()) {
    if (s->device != device || s->st == St::Destroyed || s->st == St::Removed) continue;
    removed.emplace_back(s, s->st);
    s->st = St::Removed;
    ++s->timer_gen;
  }
  for (auto& [s, was] : removed) {
    tell_peer_gone(s, was);
    release_port(s);
    push_event(s->ch.get(), make_event(event_type::DEVICE_REMOVAL, s));
  }
}

void timer_expired(IdState* s, uint64_t gen) {
  if (s->timer_gen != gen || s->st != St::AddrQuery) return;
  s->st = s->holds_port ? St::Bound : St::Idle;
  push_event(s->ch.get(), make_event(event_type::ADDR_ERROR, s, -ETIMEDOUT));
}

SoftCmId::~SoftCmId() {
  try {
    destroy();
  } catch (...) {
  }
}

void SoftCmId::destroy() {
  Graveyard dead;  // deleted after the lock is released
  Lock l(cm_mutex());
  destroy_locked(state.get(), &dead);
}

void SoftCmId::bind(const SockAddr& addr) {
  const char* verb = "rdma_bind_addr";
  Addr a = parse_or_fail(addr, verb);
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st != St::Idle) fail(EINVAL, verb, "the id is already bound");
  std::string dev;
  if (!a.wildcard()) {
    dev = device_of(a);
    if (dev.empty()) fail(EADDRNOTAVAIL, verb, host_string(a) + " is not an address of any soft device");
  }
  take_port(s, &a, verb);
  s->device = dev;
  s->st = St::Bound;
}

void SoftCmId::listen(int backlog) {
  const char* verb = "rdma_listen";
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Listening) fail(EINVAL, verb, "the id is already listening");
  if (s->st != St::Bound) fail(EINVAL, verb, "bind the id to an address first (rdma_bind_addr)");
  s->backlog = backlog > 0 && backlog < kDefaultBacklog ? backlog : kDefaultBacklog;
  s->st = St::Listening;
}

void SoftCmId::resolve_addr(const SockAddr* src, const SockAddr& dst, int timeout_ms) {
  const char* verb = "rdma_resolve_addr";
  Addr d = parse_or_fail(dst, verb);
  Addr sa;
  if (src) sa = parse_or_fail(*src, verb);
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Listening) fail(EINVAL, verb, "the id is listening");
  if (s->st != St::Idle && s->st != St::Bound) fail(EINVAL, verb, "the id is already resolving or connected");
  if (src) {
    if (s->st != St::Idle) fail(EINVAL, verb, "the id is already bound: give no source address");
    std::string dev = sa.wildcard() ? "" : device_of(sa);
    if (!sa.wildcard() && dev.empty())
      fail(EADDRNOTAVAIL, verb, host_string(sa) + " is not an address of any soft device");
    take_port(s, &sa, verb);
    s->device = dev;
    s->st = St::Bound;
  }
  const std::string dd = d.wildcard() ? "" : device_of(d);
  if (dd.empty()) {
    if (blackholed(d)) {
      // Nobody answers: the kernel's ARP would time out.
      s->st = St::AddrQuery;
      arm_timer(state, ++s->timer_gen, timeout_ms);
    } else {
      push_event(s->ch.get(), make_event(event_type::ADDR_ERROR, s, -EHOSTUNREACH));
    }
    return;
  }
  if (!s->holds_port) {
    Addr local = d;  // the device that owns dst reaches it over its loopback
    local.port = 0;
    take_port(s, &local, verb);
  }
  if (s->device.empty()) {
    s->device = dd;
    if (s->local.wildcard()) {
      uint16_t port = s->local.port;
      s->local = d;
      s->local.port = port;
    }
  }
  s->peer = d;
  s->st = St::AddrResolved;
  push_event(s->ch.get(), make_event(event_type::ADDR_RESOLVED, s));
}

void SoftCmId::resolve_route(int) {
  const char* verb = "rdma_resolve_route";
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st != St::AddrResolved) fail(EINVAL, verb, "resolve the address first (ADDR_RESOLVED)");
  s->st = St::RouteResolved;
  push_event(s->ch.get(), make_event(event_type::ROUTE_RESOLVED, s));
}

std::unique_ptr<Context> SoftCmId::open_context() {
  std::string dev;
  {
    Lock l(cm_mutex());
    check_alive(state.get(), "rdma_cm_id.verbs");
    dev = state->device;
  }
  if (dev.empty())
    fail(ENODEV, "rdma_cm_id.verbs",
         "the id has no device yet: bind it to a device's address, resolve an address, or take it from a CONNECT_REQUEST");
  return soft_provider().open(dev);
}

bool SoftCmId::serves(Context* ctx) {
  if (ctx == nullptr || ctx->info().provider != "soft") return false;
  Lock l(cm_mutex());
  const IdState* s = state.get();
  check_alive(s, "rdma_cm_id.verbs");
  return !s->device.empty() && ctx->info().name == s->device;
}

void SoftCmId::modify_qp(Qp* qp, uint32_t target, int rnr_retry) {
  const char* verb = "rdma_init_qp_attr";
  if (target != qp_state::INIT && target != qp_state::RTR && target != qp_state::RTS && target != qp_state::ERR)
    fail(EINVAL, verb, "the state must be INIT (1), RTR (2), RTS (3) or ERR (6)");
  const std::string qdev = soft::device_of_qp(qp);
  std::string peer_dev;
  uint32_t peer_qpn = 0, their_psn = 0, my_psn = 0;
  ConnParam mine, theirs;
  bool active = false;
  {
    Lock l(cm_mutex());
    IdState* s = state.get();
    check_alive(s, verb);
    active = s->active;
    if (s->device.empty()) fail(EINVAL, verb, "the id has no device yet");
    if (qdev != s->device)
      fail(EINVAL, verb, "the QP was not created on the id's device (" + s->device + "): use openContext()");
    const bool peer_known = s->st == St::ReqReceived || s->st == St::Accepted || s->st == St::Responded ||
                            s->st == St::Connected;
    if ((target == qp_state::RTR || target == qp_state::RTS) && !peer_known)
      fail(EINVAL, verb, "the peer is not known yet (CONNECT_REQUEST or CONNECT_RESPONSE first)");
    peer_dev = s->peer_device;
    peer_qpn = s->theirs.qp_num;
    their_psn = s->their_psn;
    my_psn = s->my_psn;
    mine = s->mine;
    theirs = s->theirs;
  }
  namespace m = qp_attr_mask;
  QpAttr a;
  a.state = target;
  uint32_t mask = m::STATE;
  if (target == qp_state::INIT) {
    a.pkey_index = 0;
    a.port_num = 1;
    a.access_flags = access_flag::LOCAL_WRITE | access_flag::REMOTE_WRITE | access_flag::REMOTE_READ;
    mask |= m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS;
  } else if (target == qp_state::RTR) {
    uint16_t lid = 0;
    Gid gid;
    if (!soft::port1_address(peer_dev, &lid, &gid)) fail(ENODEV, verb, "the peer's device is gone");
    a.path_mtu = 5;  // IBV_MTU_4096: what both soft ports support
    a.dest_qp_num = peer_qpn;
    a.rq_psn = their_psn;
    // As rdma_init_qp_attr: what the peer's message offered.
    a.max_dest_rd_atomic = theirs.responder_resources ? theirs.responder_resources : 1;
    a.min_rnr_timer = 12;
    a.ah.is_global = true;
    a.ah.dlid = lid;
    a.ah.port_num = 1;
    a.ah.sgid_index = 0;
    a.ah.hop_limit = 64;
    std::copy(std::begin(gid.raw), std::end(gid.raw), std::begin(a.ah.dgid));
    mask |= m::AV | m::PATH_MTU | m::DEST_QPN | m::RQ_PSN | m::MAX_DEST_RD_ATOMIC | m::MIN_RNR_TIMER;
  } else if (target == qp_state::RTS) {
    a.sq_psn = my_psn;
    a.timeout = 14;
    // As the kernel's IB CM: the active side retries as it asked, the
    // passive side as the request said; each side's RNR retry count is the
    // one its peer's message carried, unless the caller chose its own.
    a.retry_cnt = active ? mine.retry_count : theirs.retry_count;
    a.rnr_retry = rnr_retry >= 0 ? static_cast<uint8_t>(rnr_retry) : theirs.rnr_retry_count;
    a.max_rd_atomic = theirs.initiator_depth ? theirs.initiator_depth : 1;
    mask |= m::SQ_PSN | m::TIMEOUT | m::RETRY_CNT | m::RNR_RETRY | m::MAX_QP_RD_ATOMIC;
  }
  qp->modify(a, mask);
}

void SoftCmId::connect(const ConnParam& p) {
  const char* verb = "rdma_connect";
  check_private_data(p.private_data, private_data_max::CONNECT, verb);
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Connected || connection_pending(s->st)) fail(EISCONN, verb, "the id is already connecting or connected");
  if (s->st != St::RouteResolved) fail(EINVAL, verb, "resolve the address and the route first");
  s->mine = p;
  s->active = true;
  s->my_psn = new_psn();
  IdState* L = find_listener(s->peer);
  if (L == nullptr) {
    s->st = St::Rejected;
    push_event(s->ch.get(), make_event(event_type::REJECTED, s, kRejectInvalidService));
    return;
  }
  if (L->queued_requests >= L->backlog) {
    s->st = St::Rejected;
    push_event(s->ch.get(), make_event(event_type::REJECTED, s, kRejectConsumer));
    return;
  }
  auto ns = std::make_shared<IdState>();
  auto handle = std::make_unique<SoftCmId>(ns);
  IdState* n = ns.get();
  n->ch = L->ch;
  n->handle = handle.get();
  n->ps = L->ps;
  n->st = St::ReqReceived;
  n->device = device_of(s->peer);
  n->peer_device = s->device;
  n->local = s->peer;
  n->peer = s->local;
  n->theirs = as_seen_by_peer(p);
  n->theirs.qp_num = p.qp_num;
  n->their_psn = s->my_psn;
  // Known before accept(): the passive side moves its QP to RTS first.
  n->my_psn = new_psn();
  n->listener = L;
  n->peer_id = s;
  s->peer_id = n;
  s->peer_device = n->device;
  s->st = St::Connecting;
  L->ch->ids.insert(n);
  all_ids().insert(n);
  ++L->queued_requests;
  Event ev = make_event(event_type::CONNECT_REQUEST, n);
  ev.listener = L->handle;
  ev.param = n->theirs;
  ev.new_id = std::move(handle);
  push_event(L->ch.get(), std::move(ev));
}

void SoftCmId::accept(const ConnParam& p) {
  const char* verb = "rdma_accept";
  check_private_data(p.private_data, private_data_max::ACCEPT, verb);
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Accepted || s->st == St::Connected) fail(EINVAL, verb, "the request was already accepted");
  if (s->st == St::Rejected) fail(EINVAL, verb, "the request was already rejected, or the peer gave up");
  if (s->st != St::ReqReceived || !s->peer_id) fail(EINVAL, verb, "the id has no connection request to answer");
  s->mine = p;
  s->st = St::Accepted;
  IdState* c = s->peer_id;
  c->theirs = as_seen_by_peer(p);
  c->theirs.qp_num = p.qp_num;
  c->their_psn = s->my_psn;
  c->st = St::Responded;
  Event ev = make_event(event_type::CONNECT_RESPONSE, c);
  ev.param = c->theirs;
  push_event(c->ch.get(), std::move(ev));
}

void SoftCmId::reject(const std::vector<uint8_t>& private_data) {
  const char* verb = "rdma_reject";
  check_private_data(private_data, private_data_max::REJECT, verb);
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Accepted || s->st == St::Connected) fail(EINVAL, verb, "the request was already accepted");
  if (s->st != St::ReqReceived || !s->peer_id) fail(EINVAL, verb, "the id has no connection request to answer");
  IdState* c = s->peer_id;
  unlink(s);
  s->st = St::Rejected;
  c->st = St::Rejected;
  Event ev = make_event(event_type::REJECTED, c, kRejectConsumer);
  ev.param.private_data = private_data;
  push_event(c->ch.get(), std::move(ev));
}

void SoftCmId::establish() {
  const char* verb = "rdma_establish";
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Connected) fail(EISCONN, verb, "the connection is already established");
  if (s->st != St::Responded || !s->peer_id) fail(EINVAL, verb, "no CONNECT_RESPONSE to answer");
  IdState* p = s->peer_id;
  s->st = St::Connected;
  p->st = St::Connected;
  // Only the passive side hears of it (the RTU arrived). The active side
  // gets no event: with no QP attached to its id, rdma_establish sends the
  // RTU and the kernel reports nothing more (librdmacm's ESTABLISHED on
  // that side is made by librdmacm itself, only for ids that own a QP).
  push_event(p->ch.get(), make_event(event_type::ESTABLISHED, p));
}

void SoftCmId::disconnect() {
  const char* verb = "rdma_disconnect";
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  if (s->st == St::Disconnected) return;  // the peer went first: nothing left to do
  if (s->st != St::Connected && s->st != St::Accepted && s->st != St::Responded)
    fail(EINVAL, verb, "the id is not connected");
  IdState* p = s->peer_id;
  unlink(s);
  s->st = St::Disconnected;
  push_event(s->ch.get(), make_event(event_type::DISCONNECTED, s));
  if (p && p->st != St::Destroyed && p->st != St::Removed) {
    p->st = St::Disconnected;
    push_event(p->ch.get(), make_event(event_type::DISCONNECTED, p));
  }
}

void SoftCmId::migrate(Channel* to) {
  const char* verb = "rdma_migrate_id";
  auto* dst = dynamic_cast<SoftCmChannel*>(to);
  if (dst == nullptr) fail(EINVAL, verb, "the channel is not a soft CM channel");
  Lock l(cm_mutex());
  IdState* s = state.get();
  check_alive(s, verb);
  ChState* from = s->ch.get();
  ChState* into = dst->state.get();
  if (into->dead) fail(EBADF, verb, "the event channel is destroyed");
  if (from == into) return;
  // Events not yet read follow the id, in order.
  std::deque<Event> keep;
  for (Event& ev : from->q) {
    if (ev.id == s->handle || ev.listener == s->handle) {
      if (ev.new_id) {
        IdState* n = static_cast<SoftCmId*>(ev.new_id.get())->state.get();
        from->ids.erase(n);
        into->ids.insert(n);
        n->ch = dst->state;
      }
      push_event(into, std::move(ev));
    } else {
      keep.push_back(std::move(ev));
    }
  }
  from->q.swap(keep);
  if (from->q.empty()) from->efd.reset();
  from->ids.erase(s);
  into->ids.insert(s);
  s->ch = dst->state;
}

SockAddr SoftCmId::local() {
  Lock l(cm_mutex());
  return state->local.valid() ? state->local.to_sock() : SockAddr{};
}

SockAddr SoftCmId::peer() {
  Lock l(cm_mutex());
  return state->peer.valid() ? state->peer.to_sock() : SockAddr{};
}

Channel* SoftCmId::channel() const {
  Lock l(cm_mutex());
  return state->ch ? state->ch->handle : nullptr;
}

}  // namespace softcm
}  // namespace cm
}  // namespace rxv
