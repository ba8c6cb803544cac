// The process-wide fabric: soft devices, their addresses, and routing from a
// requester's address vector to the responder QP. Also the Provider object.
//
// Everything here lives for the whole process (never destroyed) so that no
// static-destruction order can pull the fabric from under a device thread.
#include <cstring>
#include <random>

#include "soft_objects.h"

namespace rxv {
namespace soft {

std::mutex& fabric_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

std::condition_variable& fabric_cv() {
  static std::condition_variable* cv = new std::condition_variable;
  return *cv;
}

Fabric& fabric() {
  static Fabric* f = new Fabric;
  return *f;
}

uint32_t DeviceCore::new_key() {
  for (;;) {
    // xorshift64*: keys are not guessable from their neighbours, unlike a
    // counter, so a stale or forged key is unlikely to hit a live MR.
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    uint32_t k = uint32_t((rng * 0x2545F4914F6CDD1Dull) >> 32);
    if (k != 0 && mrs.find(k) == mrs.end()) return k;
  }
}

uint32_t DeviceCore::new_qpn() {
  for (;;) {
    uint32_t n = next_qpn;
    next_qpn = next_qpn >= 0xFFFFFF ? 0x11 : next_qpn + 1;
    if (qps.find(n) == qps.end()) return n;
  }
}

static void validate_options(const SoftDeviceOptions& o) {
  const char* verb = "create_soft_device";
  if (o.name.empty()) fail(EINVAL, verb, "the device name must not be empty");
  if (o.ports < 1 || o.ports > 16) fail(EINVAL, verb, "ports must be 1..16");
  if (o.max_cqe < 1 || o.max_cqe > INT32_MAX) fail(EINVAL, verb, "max_cqe must be 1..2^31-1");
  if (o.max_qp_wr < 1 || o.max_qp_wr > (1u << 20))
    fail(EINVAL, verb, "max_qp_wr must be 1..1048576");
  if (o.max_sge < 1 || o.max_sge > 256) fail(EINVAL, verb, "max_sge must be 1..256");
  if (o.max_inline > (1u << 16)) fail(EINVAL, verb, "max_inline must be 0..65536");
}

static std::shared_ptr<DeviceCore> make_device(const SoftDeviceOptions& o) {
  Fabric& f = fabric();
  if (f.next_lid + o.ports > 0xC000)
    fail(ENOSPC, "create_soft_device", "no unicast LIDs left");
  auto d = std::make_shared<DeviceCore>();
  const uint64_t idx = f.devices.size();
  d->name = o.name;
  d->opts = o;
  // A locally administered, recognisable GUID: 02:58:56 ("RXV") + index.
  const uint64_t guid = 0x025856fffe000000ull + ((idx + 1) << 8);
  d->info.name = o.name;
  d->info.provider = "soft";
  d->info.transport = "InfiniBand";
  d->info.node_guid = guid;
  for (uint32_t p = 0; p < o.ports; ++p) {
    DeviceCore::Port port;
    port.lid = uint16_t(f.next_lid++);
    port.guid = guid + p;
    port.gid0.raw[0] = 0xfe;
    port.gid0.raw[1] = 0x80;
    for (int i = 0; i < 8; ++i) port.gid0.raw[8 + i] = uint8_t(port.guid >> (56 - 8 * i));
    d->ports.push_back(port);
  }
  std::random_device rd;
  d->rng = (uint64_t(rd()) << 32) ^ rd() ^
           uint64_t(Clock::now().time_since_epoch().count()) ^ (idx * 0x9E3779B97F4A7C15ull);
  if (d->rng == 0) d->rng = 0x9E3779B97F4A7C15ull;
  return d;
}

void ensure_default_device() {
  Fabric& f = fabric();
  if (!f.devices.empty()) return;
  SoftDeviceOptions o;
  o.name = "soft0";
  f.devices.push_back(make_device(o));
}

std::shared_ptr<DeviceCore> find_device(const std::string& name) {
  for (auto& d : fabric().devices)
    if (d->name == name) return d;
  return nullptr;
}

void bump_routes() { ++fabric().route_gen; }

static QpCore* resolve(QpCore* s) {
  const AddressVector& ah = s->attr.ah;
  DeviceCore* sdev = s->ctx->dev.get();
  if (s->attr.port_num < 1 || s->attr.port_num > sdev->ports.size()) return nullptr;
  if (sdev->ports[s->attr.port_num - 1].state != port_state::ACTIVE) return nullptr;
  for (auto& d : fabric().devices) {
    for (size_t p = 0; p < d->ports.size(); ++p) {
      const DeviceCore::Port& port = d->ports[p];
      const bool hit = ah.is_global ? std::memcmp(port.gid0.raw, ah.dgid, 16) == 0
                                    : port.lid == ah.dlid;
      if (!hit) continue;
      if (port.state != port_state::ACTIVE) return nullptr;
      auto it = d->qps.find(s->attr.dest_qp_num);
      if (it == d->qps.end()) return nullptr;
      QpCore* r = it->second;
      if (r->type != s->type) return nullptr;  // an RC QP never answers a UD one
      if (r->state != qp_state::RTR && r->state != qp_state::RTS) return nullptr;
      if (r->attr.port_num != p + 1) return nullptr;
      if (r->ctx->fatal.load(std::memory_order_relaxed)) return nullptr;
      return r;
    }
  }
  return nullptr;
}

QpCore* route(QpCore* s) {
  Fabric& f = fabric();
  if (s->route_gen != f.route_gen) {
    s->route_cache = resolve(s);
    s->route_gen = f.route_gen;
  }
  return s->route_cache;
}

namespace {

class SoftProvider final : public Provider {
 public:
  const char* name() const override { return "soft"; }

  std::vector<DeviceInfo> list_devices() override {
    Lock g(fabric_mutex());
    ensure_default_device();
    std::vector<DeviceInfo> out;
    for (auto& d : fabric().devices) out.push_back(d->info);
    return out;
  }

  std::unique_ptr<Context> open(const std::string& name) override { return open_context(name); }
};

}  // namespace
}  // namespace soft

Provider& soft_provider() {
  static soft::SoftProvider* p = new soft::SoftProvider;
  return *p;
}

void create_soft_device(const SoftDeviceOptions& opts) {
  soft::validate_options(opts);
  soft::Lock g(soft::fabric_mutex());
  soft::ensure_default_device();
  if (soft::find_device(opts.name))
    soft::fail(EEXIST, "create_soft_device", "a soft device named '" + opts.name + "' already exists");
  soft::fabric().devices.push_back(soft::make_device(opts));
  soft::bump_routes();
}

}  // namespace rxv
