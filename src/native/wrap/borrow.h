// What another addon built from these sources (the benchmark baselines,
// bench/native) may take from this addon's objects: the provider object
// behind a Context, Pd or Cq that JS hands it. The one door between the
// two, so the wrappers can change without the bench knowing.
//
// Such an addon has a wrap registry of its own (empty), so the check is the
// type tag on the JS object (wrap/wrap.h), which holds across addons: no JS
// runs and no constructor is needed. Compiled into the other addon; both
// are built from the same sources, so they agree on the wrappers' layout.
#pragma once

#include <napi.h>

#include "provider/provider.h"

namespace rxv {
namespace borrow {

// The provider object behind `v` for `verb`: a TypeError naming `what` when
// `v` is not one of this addon's wrappers of that class, EBADF once closed.
Context* ContextOf(Napi::Env env, Napi::Value v, const char* what, const char* verb);
Pd* PdOf(Napi::Env env, Napi::Value v, const char* what, const char* verb);
Cq* CqOf(Napi::Env env, Napi::Value v, const char* what, const char* verb);

}  // namespace borrow
}  // namespace rxv
