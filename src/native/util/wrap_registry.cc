#include "util/wrap_registry.h"

#include <mutex>
#include <unordered_map>

namespace rxv {
namespace wrap_registry {
namespace {

struct Registry {
  std::mutex lock;
  std::unordered_map<const void*, napi_type_tag> live;
};

// Never destroyed: a wrapper finalized during process exit, after static
// destructors have run, must still find it.
Registry& Get() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

void Add(const void* self, const napi_type_tag& tag) {
  Registry& r = Get();
  std::lock_guard<std::mutex> g(r.lock);
  r.live[self] = tag;
}

void Remove(const void* self) {
  Registry& r = Get();
  std::lock_guard<std::mutex> g(r.lock);
  r.live.erase(self);
}

bool Holds(const void* p, const napi_type_tag& tag) {
  Registry& r = Get();
  std::lock_guard<std::mutex> g(r.lock);
  auto it = r.live.find(p);
  return it != r.live.end() && it->second.lower == tag.lower && it->second.upper == tag.upper;
}

}  // namespace wrap_registry
}  // namespace rxv
