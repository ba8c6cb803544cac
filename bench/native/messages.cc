// The native peer of the message layer (docs/ARCHITECTURE.md, The message layer; src/messages/wire.ts):
// a client and a server speaking wire format version 1 on soft0 of this
// addon's own copy of the provider, connected through its own copy of the
// soft CM with the set-up in the private data, as connectMessages() and
// acceptMessages() are. The baseline of the messages suite
// (bench/suites/messages.ts): what the same protocol costs written in C++.
//
// Each side keeps `depth` data receives posted plus the credit reserve
// (credits.ts's rules: threshold max(2, depth / 4), reserve
// ceil(depth / threshold) + 4, without the DONE part), one send buffer per receive, every send
// signaled; a data SEND goes only while the peer has more than the reserve
// free, a CREDIT (a header alone) once this side owes the threshold. Both
// threads sleep on their completion channels (event mode, as the layer's
// CQs are watched), and the QPs have rnr_retry 0: a credit slip fails.
//
// messagesPair({ mode, count, warmup, size }):
// - 'rate': the client sends warmup + count EAGER messages of `size` bytes
//   as fast as credits allow; the server reads and reposts each at once.
//   Timed from the first counted send to the last counted arrival.
// - 'pingpong': the client sends one, the server echoes it (the echo
//   carries its grant), count + warmup times; round trips in us.
#include <poll.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "baselines.h"
#include "cm/cm_provider.h"
#include "common.h"
#include "util/errors.h"

namespace rxv {
namespace bench {
namespace {

// ---- wire format version 1 (src/messages/wire.ts) --------------------------------
constexpr uint8_t kVersion = 1;
constexpr uint32_t kSetupBytes = 16;
constexpr uint32_t kHeaderBytes = 16;
constexpr uint32_t kRendezvousBytes = 20;
constexpr uint8_t kEager = 1, kCredit = 4;
constexpr uint32_t kMaxEager = 8192;
constexpr uint32_t kMaxMessage = 256u << 20;
constexpr uint32_t kDepth = 64;
constexpr int kTimeoutMs = 2000;

void PutU16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t GetU16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

std::vector<uint8_t> EncodeSetup(uint32_t depth) {
  std::vector<uint8_t> d(kSetupBytes, 0);
  d[0] = 'R';
  d[1] = 'X';
  d[2] = 'M';
  d[3] = kVersion;
  PutU32(&d[4], kMaxEager);
  PutU16(&d[8], uint16_t(depth));
  PutU32(&d[12], kMaxMessage);
  return d;
}

// The peer's depth, after checking what the layer checks (magic, version, maxEager).
uint32_t DecodeSetup(const std::vector<uint8_t>& d) {
  if (d.size() < kSetupBytes || d[0] != 'R' || d[1] != 'X' || d[2] != 'M') throw VerbsError(EPROTO, "messages set-up", "the peer has no message layer");
  if (d[3] != kVersion) throw VerbsError(EPROTO, "messages set-up", "another protocol version");
  if (GetU32(&d[4]) != kMaxEager) throw VerbsError(EPROTO, "messages set-up", "another maxEager");
  return GetU16(&d[8]);
}

uint32_t Threshold(uint32_t depth) { return depth / 4 > 2 ? depth / 4 : 2; }
// The CREDIT part of the reserve only: the protocol's reserve adds min(depth, 16)
// receives for DONEs, and this pair (which talks only to itself) sends no
// rendezvous, so it neither sends nor awaits a DONE.
uint32_t Reserve(uint32_t depth) { return (depth + Threshold(depth) - 1) / Threshold(depth) + 4; }
uint32_t Receives(uint32_t depth) { return depth + Reserve(depth); }

// ---- one side ---------------------------------------------------------------------
class Side {
 public:
  Side(Context* ctx, uint32_t depth) : receives_(Receives(depth)), slot_(kHeaderBytes + kMaxEager) {
    ch_ = ctx->create_channel();
    pd_ = ctx->alloc_pd();
    cq_ = ctx->create_cq(int(receives_ * 2 + 8), ch_.get(), 0);
    recv_mem_.assign(size_t(receives_) * slot_, 0);
    send_mem_.assign(size_t(receives_) * slot_, 7);
    recv_mr_ = pd_->reg_mr(recv_mem_.data(), recv_mem_.size(), access_flag::LOCAL_WRITE);
    send_mr_ = pd_->reg_mr(send_mem_.data(), send_mem_.size(), access_flag::LOCAL_WRITE);
    Pd::QpInit init;
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.cap.max_send_wr = receives_ + 4;
    init.cap.max_recv_wr = receives_;
    qp_ = pd_->create_rc_qp(init);
    for (uint32_t i = receives_; i > 0; i--) free_.push_back(i - 1);
    rwr_.sg.push_back(Sge{0, slot_, recv_mr_->lkey()});
    swr_.opcode = wr_opcode::SEND;
    swr_.send_flags = send_flag::SIGNALED;
    swr_.sg.push_back(Sge{0, 0, send_mr_->lkey()});
    posted_ = announced_ = receives_;
  }
  ~Side() { Release(); }

