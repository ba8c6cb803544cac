// Native baselines for the benchmarks. See bench.h for the JS entry point.
//
// Objects (all reached through a type-tagged External handle):
// - Producer: a thread posting signaled RDMA WRITEs on its own QP pair whose
//   send CQ is the CQ under test, gated by a credit window read from a
//   counter the consumer bumps (so it never overruns the CQ) and optionally
//   paced to a rate. The counter is an ArrayBuffer JS cannot detach (u32 at
//   index 0, wrapping; see CounterBuffer): JS consumers add to it with a
//   plain store, native consumers atomically. It costs a JS consumer one
//   store per batch.
//
// The threads obey the addon's rules: a handle holds the JS objects its
// thread uses (context, PD, CQ) alive, so the GC cannot release them under
// it; explicit close() of those is refused while the bench's own QPs, MRs
// and CQs sit on them (EBUSY); and at environment teardown each handle's
// cleanup hook, added after the addon's, runs before it (Node runs hooks
// newest first) and stops the thread before the reaper closes anything.
// - Naive: its own device objects and uv_poll on the channel fd; for every
//   completion one MakeCallback with a fresh { wrId, status, opcode,
//   byteLen, qpNum } object (what a straightforward binding would do).
// - Echo: a QP answering every receive with a SEND, on its own thread, in
//   event mode (poll(2) on its channel, get/ack/arm/poll) or busy-poll mode.
// Synchronous ops: `drain` (the native event-mode loop: poll(2) on the
// channel fd, get_event to EAGAIN, batched ack, req_notify, poll CQ until
// empty) and `ping` (the native ping-pong against an Echo).
#include "bench.h"

#include <poll.h>
#include <sched.h>
#include <time.h>
#include <uv.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../addon.h"
#include "../context.h"
#include "../cq.h"
#include "../pd.h"
#include "../provider/provider.h"
#include "../util/deliver.h"
#include "../util/errors.h"
#include "../util/js_values.h"
#include "../util/uv_guard.h"
#include "../util/uv_poll_handle.h"
#include "../util/wrap.h"

namespace rxv {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the calling thread (the JS thread when called from JS).
double ThreadCpuSeconds() {
  timespec ts{0, 0};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void SleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

// Waits for a credit: spin briefly, then yield, then sleep (the machine may
// have fewer cores than busy threads).
// `spin_limit` pause iterations first (a closed loop of one WR in flight
// waits a whole round trip; yielding there costs more than the trip).
void Backoff(uint32_t spins, uint32_t spin_limit) {
  if (spins < spin_limit) CpuRelax();
  else if (spins < spin_limit + 20000) sched_yield();
  else SleepNs(20000);
}

constexpr uint32_t kAccessAll =
    access_flag::LOCAL_WRITE | access_flag::REMOTE_WRITE | access_flag::REMOTE_READ;

void Connect(Qp* q, uint32_t dest_qpn, uint16_t dlid, uint32_t rq_psn, uint32_t sq_psn) {
  QpAttr a;
  a.state = qp_state::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.access_flags = kAccessAll;
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::PKEY_INDEX | qp_attr_mask::PORT |
                   qp_attr_mask::ACCESS_FLAGS);
  a.state = qp_state::RTR;
  a.path_mtu = 3;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah.dlid = dlid;
  a.ah.port_num = 1;
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::AV | qp_attr_mask::PATH_MTU |
                   qp_attr_mask::DEST_QPN | qp_attr_mask::RQ_PSN |
                   qp_attr_mask::MAX_DEST_RD_ATOMIC | qp_attr_mask::MIN_RNR_TIMER);
  a.state = qp_state::RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = sq_psn;
  a.max_rd_atomic = 1;
  q->modify(a, qp_attr_mask::STATE | qp_attr_mask::TIMEOUT | qp_attr_mask::RETRY_CNT |
                   qp_attr_mask::RNR_RETRY | qp_attr_mask::SQ_PSN |
                   qp_attr_mask::MAX_QP_RD_ATOMIC);
}

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
const napi_type_tag kTag = {0x7278766265636831ull, 0x68616e646c653031ull};  // "rxvbech1handle01"

class Object {
 public:
  virtual ~Object() = default;
  // Stops threads and releases native resources; idempotent. `teardown`:
  // the environment is going away (no JS may run).
  virtual void Shutdown(bool teardown) = 0;
  napi_env env = nullptr;
  bool hook = false;

