#include "soft_cm_bridge.h"

#include <atomic>

#include "soft_objects.h"

namespace rxv {
namespace soft {

namespace {
std::atomic<DeviceFatalHook> g_fatal_hook{nullptr};
}

std::vector<std::string> device_names() {
  Lock g(fabric_mutex());
  ensure_default_device();
  std::vector<std::string> out;
  for (auto& d : fabric().devices) out.push_back(d->name);
  return out;
}

bool port1_address(const std::string& device, uint16_t* lid, Gid* gid) {
  Lock g(fabric_mutex());
  ensure_default_device();
  auto d = find_device(device);
  if (!d || d->ports.empty()) return false;
  *lid = d->ports[0].lid;
  *gid = d->ports[0].gid0;
  return true;
}

std::string device_of_qp(Qp* qp) {
  auto* sq = dynamic_cast<SoftQp*>(qp);
  if (sq == nullptr) return "";
  Lock g(fabric_mutex());
  if (sq->core->dead || !sq->core->ctx) return "";
  return sq->core->ctx->dev->name;
}

void set_device_fatal_hook(DeviceFatalHook hook) { g_fatal_hook.store(hook); }

void notify_device_fatal(const std::string& device) {
  DeviceFatalHook h = g_fatal_hook.load();
  if (h != nullptr) h(device);
}

}  // namespace soft
}  // namespace rxv
