// The consumers that sleep in Node's event loop: their own device objects
// and a uv_poll on the channel fd of the environment's loop, as the
// product's watcher. Two of them:
// - naive: what a straightforward binding would do; for every completion one
//   MakeCallback with a fresh { wrId, status, opcode, byteLen, qpNum } object;
// - loop: the native drain of drain.cc, but woken by Node's loop instead of
//   poll(2), calling no JS until `total` completions are in (then once). It
//   is the floor of any consumer that lives in a Node.js process: what the
//   loop costs per wakeup before a single line of JavaScript runs.
// - loop with onBatch: the same, and every poll's completions handed to JS
//   in one call, written as columns into an ArrayBuffer JS gave and keeps
//   (no allocation per call). The floor of any library that hands
//   completions to JS in batches: one crossing per poll and JS reading them.
#include <uv.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "baselines.h"
#include "common.h"
#include "producer.h"
#include "util/deliver.h"
#include "util/errors.h"
#include "util/uv_poll_handle.h"

namespace rxv {
namespace bench {
namespace {

// onBatch's buffer: the wr_id of up to 256 completions as u32 words (low,
// high), then their statuses as u32.
constexpr size_t kJsBufferBytes = 256 * 8 + 256 * 4;

class LoopConsumer : public Object {
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
  bool per_wc = true;  // naive; false: loop
  // loop with onBatch: the JS function and the buffer the columns go to.
  Napi::FunctionReference on_batch;
  Napi::Reference<Napi::ArrayBuffer> wc_buffer;
  uint64_t total = 0, got = 0, checksum = 0;
  std::string error;
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
    on_batch.Reset();
    wc_buffer.Reset();
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
      fprintf(stderr, "rx-verbs bench naive: %s\n", err.what());
      poll.Stop();
      return;
    }
    napi_handle_scope outer;
    if (napi_open_handle_scope(e, &outer) != napi_ok) return;
    if (per_wc) Deliver(e);
    else Count(e);
    napi_close_handle_scope(e, outer);
  }

  // One poll of up to 256 completions; -1 when the CQ failed (reported,
  // and the fd is no longer read).
  int PollBatch(const char* who) {
    try {
      return rig->cq->poll(256, wcs.data());
    } catch (const VerbsError& err) {
      fprintf(stderr, "rx-verbs bench %s: %s\n", who, err.what());
      poll.Stop();
      return -1;
    }
  }

  // loop: the drain loop's work per wakeup, and one JS call at the end
  // (with onBatch, also one per poll that found completions).
  void Count(napi_env e) {
    for (;;) {
      int n = PollBatch("loop");
      if (n < 0) return;
      if (!on_batch.IsEmpty()) {
        if (n > 0 && !HandToJs(e, n)) return;
      } else {
        for (int i = 0; i < n; i++) checksum += wcs[i].wr_id + wcs[i].status;
      }
      got += uint64_t(n);
      __atomic_fetch_add(counter, uint32_t(n), __ATOMIC_RELEASE);
      if (n < 256 || shut) break;
    }
    if (got >= total && !shut) Done(e);
  }

  // Stops reading and tells JS (callback(got)); the run's figures and any
  // error are for loopClose.
  void Done(napi_env e) {
    poll.Stop();
    napi_value fn = nullptr, recv = nullptr, count = nullptr;
    if (napi_get_reference_value(e, static_cast<napi_ref>(cb), &fn) == napi_ok && fn &&
        napi_get_global(e, &recv) == napi_ok && napi_create_double(e, double(got), &count) == napi_ok) {
      DeliverToJs(e, static_cast<napi_async_context>(*async), recv, fn, 1, &count);
    }
  }

  // Writes the wr_id words and statuses of wcs[0..n) into JS's buffer (its
  // layout: kJsBufferBytes) and calls onBatch(n). The buffer is looked up every
  // time: JS may have detached it, and then the run stops with an error.
  bool HandToJs(napi_env e, int n) {
    napi_value fn = nullptr, buf = nullptr, recv = nullptr, count = nullptr;
    void* data = nullptr;
    size_t bytes = 0;
    if (napi_get_reference_value(e, static_cast<napi_ref>(on_batch), &fn) != napi_ok || !fn ||
        napi_get_reference_value(e, static_cast<napi_ref>(wc_buffer), &buf) != napi_ok || !buf ||
        napi_get_arraybuffer_info(e, buf, &data, &bytes) != napi_ok) {
      return false;
    }
    if (!data || bytes < kJsBufferBytes) {
      error = "the wcBuffer was detached";
      Done(e);
      return false;
    }
    auto* words = static_cast<uint32_t*>(data);
    uint32_t* status = words + 2 * 256;
    for (int i = 0; i < n; i++) {
      words[2 * i] = uint32_t(wcs[i].wr_id);
      words[2 * i + 1] = uint32_t(wcs[i].wr_id >> 32);
      status[i] = wcs[i].status;
    }
    return napi_get_global(e, &recv) == napi_ok && napi_create_uint32(e, uint32_t(n), &count) == napi_ok &&
           DeliverToJs(e, static_cast<napi_async_context>(*async), recv, fn, 1, &count);
  }

