// The drain baseline: the native event-mode loop, the limit the JS paths are
// held to. poll(2) on the channel fd, get_event to EAGAIN, batched ack,
// req_notify, poll the CQ until empty, against a producer on the same CQ.
#include <poll.h>

#include <memory>
#include <string>
#include <vector>

#include "baselines.h"
#include "common.h"
#include "producer.h"
#include "util/errors.h"

namespace rxv {
namespace bench {

Napi::Value Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const uint32_t cqe = U32(args, "cqe", 1024, 1, 65536);
  const ProducerConfig cfg = ReadConfig(args, cqe);
  const uint32_t ack_every = U32(args, "ackEvery", 64, 1, 1u << 20);
  const std::string device = Str(args, "device", "soft0");
  const int gid_index = GidIndexArg(args);
  struct Out {
    double seconds = 0, wcs = 0, events = 0, polls = 0, wakeups = 0, errors = 0, checksum = 0,
           consumer_cpu = 0;
    std::string error;
  } out;
  Guard(env, [&] {
    Rig rig(device, cqe, true, gid_index);
    alignas(64) uint32_t counter[16] = {0};
    std::unique_ptr<Producer> prod(new Producer(rig.ctx.get(), rig.pd.get(), rig.cq.get(), cfg.window, rig.path));
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

}  // namespace bench
}  // namespace rxv
