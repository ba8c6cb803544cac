// The ping baselines: the native ping-pong round trip against an echo peer
// (echo.h) on one device.
// - ping(): blocking, in event mode (sleep on the channel: event, ack,
//   re-arm, poll, as rc_pingpong -e), busy-polling the CQ, or spinning as
//   take({ spinUs }) does in the addon (look only when the CQ changed,
//   sched_yield between looks): the baseline of the JS spin's distribution.
// - pingLoopStart(): event mode again, but asleep in Node's event loop (a
//   uv_poll on the channel fd, as the product's watcher) instead of
//   poll(2), calling no JS until the last round trip. What it adds to the
//   event-mode round trip is the loop's, before any JavaScript runs. With
//   onCompletion, JS also hears of every completion (one call each, its
//   status, opcode and wr_id as numbers) before the native side reposts:
//   the floor of a library that hands each completion to JS.
#include <poll.h>
#include <sched.h>
#include <uv.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "baselines.h"
#include "common.h"
#include "echo.h"
#include "util/deliver.h"
#include "util/errors.h"
#include "util/uv_poll_handle.h"

namespace rxv {
namespace bench {
namespace {

constexpr uint32_t kDepth = 16;

// A QP connected to a native echo on one device, its receives posted, and
// the round trips' bookkeeping: post one SEND, wait for the echo's SEND to
// land in a receive.
class PingPair {
 public:
  PingPair(const std::string& device, int gid_index, uint32_t iters, uint32_t warmup)
      : rig(device, kDepth * 2 + 16, true, gid_index), rtt(iters), total_(warmup + iters), warmup_(warmup) {
    mem_.resize(size_t(kDepth + 1) * kSlot);
    mr_ = rig.pd->reg_mr(mem_.data(), mem_.size(), kAccessAll);
    Pd::QpInit init;
    init.send_cq = rig.cq.get();
    init.recv_cq = rig.cq.get();
    init.cap.max_send_wr = kDepth;
    init.cap.max_recv_wr = kDepth;
    a_ = rig.pd->create_rc_qp(init);
    echo_.reset(new Echo(rig.ctx.get(), rig.pd.get(), kDepth, a_->qp_num(), 0, rig.path));
    Connect(a_.get(), echo_->qp_num(), rig.path, 0, 0);
    recv_.sg.push_back(Sge{0, kSlot, mr_->lkey()});
    for (uint32_t i = 0; i < kDepth; i++) PostRecv(i);
    send_.opcode = wr_opcode::SEND;
    send_.send_flags = 0;
    send_.sg.push_back(Sge{mr_->addr() + kDepth * kSlot, 8, mr_->lkey()});
  }
  ~PingPair() { Release(); }

  void StartEcho(bool events) { echo_->Start(events); }
  bool finished() const { return done_ >= total_; }

  // Starts round trip number done_.
  void Send() {
    t0_ = Clock::now();
    send_.wr_id = done_;
    size_t bad;
    a_->post_send(&send_, 1, &bad);
  }

  // Takes what one poll found (`t1`: when it returned): reposts receives;
  // true when the round trip ended. A failed completion sets `error`.
  bool Take(const Wc* wcs, int n, Clock::time_point t1) {
    bool ended = false;
    for (int k = 0; k < n; k++) {
      if (wcs[k].status != wc_status::SUCCESS) error = "ping: a completion failed";
      if (wcs[k].opcode == wc_opcode::RECV) {
        PostRecv(wcs[k].wr_id);
        ended = true;
      }
    }
    if (!ended) return false;
    if (done_ >= warmup_) rtt[done_ - warmup_] = std::chrono::duration<double, std::micro>(t1 - t0_).count();
    done_++;
    return true;
  }

  // Stops the echo (its error becomes ours), then frees the QP and MR.
  void Release() {
    if (!echo_) return;
    echo_->Shutdown(false);
    if (error.empty() && !echo_->error().empty()) error = echo_->error();
    DestroyQuietly(a_);
    echo_.reset();
    DestroyQuietly(mr_);
    rig.DrainEvents();
  }

  Rig rig;
  std::vector<double> rtt;
  std::string error;

 private:
  void PostRecv(uint64_t slot) {
    recv_.wr_id = slot;
    recv_.sg[0].addr = mr_->addr() + slot * kSlot;
    size_t bad;
    a_->post_recv(&recv_, 1, &bad);
  }

