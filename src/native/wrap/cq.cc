#include "wrap/cq.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "util/uv_guard.h"
#include "wrap/channel.h"

namespace rxv {

namespace {

void WriteColumns(uint8_t* base, const Wc* wcs, size_t n) {
  auto* ids = reinterpret_cast<uint64_t*>(base);
  auto* cols = reinterpret_cast<uint32_t*>(base + n * 8);
  auto* slid = reinterpret_cast<uint16_t*>(base + n * 40);
  uint8_t* sl = base + n * 42;
  uint8_t* path_bits = base + n * 43;
  // The slab may hand out bytes an earlier batch used: the reserved
  // column must read as zero.
  std::memset(base + n * 44, 0, n * 4);
  for (size_t i = 0; i < n; i++) {
    const Wc& w = wcs[i];
    ids[i] = w.wr_id;
    cols[i] = w.status;
    cols[n + i] = w.opcode;
    cols[2 * n + i] = w.byte_len;
    cols[3 * n + i] = w.imm;
    cols[4 * n + i] = w.qp_num;
    cols[5 * n + i] = w.src_qp;
    cols[6 * n + i] = w.wc_flags;
    cols[7 * n + i] = w.vendor_err;
    slid[i] = w.slid;
    sl[i] = w.sl;
    path_bits[i] = w.dlid_path_bits;
  }
}

// The completions written into the slab, handed over as the slab and where.
bool WcsToSlab(napi_env env, BatchSlab& slab, const Wc* wcs, size_t n, SlabBatch* out) {
  uint8_t* base = nullptr;
  size_t offset = 0;
  napi_value ab = slab.Carve(env, n * kWcBytes, &base, &offset);
  if (!ab) return false;
  WriteColumns(base, wcs, n);
  *out = SlabBatch{ab, static_cast<uint32_t>(offset), static_cast<uint32_t>(n)};
  return true;
}

}  // namespace

napi_value WcsToBatch(napi_env env, BatchSlab& slab, const Wc* wcs, size_t n) {
  uint8_t* base = nullptr;
  napi_value view = slab.Take(env, n * kWcBytes, &base);
  if (!view) return nullptr;
  WriteColumns(base, wcs, n);
  return view;
}

Napi::Function CqWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&CqWrap::Cqe>("cqe"),
                         InstanceAccessor<&CqWrap::Unacked>("unacked"),
                         InstanceAccessor<&CqWrap::Stats>("stats"),
                         InstanceAccessor<&CqWrap::Closed>("closed"),
                         InstanceMethod<&CqWrap::RequestNotify>("requestNotify"),
                         InstanceMethod<&CqWrap::Poll>("poll"),
                         InstanceMethod<&CqWrap::Ack>("ack"),
                         InstanceMethod<&CqWrap::StartFastPath>("startFastPath"),
                         InstanceMethod<&CqWrap::PauseFastPath>("pauseFastPath"),
                         InstanceMethod<&CqWrap::StopFastPath>("stopFastPath"),
                         InstanceMethod<&CqWrap::CloseJs>("close"),
                     });
}

Napi::Object CqWrap::New(Napi::Env env, std::unique_ptr<Cq> cq,
                         Napi::Object context, ChannelWrap* chw) {
  Napi::Object o = Wrap(env, std::move(cq), context);
  CqWrap* w = Unwrap(o);
  if (chw) {
    SetHidden(o, "__rxvChannel", chw->Value());
    w->chw_ = chw;
    chw->AddCq(w);
  }
  return o;
}

void CqWrap::AckNow(uint32_t n) {
  if (n == 0) return;
  events_.Ack(n);
  native()->ack_events(n);
  ack_calls_++;
}

void CqWrap::AckBatched() {
  uint64_t owed = events_.unacked();
  if (owed >= ack_every_) AckNow(static_cast<uint32_t>(owed));
}

void CqWrap::Destroy(bool force) {
  if (fast_path() || force) AckNow(static_cast<uint32_t>(events_.unacked()));
  native()->destroy();
}

void CqWrap::Released() {
  if (chw_) chw_->RemoveCq(this);
  carry_ = 0;
  slab_.Release(Env());
}

