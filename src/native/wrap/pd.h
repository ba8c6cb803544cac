// Pd: a protection domain. Registers memory and creates QPs; keeps the MRs
// it registered indexed by lkey so inline sends can be bounds-checked here,
// before any provider copies from a user-supplied address.
#pragma once

#include <napi.h>

#include <cstdint>
#include <map>
#include <memory>

#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class MrWrap;

class PdWrap : public ProviderWrap<PdWrap, Pd> {
 public:
  static constexpr const char* kClassName = "Pd";
  static constexpr napi_type_tag kTypeTag = {0xacfa3ec836c59dbcull, 0xf29aa2a7b09d2180ull};
  static constexpr rules::Kind kKind = rules::Kind::kPd;
  static constexpr const char* kWhat = "protection domain";
  static constexpr const char* kMadeBy = "context.allocPd()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::pd_ctor;
  static Napi::Function Init(Napi::Env env);
  static Napi::Object New(Napi::Env env, std::unique_ptr<Pd> pd,
                          Napi::Object context);

  using ProviderWrap::ProviderWrap;
  ~PdWrap() override { CloseQuietly(); }

  void AddMr(uint32_t lkey, MrWrap* mr) { mrs_[lkey] = mr; }
  void RemoveMr(uint32_t lkey) { mrs_.erase(lkey); }
  Napi::Value context_object() { return GetHidden(Value(), kParentKey); }
  // True when [addr, addr+len) lies inside a live MR of this PD with `lkey`.
  bool CoversLocal(uint32_t lkey, uint64_t addr, uint64_t len) const;
  // True when `lkey` names an MR of this PD whose user buffer was detached.
  bool DetachedSge(uint32_t lkey) const;

 private:
  friend ProviderWrap;
  // MRs left at teardown or GC must not point at this PD.
  void Released();

  Napi::Value RegisterMemory(const Napi::CallbackInfo& info);
  Napi::Value AllocMemory(const Napi::CallbackInfo& info);
  Napi::Value CreateQp(const Napi::CallbackInfo& info);
  Napi::Value CreateSrq(const Napi::CallbackInfo& info);
  Napi::Value CreateAh(const Napi::CallbackInfo& info);  // ah.cc

  std::map<uint32_t, MrWrap*> mrs_;
};

}  // namespace rxv