  static void OnCleanup(void* arg) {
    auto* self = static_cast<Object*>(arg);
    NoEscape(self->env, "nativeBench cleanup", [self] {
      self->hook = false;
      self->Shutdown(true);
    });
  }
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

Napi::External<Object> MakeHandle(Napi::Env env, std::unique_ptr<Object> obj) {
  Object* raw = obj.get();
  auto ext = Napi::External<Object>::New(env, raw, [](Napi::Env e, Object* o) {
    NoEscape(e, "nativeBench finalizer", [o] {
      o->RemoveHook();
      o->Shutdown(false);
    });
    delete o;
  });
  obj.release();
  raw->AddHook(env);
  napi_type_tag_object(env, ext, &kTag);
  return ext;
}

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

Napi::Object ArgsObject(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsUndefined()) return Napi::Object::New(info.Env());
  if (!info[i].IsObject()) throw Napi::TypeError::New(info.Env(), "args must be an object");
  return info[i].As<Napi::Object>();
}

uint32_t U32(Napi::Object o, const char* key, uint32_t dflt, uint32_t min, uint32_t max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  return ValueU32(o.Env(), v, key, min, max);
}

double Num(Napi::Object o, const char* key, double dflt, double min, double max) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1e300;
  if (!(d >= min && d <= max)) {
    throw Napi::RangeError::New(o.Env(), std::string(key) + " must be a number in [" +
                                             std::to_string(min) + ", " +
                                             std::to_string(max) + "]");
  }
  return d;
}