  Qp* qp() { return qp_.get(); }

  // In INIT: every receive, before the peer can send.
  void PostReceives() {
    for (uint32_t i = 0; i < receives_; i++) Repost(i, false);
  }

  void PeerKnown(uint32_t peer_depth) {
    peer_posted_ = Receives(peer_depth);
    reserve_ = Reserve(peer_depth);
    threshold_ = Threshold(kDepth);
  }

  // One non-blocking poll of the CQ (no arming, no wait).
  int TryPoll(Wc* wcs, int max) { return cq_->poll(max, wcs); }

  bool CanSendData() const { return !free_.empty() && int32_t(peer_posted_ - sent_) > int32_t(reserve_); }

  // One SEND: EAGER with `len` bytes (copied from `data`, or the slot's own
  // bytes when null), or a CREDIT.
  void Send(uint8_t type, const uint8_t* data, uint32_t len) {
    const uint32_t slot = free_.back();
    free_.pop_back();
    uint8_t* at = send_mem_.data() + size_t(slot) * slot_;
    if (data) std::memcpy(at + kHeaderBytes, data, len);
    sent_++;
    announced_ = posted_;
    at[0] = type;
    at[1] = 0;
    PutU16(at + 2, 0);
    PutU32(at + 4, posted_);
    PutU32(at + 8, 0);
    PutU32(at + 12, len);
    swr_.wr_id = slot;
    swr_.sg[0].addr = send_mr_->addr() + uint64_t(slot) * slot_;
    swr_.sg[0].length = kHeaderBytes + len;
    size_t bad;
    qp_->post_send(&swr_, 1, &bad);
  }

  // A CREDIT when this side owes the threshold and the peer has a receive for it.
  void MaybeCredit() {
    if (int32_t(posted_ - announced_) >= int32_t(threshold_) && int32_t(peer_posted_ - sent_) >= 1 && !free_.empty()) {
      Send(kCredit, nullptr, 0);
      credits_sent++;
    }
  }

  // Waits (event mode) for completions; handles sends; returns the receives
  // (their header read and granted, not yet reposted) in `out`.
  int Wait(Wc* wcs, int max) {
    for (;;) {
      int n = cq_->poll(max, wcs);
      if (n > 0) return n;
      if (!armed_) {
        cq_->req_notify(false);
        armed_ = true;
        continue;
      }
      pollfd pfd{ch_->fd(), POLLIN, 0};
      if (::poll(&pfd, 1, kTimeoutMs) <= 0) throw VerbsError(ETIMEDOUT, "messages pair", "no completion for 2 s");
      Cq* c = nullptr;
      uint32_t got = 0;
      while (ch_->get_event(&c)) got++;
      if (got) cq_->ack_events(got);
      armed_ = false;
    }
  }

  // The payload of a receive completion (its header's grant taken); its
  // type in `type`. Throws on a failed completion.
  const uint8_t* Received(const Wc& wc, uint8_t* type, uint32_t* len) {
    if (wc.status != wc_status::SUCCESS) throw VerbsError(EIO, "messages pair", "a completion failed (status " + std::to_string(wc.status) + ")");
    if (wc.byte_len < kHeaderBytes) throw VerbsError(EPROTO, "messages pair", "a message shorter than a header");
    const uint8_t* at = recv_mem_.data() + size_t(wc.wr_id) * slot_;
    const uint32_t grant = GetU32(at + 4);
    if (int32_t(grant - peer_posted_) > 0) peer_posted_ = grant;
    *type = at[0];
    *len = GetU32(at + 12);
    if (*type == kEager && wc.byte_len != kHeaderBytes + *len) throw VerbsError(EPROTO, "messages pair", "an eager message of the wrong length");
    return at + kHeaderBytes;
  }

  // Handles a send completion (its buffer is free again); false for a receive.
  bool SendDone(const Wc& wc) {
    if (wc.opcode == wc_opcode::RECV) return false;
    if (wc.status != wc_status::SUCCESS) throw VerbsError(EIO, "messages pair", "a send failed (status " + std::to_string(wc.status) + ")");
    free_.push_back(uint32_t(wc.wr_id));
    return true;
  }

