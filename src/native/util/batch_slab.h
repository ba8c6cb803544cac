// Work-completion batches are carved out of large shared ArrayBuffers (slabs)
// instead of one ArrayBuffer each: creating an ArrayBuffer costs about a
// microsecond, a typed-array view over a slab tens of nanoseconds. A region
// is written once, before JS sees it, and never reused; a slab is freed by
// the GC when the last batch in it is. One slab per environment.
#pragma once

#include <node_api.h>

#include <cstddef>
#include <cstdint>

namespace rxv {

class BatchSlab {
 public:
  static constexpr size_t kSlabBytes = 32 * 1024;

  // A Uint8Array over `bytes` fresh bytes (8-byte aligned); *data is where
  // to write them. nullptr when JS values cannot be made (teardown).
  napi_value Take(napi_env env, size_t bytes, uint8_t** data);
  // Drops the current slab (environment teardown).
  void Release(napi_env env);

 private:
  napi_ref slab_ = nullptr;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

}  // namespace rxv