std::string Str(Napi::Object o, const char* key, const std::string& dflt) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return dflt;
  if (!v.IsString()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

// Only the soft device: its cores keep every object memory-safe whatever the
// order JS closes things in while a bench thread still posts.
Context* SoftContextArg(Napi::Env env, Napi::Value v) {
  auto* w = UnwrapArg<ContextWrap>(env, v, Addon::Get(env)->context_ctor, "context");
  Context* c = w->Checked(env, "nativeBench");
  if (c->info().provider != "soft") {
    throw Napi::TypeError::New(env, "nativeBench runs on soft devices only");
  }
  return c;
}

// ---- producer -----------------------------------------------------------------
struct ProducerConfig {
  uint64_t total = 0;
  uint32_t window = 1;
  uint32_t burst = 1;
  double rate = 0;  // WRs per second; 0 = as fast as credits allow
  uint32_t spin = 64;  // pause iterations before yielding while out of credits
};

ProducerConfig ReadConfig(Napi::Object o, uint32_t max_window) {
  ProducerConfig c;
  c.total = static_cast<uint64_t>(Num(o, "total", 100000, 1, 1e12));
  c.window = U32(o, "window", std::min<uint32_t>(64, max_window), 1, max_window);
  c.burst = U32(o, "burst", std::min<uint32_t>(32, c.window), 1, 4096);
  c.rate = Num(o, "rate", 0, 0, 1e10);
  c.spin = U32(o, "spin", 64, 0, 1u << 30);
  return c;
}

// A QP pair on one PD, both on `cq`: A writes to B's memory with RDMA WRITE
// (signaled: one completion on `cq` per WR; B completes nothing).
class Producer {
 public:
  Producer(Context* ctx, Pd* pd, Cq* cq, uint32_t max_wr) : max_wr_(max_wr) {
    mem_.assign(4096, 0);
    mr_ = pd->reg_mr(mem_.data(), mem_.size(), kAccessAll);
    Pd::QpInit init;
    init.send_cq = cq;
    init.recv_cq = cq;
    init.cap.max_send_wr = max_wr;
    init.cap.max_recv_wr = 1;
    a_ = pd->create_rc_qp(init);
    init.cap.max_send_wr = 1;
    b_ = pd->create_rc_qp(init);
    uint16_t lid = ctx->query_port(1).lid;
    Connect(a_.get(), b_->qp_num(), lid, 0, 0);
    Connect(b_.get(), a_->qp_num(), lid, 0, 0);
  }
  ~Producer() { Release(); }

  uint32_t max_wr() const { return max_wr_; }
  void SetCounter(uint32_t* counter) { counter_ = counter; }
  uint32_t* counter() const { return counter_; }
  bool running() const { return thread_.joinable(); }

  void Start(const ProducerConfig& cfg) {
    Stop();
    error_.clear();
    posted_.store(0);
    stop_.store(false);
    thread_ = std::thread([this, cfg] { Run(cfg); });
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  void Release() {
    Stop();
    DestroyQuietly(a_);
    DestroyQuietly(b_);
    DestroyQuietly(mr_);
  }
  uint64_t posted() const { return posted_.load(); }
  const std::string& error() const { return error_; }
  double seconds() const { return seconds_; }

 private:
  void Run(ProducerConfig cfg) {
    if (!a_ || !counter_) {
      error_ = "producer released";
      return;
    }
    const uint64_t raddr = mr_->addr() + 2048;
    std::vector<SendWr> wrs(cfg.burst);
    for (SendWr& w : wrs) {
      w.opcode = wr_opcode::RDMA_WRITE;
      w.send_flags = send_flag::SIGNALED;
      w.remote_addr = raddr;
      w.rkey = mr_->rkey();
      w.sg.push_back(Sge{mr_->addr(), 8, mr_->lkey()});
    }
    const auto t0 = Clock::now();
    uint64_t posted = 0;
    uint32_t spins = 0;
    while (posted < cfg.total && !stop_.load(std::memory_order_relaxed)) {
      const uint32_t consumed = __atomic_load_n(counter_, __ATOMIC_ACQUIRE);
      const uint32_t inflight = static_cast<uint32_t>(posted) - consumed;
      uint64_t n = inflight >= cfg.window ? 0 : cfg.window - inflight;
      n = std::min<uint64_t>({n, cfg.burst, cfg.total - posted});
      if (n > 0 && cfg.rate > 0) {
        const double due = cfg.rate * SecondsSince(t0);
        const uint64_t allowed = due > double(posted) ? uint64_t(due - double(posted)) : 0;
        if (allowed == 0) {
          const double wait = (double(posted) + 1) / cfg.rate - SecondsSince(t0);
          if (wait > 60e-6) SleepNs(long(wait * 1e9) - 50000);
          else CpuRelax();
          continue;
        }
        n = std::min(n, allowed);
      }
      if (n == 0) {
        Backoff(spins++, cfg.spin);
        continue;
      }
      spins = 0;
      for (uint64_t i = 0; i < n; i++) wrs[i].wr_id = posted + i;
      size_t bad = 0;
      try {
        a_->post_send(wrs.data(), static_cast<size_t>(n), &bad);
      } catch (const VerbsError& e) {
        error_ = e.what();
        posted += bad;
        break;
      }
      posted += n;
      posted_.store(posted, std::memory_order_relaxed);
    }
    posted_.store(posted);
    seconds_ = SecondsSince(t0);
  }

  uint32_t max_wr_;
  std::vector<uint8_t> mem_;
  std::unique_ptr<Mr> mr_;
  std::unique_ptr<Qp> a_, b_;
  uint32_t* counter_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> posted_{0};
  std::string error_;
  double seconds_ = 0;
};

// The producer over a CQ owned by JS. Holds the context, PD, CQ and the
// counter buffer (see Object::Hold) until its thread has stopped.
class JsProducer : public Object {
 public:
  std::unique_ptr<Producer> p;
  void Shutdown(bool teardown) override {
    if (p) p->Release();  // joins the thread first
    p.reset();
    ReleaseHeld();
  }
};

// The producer's credit counter: the buffer of a WebAssembly memory, which
// JS cannot detach (transfer, structuredClone and postMessage leave it in
// place), so the thread never reads memory that moved to someone else. Only
// growing the memory would detach it, and the Memory object is not handed
// out. Checked rather than trusted: the global could have been replaced.
Napi::ArrayBuffer CounterBuffer(Napi::Env env) {
  Napi::Value wasm = env.Global().Get("WebAssembly");
  Napi::Value ctor = wasm.IsObject() ? wasm.As<Napi::Object>().Get("Memory") : env.Undefined();
  if (!ctor.IsFunction()) {
    throw Napi::Error::New(env, "nativeBench: the producer's counter needs WebAssembly (not with --jitless)");
  }
  Napi::Object desc = Napi::Object::New(env);
  desc.Set("initial", 1);
  Napi::Value mem = ctor.As<Napi::Function>().New({desc});
  Napi::Value buf = mem.IsObject() ? mem.As<Napi::Object>().Get("buffer") : env.Undefined();
  // A detachable buffer would be detached here (it is ours): refuse it.
  if (!buf.IsArrayBuffer() || buf.As<Napi::ArrayBuffer>().ByteLength() < 64 ||
      napi_detach_arraybuffer(env, buf) != napi_detachable_arraybuffer_expected) {
    throw Napi::TypeError::New(env, "nativeBench: WebAssembly.Memory did not give a fixed buffer");
  }
  return buf.As<Napi::ArrayBuffer>();
}

// ---- a native rig: everything on one soft device ------------------------------
class Rig {
 public:
  Rig(const std::string& device, uint32_t cqe, bool with_channel) {
    ctx = soft_provider().open(device);
    if (with_channel) ch = ctx->create_channel();
    cq = ctx->create_cq(static_cast<int>(cqe), ch.get(), 0);
    pd = ctx->alloc_pd();
  }
  ~Rig() { Release(); }
  void AckAll() {
    if (cq && unacked) {
      try {
        cq->ack_events(unacked);
      } catch (...) {
      }
      unacked = 0;
    }
  }
  // Reads every pending event (acking it): what is left when a consumer stops.
  void DrainEvents() {
    if (!ch) return;
    try {
      Cq* c = nullptr;
      while (ch->get_event(&c)) unacked++;
    } catch (...) {
    }
    AckAll();
  }
  void Release() {
    DrainEvents();
    DestroyQuietly(cq);
    DestroyQuietly(ch);
    DestroyQuietly(pd);
    DestroyQuietly(ctx);
  }
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Channel> ch;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<Pd> pd;
  uint32_t unacked = 0;
};

// ---- drain: the native event-mode loop ------------------------------------------
Napi::Value Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 1);
  const uint32_t cqe = U32(args, "cqe", 1024, 1, 65536);
  const ProducerConfig cfg = ReadConfig(args, cqe);
  const uint32_t ack_every = U32(args, "ackEvery", 64, 1, 1u << 20);
  const std::string device = Str(args, "device", "soft0");
  struct Out {
    double seconds = 0, wcs = 0, events = 0, polls = 0, wakeups = 0, errors = 0, checksum = 0,
           consumer_cpu = 0;
    std::string error;
  } out;
  Guard(env, [&] {
    Rig rig(device, cqe, true);
    alignas(64) uint32_t counter[16] = {0};
    std::unique_ptr<Producer> prod(new Producer(rig.ctx.get(), rig.pd.get(), rig.cq.get(), cfg.window));
    prod->SetCounter(counter);
    std::vector<Wc> wcs(256);
    uint64_t got = 0, events = 0, polls = 0, wakeups = 0, errors = 0, sum = 0;
    rig.cq->req_notify(false);
    const auto t0 = Clock::now();
    const double cpu0 = ThreadCpuSeconds();
    prod->Start(cfg);
    pollfd pfd{rig.ch->fd(), POLLIN, 0};
    while (got < cfg.total) {
      int r = ::poll(&pfd, 1, 5000);
      if (r == 0) {
        out.error = "stalled: no event for 5 s (" + prod->error() + ")";
        break;
      }
      if (r < 0) continue;
      wakeups++;
      Cq* c = nullptr;
      while (rig.ch->get_event(&c)) {
        events++;
        rig.unacked++;
      }
      if (rig.unacked >= ack_every) rig.AckAll();
      rig.cq->req_notify(false);
      for (;;) {
        int n = rig.cq->poll(256, wcs.data());
        polls++;
        for (int i = 0; i < n; i++) {
          sum += wcs[i].wr_id + wcs[i].status;
          errors += wcs[i].status != 0;
        }
        got += uint64_t(n);
        __atomic_fetch_add(counter, uint32_t(n), __ATOMIC_RELEASE);
        if (n < 256) break;
      }
    }
    out.seconds = SecondsSince(t0);
    out.consumer_cpu = ThreadCpuSeconds() - cpu0;
    prod->Release();
    if (out.error.empty() && !prod->error().empty()) out.error = prod->error();
    prod.reset();
    rig.DrainEvents();
    out.wcs = double(got);
    out.events = double(events);
    out.polls = double(polls);
    out.wakeups = double(wakeups);
    out.errors = double(errors);
    out.checksum = double(sum & ((1ull << 52) - 1));
  });
  Napi::Object o = Napi::Object::New(env);
  o.Set("seconds", out.seconds);
  o.Set("wcs", out.wcs);
  o.Set("events", out.events);
  o.Set("polls", out.polls);
  o.Set("wakeups", out.wakeups);
  o.Set("errors", out.errors);
  o.Set("checksum", out.checksum);
  o.Set("consumerCpuSeconds", out.consumer_cpu);
  if (!out.error.empty()) o.Set("error", out.error);
  return o;
}

