#include "wrap/addon.h"

#include <dlfcn.h>

#include <mutex>

#include "cm/cm_address.h"
#include "cm/rdmacm/rdmacm_loader.h"
#include "cm/soft/soft_cm.h"
#include "provider/provider.h"
#include "util/errors.h"
#include "util/js_values.h"
#include "wrap/ah.h"
#include "wrap/channel.h"
#include "wrap/cm_channel.h"
#include "wrap/cm_id.h"
#include "wrap/context.h"
#include "wrap/cq.h"
#include "wrap/faults.h"
#include "wrap/mr.h"
#include "wrap/pd.h"
#include "wrap/qp.h"
#include "wrap/srq.h"

namespace rxv {

// Node unloads an addon with the last environment that loaded it (a worker
// may be the only one). libuv close callbacks that still point into this
// library, and the soft devices' threads, would then run unmapped code: pin
// the library for the life of the process.
static void PinLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&PinLibrary), &self) && self.dli_fname) {
      dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE);
    }
  });
}

// One distinct type tag per wrapped class (wrap/wrap.h, TaggedWrap): a tag
// shared by two classes would let one pass for the other.
namespace {
constexpr napi_type_tag kTags[] = {ContextWrap::kTypeTag, PdWrap::kTypeTag, MrWrap::kTypeTag,
                                   ChannelWrap::kTypeTag, CqWrap::kTypeTag, QpWrap::kTypeTag,
                                   FaultsWrap::kTypeTag, CmChannelWrap::kTypeTag,
                                   CmIdWrap::kTypeTag, SrqWrap::kTypeTag, AhWrap::kTypeTag};
constexpr bool TagsDistinct() {
  constexpr size_t n = sizeof kTags / sizeof kTags[0];
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      if (kTags[i].lower == kTags[j].lower && kTags[i].upper == kTags[j].upper) return false;
    }
  }
  return true;
}
static_assert(TagsDistinct(), "two wrapped classes share a type tag");
}  // namespace

Addon::Addon(Napi::Env env, Napi::Object exports) {
  PinLibrary();
  this->env = env;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) {
    throw Napi::Error::New(env, "rx-verbs: no event loop for this environment");
  }
  context_ctor = Napi::Persistent(ContextWrap::Init(env));
  pd_ctor = Napi::Persistent(PdWrap::Init(env));
  mr_ctor = Napi::Persistent(MrWrap::Init(env));
  channel_ctor = Napi::Persistent(ChannelWrap::Init(env));
  cq_ctor = Napi::Persistent(CqWrap::Init(env));
  qp_ctor = Napi::Persistent(QpWrap::Init(env));
  srq_ctor = Napi::Persistent(SrqWrap::Init(env));
  ah_ctor = Napi::Persistent(AhWrap::Init(env));
  faults_ctor = Napi::Persistent(FaultsWrap::Init(env));
  cm_channel_ctor = Napi::Persistent(CmChannelWrap::Init(env));
  cm_id_ctor = Napi::Persistent(CmIdWrap::Init(env));
  DefineAddon(exports,
              {
                  InstanceMethod<&Addon::ListDevices>("listDevices"),
                  InstanceMethod<&Addon::OpenDevice>("openDevice"),
                  InstanceMethod<&Addon::CreateSoftDevice>("createSoftDevice"),
                  InstanceMethod<&Addon::HasIbverbs>("hasIbverbs"),
                  InstanceMethod<&Addon::LiveObjects>("liveObjects"),
                  InstanceValue("Context", context_ctor.Value()),
                  InstanceValue("Pd", pd_ctor.Value()),
                  InstanceValue("Mr", mr_ctor.Value()),
                  InstanceValue("CompletionChannel", channel_ctor.Value()),
                  InstanceValue("Cq", cq_ctor.Value()),
                  InstanceValue("Qp", qp_ctor.Value()),
                  InstanceValue("Srq", srq_ctor.Value()),
                  InstanceValue("Ah", ah_ctor.Value()),
                  InstanceValue("Faults", faults_ctor.Value()),
                  InstanceMethod<&Addon::CreateCmChannel>("createCmChannel"),
                  InstanceMethod<&Addon::RdmacmStatus>("rdmacmStatus"),
                  InstanceMethod<&Addon::SoftCmAddresses>("softCmAddresses"),
                  InstanceMethod<&Addon::SoftCmServes>("softCmServes"),
                  InstanceValue("CmChannel", cm_channel_ctor.Value()),
                  InstanceValue("CmId", cm_id_ctor.Value()),
              });
  // Registered after Node-API's own hook, so it runs before it: every live
  // handle and verbs object is released while the environment still works
  // (worker.terminate() with a live watcher must not abort the process).
  napi_add_env_cleanup_hook(env, &Addon::Cleanup, this);
}

Addon::~Addon() {
  if (!tearing_down) {
    tearing_down = true;
    reaper.CloseAll();  // closes each object quietly: nothing escapes
  }
}

void Addon::Cleanup(void* arg) {
  auto* self = static_cast<Addon*>(arg);
  NoEscape(self->env, "environment cleanup", [self] {
    self->tearing_down = true;
    self->reaper.CloseAll();
  });
}

static Napi::Object DeviceInfoObject(Napi::Env env, const DeviceInfo& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", d.name);
  o.Set("provider", d.provider);
  o.Set("transport", d.transport);
  o.Set("nodeGuid", GuidString(env, d.node_guid));
  return o;
}

