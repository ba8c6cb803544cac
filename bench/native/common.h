// What the native benchmark baselines share: timing and back-off helpers, RC
// connection set-up, the type-tagged handles JS holds, argument readers and
// a rig of device objects on one soft device.
//
// The baselines are a separate addon (rx_verbs_bench.node, built only for
// `npm run bench`; see bench/native/addon.js): none of this ships in the
// product addon. The producer and echo run on objects the product made (a
// context, PD and CQ passed in as JS wrappers, recognised by their type
// tags); the drain, naive and ping baselines open a soft device of their own.
// Every argument is validated (a wrong type or range is a TypeError or
// RangeError, a stale or foreign handle a TypeError): no JS input may crash
// the process.
#pragma once

#include <napi.h>
#include <sched.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "provider/provider.h"

namespace rxv {
namespace bench {

using Clock = std::chrono::steady_clock;

/** CPU time of the calling thread (the JS thread when called from JS). */
double ThreadCpuSeconds();

inline double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

inline void SleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

// Waits for a credit: spin briefly, then yield, then sleep (the machine may
// have fewer cores than busy threads).
// `spin_limit` pause iterations first (a closed loop of one WR in flight
// waits a whole round trip; yielding there costs more than the trip).
inline void Backoff(uint32_t spins, uint32_t spin_limit) {
  if (spins < spin_limit) CpuRelax();
  else if (spins < spin_limit + 20000) sched_yield();
  else SleepNs(20000);
}

constexpr uint32_t kAccessAll =
    access_flag::LOCAL_WRITE | access_flag::REMOTE_WRITE | access_flag::REMOTE_READ;

/**
 * How a QP reaches another QP on the same port 1: by LID (soft devices,
 * InfiniBand) or, given a GID index (RoCE, e.g. rxe0 on the loopback), by
 * the GID at that index (a GRH on every packet).
 */
struct LocalPath {
  uint16_t lid = 0;
  int gid_index = -1;
  Gid gid;
};
/** The path to port 1 of `ctx` itself; `gid_index` < 0: LID routing. */
LocalPath PathTo(Context* ctx, int gid_index);

/** Brings `q` through INIT, RTR and RTS to the peer `dest_qpn` on port 1 over `path`. */
void Connect(Qp* q, uint32_t dest_qpn, const LocalPath& path, uint32_t rq_psn, uint32_t sq_psn);

template <typename T>
void DestroyQuietly(std::unique_ptr<T>& p) {
  if (!p) return;
  try {
    p->destroy();
  } catch (...) {
  }
  p.reset();
}

// ---- handles ----------------------------------------------------------------
// Every object JS holds is an External carrying kTag, whose finalizer and an
// environment cleanup hook both shut it down.
class Object {
 public:
  virtual ~Object() = default;
  // Stops threads and releases native resources; idempotent. `teardown`:
  // the environment is going away (no JS may run).
  virtual void Shutdown(bool teardown) = 0;
  napi_env env = nullptr;
  bool hook = false;

  static void OnCleanup(void* arg);
  // Keeps a JS object the thread depends on alive until ReleaseHeld.
  void Hold(Napi::Object o) { held_.push_back(Napi::Persistent(o)); }
  // After the thread has stopped. Also at teardown (from the cleanup hook,
  // while the environment still works): Node does not free references an
  // addon made, so leaving them would leak.
  void ReleaseHeld() {
    for (auto& r : held_) r.Reset();
    held_.clear();
  }

 private:
  std::vector<Napi::ObjectReference> held_;

 public:
  void AddHook(napi_env e) {
    env = e;
    if (napi_add_env_cleanup_hook(e, &Object::OnCleanup, this) == napi_ok) hook = true;
  }
  void RemoveHook() {
    if (hook) napi_remove_env_cleanup_hook(env, &Object::OnCleanup, this);
    hook = false;
  }
};

extern const napi_type_tag kTag;

/** Hands `obj` to JS as a tagged External (its cleanup hook added after the product addon's). */
Napi::External<Object> MakeHandle(Napi::Env env, std::unique_ptr<Object> obj);

/** The handle of kind T at argument `i`, or a TypeError naming `kind`. */
template <typename T>
T* HandleArg(const Napi::CallbackInfo& info, size_t i, const char* kind) {
  Napi::Env env = info.Env();
  Napi::Value v = info[i];
  bool ok = false;
  if (v.IsExternal()) napi_check_object_type_tag(env, v, &kTag, &ok);
  T* t = ok ? dynamic_cast<T*>(v.As<Napi::External<Object>>().Data()) : nullptr;
  if (!t) throw Napi::TypeError::New(env, std::string("handle must be a ") + kind + " handle");
  return t;
}

// ---- arguments ------------------------------------------------------------------
Napi::Object ArgsObject(const Napi::CallbackInfo& info, size_t i);
uint32_t U32(Napi::Object o, const char* key, uint32_t dflt, uint32_t min, uint32_t max);
double Num(Napi::Object o, const char* key, double dflt, double min, double max);
std::string Str(Napi::Object o, const char* key, const std::string& dflt);
/** `gidIndex` of the arguments: -1 when absent (LID routing), else 0..255. */
int GidIndexArg(Napi::Object o);

/** Opens a device by name: a soft device when one has that name, else libibverbs' (rxe0, hardware). */
std::unique_ptr<Context> OpenBenchDevice(const std::string& name);

// A context of the product, soft or libibverbs (rxe0). The bench threads
// post on objects JS owns; the product refuses to close a context, PD or CQ
// that a bench QP or MR still uses (EBUSY), whatever the provider.
Context* BenchContextArg(Napi::Env env, Napi::Value v);
/** The PD behind a product Pd wrapper (a TypeError for anything else). */
Pd* PdArg(Napi::Env env, Napi::Value v);
/** The CQ behind a product Cq wrapper (a TypeError for anything else). */
Cq* CqArg(Napi::Env env, Napi::Value v);

// ---- a native rig: everything on one soft device ------------------------------
class Rig {
 public:
  Rig(const std::string& device, uint32_t cqe, bool with_channel, int gid_index = -1);
  ~Rig() { Release(); }
  void AckAll();
  // Reads every pending event (acking it): what is left when a consumer stops.
  void DrainEvents();
  void Release();
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Channel> ch;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<Pd> pd;
  LocalPath path;
  uint32_t unacked = 0;
};

}  // namespace bench
}  // namespace rxv