// ---- naive: one JS call and one object per completion ----------------------------
class Naive : public Object {
 public:
  std::unique_ptr<Rig> rig;
  std::unique_ptr<Producer> prod;
  alignas(64) uint32_t counter[16] = {0};
  UvPoll poll;
  Napi::FunctionReference cb;
  std::unique_ptr<Napi::AsyncContext> async;
  std::vector<Wc> wcs = std::vector<Wc>(256);
  uint64_t events = 0, wakeups = 0;
  uint32_t ack_every = 64;
  bool shut = false;

  void Shutdown(bool teardown) override {
    if (shut) return;
    shut = true;
    poll.Close();
    if (prod) prod->Release();
    prod.reset();
    if (rig) rig->Release();
    rig.reset();
    // Also at teardown (a cleanup hook, the environment still works): Node
    // frees neither an addon's references nor its async contexts.
    cb.Reset();
    async.reset();
  }

  void OnReadable() {
    if (shut || !rig) return;
    napi_env e = env;
    if (!CanRunJs(e)) return;
    wakeups++;
    try {
      Cq* c = nullptr;
      while (rig->ch->get_event(&c)) {
        events++;
        rig->unacked++;
      }
      if (rig->unacked >= ack_every) rig->AckAll();
      rig->cq->req_notify(false);
    } catch (const VerbsError& err) {
      fprintf(stderr, "nativeBench naive: %s\n", err.what());
      poll.Stop();
      return;
    }
    napi_handle_scope outer;
    if (napi_open_handle_scope(e, &outer) != napi_ok) return;
    Deliver(e);
    napi_close_handle_scope(e, outer);
  }