  void Repost(uint64_t slot, bool counted = true) {
    rwr_.wr_id = slot;
    rwr_.sg[0].addr = recv_mr_->addr() + slot * slot_;
    size_t bad;
    qp_->post_recv(&rwr_, 1, &bad);
    if (counted) posted_++;
  }

  void Release() {
    DestroyQuietly(qp_);
    if (ch_ && cq_) {
      try {
        Cq* c = nullptr;
        uint32_t n = 0;
        while (ch_->get_event(&c)) n++;
        if (n) cq_->ack_events(n);
      } catch (...) {
      }
    }
    DestroyQuietly(recv_mr_);
    DestroyQuietly(send_mr_);
    DestroyQuietly(cq_);
    DestroyQuietly(ch_);
    DestroyQuietly(pd_);
  }

  uint64_t credits_sent = 0;

 private:
  uint32_t receives_, slot_;
  std::unique_ptr<Channel> ch_;
  std::unique_ptr<Pd> pd_;
  std::unique_ptr<Cq> cq_;
  std::unique_ptr<Qp> qp_;
  std::vector<uint8_t> recv_mem_, send_mem_;
  std::unique_ptr<Mr> recv_mr_, send_mr_;
  std::vector<uint32_t> free_;
  RecvWr rwr_;
  SendWr swr_;
  bool armed_ = false;
  // Credits (credits.ts): the peer's last grant, SENDs sent, receives posted, the grant last sent.
  uint32_t peer_posted_ = 0, sent_ = 0, posted_ = 0, announced_ = 0;
  uint32_t reserve_ = 0, threshold_ = 2;
};

// ---- set-up over the soft CM --------------------------------------------------------
// The listener and both connections' ids, on one CM channel; the context
// both sides' objects are made on (one per device, as the package shares it).
struct Pair {
  std::unique_ptr<cm::Channel> ch;
  std::unique_ptr<cm::Id> listener, client_id, server_id;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Side> client, server;

  ~Pair() {
    for (auto* id : {&client_id, &server_id}) {
      if (*id) {
        try {
          (*id)->disconnect();
        } catch (...) {
        }
      }
    }
    client.reset();
    server.reset();
    DrainCm();
    for (auto* id : {&client_id, &server_id, &listener}) {
      if (*id) {
        try {
          (*id)->destroy();
        } catch (...) {
        }
        id->reset();
      }
    }
    DrainCm();
    if (ch) {
      try {
        ch->destroy();
      } catch (...) {
      }
    }
    DestroyQuietly(ctx);
  }

  void DrainCm() {
    if (!ch) return;
    try {
      cm::Event ev;
      while (ch->get_event(&ev)) ev = cm::Event();
    } catch (...) {
    }
  }

  Context* ContextFor(cm::Id* id) {
    if (!ctx) ctx = id->open_context();
    if (!id->serves(ctx.get())) throw VerbsError(EINVAL, "messages pair", "the two ids are on different devices");
    return ctx.get();
  }

  cm::ConnParam Param(Side* side) {
    cm::ConnParam p;
    p.private_data = EncodeSetup(kDepth);
    p.rnr_retry_count = 0;
    p.qp_num = side->qp()->qp_num();
    return p;
  }

