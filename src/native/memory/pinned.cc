#include "memory/pinned.h"

#include <sys/mman.h>
#include <unistd.h>
#include <v8.h>

#include <cerrno>
#include <cstring>

#include "util/errors.h"

namespace rxv {

namespace {

// Node-API's handles are V8 locals: napi_value is the same single pointer
// (node's own js_native_api_v8.h converts them this way).
v8::Local<v8::Value> ToV8(Napi::Value v) {
  static_assert(sizeof(v8::Local<v8::Value>) == sizeof(napi_value), "napi_value is a V8 local");
  v8::Local<v8::Value> local;
  napi_value raw = v;
  std::memcpy(static_cast<void*>(&local), &raw, sizeof(raw));
  return local;
}

Napi::Value FromV8(Napi::Env env, v8::Local<v8::Value> local) {
  napi_value raw;
  std::memcpy(&raw, static_cast<void*>(&local), sizeof(raw));
  return Napi::Value(env, raw);
}

// An anonymous mapping: page-aligned, zeroed, returned to the system whole.
struct Mapping {
  Mapping(void* a, size_t s) : addr(a), size(s) {}
  ~Mapping() { munmap(addr, size); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* addr;
  size_t size;
};

}  // namespace

PinnedMemory PinUserMemory(Napi::Env env, Napi::Value v) {
  v8::Local<v8::Value> val = ToV8(v);
  v8::Local<v8::Value> buf;
  size_t offset = 0, length = 0;
  if (val->IsArrayBufferView()) {
    v8::Local<v8::ArrayBufferView> view = val.As<v8::ArrayBufferView>();
    buf = view->Buffer();
    offset = view->ByteOffset();
    length = view->ByteLength();
  } else if (val->IsArrayBuffer()) {
    buf = val;
    length = val.As<v8::ArrayBuffer>()->ByteLength();
  } else {
    throw Napi::TypeError::New(env, "buffer must be a Buffer, TypedArray, DataView or ArrayBuffer");
  }
  PinnedMemory out;
  std::shared_ptr<v8::BackingStore> bs;
  if (buf->IsSharedArrayBuffer()) {
    bs = buf.As<v8::SharedArrayBuffer>()->GetBackingStore();
    out.shared = true;
  } else {
    v8::Local<v8::ArrayBuffer> ab = buf.As<v8::ArrayBuffer>();
    if (ab->WasDetached()) throw Napi::TypeError::New(env, "buffer is detached");
    bs = ab->GetBackingStore();
  }
  if (bs->IsResizableByUserJavaScript()) {
    throw Napi::TypeError::New(
        env, std::string("cannot register a ") +
                 (out.shared ? "growable SharedArrayBuffer" : "resizable ArrayBuffer") +
                 " (or a view on one): a resize can take its memory from under the device; "
                 "use pd.allocMemory() or a fixed-length buffer");
  }
  if (length == 0) throw Napi::RangeError::New(env, "cannot register an empty buffer");
  out.data = static_cast<uint8_t*>(bs->Data()) + offset;
  out.length = length;
  out.keep = std::move(bs);
  out.owner = FromV8(env, buf).As<Napi::Object>();
  return out;
}

PinnedMemory AllocPinnedMemory(Napi::Env env, size_t length) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t size = (length + page - 1) / page * page;
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) throw ErrnoError(env, errno, "mmap", "cannot allocate " + std::to_string(length) + " bytes");
  auto map = std::make_shared<Mapping>(addr, size);
  // The JS ArrayBuffer's share: dropped by its finalizer (collected, or the
  // environment going away), never by a detach or transfer, which only
  // move the external backing store to another ArrayBuffer.
  auto* js_share = new std::shared_ptr<Mapping>(map);
  Napi::ArrayBuffer ab;
  try {
    ab = Napi::ArrayBuffer::New(
        env, addr, length, [](Napi::Env, void*, std::shared_ptr<Mapping>* share) { delete share; }, js_share);
  } catch (...) {
    delete js_share;
    throw;
  }
  PinnedMemory out;
  out.data = addr;
  out.length = length;
  out.keep = std::move(map);
  out.owner = ab;
  return out;
}

}  // namespace rxv