  void Deliver(napi_env e) {
    napi_value fn = nullptr, recv = nullptr;
    if (napi_get_reference_value(e, static_cast<napi_ref>(cb), &fn) != napi_ok || !fn ||
        napi_get_global(e, &recv) != napi_ok) {
      return;
    }
    for (;;) {
      int n = 0;
      try {
        n = rig->cq->poll(256, wcs.data());
      } catch (const VerbsError& err) {
        fprintf(stderr, "nativeBench naive: %s\n", err.what());
        poll.Stop();
        return;
      }
      for (int i = 0; i < n; i++) {
        const Wc& w = wcs[i];
        napi_handle_scope scope;
        if (napi_open_handle_scope(e, &scope) != napi_ok) return;
        napi_value o, id, st, op, bl, qp;
        bool ok = napi_create_object(e, &o) == napi_ok &&
                  napi_create_bigint_uint64(e, w.wr_id, &id) == napi_ok &&
                  napi_create_uint32(e, w.status, &st) == napi_ok &&
                  napi_create_uint32(e, w.opcode, &op) == napi_ok &&
                  napi_create_uint32(e, w.byte_len, &bl) == napi_ok &&
                  napi_create_uint32(e, w.qp_num, &qp) == napi_ok &&
                  napi_set_named_property(e, o, "wrId", id) == napi_ok &&
                  napi_set_named_property(e, o, "status", st) == napi_ok &&
                  napi_set_named_property(e, o, "opcode", op) == napi_ok &&
                  napi_set_named_property(e, o, "byteLen", bl) == napi_ok &&
                  napi_set_named_property(e, o, "qpNum", qp) == napi_ok;
        if (ok) ok = DeliverToJs(e, static_cast<napi_async_context>(*async), recv, fn, 1, &o);
        napi_close_handle_scope(e, scope);
        __atomic_fetch_add(counter, 1u, __ATOMIC_RELEASE);
        if (!ok || shut) return;
      }
      if (n < 256) break;
    }
  }
};

Napi::Value NaiveCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 1);
  const uint32_t cqe = U32(args, "cqe", 1024, 1, 65536);
  const std::string device = Str(args, "device", "soft0");
  Napi::Value cbv = args.Get("callback");
  if (!cbv.IsFunction()) throw Napi::TypeError::New(env, "callback must be a function");
  auto n = std::make_unique<Naive>();
  n->ack_every = U32(args, "ackEvery", 64, 1, 1u << 20);
  Guard(env, [&] {
    n->rig = std::make_unique<Rig>(device, cqe, true);
    n->prod.reset(new Producer(n->rig->ctx.get(), n->rig->pd.get(), n->rig->cq.get(), cqe));
    n->prod->SetCounter(n->counter);
  });
  n->cb = Napi::Persistent(cbv.As<Napi::Function>());
  n->async = std::make_unique<Napi::AsyncContext>(env, "rx-verbs:bench-naive");
  return MakeHandle(env, std::move(n));
}

Napi::Value NaiveStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Naive* n = HandleArg<Naive>(info, 2, "naive");
  if (n->shut) throw Napi::Error::New(env, "the naive consumer is closed");
  if (n->prod->running()) throw Napi::Error::New(env, "already started");
  const ProducerConfig cfg = ReadConfig(ArgsObject(info, 1), n->prod->max_wr());
  Guard(env, [&] {
    if (!n->poll.Valid()) {
      int rc = n->poll.Init(env, Addon::Get(env)->loop, n->rig->ch->fd(), [n](int) { n->OnReadable(); });
      if (rc != 0) throw VerbsError(-rc, "uv_poll_init");
    }
    int rc = n->poll.Start();
    if (rc != 0) throw VerbsError(-rc, "uv_poll_start");
    n->rig->cq->req_notify(false);
    n->prod->Start(cfg);
  });
  return env.Undefined();
}

Napi::Value NaiveClose(const Napi::CallbackInfo& info) {
  Naive* n = HandleArg<Naive>(info, 2, "naive");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("events", double(n->events));
  o.Set("wakeups", double(n->wakeups));
  o.Set("posted", double(n->prod ? n->prod->posted() : 0));
  if (n->prod && !n->prod->error().empty()) o.Set("error", n->prod->error());
  n->RemoveHook();
  n->Shutdown(false);
  return o;
}

