// The ping baseline: the native ping-pong round trip against an echo peer
// (echo.h) on one soft device, in event mode (sleep on the channel: event,
// ack, re-arm, poll, as rc_pingpong -e), busy-polling the CQ, or spinning
// as take({ spinUs }) does in the addon (look only when the CQ changed,
// sched_yield between looks): the baseline of the JS spin's distribution.
#include <poll.h>
#include <sched.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "baselines.h"
#include "common.h"
#include "echo.h"
#include "util/errors.h"

namespace rxv {
namespace bench {

Napi::Value Ping(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const uint32_t iters = U32(args, "iters", 10000, 1, 10000000);
  const uint32_t warmup = U32(args, "warmup", 1000, 0, 10000000);
  const std::string mode = Str(args, "mode", "event");
  const std::string device = Str(args, "device", "soft0");
  const int gid_index = GidIndexArg(args);
  if (mode != "event" && mode != "poll" && mode != "spin") {
    throw Napi::RangeError::New(env, "mode must be 'event', 'poll' or 'spin'");
  }
  const bool events = mode == "event";
  const bool yields = mode == "spin";
  std::vector<double> rtt(iters);
  std::string error;
  Guard(env, [&] {
    constexpr uint32_t kDepth = 16;
    Rig rig(device, kDepth * 2 + 16, true, gid_index);
    std::vector<uint8_t> mem(size_t(kDepth + 1) * kSlot);
    std::unique_ptr<Mr> mr = rig.pd->reg_mr(mem.data(), mem.size(), kAccessAll);
    Pd::QpInit init;
    init.send_cq = rig.cq.get();
    init.recv_cq = rig.cq.get();
    init.cap.max_send_wr = kDepth;
    init.cap.max_recv_wr = kDepth;
    std::unique_ptr<Qp> a = rig.pd->create_rc_qp(init);
    std::unique_ptr<Echo> echo(new Echo(rig.ctx.get(), rig.pd.get(), kDepth, a->qp_num(), 0, rig.path));
    Connect(a.get(), echo->qp_num(), rig.path, 0, 0);
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
        uint64_t mark = 0;
        if (yields) rig.cq->changed_since(&mark);
        while ((n = rig.cq->poll(8, wcs)) == 0) {
          if (Clock::now() > limit) {
            error = "ping: no completion for 2 s";
            break;
          }
          if (!yields) continue;
          sched_yield();
          while (!rig.cq->changed_since(&mark) && Clock::now() <= limit) sched_yield();
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

}  // namespace bench
}  // namespace rxv
