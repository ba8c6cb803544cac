// What every verbs ObjectWrap shares: registration with the environment's
// reaper, an idempotent close, and the "closed" guard for methods.
#pragma once

#include <napi.h>

#include <cerrno>
#include <string>

#include "addon.h"
#include "util/closable.h"
#include "util/errors.h"

namespace rxv {

class Lifetime : public Closable {
 public:
  explicit Lifetime(Napi::Env env) : addon_(Addon::Get(env)) {
    addon_->reaper.Add(this);
  }
  bool closed() const { return closed_; }

 protected:
  // Marks closed and deregisters; returns false if it already was closed.
  bool BeginClose() {
    if (closed_) return false;
    closed_ = true;
    addon_->reaper.Remove(this);
    return true;
  }
  void ThrowIfClosed(Napi::Env env, const char* what) const {
    if (closed_) {
      throw ErrnoError(env, EBADF, what, std::string("the ") + kind() +
                                             " is closed");
    }
  }
  virtual const char* kind() const = 0;
  Addon* addon_;

 private:
  bool closed_ = false;
};

// A child keeps its parents alive through hidden (non-enumerable, read-only)
// properties on its JS object, not persistent references: the GC then sees
// the edges and can still collect a whole unreachable family (persistent
// references would be roots and leak every cycle through JS).
inline void SetHidden(Napi::Object self, const char* key, Napi::Value v) {
  self.DefineProperty(Napi::PropertyDescriptor::Value(key, v, napi_default));
}
inline Napi::Value GetHidden(Napi::Object self, const char* key) {
  return self.Get(key);
}
constexpr const char* kParentKey = "__rxvParent";

// Reads the native object behind a JS wrapper, checking its class.
template <typename W>
W* UnwrapArg(Napi::Env env, Napi::Value v, const Napi::FunctionReference& ctor,
             const char* what) {
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(ctor.Value())) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a " +
                                        W::kClassName + " object");
  }
  return W::Unwrap(v.As<Napi::Object>());
}

}  // namespace rxv