// ---- producer over a JS CQ ------------------------------------------------------
Napi::Value ProducerCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 1);
  Addon* addon = Addon::Get(env);
  // Every JS value is read first (a getter may close what we then use).
  Napi::Value ctx_v = args.Get("context"), pd_v = args.Get("pd"), cq_v = args.Get("cq");
  const uint32_t max_wr = U32(args, "maxWr", 1024, 1, 16384);
  Napi::ArrayBuffer counter = CounterBuffer(env);
  Context* ctx = SoftContextArg(env, ctx_v);
  Pd* pd = UnwrapArg<PdWrap>(env, pd_v, addon->pd_ctor, "pd")->Checked(env, "nativeBench");
  Cq* cq = UnwrapArg<CqWrap>(env, cq_v, addon->cq_ctor, "cq")->Checked(env, "nativeBench");
  auto p = std::make_unique<JsProducer>();
  Guard(env, [&] { p->p.reset(new Producer(ctx, pd, cq, max_wr)); });
  std::memset(counter.Data(), 0, 64);
  p->p->SetCounter(static_cast<uint32_t*>(counter.Data()));
  for (Napi::Value v : {ctx_v, pd_v, cq_v, Napi::Value(counter)}) p->Hold(v.As<Napi::Object>());
  Napi::Object o = Napi::Object::New(env);
  o.Set("counter", counter);
  o.Set("handle", MakeHandle(env, std::move(p)));
  return o;
}

Napi::Value ProducerStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsProducer* p = HandleArg<JsProducer>(info, 2, "producer");
  if (!p->p) throw Napi::Error::New(env, "the producer is closed");
  const ProducerConfig cfg = ReadConfig(ArgsObject(info, 1), p->p->max_wr());
  p->p->Start(cfg);
  return env.Undefined();
}

Napi::Value ProducerStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsProducer* p = HandleArg<JsProducer>(info, 2, "producer");
  Napi::Object o = Napi::Object::New(env);
  if (!p->p) return o;
  p->p->Stop();
  o.Set("posted", double(p->p->posted()));
  o.Set("seconds", p->p->seconds());
  if (!p->p->error().empty()) o.Set("error", p->p->error());
  return o;
}

Napi::Value ProducerClose(const Napi::CallbackInfo& info) {
  JsProducer* p = HandleArg<JsProducer>(info, 2, "producer");
  p->RemoveHook();
  p->Shutdown(false);
  return info.Env().Undefined();
}

// ---- echo: a peer answering every receive with a SEND ------------------------------
constexpr uint32_t kSlot = 64;

class Echo : public Object {
 public:
  // Creates its QP, CQ and channel on `ctx`/`pd`, connected to the peer.
  Echo(Context* ctx, Pd* pd, uint32_t depth, uint32_t peer_qpn, uint32_t peer_psn)
      : depth_(depth) {
    mem_.assign(size_t(depth + 1) * kSlot, 0);
    ch_ = ctx->create_channel();
    cq_ = ctx->create_cq(static_cast<int>(depth * 2 + 16), ch_.get(), 0);
    mr_ = pd->reg_mr(mem_.data(), mem_.size(), kAccessAll);
    Pd::QpInit init;
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    qp_ = pd->create_rc_qp(init);
    lid_ = ctx->query_port(1).lid;
    Connect(qp_.get(), peer_qpn, lid_, peer_psn, 0);
    recv_.sg.push_back(Sge{0, kSlot, mr_->lkey()});
    for (uint32_t i = 0; i < depth; i++) PostRecv(i);
    send_.opcode = wr_opcode::SEND;
    send_.send_flags = 0;  // unsignaled: the echo completes nothing on send
    send_.sg.push_back(Sge{mr_->addr() + uint64_t(depth) * kSlot, 8, mr_->lkey()});
  }
  ~Echo() override { Shutdown(true); }

  uint32_t qp_num() const { return qp_->qp_num(); }
  uint16_t lid() const { return lid_; }

  void Start(bool events) {
    Stop();
    stop_.store(false);
    thread_ = std::thread([this, events] { Run(events); });
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    DrainEvents();
  }
  uint64_t echoed() const { return echoed_.load(); }
  const std::string& error() const { return error_; }

  void Shutdown(bool teardown) override {
    Stop();
    DestroyQuietly(qp_);
    DestroyQuietly(mr_);
    DestroyQuietly(cq_);
    DestroyQuietly(ch_);
    ReleaseHeld();  // the context and PD it was built on
  }

