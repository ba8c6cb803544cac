// The echo peer (echo.h) and its JS face: JS hands it a context and PD of
// its own, and holds them alive through the handle until it is closed.
#include "echo.h"

#include <poll.h>
#include <sched.h>

#include <cerrno>

#include "baselines.h"
#include "util/errors.h"

namespace rxv {
namespace bench {

Echo::Echo(Context* ctx, Pd* pd, uint32_t depth, uint32_t peer_qpn, uint32_t peer_psn, const LocalPath& path)
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
  lid_ = path.lid;
  Connect(qp_.get(), peer_qpn, path, peer_psn, 0);
  recv_.sg.push_back(Sge{0, kSlot, mr_->lkey()});
  for (uint32_t i = 0; i < depth; i++) PostRecv(i);
  send_.opcode = wr_opcode::SEND;
  send_.send_flags = 0;  // unsignaled: the echo completes nothing on send
  send_.sg.push_back(Sge{mr_->addr() + uint64_t(depth) * kSlot, 8, mr_->lkey()});
}

void Echo::Start(bool events) {
  Stop();
  stop_.store(false);
  thread_ = std::thread([this, events] { Run(events); });
}

void Echo::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  DrainEvents();
}

void Echo::Shutdown(bool teardown) {
  Stop();
  DestroyQuietly(qp_);
  DestroyQuietly(mr_);
  DestroyQuietly(cq_);
  DestroyQuietly(ch_);
  ReleaseHeld();  // the context and PD it was built on
}

void Echo::PostRecv(uint64_t slot) {
  recv_.wr_id = slot;
  recv_.sg[0].addr = mr_->addr() + slot * kSlot;
  size_t bad;
  qp_->post_recv(&recv_, 1, &bad);
}

void Echo::DrainEvents() {
  if (!ch_ || !cq_) return;
  try {
    Cq* c = nullptr;
    uint32_t n = 0;
    while (ch_->get_event(&c)) n++;
    if (n) cq_->ack_events(n);
  } catch (...) {
  }
}

bool Echo::Service() {
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

void Echo::Run(bool events) {
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

Napi::Value EchoCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  // Every JS value is read first (a getter may close what we then use).
  Napi::Value ctx_v = args.Get("context"), pd_v = args.Get("pd");
  const uint32_t depth = U32(args, "depth", 16, 1, 4096);
  const uint32_t peer = U32(args, "peerQpNum", 0, 0, 0xffffff);
  const uint32_t psn = U32(args, "peerPsn", 0, 0, 0xffffff);
  const int gid_index = GidIndexArg(args);
  Context* ctx = BenchContextArg(env, ctx_v);
  Pd* pd = PdArg(env, pd_v);
  std::unique_ptr<Echo> e = Guard(env, [&] { return std::make_unique<Echo>(ctx, pd, depth, peer, psn, PathTo(ctx, gid_index)); });
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
  Echo* e = HandleArg<Echo>(info, 0, "echo");
  const std::string mode = Str(ArgsObject(info, 1), "mode", "event");
  if (mode != "event" && mode != "poll") throw Napi::RangeError::New(env, "mode must be 'event' or 'poll'");
  e->Start(mode == "event");
  return env.Undefined();
}

Napi::Value EchoStop(const Napi::CallbackInfo& info) {
  Echo* e = HandleArg<Echo>(info, 0, "echo");
  e->Stop();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("echoed", double(e->echoed()));
  if (!e->error().empty()) o.Set("error", e->error());
  return o;
}

Napi::Value EchoClose(const Napi::CallbackInfo& info) {
  Echo* e = HandleArg<Echo>(info, 0, "echo");
  e->RemoveHook();
  e->Shutdown(false);
  return info.Env().Undefined();
}

}  // namespace bench
}  // namespace rxv
