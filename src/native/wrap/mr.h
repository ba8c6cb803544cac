// Mr: a registered memory region. Holds the memory it covers (see
// memory/pinned.h) until it is deregistered, and watches the JS buffer it
// came from: once that is detached, work requests naming the MR fail.
#pragma once

#include <napi.h>

#include <memory>

#include "memory/pinned.h"
#include "provider/provider.h"
#include "wrap/wrap.h"

namespace rxv {

class PdWrap;

class MrWrap : public ProviderWrap<MrWrap, Mr> {
 public:
  static constexpr const char* kClassName = "Mr";
  static constexpr napi_type_tag kTypeTag = {0xaf82a87e7ae6da81ull, 0x6c03644f9edbc369ull};
  static constexpr rules::Kind kKind = rules::Kind::kMr;
  static constexpr const char* kWhat = "memory region";
  static constexpr const char* kMadeBy = "pd.registerMemory()";
  static constexpr Napi::FunctionReference Addon::*kCtor = &Addon::mr_ctor;
  static Napi::Function Init(Napi::Env env);
  // `library`: the memory is a pd.allocMemory() allocation, which a detach
  // of its JS handle does not take away.
  static Napi::Object New(Napi::Env env, std::unique_ptr<Mr> mr, Napi::Object pd,
                          PdWrap* pdw, PinnedMemory mem, bool library);
  // The live MRs of this environment whose user buffer can be detached,
  // by key (lkey == rkey on every provider we have; both are indexed).
  // Marks every one with `key` whose buffer was detached; true if any was.
  static bool MarkDetached(Napi::Env env, uint32_t key);

  using ProviderWrap::ProviderWrap;
  ~MrWrap() override { Close(true); }

  // True (and the provider told) once the user buffer was detached.
  bool CheckDetached();
  void DetachPd() { pdw_ = nullptr; }

 private:
  friend ProviderWrap;
  // Unindexed, and only now, with the device done with it, may the memory go.
  void Released();

  Napi::Value Lkey(const Napi::CallbackInfo& info);
  Napi::Value Rkey(const Napi::CallbackInfo& info);
  Napi::Value Addr(const Napi::CallbackInfo& info);
  Napi::Value Length(const Napi::CallbackInfo& info);
  Napi::Value Access(const Napi::CallbackInfo& info);

  void Unindex();

  // The memory; released only after the provider deregistered it.
  std::shared_ptr<void> keep_;
  // The ArrayBuffer the memory came from, for detach checks. (A leaf: it
  // refers to nothing of ours, so this creates no uncollectable cycle.)
  Napi::ObjectReference owner_;
  bool detachable_ = false;  // a user's non-shared ArrayBuffer
  bool detached_ = false;
  PdWrap* pdw_ = nullptr;
  uint32_t lkey_ = 0;
  uint32_t rkey_ = 0;
};

}  // namespace rxv
