#include "wrap/ud_wrs.h"

namespace rxv {

std::vector<AhWrap*> ReadAhs(Napi::Env env, Napi::Value v) {
  std::vector<AhWrap*> out;
  if (v.IsUndefined()) return out;
  if (!v.IsArray()) throw Napi::TypeError::New(env, "ahs must be an array of Ah objects");
  Napi::Array arr = v.As<Napi::Array>();
  const uint32_t n = arr.Length();
  if (n > (1u << 20)) throw Napi::RangeError::New(env, "ahs has more entries than a post can name");
  out.reserve(n);
  for (uint32_t i = 0; i < n; i++) out.push_back(UnwrapArg<AhWrap>(env, arr.Get(i), "every entry of ahs"));
  return out;
}

void ResolveUdWrs(Napi::Env env, const std::vector<AhWrap*>& ahs, std::vector<SendWr>* wrs,
                  size_t count) {
  for (size_t i = 0; i < count; i++) {
    SendWr& w = (*wrs)[i];
    const uint32_t idx = w.rkey;
    w.ah = idx < ahs.size() && !ahs[idx]->closed() ? ahs[idx]->Checked(env, "ibv_post_send") : nullptr;
    w.remote_qpn = static_cast<uint32_t>(w.remote_addr);
    w.remote_qkey = static_cast<uint32_t>(w.remote_addr >> 32);
    w.remote_addr = 0;
    w.rkey = 0;
  }
}

}  // namespace rxv