Napi::Value CqWrap::Cqe(const Napi::CallbackInfo& info) {
  Cq* cq = Checked(info.Env(), "cqe");
  return Napi::Number::New(info.Env(), cq->cqe());
}

Napi::Value CqWrap::Unacked(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(events_.unacked()));
}

Napi::Value CqWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("events", static_cast<double>(events_.read()));
  o.Set("acked", static_cast<double>(events_.acked()));
  o.Set("ackCalls", static_cast<double>(ack_calls_));
  o.Set("arms", static_cast<double>(arms_));
  o.Set("polls", static_cast<double>(polls_));
  o.Set("completions", static_cast<double>(wcs_));
  return o;
}

// requestNotify(solicitedOnly)
Napi::Value CqWrap::RequestNotify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool solicited = ArgBool(info, 0, "solicitedOnly", false);
  Cq* cq = Checked(env, "ibv_req_notify_cq");
  if (!chw_) {
    throw ErrnoError(env, EINVAL, "ibv_req_notify_cq",
                     "the CQ was created without a completion channel");
  }
  Guard(env, [&] { cq->req_notify(solicited); });
  arms_++;
  return env.Undefined();
}

namespace {

// The spin polls only when the provider says the CQ changed, and gives the
// CPU away between looks: the completion it waits for is made by other
// threads (the soft device's, a peer's, the kernel's), and where cores are
// fewer than busy threads a spinner that never yields delays exactly them.
template <typename PollOnce>
int SpinPoll(Cq* cq, uint32_t spin_ns, uint64_t* mark, PollOnce&& poll_once) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
  int n = 0;
  while (n == 0 && std::chrono::steady_clock::now() < deadline) {
    if (cq->changed_since(mark)) n = poll_once();
    if (n == 0) sched_yield();
  }
  return n;
}

}  // namespace

template <typename Write>
bool CqWrap::TakeBatch(size_t n, Write&& write) {
  carry_ = std::max(carry_, n);
  if (!write(scratch_.data(), n)) return false;
  std::copy(scratch_.begin() + n, scratch_.begin() + carry_, scratch_.begin());
  carry_ -= n;
  return true;
}

// poll(max): a batch of up to `max` completions (see WcsToBatch), or null
// when the CQ is empty: an empty poll is the common case at the end of
// every drain and allocates nothing.
Napi::Value CqWrap::Poll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Bounded: the scratch array is sized by it.
  uint32_t max = info[0].IsUndefined() ? 64 : ArgU32(info, 0, "max", 1, 65536);
  // take({ spinUs }): busy-poll here, not once per JS call, so the spin's
  // tail is the device's, not the cost of crossing into the addon per poll.
  uint32_t spin_ns = info.Length() > 1 && !info[1].IsUndefined() ? ArgU32(info, 1, "spinNs", 0, 1000000000) : 0;
  Cq* cq = Checked(env, "ibv_poll_cq");
  if (carry_ == 0) {
    if (scratch_.size() < max) scratch_.resize(max);
    auto poll_once = [&] {
      polls_++;
      return Guard(env, [&] { return cq->poll(static_cast<int>(max), scratch_.data()); });
    };
    uint64_t mark = 0;
    if (spin_ns > 0) cq->changed_since(&mark);  // before the first poll: nothing slips between
    int n = poll_once();
    if (n == 0 && spin_ns > 0) n = SpinPoll(cq, spin_ns, &mark, poll_once);
    wcs_ += static_cast<uint64_t>(n);
    carry_ = static_cast<size_t>(n);
  }
  if (carry_ == 0) return env.Null();
  napi_value batch = nullptr;
  TakeBatch(std::min<size_t>(carry_, max), [&](const Wc* wcs, size_t k) {
    batch = WcsToBatch(env, slab_, wcs, k);
    return batch != nullptr;
  });
  if (!batch) {
    // A pending JS exception (out of memory) is the one to throw; making
    // another while it is pending would abort.
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) throw Napi::Error::New(env);
    throw Napi::Error::New(env, "rx-verbs: could not allocate a completion batch");
  }
  return Napi::Value(env, batch);
}

