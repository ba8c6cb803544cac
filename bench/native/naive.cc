// The naive baseline: what a straightforward binding would do. Its own
// device objects and a uv_poll on the channel fd; for every completion one
// MakeCallback with a fresh { wrId, status, opcode, byteLen, qpNum } object.
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
      fprintf(stderr, "rx-verbs bench naive: %s\n", err.what());
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
        fprintf(stderr, "rx-verbs bench naive: %s\n", err.what());
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

}  // namespace

Napi::Value NaiveCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const uint32_t cqe = U32(args, "cqe", 1024, 1, 65536);
  const std::string device = Str(args, "device", "soft0");
  const int gid_index = GidIndexArg(args);
  Napi::Value cbv = args.Get("callback");
  if (!cbv.IsFunction()) throw Napi::TypeError::New(env, "callback must be a function");
  auto n = std::make_unique<Naive>();
  n->ack_every = U32(args, "ackEvery", 64, 1, 1u << 20);
  Guard(env, [&] {
    n->rig = std::make_unique<Rig>(device, cqe, true, gid_index);
    n->prod.reset(new Producer(n->rig->ctx.get(), n->rig->pd.get(), n->rig->cq.get(), cqe, n->rig->path));
    n->prod->SetCounter(n->counter);
  });
  n->cb = Napi::Persistent(cbv.As<Napi::Function>());
  n->async = std::make_unique<Napi::AsyncContext>(env, "rx-verbs:bench-naive");
  return MakeHandle(env, std::move(n));
}

Napi::Value NaiveStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Naive* n = HandleArg<Naive>(info, 0, "naive");
  if (n->shut) throw Napi::Error::New(env, "the naive consumer is closed");
  if (n->prod->running()) throw Napi::Error::New(env, "already started");
  const ProducerConfig cfg = ReadConfig(ArgsObject(info, 1), n->prod->max_wr());
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
  Naive* n = HandleArg<Naive>(info, 0, "naive");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("events", double(n->events));
  o.Set("wakeups", double(n->wakeups));
  o.Set("posted", double(n->prod ? n->prod->posted() : 0));
  if (n->prod && !n->prod->error().empty()) o.Set("error", n->prod->error());
  n->RemoveHook();
  n->Shutdown(false);
  return o;
}

}  // namespace bench
}  // namespace rxv
