#include "util/batch_slab.h"

#include <algorithm>

namespace rxv {

napi_value BatchSlab::Take(napi_env env, size_t bytes, uint8_t** data) {
  napi_value ab = nullptr;
  if (slab_ == nullptr || size_ - used_ < bytes) {
    size_t size = std::max(kSlabBytes, bytes);
    void* mem = nullptr;
    if (napi_create_arraybuffer(env, size, &mem, &ab) != napi_ok) return nullptr;
    napi_ref ref = nullptr;
    if (napi_create_reference(env, ab, 1, &ref) != napi_ok) return nullptr;
    // The old slab lives on in the batches that view it.
    if (slab_ != nullptr) napi_delete_reference(env, slab_);
    slab_ = ref;
    base_ = static_cast<uint8_t*>(mem);
    size_ = size;
    used_ = 0;
  } else if (napi_get_reference_value(env, slab_, &ab) != napi_ok || ab == nullptr) {
    return nullptr;
  }
  napi_value view = nullptr;
  if (napi_create_typedarray(env, napi_uint8_array, bytes, ab, used_, &view) != napi_ok) {
    return nullptr;
  }
  *data = base_ + used_;
  used_ += (bytes + 7) & ~static_cast<size_t>(7);  // BigUint64Array needs 8-byte offsets
  return view;
}

void BatchSlab::Release(napi_env env) {
  if (slab_ != nullptr) napi_delete_reference(env, slab_);
  slab_ = nullptr;
  base_ = nullptr;
  size_ = used_ = 0;
}

}  // namespace rxv
