#include "util/batch_slab.h"

#include <algorithm>

namespace rxv {

napi_value BatchSlab::Current(napi_env env) {
  if (slab_ == nullptr) return nullptr;
  napi_value ab = nullptr;
  bool detached = false;
  if (napi_get_reference_value(env, slab_, &ab) == napi_ok && ab != nullptr &&
      napi_is_detached_arraybuffer(env, ab, &detached) == napi_ok && !detached) {
    return ab;
  }
  // Detached by JS: base_ now points into memory that belongs to whoever
  // received the buffer. Forget it; never write there again.
  if (detached) detached_++;
  Release(env);
  return nullptr;
}

napi_value BatchSlab::Carve(napi_env env, size_t bytes, uint8_t** data, size_t* offset) {
  napi_value ab = Current(env);
  if (ab == nullptr || used_ + bytes > size_) {
    if (ab != nullptr) next_size_ = std::min(next_size_ * 2, kMaxSlabBytes);
    size_t size = std::max(next_size_, bytes);
    void* mem = nullptr;
    napi_ref ref = nullptr;
    if (napi_create_arraybuffer(env, size, &mem, &ab) != napi_ok ||
        napi_create_reference(env, ab, 1, &ref) != napi_ok) {
      return nullptr;
    }
    // The old slab lives on in the batches that view it.
    Release(env);
    slab_ = ref;
    base_ = static_cast<uint8_t*>(mem);
    size_ = size;
  }
  *data = base_ + used_;
  *offset = used_;
  used_ += (bytes + 7) & ~static_cast<size_t>(7);  // BigUint64Array needs 8-byte offsets
  return ab;
}

napi_value BatchSlab::Take(napi_env env, size_t bytes, uint8_t** data) {
  size_t offset = 0;
  napi_value ab = Carve(env, bytes, data, &offset);
  napi_value view = nullptr;
  if (!ab || napi_create_typedarray(env, napi_uint8_array, bytes, ab, offset, &view) != napi_ok) {
    return nullptr;
  }
  return view;
}

void BatchSlab::Release(napi_env env) {
  if (slab_ != nullptr) napi_delete_reference(env, slab_);
  slab_ = nullptr;
  base_ = nullptr;
  size_ = used_ = 0;
}

}  // namespace rxv