 private:
  void PostRecv(uint64_t slot) {
    recv_.wr_id = slot;
    recv_.sg[0].addr = mr_->addr() + slot * kSlot;
    size_t bad;
    qp_->post_recv(&recv_, 1, &bad);
  }
  void DrainEvents() {
    if (!ch_ || !cq_) return;
    try {
      Cq* c = nullptr;
      uint32_t n = 0;
      while (ch_->get_event(&c)) n++;
      if (n) cq_->ack_events(n);
    } catch (...) {
    }
  }
  // Answers what the CQ holds; false when empty.
  bool Service() {
    Wc wcs[32];
    int n = cq_->poll(32, wcs);
    for (int i = 0; i < n; i++) {
      if (wcs[i].status != wc_status::SUCCESS) throw VerbsError(EIO, "echo", "a completion failed");
      if (wcs[i].opcode != wc_opcode::RECV) continue;
      PostRecv(wcs[i].wr_id);
      size_t bad;
      send_.wr_id = wcs[i].wr_id;
      qp_->post_send(&send_, 1, &bad);
      echoed_.fetch_add(1, std::memory_order_relaxed);
    }
    return n > 0;
  }
  void Run(bool events) {
    try {
      if (!events) {
        while (!stop_.load(std::memory_order_relaxed)) {
          if (!Service()) sched_yield();
        }
        return;
      }
      cq_->req_notify(false);
      while (Service()) {
      }
      pollfd pfd{ch_->fd(), POLLIN, 0};
      while (!stop_.load(std::memory_order_relaxed)) {
        if (::poll(&pfd, 1, 20) <= 0) continue;
        Cq* c = nullptr;
        uint32_t got = 0;
        while (ch_->get_event(&c)) got++;
        if (got) cq_->ack_events(got);
        cq_->req_notify(false);
        while (Service()) {
        }
      }
    } catch (const VerbsError& e) {
      error_ = e.what();
    }
  }

  uint32_t depth_;
  uint16_t lid_ = 0;
  std::vector<uint8_t> mem_;
  std::unique_ptr<Channel> ch_;
  std::unique_ptr<Cq> cq_;
  std::unique_ptr<Mr> mr_;
  std::unique_ptr<Qp> qp_;
  RecvWr recv_;
  SendWr send_;
  std::thread thread_;
  std::atomic<bool> stop_{true};
  std::atomic<uint64_t> echoed_{0};
  std::string error_;
};

Napi::Value EchoCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 1);
  // Every JS value is read first (a getter may close what we then use).
  Napi::Value ctx_v = args.Get("context"), pd_v = args.Get("pd");
  const uint32_t depth = U32(args, "depth", 16, 1, 4096);
  const uint32_t peer = U32(args, "peerQpNum", 0, 0, 0xffffff);
  const uint32_t psn = U32(args, "peerPsn", 0, 0, 0xffffff);
  Context* ctx = SoftContextArg(env, ctx_v);
  Pd* pd = UnwrapArg<PdWrap>(env, pd_v, Addon::Get(env)->pd_ctor, "pd")->Checked(env, "nativeBench");
  std::unique_ptr<Echo> e = Guard(env, [&] { return std::make_unique<Echo>(ctx, pd, depth, peer, psn); });
  e->Hold(ctx_v.As<Napi::Object>());
  e->Hold(pd_v.As<Napi::Object>());
  Napi::Object o = Napi::Object::New(env);
  o.Set("qpNum", e->qp_num());
  o.Set("lid", e->lid());
  o.Set("psn", 0);
  o.Set("handle", MakeHandle(env, std::move(e)));
  return o;
}

Napi::Value EchoStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Echo* e = HandleArg<Echo>(info, 2, "echo");
  const std::string mode = Str(ArgsObject(info, 1), "mode", "event");
  if (mode != "event" && mode != "poll") throw Napi::RangeError::New(env, "mode must be 'event' or 'poll'");
  e->Start(mode == "event");
  return env.Undefined();
}

Napi::Value EchoStop(const Napi::CallbackInfo& info) {
  Echo* e = HandleArg<Echo>(info, 2, "echo");
  e->Stop();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("echoed", double(e->echoed()));
  if (!e->error().empty()) o.Set("error", e->error());
  return o;
}

Napi::Value EchoClose(const Napi::CallbackInfo& info) {
  Echo* e = HandleArg<Echo>(info, 2, "echo");
  e->RemoveHook();
  e->Shutdown(false);
  return info.Env().Undefined();
}

