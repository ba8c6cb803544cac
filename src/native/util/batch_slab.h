// Work-completion batches are carved out of larger ArrayBuffers (slabs)
// instead of one ArrayBuffer each: creating an ArrayBuffer costs about a
// microsecond, a typed-array view over a slab tens of nanoseconds. A region
// is written once, before JS sees it, and never reused; a slab is freed by
// the GC when the last batch in it is.
//
// Each CQ has its own slab (a member of CqWrap): a batch's `buffer` then
// holds that CQ's completions only, so whatever a consumer does with it
// (read past its batch, write into it, transfer it) touches no other CQ.
// A slab that JS detached (transfer, structuredClone, postMessage) is
// noticed before anything is written and replaced: its memory now belongs
// to whoever received it.
#pragma once

#include <node_api.h>

#include <cstddef>
#include <cstdint>

namespace rxv {

// A batch as the channel watcher hands it over: `count` completions at
// byte `offset` of `value`, the slab's ArrayBuffer (no view made per batch);
// or, with count 0, `value` an Error (the CQ failed); value nullptr: nothing.
struct SlabBatch {
  napi_value value = nullptr;
  uint32_t offset = 0;
  uint32_t count = 0;
};

class BatchSlab {
 public:
  // Slabs start small (most CQs see few completions at a time) and double
  // each time one is used up, up to kMaxSlabBytes.
  static constexpr size_t kMinSlabBytes = 4 * 1024;
  static constexpr size_t kMaxSlabBytes = 32 * 1024;

  BatchSlab() = default;
  BatchSlab(const BatchSlab&) = delete;
  BatchSlab& operator=(const BatchSlab&) = delete;

  // Reserves `bytes` fresh bytes (8-byte aligned) and returns the slab's
  // ArrayBuffer they are in, at *offset; *data is where to write them.
  // nullptr when JS values cannot be made (teardown, out of memory; a JS
  // exception may then be pending).
  napi_value Carve(napi_env env, size_t bytes, uint8_t** data, size_t* offset);
  // The same bytes as a Uint8Array over them.
  napi_value Take(napi_env env, size_t bytes, uint8_t** data);
  // Drops the current slab (its CQ is closed); batches keep theirs alive.
  void Release(napi_env env);
  // How many slabs were replaced because JS had detached them (tests).
  uint64_t detached() const { return detached_; }

 private:
  // The current slab as a JS value, or nullptr (none, collected, detached).
  napi_value Current(napi_env env);

  napi_ref slab_ = nullptr;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t next_size_ = kMinSlabBytes;
  uint64_t detached_ = 0;
};

}  // namespace rxv