  void Deliver(napi_env e) {
    napi_value fn = nullptr, recv = nullptr;
    if (napi_get_reference_value(e, static_cast<napi_ref>(cb), &fn) != napi_ok || !fn ||
        napi_get_global(e, &recv) != napi_ok) {
      return;
    }
    for (;;) {
      int n = PollBatch("naive");
      if (n < 0) return;
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

}  // namespace

namespace {

Napi::Value Create(const Napi::CallbackInfo& info, bool per_wc) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const uint32_t cqe = U32(args, "cqe", 1024, 1, 65536);
  const std::string device = Str(args, "device", "soft0");
  const int gid_index = GidIndexArg(args);
  Napi::Value cbv = args.Get("callback");
  if (!cbv.IsFunction()) throw Napi::TypeError::New(env, "callback must be a function");
  auto n = std::make_unique<LoopConsumer>();
  n->per_wc = per_wc;
  n->ack_every = U32(args, "ackEvery", 64, 1, 1u << 20);
  if (!per_wc && !args.Get("onBatch").IsUndefined()) {
    Napi::Value fn = args.Get("onBatch");
    Napi::Value buf = args.Get("wcBuffer");
    if (!fn.IsFunction()) throw Napi::TypeError::New(env, "onBatch must be a function");
    if (!buf.IsArrayBuffer() || buf.As<Napi::ArrayBuffer>().ByteLength() < kJsBufferBytes) {
      throw Napi::TypeError::New(env, "wcBuffer must be an ArrayBuffer of at least " + std::to_string(kJsBufferBytes) + " bytes");
    }
    n->on_batch = Napi::Persistent(fn.As<Napi::Function>());
    n->wc_buffer = Napi::Persistent(buf.As<Napi::ArrayBuffer>());
  }
  Guard(env, [&] {
    n->rig = std::make_unique<Rig>(device, cqe, true, gid_index);
    n->prod.reset(new Producer(n->rig->ctx.get(), n->rig->pd.get(), n->rig->cq.get(), cqe, n->rig->path));
    n->prod->SetCounter(n->counter);
  });
  n->cb = Napi::Persistent(cbv.As<Napi::Function>());
  n->async = std::make_unique<Napi::AsyncContext>(env, per_wc ? "rx-verbs:bench-naive" : "rx-verbs:bench-loop");
  return MakeHandle(env, std::move(n));
}

}  // namespace

Napi::Value NaiveCreate(const Napi::CallbackInfo& info) { return Create(info, true); }
Napi::Value LoopCreate(const Napi::CallbackInfo& info) { return Create(info, false); }

Napi::Value NaiveStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LoopConsumer* n = HandleArg<LoopConsumer>(info, 0, "naive or loop");
  if (n->shut) throw Napi::Error::New(env, "the consumer is closed");
  if (n->prod->running()) throw Napi::Error::New(env, "already started");
  const ProducerConfig cfg = ReadConfig(ArgsObject(info, 1), n->prod->max_wr());
  n->total = cfg.total;
  n->got = 0;
  Guard(env, [&] {
    if (!n->poll.Valid()) {
      // The environment's own loop (a worker has its own), as the product's watchers use.
      uv_loop_t* loop = nullptr;
      if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) throw VerbsError(EINVAL, "napi_get_uv_event_loop");
      int rc = n->poll.Init(env, loop, n->rig->ch->fd(), [n](int) { n->OnReadable(); });
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
  LoopConsumer* n = HandleArg<LoopConsumer>(info, 0, "naive or loop");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("events", double(n->events));
  o.Set("wakeups", double(n->wakeups));
  if (!n->per_wc) {
    o.Set("wcs", double(n->got));
    o.Set("checksum", double(n->checksum & ((1ull << 52) - 1)));
  }
  o.Set("posted", double(n->prod ? n->prod->posted() : 0));
  if (!n->error.empty()) o.Set("error", n->error);
  else if (n->prod && !n->prod->error().empty()) o.Set("error", n->prod->error());
  n->RemoveHook();
  n->Shutdown(false);
  return o;
}

}  // namespace bench
}  // namespace rxv
