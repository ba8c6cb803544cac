// rx_verbs_bench.node: the native benchmark baselines as one module of named
// functions (baselines.h), loaded by bench/native/addon.js. Never part of the
// product addon.
#include <dlfcn.h>
#include <napi.h>

#include <mutex>

#include "baselines.h"

namespace rxv {
namespace bench {
namespace {

// The baselines' threads (and the soft device threads of this addon's own
// copy of the provider) run code in this library: Node unloads an addon
// with the last environment that loaded it (a worker may be the only one),
// so pin it for the life of the process, as the product addon pins itself.
void PinLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&PinLibrary), &self) && self.dli_fname) {
      dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE);
    }
  });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  PinLibrary();
  const struct {
    const char* name;
    Napi::Value (*fn)(const Napi::CallbackInfo&);
  } entries[] = {
      {"drain", Drain},
      {"threadCpu", ThreadCpu},
      {"ping", Ping},
      {"pingLoopStart", PingLoopStart},
      {"pingLoopClose", PingLoopClose},
      {"producerCreate", ProducerCreate},
      {"producerStart", ProducerStart},
      {"producerStop", ProducerStop},
      {"producerClose", ProducerClose},
      {"naiveCreate", NaiveCreate},
      {"naiveStart", NaiveStart},
      {"naiveClose", NaiveClose},
      // The loop consumer shares the naive one's start and close.
      {"loopCreate", LoopCreate},
      {"loopStart", NaiveStart},
      {"loopClose", NaiveClose},
      {"echoCreate", EchoCreate},
      {"echoStart", EchoStart},
      {"echoStop", EchoStop},
      {"echoClose", EchoClose},
      {"machineCosts", MachineCosts},
      {"messagesPair", MessagesPair},
  };
  for (const auto& e : entries) exports.Set(e.name, Napi::Function::New(env, e.fn, e.name));
  return exports;
}

}  // namespace
}  // namespace bench
}  // namespace rxv

// NODE_API_MODULE pastes the name into an identifier: no qualified names.
static Napi::Object InitBench(Napi::Env env, Napi::Object exports) {
  return rxv::bench::Init(env, exports);
}

NODE_API_MODULE(rx_verbs_bench, InitBench)
