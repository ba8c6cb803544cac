// The JS entry points of the bench addon, one group per baseline file; the
// module (module.cc) exports them under these names in camelCase, and
// bench/native/addon.d.ts types them.
#pragma once

#include <napi.h>

namespace rxv {
namespace bench {

// drain.cc: drain(args) runs the native event-mode loop to completion.
Napi::Value Drain(const Napi::CallbackInfo& info);
// common.cc: threadCpu() is the calling thread's CPU time in seconds.
Napi::Value ThreadCpu(const Napi::CallbackInfo& info);
// ping.cc: ping(args) runs the native ping-pong; round trips in an ArrayBuffer.
// pingLoopStart(args) runs it in event mode asleep in Node's loop (with
// onCompletion, calling JS once per completion).
Napi::Value Ping(const Napi::CallbackInfo& info);
Napi::Value PingLoopStart(const Napi::CallbackInfo& info);
Napi::Value PingLoopClose(const Napi::CallbackInfo& info);
// producer.cc: the producer over a CQ JS owns.
Napi::Value ProducerCreate(const Napi::CallbackInfo& info);
Napi::Value ProducerStart(const Napi::CallbackInfo& info);
Napi::Value ProducerStop(const Napi::CallbackInfo& info);
Napi::Value ProducerClose(const Napi::CallbackInfo& info);
// loop_consumers.cc: consumers sleeping in Node's loop; naive makes one JS
// call and one fresh object per completion, loop none until it is done (or,
// with onBatch, one per poll, the completions in a buffer JS keeps).
// Both start and close with the naive functions.
Napi::Value NaiveCreate(const Napi::CallbackInfo& info);
Napi::Value LoopCreate(const Napi::CallbackInfo& info);
Napi::Value NaiveStart(const Napi::CallbackInfo& info);
Napi::Value NaiveClose(const Napi::CallbackInfo& info);
// echo.cc: a peer answering every receive with a SEND, on its own thread.
Napi::Value EchoCreate(const Napi::CallbackInfo& info);
Napi::Value EchoStart(const Napi::CallbackInfo& info);
Napi::Value EchoStop(const Napi::CallbackInfo& info);
Napi::Value EchoClose(const Napi::CallbackInfo& info);
// messages.cc: messagesPair(args) runs a native client and server of the
// message layer's wire format on this addon's soft0; rates or round trips.
Napi::Value MessagesPair(const Napi::CallbackInfo& info);
// machine_costs.cc: machineCosts() is what a first-touch page fault and an
// empty system call (epoll_wait, zero timeout) cost here, in ns.
Napi::Value MachineCosts(const Napi::CallbackInfo& info);

}  // namespace bench
}  // namespace rxv
