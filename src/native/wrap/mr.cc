#include "wrap/mr.h"

#include "wrap/pd.h"

namespace rxv {

Napi::Function MrWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceAccessor<&MrWrap::Lkey>("lkey"),
                         InstanceAccessor<&MrWrap::Rkey>("rkey"),
                         InstanceAccessor<&MrWrap::Addr>("addr"),
                         InstanceAccessor<&MrWrap::Length>("length"),
                         InstanceAccessor<&MrWrap::Access>("access"),
                         InstanceAccessor<&MrWrap::Closed>("closed"),
                         InstanceMethod<&MrWrap::CloseJs>("close"),
                     });
}

Napi::Object MrWrap::New(Napi::Env env, std::unique_ptr<Mr> mr, Napi::Object pd,
                         PdWrap* pdw, PinnedMemory mem, bool library) {
  Napi::Object o = Wrap(env, std::move(mr), pd);
  MrWrap* w = Unwrap(o);
  Mr* raw = w->native();
  w->keep_ = std::move(mem.keep);
  w->owner_ = Napi::Persistent(mem.owner);
  w->pdw_ = pdw;
  w->lkey_ = raw->lkey();
  w->rkey_ = raw->rkey();
  pdw->AddMr(w->lkey_, w);
  if (!library && !mem.shared) {
    w->detachable_ = true;
    auto& index = w->addon_->detachable_mrs;
    index.emplace(w->lkey_, w);
    if (w->rkey_ != w->lkey_) index.emplace(w->rkey_, w);
    // A device that runs WRs itself can also see, without JS, that no
    // ArrayBuffer owns the memory any more (detached, the clone collected).
    raw->watch_owner(w->keep_);
  }
  return o;
}

bool MrWrap::CheckDetached() {
  if (detached_) return true;
  if (!detachable_ || closed()) return false;
  Napi::Value ab = owner_.Value();
  if (!ab.IsArrayBuffer() || !ab.As<Napi::ArrayBuffer>().IsDetached()) return false;
  detached_ = true;
  native()->mark_detached();
  return true;
}

bool MrWrap::MarkDetached(Napi::Env env, uint32_t key) {
  auto range = Addon::Get(env)->detachable_mrs.equal_range(key);
  bool any = false;
  for (auto it = range.first; it != range.second; ++it) any |= it->second->CheckDetached();
  return any;
}

void MrWrap::Unindex() {
  if (!detachable_) return;
  auto& index = addon_->detachable_mrs;
  for (uint32_t key : {lkey_, rkey_}) {
    auto range = index.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == this) {
        index.erase(it);
        break;
      }
    }
  }
}

void MrWrap::Released() {
  Unindex();
  if (pdw_ && !pdw_->closed()) pdw_->RemoveMr(lkey_);
  keep_.reset();
  if (!addon_->tearing_down) owner_.Reset();
}

// Keys and geometry stay readable after close (they describe what was).
Napi::Value MrWrap::Lkey(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), lkey_);
}
Napi::Value MrWrap::Rkey(const Napi::CallbackInfo& info) {
  ThrowIfClosed(info.Env(), "rkey");
  return Napi::Number::New(info.Env(), native()->rkey());
}
Napi::Value MrWrap::Addr(const Napi::CallbackInfo& info) {
  ThrowIfClosed(info.Env(), "addr");
  return Napi::BigInt::New(info.Env(), native()->addr());
}
Napi::Value MrWrap::Length(const Napi::CallbackInfo& info) {
  ThrowIfClosed(info.Env(), "length");
  return Napi::Number::New(info.Env(), static_cast<double>(native()->length()));
}
Napi::Value MrWrap::Access(const Napi::CallbackInfo& info) {
  ThrowIfClosed(info.Env(), "access");
  return Napi::Number::New(info.Env(), native()->access());
}

}  // namespace rxv