Napi::Value Addon::ListDevices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t k = 0;
  Guard(env, [&] {
    for (const DeviceInfo& d : ibverbs_provider().list_devices())
      out.Set(k++, DeviceInfoObject(env, d));
    for (const DeviceInfo& d : soft_provider().list_devices())
      out.Set(k++, DeviceInfoObject(env, d));
  });
  return out;
}

// openDevice(name): soft devices by their name, anything else through rdma-core.
Napi::Value Addon::OpenDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = ArgString(info, 0, "device name");
  if (name.empty()) throw Napi::RangeError::New(env, "device name must not be empty");
  std::unique_ptr<Context> ctx = Guard(env, [&] {
    for (const DeviceInfo& d : soft_provider().list_devices()) {
      if (d.name == name) return soft_provider().open(name);
    }
    return ibverbs_provider().open(name);
  });
  return ContextWrap::New(env, std::move(ctx));
}

// createSoftDevice({ name, ports, maxCqe, maxQpWr, maxSge, maxInline })
Napi::Value Addon::CreateSoftDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "options must be an object");
  Napi::Object o = info[0].As<Napi::Object>();
  SoftDeviceOptions opts;
  Napi::Value name = o.Get("name");
  if (!name.IsString()) throw Napi::TypeError::New(env, "options.name must be a string");
  opts.name = name.As<Napi::String>().Utf8Value();
  if (opts.name.empty() || opts.name.size() > 63) {
    throw Napi::RangeError::New(env, "options.name must be 1 to 63 characters");
  }
  auto field = [&](const char* key, uint32_t dflt, uint32_t min, uint32_t max) {
    Napi::Value v = o.Get(key);
    std::string what = std::string("options.") + key;
    return v.IsUndefined() ? dflt : ValueU32(env, v, what.c_str(), min, max);
  };
  opts.ports = field("ports", opts.ports, 1, 8);
  opts.max_cqe = field("maxCqe", opts.max_cqe, 1, 1u << 22);
  opts.max_qp_wr = field("maxQpWr", opts.max_qp_wr, 1, 1u << 20);
  opts.max_sge = field("maxSge", opts.max_sge, 1, 64);
  opts.max_inline = field("maxInline", opts.max_inline, 0, 4096);
  // addresses: what the soft CM answers on for this device (cm/soft/).
  std::vector<std::string> addresses;
  Napi::Value addrs = o.Get("addresses");
  if (!addrs.IsUndefined()) {
    if (!addrs.IsArray()) throw Napi::TypeError::New(env, "options.addresses must be an array of strings");
    Napi::Array a = addrs.As<Napi::Array>();
    if (a.Length() > 64) throw Napi::RangeError::New(env, "options.addresses holds at most 64 addresses");
    for (uint32_t i = 0; i < a.Length(); i++) {
      Napi::Value h = a.Get(i);
      if (!h.IsString()) throw Napi::TypeError::New(env, "options.addresses must be an array of strings");
      addresses.push_back(h.As<Napi::String>().Utf8Value());
      cm::Addr parsed;
      if (!cm::parse_addr(addresses.back(), 0, &parsed)) {
        throw Napi::TypeError::New(env, "options.addresses[" + std::to_string(i) +
                                            "] must be a numeric IPv4 or IPv6 address");
      }
    }
  }
  Guard(env, [&] {
    cm::soft_cm_check_addresses(addresses);
    create_soft_device(opts);
    cm::soft_cm_set_addresses(opts.name, addresses);
  });
  return env.Undefined();
}

Napi::Value Addon::HasIbverbs(const Napi::CallbackInfo& info) {
#ifdef RXV_HAVE_IBVERBS
  return Napi::Boolean::New(info.Env(), true);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

// How many native objects are alive in this environment (leak tests).
Napi::Value Addon::LiveObjects(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(reaper.size()));
}

// createCmChannel('rdmacm' | 'soft')
Napi::Value Addon::CreateCmChannel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "provider must be 'rdmacm' or 'soft'");
  std::string name = info[0].As<Napi::String>().Utf8Value();
  cm::CmProvider* p = name == "soft" ? &cm::soft_cm_provider() : name == "rdmacm" ? &cm::rdmacm_provider() : nullptr;
  if (p == nullptr) throw Napi::TypeError::New(env, "provider must be 'rdmacm' or 'soft'");
  auto ch = Guard(env, [&] { return p->create_channel(); });
  return CmChannelWrap::New(env, *p, std::move(ch));
}

Napi::Value Addon::RdmacmStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string why;
  bool ok = cm::rdmacm_available(&why);
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", ok);
  if (!ok) o.Set("reason", why);
  return o;
}

Napi::Value Addon::SoftCmAddresses(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  for (auto& [device, hosts] : cm::soft_cm_addresses()) {
    Napi::Array a = Napi::Array::New(env, hosts.size());
    for (uint32_t i = 0; i < hosts.size(); i++) a.Set(i, hosts[i]);
    o.Set(device, a);
  }
  return o;
}

Napi::Value Addon::SoftCmServes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "host must be a string");
  return Napi::Boolean::New(env, cm::soft_cm_serves(info[0].As<Napi::String>().Utf8Value()));
}

}  // namespace rxv

using RxVerbsAddon = rxv::Addon;
NODE_API_ADDON(RxVerbsAddon)
