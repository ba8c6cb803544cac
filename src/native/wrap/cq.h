// Cq: a completion queue. Either consumed explicitly (JS acks, arms and polls)
// or on the fast path, where the channel watcher does ack -> re-arm -> poll
// to empty natively and hands JS ready batches.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "provider/provider.h"
#include "rules/event_ledger.h"
#include "util/batch_slab.h"
#include "wrap/wrap.h"

namespace rxv {

class ChannelWrap;

// Work completions cross into JS as a region of the CQ's own slab (see
// util/batch_slab.h) in structure-of-arrays form: wr_id u64[n], then
// status, opcode, byte_len, imm, qp_num, src_qp, wc_flags, vendor_err as
// u32[n] each, slid u16[n], sl u8[n], dlid_path_bits u8[n] and 4n reserved
// zero bytes (48 bytes per completion, so batches stay 8-byte aligned; the
// layout is src/core/wc-batch.ts's).
constexpr size_t kWcBytes = 48;

// The n completions as a Uint8Array over their region (poll, and the first
// batch of startFastPath). nullptr when JS values cannot be made
// (environment going away).
napi_value WcsToBatch(napi_env env, BatchSlab& slab, const Wc* wcs, size_t n);

class CqWrap : public ProviderWrap<CqWrap, Cq> {
 public:
  static constexpr const char* kClassName = "Cq";
  static constexpr napi_type_tag kTypeTag = {0x97c01e2b1f1a47f9ull, 0x9edbf807f0568429ull};
  static constexpr rules::Kind kKind = rules::Kind::kCq;
  static constexpr const char* kWhat = "completion queue";
  static constexpr const char* kMadeBy = "context.createCq()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::cq_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Cq> cq,
                          Napi::Object context, ChannelWrap* chw);

  using ProviderWrap::ProviderWrap;
  ~CqWrap() override { CloseQuietly(); }

  Napi::Value context_object() { return GetHidden(Value(), kParentKey); }
  void DetachChannel() { chw_ = nullptr; }
  void MarkBroken() { broken_ = true; }

  // --- used by the channel watcher ---
  // An event for this CQ was read from the channel.
  void CountEvent() { events_.Read(); }
  bool fast_path() const { return mode_ != Mode::kExplicit; }
  // Acks the events counted so far once `ack_every_` have gathered.
  void AckBatched();
  // Fast path, once per wakeup: re-arm, then poll until empty. Returns the
  // completions in the slab, an Error (CQ in error), or nothing (nothing
  // new, paused, or JS unavailable). Raw Node-API: safe while a worker
  // terminates.
  SlabBatch Service(napi_env env);
  bool queued_for_service = false;

 private:
  friend ProviderWrap;
  enum class Mode { kExplicit, kActive, kPaused };
  // Acks are always flushed before destroy: on the fast path they are ours;
  // at teardown every delivered event is acked so destroy cannot refuse.
  void Destroy(bool force);
  void Released();

  Napi::Value Cqe(const Napi::CallbackInfo& info);
  Napi::Value RequestNotify(const Napi::CallbackInfo& info);
  Napi::Value Poll(const Napi::CallbackInfo& info);
  Napi::Value Ack(const Napi::CallbackInfo& info);
  Napi::Value Unacked(const Napi::CallbackInfo& info);
  Napi::Value StartFastPath(const Napi::CallbackInfo& info);
  Napi::Value PauseFastPath(const Napi::CallbackInfo& info);
  Napi::Value StopFastPath(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);

  void AckNow(uint32_t n);
  // Switches the consumption mode; entering kActive arms and polls at once,
  // returning what was already queued (or undefined).
  Napi::Value SwitchMode(Napi::Env env, Mode next, const char* verb);
  // Polls until empty into scratch_ (after what is carried); returns how
  // many scratch_ holds. Throws VerbsError.
  size_t PollToEmpty();
  // The first n completions of scratch_ written into the slab by `write`
  // (returns false when JS values cannot be made: they then stay in
  // scratch_ as carry_, first in line for the next poll, so a completion
  // taken from the CQ is never dropped).
  template <typename Write>
  bool TakeBatch(size_t n, Write&& write);

  ChannelWrap* chw_ = nullptr;
  Mode mode_ = Mode::kExplicit;
  bool broken_ = false;
  uint32_t ack_every_ = 64;
  rules::EventLedger events_;  // events read from the channel for this CQ
  uint64_t arms_ = 0;
  uint64_t polls_ = 0;
  uint64_t wcs_ = 0;
  uint64_t ack_calls_ = 0;
  std::vector<Wc> scratch_;
  size_t carry_ = 0;  // completions at the front of scratch_ not yet handed out
  BatchSlab slab_;
};

}  // namespace rxv
