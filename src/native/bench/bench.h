// Native baselines for the benchmarks (bench/, `rx-verbs bench`): a WR
// producer thread, a native event-mode drain loop, a deliberately naive
// binding (one JS call and one fresh object per completion), a native echo
// peer and a native ping-pong. All of it goes through the same rxv::Provider
// objects as the addon, and is exposed to JS as one module function:
//
//   nativeBench(op: string, args?: object, handle?: External)
//
// Not part of the library's API: bench/ is its only user. Every argument is
// validated (a wrong type or range is a TypeError/RangeError, a stale or
// foreign handle a TypeError): no JS input may crash the process.
#pragma once

#include <napi.h>

namespace rxv {
namespace bench {

Napi::Value NativeBench(const Napi::CallbackInfo& info);

}  // namespace bench
}  // namespace rxv