// ack(n): acknowledges n events read from the channel for this CQ.
Napi::Value CqWrap::Ack(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t n = ArgU32(info, 0, "n", 0, UINT32_MAX);
  Checked(env, "ibv_ack_cq_events");
  Guard(env, [&] { AckNow(n); });  // over-acking is a RangeError (rules/refusals.h)
  return env.Undefined();
}

size_t CqWrap::PollToEmpty() {
  constexpr size_t kChunk = 256;
  size_t n = carry_;
  for (;;) {
    if (scratch_.size() < n + kChunk) scratch_.resize(n + kChunk);
    int got = native()->poll(static_cast<int>(kChunk), scratch_.data() + n);
    polls_++;
    n += static_cast<size_t>(got);
    wcs_ += static_cast<uint64_t>(got);
    if (static_cast<size_t>(got) < kChunk) break;
  }
  return n;
}

SlabBatch CqWrap::Service(napi_env env) {
  if (closed() || mode_ != Mode::kActive) return {};
  size_t n = 0;
  try {
    // Arm first, then poll: a completion that landed before the arm is found
    // by the poll; one after it raises a new event.
    native()->req_notify(false);
    arms_++;
    n = PollToEmpty();
  } catch (const VerbsError& e) {
    broken_ = true;
    mode_ = Mode::kPaused;
    return SlabBatch{RawVerbsError(env, e), 0, 0};
  }
  if (n == 0) return {};
  SlabBatch batch;
  // On failure kept as carry_ for the next service; the wakeup goes on for
  // other CQs.
  if (!TakeBatch(n, [&](const Wc* wcs, size_t k) { return WcsToSlab(env, slab_, wcs, k, &batch); })) {
    ClearPendingException(env, "completion batch");
  }
  return batch;
}

// startFastPath(ackEvery?): the watcher consumes this CQ natively (ack in
// batches of ackEvery, re-arm, poll to empty); returns what was already
// queued. pauseFastPath(): the CQ stays the watcher's, but is neither armed
// nor polled (backpressure). stopFastPath(): back to the explicit path; the
// events the watcher counted are acked.
Napi::Value CqWrap::StartFastPath(const Napi::CallbackInfo& info) {
  uint32_t ack_every =
      info[0].IsUndefined() ? ack_every_ : ArgU32(info, 0, "ackEvery", 1, 1u << 20);
  Napi::Value out = SwitchMode(info.Env(), Mode::kActive, "startFastPath");
  ack_every_ = ack_every;
  return out;
}

Napi::Value CqWrap::PauseFastPath(const Napi::CallbackInfo& info) {
  return SwitchMode(info.Env(), Mode::kPaused, "pauseFastPath");
}

Napi::Value CqWrap::StopFastPath(const Napi::CallbackInfo& info) {
  return SwitchMode(info.Env(), Mode::kExplicit, "stopFastPath");
}

Napi::Value CqWrap::SwitchMode(Napi::Env env, Mode next, const char* verb) {
  Checked(env, verb);
  if (next != Mode::kExplicit && !chw_) {
    throw ErrnoError(env, EINVAL, verb, "the CQ was created without a completion channel");
  }
  if (next == Mode::kExplicit && mode_ != Mode::kExplicit) {
    // Leaving the fast path: the events we counted are ours to ack.
    Guard(env, [&] { AckNow(static_cast<uint32_t>(events_.unacked())); });
  }
  bool activate = next == Mode::kActive && mode_ != Mode::kActive;
  mode_ = next;
  if (!activate) return env.Undefined();
  SlabBatch out = Service(env);
  if (!out.value) return env.Undefined();
  if (out.count == 0) throw Napi::Error(env, Napi::Value(env, out.value));
  // Returned to JS as the poll's batches are: a view of its region.
  napi_value view = nullptr;
  if (napi_create_typedarray(env, napi_uint8_array, out.count * kWcBytes, out.value, out.offset,
                             &view) != napi_ok) {
    throw Napi::Error::New(env);
  }
  return Napi::Value(env, view);
}

}  // namespace rxv
