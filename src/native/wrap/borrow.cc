#include "wrap/borrow.h"

#include <string>

#include "wrap/context.h"
#include "wrap/cq.h"
#include "wrap/pd.h"

namespace rxv {
namespace borrow {

namespace {

template <typename W>
auto* NativeOf(Napi::Env env, Napi::Value v, const char* what, const char* verb) {
  void* p = nullptr;
  if (!HasTag(env, v, W::kTypeTag) || napi_unwrap(env, v, &p) != napi_ok || !p) {
    throw Napi::TypeError::New(env, std::string(what) + " must be a " + W::kClassName + " object");
  }
  return static_cast<W*>(p)->Checked(env, verb);
}

}  // namespace

Context* ContextOf(Napi::Env env, Napi::Value v, const char* what, const char* verb) {
  return NativeOf<ContextWrap>(env, v, what, verb);
}

Pd* PdOf(Napi::Env env, Napi::Value v, const char* what, const char* verb) {
  return NativeOf<PdWrap>(env, v, what, verb);
}

Cq* CqOf(Napi::Env env, Napi::Value v, const char* what, const char* verb) {
  return NativeOf<CqWrap>(env, v, what, verb);
}

}  // namespace borrow
}  // namespace rxv
