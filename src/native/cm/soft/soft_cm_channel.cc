// The soft CM's event channels (an eventfd readable while events are
// queued), the event queue, and the provider object.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cm/soft/soft_cm_core.h"
#include "provider/soft/soft_cm_bridge.h"
#include "rules/refusals.h"

namespace rxv {
namespace cm {
namespace softcm {

std::mutex& cm_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: timers outlive statics
  return *m;
}

EventFd::EventFd() {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    throw VerbsError(e, "rdma_create_event_channel", std::string("eventfd: ") + std::strerror(e));
  }
}

EventFd::~EventFd() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFd::signal() {
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = ::write(fd_, &one, sizeof one);
  } while (r < 0 && errno == EINTR);
}

void EventFd::reset() {
  uint64_t v;
  ssize_t r;
  do {
    r = ::read(fd_, &v, sizeof v);
  } while (r < 0 && errno == EINTR);
}

Event make_event(uint32_t type, IdState* id, int32_t status) {
  Event ev;
  ev.type = type;
  ev.status = status;
  ev.id = id->handle;
  return ev;
}

void push_event(ChState* ch, Event ev) {
  if (ch == nullptr || ch->dead) return;
  const bool was_empty = ch->q.empty();
  ch->q.push_back(std::move(ev));
  if (was_empty) ch->efd.signal();
}

static IdState* state_of(Id* h) { return h ? static_cast<SoftCmId*>(h)->state.get() : nullptr; }

void purge_events(IdState* id, Graveyard* dead) {
  ChState* ch = id->ch.get();
  if (ch == nullptr) return;
  std::deque<Event> keep;
  std::vector<Event> dropped;
  for (Event& ev : ch->q) {
    if (ev.id == id->handle || ev.listener == id->handle)
      dropped.push_back(std::move(ev));
    else
      keep.push_back(std::move(ev));
  }
  ch->q.swap(keep);
  if (ch->q.empty()) ch->efd.reset();
  for (Event& ev : dropped) {
    if (ev.new_id) {
      IdState* nid = state_of(ev.new_id.get());
      if (nid->listener) --nid->listener->queued_requests;
      nid->listener = nullptr;
      destroy_locked(nid, dead);
      dead->push_back(std::move(ev.new_id));
    }
  }
}

SoftCmChannel::SoftCmChannel() : state(std::make_shared<ChState>()) { state->handle = this; }

SoftCmChannel::~SoftCmChannel() {
  // Teardown with ids still on it (the addon closes ids first; this is the
  // last resort): they die with the channel, their peers are told.
  Graveyard dead;
  {
    Lock l(cm_mutex());
    std::vector<IdState*> ids(state->ids.begin(), state->ids.end());
    for (IdState* id : ids) destroy_locked(id, &dead);
    std::deque<Event> q;
    q.swap(state->q);
    for (Event& ev : q)
      if (ev.new_id) dead.push_back(std::move(ev.new_id));
    state->dead = true;
    state->handle = nullptr;
  }
}

int SoftCmChannel::fd() const { return state->efd.fd(); }

bool SoftCmChannel::get_event(Event* out) {
  Lock l(cm_mutex());
  ChState* ch = state.get();
  if (ch->dead) throw VerbsError(EBADF, "rdma_get_cm_event", "the event channel is destroyed");
  if (ch->q.empty()) {
    ch->efd.reset();  // readiness may have been spurious
    return false;
  }
  *out = std::move(ch->q.front());
  ch->q.pop_front();
  if (ch->q.empty()) ch->efd.reset();
  if (out->type == event_type::CONNECT_REQUEST) {
    IdState* nid = state_of(out->new_id.get());
    if (nid && nid->listener) {
      --nid->listener->queued_requests;
      nid->listener = nullptr;
    }
  }
  return true;
}

void SoftCmChannel::destroy() {
  Lock l(cm_mutex());
  if (state->dead) return;
  // Queued requests carry ids of their own: they count as users too.
  rules::RefuseBusyCmChannel(state->ids.size());
  state->dead = true;
}

namespace {

void on_device_fatal(const std::string& device) { device_removed(device); }

class SoftCmProvider final : public CmProvider {
 public:
  SoftCmProvider() { soft::set_device_fatal_hook(&on_device_fatal); }
  const char* name() const override { return "soft"; }
  std::unique_ptr<Channel> create_channel() override { return std::make_unique<SoftCmChannel>(); }
  std::unique_ptr<Id> create_id(Channel* channel, uint32_t ps) override {
    auto* ch = dynamic_cast<SoftCmChannel*>(channel);
    if (ch == nullptr) throw VerbsError(EINVAL, "rdma_create_id", "the channel is not a soft CM channel");
    if (ps != port_space::TCP)
      throw VerbsError(EPROTONOSUPPORT, "rdma_create_id", "the soft CM supports the TCP port space (0x0106) only");
    auto s = std::make_shared<IdState>();
    auto id = std::make_unique<SoftCmId>(s);
    Lock l(cm_mutex());
    if (ch->state->dead) throw VerbsError(EBADF, "rdma_create_id", "the event channel is destroyed");
    s->ch = ch->state;
    s->handle = id.get();
    s->ps = ps;
    ch->state->ids.insert(s.get());
    all_ids().insert(s.get());
    return id;
  }
};

}  // namespace
}  // namespace softcm

CmProvider& soft_cm_provider() {
  static softcm::SoftCmProvider* p = new softcm::SoftCmProvider;
  return *p;
}

}  // namespace cm
}  // namespace rxv
