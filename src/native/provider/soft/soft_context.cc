// An open soft device: queries, object creation, and close. Several
// contexts may be open on one device at once (like several processes on one
// NIC); each has its own device thread and async event queue.
#include <algorithm>
#include <cstring>

#include "soft_objects.h"
#include "rules/refusals.h"

namespace rxv {
namespace soft {

std::unique_ptr<Context> open_context(const std::string& name) {
  auto c = std::make_shared<CtxCore>();
  {
    Lock g(fabric_mutex());
    ensure_default_device();
    c->dev = find_device(name);
    if (!c->dev) {
      std::string have;
      for (auto& d : fabric().devices) have += (have.empty() ? "" : ", ") + d->name;
      fail(ENODEV, "ibv_open_device", "no soft device named '" + name + "' (soft devices: " + have + ")");
    }
    c->afd.open("ibv_open_device");
    c->dev->contexts.push_back(c.get());
  }
  try {
    engine_start(c.get());
  } catch (const std::exception& e) {
    Lock g(fabric_mutex());
    auto& v = c->dev->contexts;
    v.erase(std::find(v.begin(), v.end(), c.get()));
    fail(ENOMEM, "ibv_open_device", std::string("cannot start the device thread: ") + e.what());
  }
  return std::make_unique<SoftContext>(std::move(c));
}

void make_fatal(CtxCore* c) {
  if (c->fatal.load() || c->closed) return;
  c->fatal.store(true, std::memory_order_release);
  raise_async(c, async_event::DEVICE_FATAL, nullptr, nullptr, 0);
  for (QpCore* q : c->children.List<QpCore>(rules::Kind::kQp)) qp_to_error(q, kNoEvent);
  bump_routes();
}

DeviceAttr SoftContext::query_device() {
  check_alive(core.get(), "ibv_query_device");
  const DeviceCore* d = core->dev.get();
  DeviceAttr a;
  a.fw_ver = "1.0.0 (rx-verbs soft)";
  a.node_guid = d->info.node_guid;
  a.sys_image_guid = d->info.node_guid;
  a.max_mr_size = UINT64_MAX;
  a.vendor_id = 0;
  a.vendor_part_id = 0;
  a.hw_ver = 1;
  a.max_qp = 1 << 20;
  a.max_qp_wr = int32_t(d->opts.max_qp_wr);
  a.max_sge = int32_t(d->opts.max_sge);
  a.max_cq = 1 << 20;
  a.max_cqe = int32_t(d->opts.max_cqe);
  a.max_mr = 1 << 24;
  a.max_pd = 1 << 20;
  a.phys_port_cnt = uint32_t(d->ports.size());
  a.atomic_cap = atomic_cap::HCA;  // what rxe reports (see soft_atomic.cc)
  a.max_qp_rd_atom = int32_t(kMaxRdAtomic);
  a.max_qp_init_rd_atom = int32_t(kMaxRdAtomic);
  return a;
}

static void check_port(const DeviceCore* d, uint8_t port, const char* verb) {
  if (port < 1 || port > d->ports.size())
    fail(EINVAL, verb, "port " + std::to_string(port) + " does not exist (ports are 1.." +
                           std::to_string(d->ports.size()) + ")");
}

PortAttr SoftContext::query_port(uint8_t port) {
  check_alive(core.get(), "ibv_query_port");
  const DeviceCore* d = core->dev.get();
  check_port(d, port, "ibv_query_port");
  Lock g(fabric_mutex());
  const DeviceCore::Port& p = d->ports[port - 1];
  PortAttr a;
  a.state = p.state;
  a.max_mtu = 5;  // IBV_MTU_4096
  a.active_mtu = 5;
  a.gid_tbl_len = kGidTableLen;
  a.lid = p.lid;
  a.sm_lid = 1;
  a.lmc = 0;
  a.link_layer = link_layer::INFINIBAND;
  a.active_width = 2;   // 4X
  a.active_speed = 32;  // EDR
  a.phys_state = p.state == port_state::ACTIVE ? 5 : 3;  // LinkUp : Disabled
  return a;
}

Gid SoftContext::query_gid(uint8_t port, int index) {
  check_alive(core.get(), "ibv_query_gid");
  const DeviceCore* d = core->dev.get();
  check_port(d, port, "ibv_query_gid");
  if (index < 0 || index >= kGidTableLen)
    fail(EINVAL, "ibv_query_gid", "gid index must be 0.." + std::to_string(kGidTableLen - 1));
  return index == 0 ? d->ports[port - 1].gid0 : Gid();
}

std::unique_ptr<Pd> SoftContext::alloc_pd() {
  Lock g(fabric_mutex());
  if (core->closed) fail(EINVAL, "ibv_alloc_pd", "the context is closed");
  check_alive(core.get(), "ibv_alloc_pd");
  auto p = std::make_shared<PdCore>();
  p->ctx = core;
  core->children.Add(rules::Kind::kPd, p.get());
  return std::make_unique<SoftPd>(std::move(p));
}

std::unique_ptr<Channel> SoftContext::create_channel() {
  Lock g(fabric_mutex());
  if (core->closed) fail(EINVAL, "ibv_create_comp_channel", "the context is closed");
  check_alive(core.get(), "ibv_create_comp_channel");
  auto ch = std::make_shared<ChCore>();
  ch->ctx = core;
  ch->efd.open("ibv_create_comp_channel");
  core->children.Add(rules::Kind::kChannel, ch.get());
  auto h = std::make_unique<SoftChannel>(ch);
  ch->handle = h.get();
  return h;
}

std::unique_ptr<Cq> SoftContext::create_cq(int cqe, Channel* channel, int comp_vector) {
  const char* verb = "ibv_create_cq";
  Lock g(fabric_mutex());
  if (core->closed) fail(EINVAL, verb, "the context is closed");
  check_alive(core.get(), verb);
  const uint32_t max = core->dev->opts.max_cqe;
  if (cqe < 1 || uint32_t(cqe) > max)
    fail(EINVAL, verb, "cqe must be 1.." + std::to_string(max));
  if (comp_vector < 0 || comp_vector >= kNumCompVectors)
    fail(EINVAL, verb, "comp_vector must be 0.." + std::to_string(kNumCompVectors - 1));
  std::shared_ptr<ChCore> ch;
  if (channel) {
    ChCore* c = ch_of(channel, verb);
    if (c->ctx != core) fail(EINVAL, verb, "the channel belongs to another context");
    ch = static_cast<SoftChannel*>(channel)->core;
  }
  auto cq = std::make_shared<CqCore>();
  cq->ctx = core;
  cq->ch = ch;
  cq->depth = uint32_t(cqe);
  cq->ring.resize(cq->depth);
  if (ch) ch->users.Add(rules::Kind::kCq);
  core->children.Add(rules::Kind::kCq, cq.get());
  auto h = std::make_unique<SoftCq>(cq);
  cq->handle = h.get();
  return h;
}

// G held. The context stops being reachable: no longer a device user, and
// with force (destructor with children alive) its QPs and MRs leave the
// fabric so peers and the engine can never reach them through it again.
static void close_locked(CtxCore* c, bool force) {
  if (force) {
    c->fatal.store(true, std::memory_order_release);
    // In the safe order; only QPs and MRs are reachable from the fabric.
    c->children.Teardown([c](rules::Kind k, ChildCore* child) {
      if (k == rules::Kind::kQp) {
        auto* q = static_cast<QpCore*>(child);
        qp_unroute(q);
        Lock l(q->mu);
        q->state = qp_state::ERR;
      } else if (k == rules::Kind::kMr) {
        auto* m = static_cast<MrCore*>(child);
        auto& tbl = c->dev->mrs;
        auto it = tbl.find(m->key);
        if (it != tbl.end() && it->second == m) tbl.erase(it);
        m->registered = false;
        m->pd->users.Drop(rules::Kind::kMr);
        c->children.Remove(k, child);
      }
    });
  }
  c->closed = true;
  auto& v = c->dev->contexts;
  v.erase(std::find(v.begin(), v.end(), c));
  // The device "resets" when its last user goes, as a driver reload would:
  // a later open sees healthy, active ports again.
  if (v.empty())
    for (auto& p : c->dev->ports) p.state = port_state::ACTIVE;
  bump_routes();
}

void SoftContext::teardown(bool force) {
  CtxCore* c = core.get();
  {
    Lock g(fabric_mutex());
    if (!c->closed) {
      if (!force) {
        rules::RefuseBusy(rules::Kind::kContext, c->children.Open());
      }
      close_locked(c, force);
    }
  }
  engine_stop(c);  // joins; idempotent
  Lock a(c->amu);
  c->aq.clear();
  c->afd.close();
}

void SoftContext::destroy() { teardown(false); }

SoftContext::~SoftContext() {
  try {
    teardown(true);
  } catch (...) {
  }
}

}  // namespace soft
}  // namespace rxv