  std::vector<uint8_t> mem_;
  std::unique_ptr<Mr> mr_;
  std::unique_ptr<Qp> a_;
  std::unique_ptr<Echo> echo_;
  RecvWr recv_;
  SendWr send_;
  uint32_t total_, warmup_, done_ = 0;
  Clock::time_point t0_;
};

// Reads every pending event, acks them and re-arms: the event-mode wakeup.
void Rearm(Rig& rig) {
  Cq* c = nullptr;
  uint32_t got = 0;
  while (rig.ch->get_event(&c)) got++;
  if (got) rig.cq->ack_events(got);
  rig.cq->req_notify(false);
}

Napi::ArrayBuffer Rtts(Napi::Env env, const std::vector<double>& rtt) {
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, rtt.size() * sizeof(double));
  std::memcpy(ab.Data(), rtt.data(), rtt.size() * sizeof(double));
  return ab;
}

struct PingArgs {
  uint32_t iters, warmup;
  std::string device;
  int gid_index;
};

PingArgs ReadPingArgs(Napi::Object args) {
  return {U32(args, "iters", 10000, 1, 10000000), U32(args, "warmup", 1000, 0, 10000000),
          Str(args, "device", "soft0"), GidIndexArg(args)};
}

// The loop-driven ping: every wakeup of Node's loop takes the events, polls
// and, when a round trip ended, starts the next; JS hears once, at the end.
class PingLoop : public Object {
 public:
  std::unique_ptr<PingPair> pair;
  UvPoll poll;
  Napi::FunctionReference cb;
  Napi::FunctionReference on_completion;
  std::unique_ptr<Napi::AsyncContext> async;
  bool shut = false;

  void Shutdown(bool teardown) override {
    if (shut) return;
    shut = true;
    poll.Close();
    pair.reset();
    // Also at teardown (a cleanup hook, the environment still works): Node
    // frees neither an addon's references nor its async contexts.
    cb.Reset();
    on_completion.Reset();
    async.reset();
  }

  // onCompletion(status, opcode, wrIdLow) for each of wcs[0..n); false when
  // JS could not run or closed the ping from inside.
  bool HandToJs(const Wc* wcs, int n) {
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return false;
    napi_value fn = nullptr, recv = nullptr;
    bool ok = napi_get_reference_value(env, static_cast<napi_ref>(on_completion), &fn) == napi_ok && fn &&
              napi_get_global(env, &recv) == napi_ok;
    for (int k = 0; ok && k < n; k++) {
      napi_value argv[3];
      ok = napi_create_uint32(env, wcs[k].status, &argv[0]) == napi_ok &&
           napi_create_uint32(env, wcs[k].opcode, &argv[1]) == napi_ok &&
           napi_create_uint32(env, uint32_t(wcs[k].wr_id), &argv[2]) == napi_ok &&
           DeliverToJs(env, static_cast<napi_async_context>(*async), recv, fn, 3, argv) && !shut;
    }
    napi_close_handle_scope(env, scope);
    return ok;
  }

  // Polls until the CQ is empty, starting the next round trip each time
  // one ends (its completion may already be there, as in ping()'s loop).
  void Service() {
    Wc wcs[8];
    for (;;) {
      int n = pair->rig.cq->poll(8, wcs);
      if (n == 0) return;
      // With JS, the round trip ends once JS has heard (as ours ends in the
      // subscriber): the crossing is part of it.
      if (!on_completion.IsEmpty() && !HandToJs(wcs, n)) return;
      if (pair->Take(wcs, n, Clock::now())) {
        if (pair->finished() || !pair->error.empty()) return Finish();
        pair->Send();
      }
    }
  }

  void OnReadable() {
    if (shut || !pair || !CanRunJs(env)) return;
    try {
      Rearm(pair->rig);
      Service();
    } catch (const VerbsError& err) {
      pair->error = std::string("ping loop: ") + err.what();
      Finish();
    }
  }

