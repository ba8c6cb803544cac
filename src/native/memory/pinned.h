// Memory that may be registered with a device, and what keeps it alive.
//
// A registration hands the device a raw address range, so the range must
// stay valid until the MR is deregistered whatever JS does meanwhile. Two
// sources, one guarantee:
// - User buffers (ArrayBuffer, SharedArrayBuffer and views on them): V8's
//   backing store is held (a shared reference, as a transferred ArrayBuffer
//   shares it with its clone), so detaching, transferring or collecting the
//   JS object never frees the memory under the device. Node-API has no way
//   to hold a backing store; this one file uses V8's API for it.
//   Resizable ArrayBuffers and growable SharedArrayBuffers are refused: a
//   resize decommits or moves pages, which no reference can prevent.
// - Library allocations (pd.allocMemory): page-aligned anonymous mappings
//   owned jointly by the MR and the JS ArrayBuffer that exposes them; the
//   mapping goes when both are gone.
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>

namespace rxv {

struct PinnedMemory {
  void* data = nullptr;
  size_t length = 0;
  // Holds the memory. For user buffers its use count also tells whether any
  // JS ArrayBuffer still owns the backing store (see MrWrap).
  std::shared_ptr<void> keep;
  // The JS ArrayBuffer the memory belongs to (the view's buffer for a view);
  // a SharedArrayBuffer for shared memory.
  Napi::Object owner;
  bool shared = false;  // SharedArrayBuffer memory: can never be detached
};

// The memory behind a Buffer, TypedArray, DataView or ArrayBuffer (or a
// view on a SharedArrayBuffer). TypeError for anything else and for
// resizable/growable buffers; RangeError when it is empty.
PinnedMemory PinUserMemory(Napi::Env env, Napi::Value v);

// Allocates `length` zeroed bytes (whole pages) and exposes them as an
// external ArrayBuffer whose finalizer drops only its own share.
PinnedMemory AllocPinnedMemory(Napi::Env env, size_t length);

}  // namespace rxv
