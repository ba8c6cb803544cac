// The producer thread (producer.h), and its JS face over a CQ owned by JS.
//
// The credit counter JS bumps is an ArrayBuffer JS cannot detach (u32 at
// index 0, wrapping; see CounterBuffer): JS consumers add to it with a plain
// store, native consumers atomically. It costs a JS consumer one store per
// batch.
//
// The thread obeys the addon's rules: its handle holds the JS objects it
// uses (context, PD, CQ) alive, so the GC cannot release them under it;
// explicit close() of those is refused while the bench's own QPs and MRs sit
// on them (EBUSY); and at environment teardown the handle's cleanup hook,
// added after the product addon's, runs before it (Node runs hooks newest
// first) and stops the thread before the reaper closes anything.
#include "producer.h"

#include <algorithm>
#include <cstring>

#include "baselines.h"
#include "common.h"
#include "util/errors.h"

namespace rxv {
namespace bench {

ProducerConfig ReadConfig(Napi::Object o, uint32_t max_window) {
  ProducerConfig c;
  c.total = static_cast<uint64_t>(Num(o, "total", 100000, 1, 1e12));
  c.window = U32(o, "window", std::min<uint32_t>(64, max_window), 1, max_window);
  c.burst = U32(o, "burst", std::min<uint32_t>(32, c.window), 1, 4096);
  c.rate = Num(o, "rate", 0, 0, 1e10);
  c.spin = U32(o, "spin", 64, 0, 1u << 30);
  return c;
}

Producer::Producer(Context* ctx, Pd* pd, Cq* cq, uint32_t max_wr, const LocalPath& path) : max_wr_(max_wr) {
  (void)ctx;
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
  Connect(a_.get(), b_->qp_num(), path, 0, 0);
  Connect(b_.get(), a_->qp_num(), path, 0, 0);
}

void Producer::Start(const ProducerConfig& cfg) {
  Stop();
  error_.clear();
  posted_.store(0);
  stop_.store(false);
  thread_ = std::thread([this, cfg] { Run(cfg); });
}

void Producer::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Producer::Release() {
  Stop();
  DestroyQuietly(a_);
  DestroyQuietly(b_);
  DestroyQuietly(mr_);
}

void Producer::Run(ProducerConfig cfg) {
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

namespace {

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
    throw Napi::Error::New(env, "rx-verbs bench: the producer's counter needs WebAssembly (not with --jitless)");
  }
  Napi::Object desc = Napi::Object::New(env);
  desc.Set("initial", 1);
  Napi::Value mem = ctor.As<Napi::Function>().New({desc});
  Napi::Value buf = mem.IsObject() ? mem.As<Napi::Object>().Get("buffer") : env.Undefined();
  // A detachable buffer would be detached here (it is ours): refuse it.
  if (!buf.IsArrayBuffer() || buf.As<Napi::ArrayBuffer>().ByteLength() < 64 ||
      napi_detach_arraybuffer(env, buf) != napi_detachable_arraybuffer_expected) {
    throw Napi::TypeError::New(env, "rx-verbs bench: WebAssembly.Memory did not give a fixed buffer");
  }
  return buf.As<Napi::ArrayBuffer>();
}

}  // namespace

Napi::Value ProducerCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  // Every JS value is read first (a getter may close what we then use).
  Napi::Value ctx_v = args.Get("context"), pd_v = args.Get("pd"), cq_v = args.Get("cq");
  const uint32_t max_wr = U32(args, "maxWr", 1024, 1, 16384);
  const int gid_index = GidIndexArg(args);
  Napi::ArrayBuffer counter = CounterBuffer(env);
  Context* ctx = BenchContextArg(env, ctx_v);
  Pd* pd = PdArg(env, pd_v);
  Cq* cq = CqArg(env, cq_v);
  auto p = std::make_unique<JsProducer>();
  Guard(env, [&] { p->p.reset(new Producer(ctx, pd, cq, max_wr, PathTo(ctx, gid_index))); });
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
  JsProducer* p = HandleArg<JsProducer>(info, 0, "producer");
  if (!p->p) throw Napi::Error::New(env, "the producer is closed");
  const ProducerConfig cfg = ReadConfig(ArgsObject(info, 1), p->p->max_wr());
  p->p->Start(cfg);
  return env.Undefined();
}

Napi::Value ProducerStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  JsProducer* p = HandleArg<JsProducer>(info, 0, "producer");
  Napi::Object o = Napi::Object::New(env);
  if (!p->p) return o;
  p->p->Stop();
  o.Set("posted", double(p->p->posted()));
  o.Set("seconds", p->p->seconds());
  if (!p->p->error().empty()) o.Set("error", p->p->error());
  return o;
}

Napi::Value ProducerClose(const Napi::CallbackInfo& info) {
  JsProducer* p = HandleArg<JsProducer>(info, 0, "producer");
  p->RemoveHook();
  p->Shutdown(false);
  return info.Env().Undefined();
}

}  // namespace bench
}  // namespace rxv
