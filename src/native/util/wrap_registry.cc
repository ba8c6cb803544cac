#include "util/wrap_registry.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace rxv {
namespace wrap_registry {
namespace {

struct Registry {
  std::mutex lock;
  std::unordered_map<const void*, napi_type_tag> live;
  // Bumped by every removal: what a thread remembers as live stays so until
  // the next removal anywhere (an address freed and reused bumps it too).
  std::atomic<uint64_t> removals{0};
};

// Never destroyed: a wrapper finalized during process exit, after static
// destructors have run, must still find it.
Registry& Get() {
  static Registry* r = new Registry();
  return *r;
}

bool SameTag(const napi_type_tag& a, const napi_type_tag& b) {
  return a.lower == b.lower && a.upper == b.upper;
}

// The last object this thread found live: a handler's calls mostly name the
// same receiver (a QP posting a receive, then a send), and checking it again
// should not take the lock.
struct LastHit {
  const void* p = nullptr;
  napi_type_tag tag{0, 0};
  uint64_t removals = 0;
};
thread_local LastHit last_hit;

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
  r.removals.fetch_add(1, std::memory_order_release);
}

bool Holds(const void* p, const napi_type_tag& tag) {
  Registry& r = Get();
  if (p != nullptr && p == last_hit.p && SameTag(tag, last_hit.tag) &&
      r.removals.load(std::memory_order_acquire) == last_hit.removals) {
    return true;
  }
  std::lock_guard<std::mutex> g(r.lock);
  auto it = r.live.find(p);
  if (it == r.live.end() || !SameTag(it->second, tag)) return false;
  last_hit = LastHit{p, tag, r.removals.load(std::memory_order_relaxed)};
  return true;
}

}  // namespace wrap_registry
}  // namespace rxv