  // Connects client to server, each with its receives posted before the peer may send.
  void Connect() {
    cm::CmProvider& cmp = cm::soft_cm_provider();
    ch = cmp.create_channel();
    listener = cmp.create_id(ch.get(), cm::port_space::TCP);
    listener->bind(cm::SockAddr{"127.0.0.1", 0});
    listener->listen(8);
    const uint16_t port = listener->local().port;
    client_id = cmp.create_id(ch.get(), cm::port_space::TCP);
    client_id->resolve_addr(nullptr, cm::SockAddr{"127.0.0.1", port}, kTimeoutMs);
    bool client_up = false, server_up = false;
    while (!client_up || !server_up) {
      pollfd pfd{ch->fd(), POLLIN, 0};
      if (::poll(&pfd, 1, kTimeoutMs) <= 0) throw VerbsError(ETIMEDOUT, "messages pair", "no CM event for 2 s");
      cm::Event ev;
      while (ch->get_event(&ev)) {
        switch (ev.type) {
          case cm::event_type::ADDR_RESOLVED:
            client_id->resolve_route(kTimeoutMs);
            break;
          case cm::event_type::ROUTE_RESOLVED:
            client.reset(new Side(ContextFor(client_id.get()), kDepth));
            client_id->modify_qp(client->qp(), qp_state::INIT);
            client->PostReceives();
            client_id->connect(Param(client.get()));
            break;
          case cm::event_type::CONNECT_REQUEST: {
            server_id = std::move(ev.new_id);
            const uint32_t peer_depth = DecodeSetup(ev.param.private_data);
            server.reset(new Side(ContextFor(server_id.get()), kDepth));
            server->PeerKnown(peer_depth);
            server_id->modify_qp(server->qp(), qp_state::INIT);
            server->PostReceives();
            server_id->modify_qp(server->qp(), qp_state::RTR);
            server_id->modify_qp(server->qp(), qp_state::RTS, 0);
            server_id->accept(Param(server.get()));
            break;
          }
          case cm::event_type::CONNECT_RESPONSE:
            client->PeerKnown(DecodeSetup(ev.param.private_data));
            for (uint32_t s : {qp_state::INIT, qp_state::RTR, qp_state::RTS}) client_id->modify_qp(client->qp(), s, 0);
            client_id->establish();
            client_up = true;
            break;
          case cm::event_type::ESTABLISHED:
            server_up = true;
            break;
          default:
            throw VerbsError(EIO, "messages pair", "CM event " + std::to_string(ev.type) + " (status " + std::to_string(ev.status) + ")");
        }
        ev = cm::Event();
      }
    }
  }
};

struct Outcome {
  uint64_t messages = 0;
  uint64_t credits = 0;
  double seconds = 0;
  double cpu = 0;
  std::vector<double> rtts;
  std::string error;
};

// ---- the runs -------------------------------------------------------------------------
void Rate(Pair& p, uint32_t count, uint32_t warmup, uint32_t size, Outcome* out) {
  const uint64_t total = uint64_t(count) + warmup;
  std::atomic<uint64_t> got{0};
  std::atomic<bool> failed{false};
  Clock::time_point t1;
  double server_cpu = 0;
  std::string server_error;
  Side* srv = p.server.get();
  std::thread server([&] {
    try {
      Wc wcs[32];
      uint64_t n_got = 0;
      uint32_t sum = 0;
      double cpu0 = 0;
      while (n_got < total && !failed.load(std::memory_order_relaxed)) {
        int n = srv->Wait(wcs, 32);
        for (int i = 0; i < n; i++) {
          if (srv->SendDone(wcs[i])) continue;
          uint8_t type;
          uint32_t len;
          const uint8_t* data = srv->Received(wcs[i], &type, &len);
          if (type == kEager) {
            sum += data[0];
            if (++n_got == warmup) cpu0 = ThreadCpuSeconds();
            if (n_got == total) t1 = Clock::now();
          }
          srv->Repost(wcs[i].wr_id);
        }
        got.store(n_got, std::memory_order_release);
        srv->MaybeCredit();
      }
      server_cpu = ThreadCpuSeconds() - cpu0;
      if (sum != uint32_t(7 * total)) server_error = "the server saw other bytes";
    } catch (const std::exception& e) {
      server_error = e.what();
      failed.store(true);
    }
  });
  Side* cli = p.client.get();
  Clock::time_point t0;
  double cpu0 = 0;
  try {
    Wc wcs[32];
    uint64_t sent = 0, limit = warmup;
    bool timed = warmup == 0;
    if (timed) {
      t0 = Clock::now();
      cpu0 = ThreadCpuSeconds();
      limit = total;
    }
    while (sent < total && !failed.load(std::memory_order_relaxed)) {
      while (sent < limit && cli->CanSendData()) {
        cli->Send(kEager, nullptr, size);
        sent++;
      }
      if (sent == limit && !timed) {
        // The warm-up is counted once the server has it all. Polled, not
        // waited for: the server's last message may come in after `got` was
        // read, and nothing need come back for it (no CREDIT is due), so a
        // blocking wait here could sleep through the end of the warm-up.
        while (got.load(std::memory_order_acquire) < warmup && !failed.load()) {
          int n = cli->TryPoll(wcs, 32);
          if (n == 0) {
            std::this_thread::yield();
            continue;
          }
          for (int i = 0; i < n; i++) {
            if (cli->SendDone(wcs[i])) continue;
            uint8_t type;
            uint32_t len;
            cli->Received(wcs[i], &type, &len);
            cli->Repost(wcs[i].wr_id);
          }
          cli->MaybeCredit();
        }
        timed = true;
        limit = total;
        t0 = Clock::now();
        cpu0 = ThreadCpuSeconds();
        continue;
      }
      if (sent == total) break;
      int n = cli->Wait(wcs, 32);
      for (int i = 0; i < n; i++) {
        if (cli->SendDone(wcs[i])) continue;
        uint8_t type;
        uint32_t len;
        cli->Received(wcs[i], &type, &len);
        cli->Repost(wcs[i].wr_id);
      }
      cli->MaybeCredit();
    }
  } catch (const std::exception& e) {
    out->error = e.what();
    failed.store(true);
  }
  const double client_cpu = ThreadCpuSeconds() - cpu0;
  server.join();
  if (out->error.empty()) out->error = server_error;
  out->messages = count;
  out->seconds = std::chrono::duration<double>(t1 - t0).count();
  out->cpu = client_cpu + server_cpu;
}

void PingPong(Pair& p, uint32_t count, uint32_t warmup, uint32_t size, Outcome* out) {
  const uint64_t total = uint64_t(count) + warmup;
  std::atomic<bool> failed{false};
  std::string server_error;
  Side* srv = p.server.get();
  std::thread server([&] {
    try {
      Wc wcs[32];
      uint64_t n_got = 0;
      while (n_got < total && !failed.load(std::memory_order_relaxed)) {
        int n = srv->Wait(wcs, 32);
        for (int i = 0; i < n; i++) {
          if (srv->SendDone(wcs[i])) continue;
          uint8_t type;
          uint32_t len;
          const uint8_t* data = srv->Received(wcs[i], &type, &len);
          if (type == kEager) {
            // Echoed from the receive buffer before it goes back.
            if (!srv->CanSendData()) throw VerbsError(EPROTO, "messages pair", "the echo has no credit");
            srv->Send(kEager, data, len);
            n_got++;
          }
          srv->Repost(wcs[i].wr_id);
        }
        srv->MaybeCredit();
      }
    } catch (const std::exception& e) {
      server_error = e.what();
      failed.store(true);
    }
  });
  Side* cli = p.client.get();
  out->rtts.resize(count);
  const double cpu0 = ThreadCpuSeconds();
  try {
    Wc wcs[32];
    for (uint64_t k = 0; k < total && !failed.load(std::memory_order_relaxed); k++) {
      const Clock::time_point t0 = Clock::now();
      if (!cli->CanSendData()) throw VerbsError(EPROTO, "messages pair", "the ping has no credit");
      cli->Send(kEager, nullptr, size);
      bool back = false;
      while (!back) {
        int n = cli->Wait(wcs, 32);
        const Clock::time_point t1 = Clock::now();
        for (int i = 0; i < n; i++) {
          if (cli->SendDone(wcs[i])) continue;
          uint8_t type;
          uint32_t len;
          cli->Received(wcs[i], &type, &len);
          cli->Repost(wcs[i].wr_id);
          if (type == kEager) {
            back = true;
            if (k >= warmup) out->rtts[k - warmup] = std::chrono::duration<double, std::micro>(t1 - t0).count();
          }
        }
        cli->MaybeCredit();
      }
    }
  } catch (const std::exception& e) {
    out->error = e.what();
    failed.store(true);
  }
  out->cpu = ThreadCpuSeconds() - cpu0;
  server.join();
  if (out->error.empty()) out->error = server_error;
  out->messages = count;
}

}  // namespace

Napi::Value MessagesPair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object args = ArgsObject(info, 0);
  const std::string mode = Str(args, "mode", "rate");
  if (mode != "rate" && mode != "pingpong") throw Napi::RangeError::New(env, "mode must be 'rate' or 'pingpong'");
  const uint32_t count = U32(args, "count", 10000, 1, 10000000);
  const uint32_t warmup = U32(args, "warmup", 1000, 0, 10000000);
  const uint32_t size = U32(args, "size", 64, 0, kMaxEager);
  Outcome out;
  {
    Pair p;
    try {
      p.Connect();
      if (mode == "rate") Rate(p, count, warmup, size, &out);
      else PingPong(p, count, warmup, size, &out);
      out.credits = p.client->credits_sent + p.server->credits_sent;
    } catch (const std::exception& e) {
      out.error = e.what();
    }
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("messages", double(out.messages));
  o.Set("seconds", out.seconds);
  o.Set("cpuSeconds", out.cpu);
  o.Set("creditMessages", double(out.credits));
  if (mode == "pingpong") {
    Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, out.rtts.size() * sizeof(double));
    if (!out.rtts.empty()) std::memcpy(ab.Data(), out.rtts.data(), out.rtts.size() * sizeof(double));
    o.Set("rtts", ab);
  }
  if (!out.error.empty()) o.Set("error", out.error);
  return o;
}

}  // namespace bench
}  // namespace rxv
