// The soft CM's one timer thread: address resolutions that nobody answers
// (black-holed addresses) fail after their timeout, as the kernel's would.
// Started on first use, never stopped (like the fabric, it outlives every
// static), and idle in a wait when no timer is armed.
#include <chrono>
#include <map>
#include <thread>

#include "cm/soft/soft_cm_core.h"

namespace rxv {
namespace cm {
namespace softcm {

namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::weak_ptr<IdState> id;
  uint64_t gen;
};

// Guarded by cm_mutex().
struct Timers {
  std::condition_variable cv;
  std::multimap<Clock::time_point, Pending> due;
  bool started = false;
};

Timers& timers() {
  static auto* t = new Timers;
  return *t;
}

void run() {
  Timers& t = timers();
  std::unique_lock<std::mutex> l(cm_mutex());
  for (;;) {
    if (t.due.empty()) {
      t.cv.wait(l);
      continue;
    }
    auto first = t.due.begin();
    if (Clock::now() < first->first) {
      t.cv.wait_until(l, first->first);
      continue;
    }
    Pending p = first->second;
    t.due.erase(first);
    if (auto id = p.id.lock()) timer_expired(id.get(), p.gen);
  }
}

}  // namespace

// The lock is held by the caller.
void arm_timer(const std::shared_ptr<IdState>& id, uint64_t gen, int ms) {
  Timers& t = timers();
  if (!t.started) {
    std::thread(run).detach();
    t.started = true;
  }
  t.due.emplace(Clock::now() + std::chrono::milliseconds(ms), Pending{id, gen});
  t.cv.notify_one();
}

}  // namespace softcm
}  // namespace cm
}  // namespace rxv