// ---- ping: the native ping-pong round trip ------------------------------------
Napi::Value Ping(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 1);
  const uint32_t iters = U32(args, "iters", 10000, 1, 10000000);
  const uint32_t warmup = U32(args, "warmup", 1000, 0, 10000000);
  const std::string mode = Str(args, "mode", "event");
  const std::string device = Str(args, "device", "soft0");
  if (mode != "event" && mode != "poll") throw Napi::RangeError::New(env, "mode must be 'event' or 'poll'");
  const bool events = mode == "event";
  std::vector<double> rtt(iters);
  std::string error;
  Guard(env, [&] {
    constexpr uint32_t kDepth = 16;
    Rig rig(device, kDepth * 2 + 16, true);
    std::vector<uint8_t> mem(size_t(kDepth + 1) * kSlot);
    std::unique_ptr<Mr> mr = rig.pd->reg_mr(mem.data(), mem.size(), kAccessAll);
    Pd::QpInit init;
    init.send_cq = rig.cq.get();
    init.recv_cq = rig.cq.get();
    init.cap.max_send_wr = kDepth;
    init.cap.max_recv_wr = kDepth;
    std::unique_ptr<Qp> a = rig.pd->create_rc_qp(init);
    std::unique_ptr<Echo> echo(new Echo(rig.ctx.get(), rig.pd.get(), kDepth, a->qp_num(), 0));
    Connect(a.get(), echo->qp_num(), echo->lid(), 0, 0);
    RecvWr recv;
    recv.sg.push_back(Sge{0, kSlot, mr->lkey()});
    auto post_recv = [&](uint64_t slot) {
      recv.wr_id = slot;
      recv.sg[0].addr = mr->addr() + slot * kSlot;
      size_t bad;
      a->post_recv(&recv, 1, &bad);
    };
    for (uint32_t i = 0; i < kDepth; i++) post_recv(i);
    SendWr send;
    send.opcode = wr_opcode::SEND;
    send.send_flags = 0;
    send.sg.push_back(Sge{mr->addr() + kDepth * kSlot, 8, mr->lkey()});
    echo->Start(events);
    if (events) rig.cq->req_notify(false);
    pollfd pfd{rig.ch->fd(), POLLIN, 0};
    Wc wcs[8];
    for (uint32_t i = 0; i < warmup + iters && error.empty(); i++) {
      const auto t0 = Clock::now();
      size_t bad;
      send.wr_id = i;
      a->post_send(&send, 1, &bad);
      int n = 0;
      if (events) {
        // Sleep on the channel: event, ack, re-arm, poll (rc_pingpong -e).
        for (;;) {
          n = rig.cq->poll(8, wcs);
          if (n > 0) break;
          if (::poll(&pfd, 1, 2000) <= 0) {
            error = "ping: no event for 2 s";
            break;
          }
          Cq* c = nullptr;
          uint32_t got = 0;
          while (rig.ch->get_event(&c)) got++;
          if (got) rig.cq->ack_events(got);
          rig.cq->req_notify(false);
        }
      } else {
        const auto limit = t0 + std::chrono::seconds(2);
        while ((n = rig.cq->poll(8, wcs)) == 0) {
          if (Clock::now() > limit) {
            error = "ping: no completion for 2 s";
            break;
          }
        }
      }
      const auto t1 = Clock::now();
      for (int k = 0; k < n; k++) {
        if (wcs[k].status != wc_status::SUCCESS) error = "ping: a completion failed";
        if (wcs[k].opcode == wc_opcode::RECV) post_recv(wcs[k].wr_id);
      }
      if (i >= warmup) rtt[i - warmup] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    echo->Shutdown(false);
    if (error.empty() && !echo->error().empty()) error = echo->error();
    DestroyQuietly(a);
    echo.reset();
    DestroyQuietly(mr);
    rig.DrainEvents();
  });
  if (!error.empty()) throw Napi::Error::New(env, error);
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, iters * sizeof(double));
  std::memcpy(ab.Data(), rtt.data(), iters * sizeof(double));
  return ab;
}

}  // namespace

// nativeBench(op, args?, handle?)
Napi::Value NativeBench(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "nativeBench: op must be a string");
  const std::string op = info[0].As<Napi::String>().Utf8Value();
  if (op == "drain") return Drain(info);
  if (op == "threadCpu") return Napi::Number::New(env, ThreadCpuSeconds());
  if (op == "ping") return Ping(info);
  if (op == "producer.create") return ProducerCreate(info);
  if (op == "producer.start") return ProducerStart(info);
  if (op == "producer.stop") return ProducerStop(info);
  if (op == "producer.close") return ProducerClose(info);
  if (op == "naive.create") return NaiveCreate(info);
  if (op == "naive.start") return NaiveStart(info);
  if (op == "naive.close") return NaiveClose(info);
  if (op == "echo.create") return EchoCreate(info);
  if (op == "echo.start") return EchoStart(info);
  if (op == "echo.stop") return EchoStop(info);
  if (op == "echo.close") return EchoClose(info);
  throw Napi::RangeError::New(env, "nativeBench: unknown op '" + op + "'");
}

}  // namespace bench
}  // namespace rxv
