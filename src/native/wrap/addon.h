// One Addon per Node environment (main thread or worker): it owns the JS
// constructors and the reaper of live native objects. Member order matters:
// members are destroyed in reverse, and the reaper must outlive nothing that
// still refers to it.
#pragma once

#include <napi.h>
#include <uv.h>

#include <cstdint>
#include <unordered_map>

#include "util/reaper.h"

namespace rxv {

class MrWrap;

class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports);
  ~Addon();

  static Addon* Get(Napi::Env env) { return env.GetInstanceData<Addon>(); }

  uv_loop_t* loop = nullptr;
  napi_env env = nullptr;
  Reaper reaper;
  // Set once the environment is going away: wrappers then release without
  // calling into JS.
  bool tearing_down = false;
  // Live MRs over user buffers that can be detached, by lkey and rkey
  // (mr.cc): a post names keys, and any MR it names is checked.
  std::unordered_multimap<uint32_t, MrWrap*> detachable_mrs;

  Napi::FunctionReference context_ctor;
  Napi::FunctionReference pd_ctor;
  Napi::FunctionReference mr_ctor;
  Napi::FunctionReference channel_ctor;
  Napi::FunctionReference cq_ctor;
  Napi::FunctionReference qp_ctor;
  Napi::FunctionReference srq_ctor;
  Napi::FunctionReference ah_ctor;
  Napi::FunctionReference faults_ctor;
  Napi::FunctionReference cm_channel_ctor;
  Napi::FunctionReference cm_id_ctor;

 private:
  Napi::Value ListDevices(const Napi::CallbackInfo& info);
  Napi::Value OpenDevice(const Napi::CallbackInfo& info);
  Napi::Value CreateSoftDevice(const Napi::CallbackInfo& info);
  Napi::Value HasIbverbs(const Napi::CallbackInfo& info);
  Napi::Value LiveObjects(const Napi::CallbackInfo& info);
  Napi::Value CreateCmChannel(const Napi::CallbackInfo& info);
  Napi::Value RdmacmStatus(const Napi::CallbackInfo& info);
  Napi::Value SoftCmAddresses(const Napi::CallbackInfo& info);
  Napi::Value SoftCmServes(const Napi::CallbackInfo& info);
  static void Cleanup(void* arg);
};

}  // namespace rxv