  void Finish() {
    poll.Stop();
    pair->Release();
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return;
    napi_value fn = nullptr, recv = nullptr, arg = nullptr;
    bool ok = napi_get_reference_value(env, static_cast<napi_ref>(cb), &fn) == napi_ok && fn &&
              napi_get_global(env, &recv) == napi_ok;
    if (ok) {
      Napi::Env e(env);
      arg = pair->error.empty() ? napi_value(Rtts(e, pair->rtt)) : napi_value(Napi::String::New(e, pair->error));
      DeliverToJs(env, static_cast<napi_async_context>(*async), recv, fn, 1, &arg);
    }
    napi_close_handle_scope(env, scope);
  }
};

}  // namespace

Napi::Value Ping(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const PingArgs a = ReadPingArgs(args);
  const std::string mode = Str(args, "mode", "event");
  if (mode != "event" && mode != "poll" && mode != "spin") {
    throw Napi::RangeError::New(env, "mode must be 'event', 'poll' or 'spin'");
  }
  const bool events = mode == "event";
  const bool yields = mode == "spin";
  std::unique_ptr<PingPair> pair;
  std::string error;
  Guard(env, [&] {
    pair.reset(new PingPair(a.device, a.gid_index, a.iters, a.warmup));
    Rig& rig = pair->rig;
    pair->StartEcho(events);
    if (events) rig.cq->req_notify(false);
    pollfd pfd{rig.ch->fd(), POLLIN, 0};
    Wc wcs[8];
    while (!pair->finished() && pair->error.empty()) {
      pair->Send();
      const auto limit = Clock::now() + std::chrono::seconds(2);
      uint64_t mark = 0;
      if (yields) rig.cq->changed_since(&mark);
      for (;;) {
        int n = rig.cq->poll(8, wcs);
        if (n > 0 && pair->Take(wcs, n, Clock::now())) break;
        if (!pair->error.empty()) break;
        if (n > 0) continue;
        if (events) {
          // Sleep on the channel: event, ack, re-arm, poll (rc_pingpong -e).
          if (::poll(&pfd, 1, 2000) <= 0) {
            pair->error = "ping: no event for 2 s";
            break;
          }
          Rearm(rig);
        } else if (Clock::now() > limit) {
          pair->error = "ping: no completion for 2 s";
          break;
        } else if (yields) {
          sched_yield();
          while (!rig.cq->changed_since(&mark) && Clock::now() <= limit) sched_yield();
        }
      }
    }
    pair->Release();
    error = pair->error;
  });
  if (!error.empty()) throw Napi::Error::New(env, error);
  return Rtts(env, pair->rtt);
}

Napi::Value PingLoopStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const PingArgs a = ReadPingArgs(args);
  Napi::Value cbv = args.Get("callback");
  if (!cbv.IsFunction()) throw Napi::TypeError::New(env, "callback must be a function");
  Napi::Value each = args.Get("onCompletion");
  if (!each.IsUndefined() && !each.IsFunction()) throw Napi::TypeError::New(env, "onCompletion must be a function");
  auto p = std::make_unique<PingLoop>();
  Guard(env, [&] {
    p->pair.reset(new PingPair(a.device, a.gid_index, a.iters, a.warmup));
    // The environment's own loop (a worker has its own), as the product's watchers use.
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) throw VerbsError(EINVAL, "napi_get_uv_event_loop");
    PingLoop* raw = p.get();
    int rc = p->poll.Init(env, loop, p->pair->rig.ch->fd(), [raw](int) { raw->OnReadable(); });
    if (rc != 0) throw VerbsError(-rc, "uv_poll_init");
  });
  p->cb = Napi::Persistent(cbv.As<Napi::Function>());
  if (each.IsFunction()) p->on_completion = Napi::Persistent(each.As<Napi::Function>());
  p->async = std::make_unique<Napi::AsyncContext>(env, "rx-verbs:bench-ping-loop");
  PingLoop* raw = p.get();
  Napi::External<Object> handle = MakeHandle(env, std::move(p));
  Guard(env, [&] {
    raw->pair->StartEcho(true);
    raw->pair->rig.cq->req_notify(false);
    int rc = raw->poll.Start();
    if (rc != 0) throw VerbsError(-rc, "uv_poll_start");
    // No Service() here: the CQ was armed before the first send, so its
    // completion raises an event and OnReadable takes it, in a later turn.
    // Polling now could hand JS a completion before this returns the handle
    // that JS needs to close the loop from onCompletion.
    raw->pair->Send();
  });
  return handle;
}

Napi::Value PingLoopClose(const Napi::CallbackInfo& info) {
  PingLoop* p = HandleArg<PingLoop>(info, 0, "ping loop");
  p->RemoveHook();
  p->Shutdown(false);
  return info.Env().Undefined();
}

}  // namespace bench
}  // namespace rxv
