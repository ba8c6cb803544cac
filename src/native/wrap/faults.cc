#include "wrap/faults.h"

#include <cerrno>

#include "util/js_values.h"
#include "wrap/channel.h"
#include "wrap/context.h"
#include "wrap/cq.h"

namespace rxv {

namespace {

Wc ParseWc(Napi::Env env, Napi::Value v) {
  if (!v.IsObject()) throw Napi::TypeError::New(env, "work completion must be an object");
  Napi::Object o = v.As<Napi::Object>();
  Wc wc;
  wc.wr_id = ValueU64(env, o.Get("wrId"), "wc.wrId", 0);
  auto num = [&](const char* key, uint32_t dflt, uint32_t max) {
    Napi::Value x = o.Get(key);
    return x.IsUndefined() ? dflt : ValueU32(env, x, key, 0, max);
  };
  wc.status = num("status", 0, 255);
  wc.opcode = num("opcode", 0, 255);
  wc.byte_len = num("byteLen", 0, UINT32_MAX);
  wc.qp_num = num("qpNum", 0, 0xffffff);
  wc.vendor_err = num("vendorErr", 0, UINT32_MAX);
  wc.src_qp = num("srcQp", 0, 0xffffff);
  // The widths ibv_wc gives them: a LID, a 4-bit SL, up to 7 path bits.
  wc.slid = uint16_t(num("slid", 0, 0xffff));
  wc.sl = uint8_t(num("sl", 0, 15));
  wc.dlid_path_bits = uint8_t(num("dlidPathBits", 0, 127));
  Napi::Value imm = o.Get("imm");
  if (!imm.IsUndefined()) {
    wc.imm = ValueU32(env, imm, "imm");
    wc.wc_flags |= wc_flag::WITH_IMM;
  }
  return wc;
}

}  // namespace

Napi::Function FaultsWrap::Init(Napi::Env env) {
  return DefineClass(env, kClassName,
                     {
                         InstanceMethod<&FaultsWrap::Overrun>("overrun"),
                         InstanceMethod<&FaultsWrap::ErrorCompletion>("errorCompletion"),
                         InstanceMethod<&FaultsWrap::EmptyEvent>("emptyEvent"),
                         InstanceMethod<&FaultsWrap::CompletionBeforeArm>("completionBeforeArm"),
                         InstanceMethod<&FaultsWrap::SpuriousWakeup>("spuriousWakeup"),
                         InstanceMethod<&FaultsWrap::DelayUs>("delayUs"),
                         InstanceMethod<&FaultsWrap::DuplicateEvents>("duplicateEvents"),
                         InstanceMethod<&FaultsWrap::DeviceFatal>("deviceFatal"),
                         InstanceMethod<&FaultsWrap::PortEvent>("portEvent"),
                     });
}

Napi::Object FaultsWrap::New(Napi::Env env, ContextWrap* ctx) {
  Napi::Object o = Addon::Get(env)->faults_ctor.New({MakeToken(env, ctx)});
  SetHidden(o, kParentKey, ctx->Value());
  return o;
}

FaultsWrap::FaultsWrap(const Napi::CallbackInfo& info) : TaggedWrap<FaultsWrap>(info) {
  ctx_ = TakeToken<ContextWrap>(info);
  if (!ctx_) {
    throw Napi::TypeError::New(info.Env(),
                               "Faults cannot be constructed directly: use context.faults");
  }
}

Faults* FaultsWrap::Hooks(Napi::Env env) {
  Faults* f = ctx_->Checked(env, "inject")->faults();
  if (!f) {
    throw ErrnoError(env, EOPNOTSUPP, "inject",
                     "fault injection is only available on soft devices");
  }
  return f;
}

Napi::Value FaultsWrap::Overrun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CqWrap* cqw = UnwrapArg<CqWrap>(env, info[0], "cq");
  Faults* f = Hooks(env);
  Cq* cq = cqw->Checked(env, "inject");
  Guard(env, [&] { f->overrun(cq); });
  return env.Undefined();
}

Napi::Value FaultsWrap::ErrorCompletion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CqWrap* cqw = UnwrapArg<CqWrap>(env, info[0], "cq");
  Wc wc = ParseWc(env, info[1]);
  Faults* f = Hooks(env);
  Cq* cq = cqw->Checked(env, "inject");
  Guard(env, [&] { f->error_completion(cq, wc); });
  return env.Undefined();
}

Napi::Value FaultsWrap::EmptyEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CqWrap* cqw = UnwrapArg<CqWrap>(env, info[0], "cq");
  Faults* f = Hooks(env);
  Cq* cq = cqw->Checked(env, "inject");
  Guard(env, [&] { f->empty_event(cq); });
  return env.Undefined();
}

Napi::Value FaultsWrap::CompletionBeforeArm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CqWrap* cqw = UnwrapArg<CqWrap>(env, info[0], "cq");
  Wc wc = ParseWc(env, info[1]);
  Faults* f = Hooks(env);
  Cq* cq = cqw->Checked(env, "inject");
  Guard(env, [&] { f->completion_before_arm(cq, wc); });
  return env.Undefined();
}

Napi::Value FaultsWrap::SpuriousWakeup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ChannelWrap* chw = UnwrapArg<ChannelWrap>(env, info[0], "channel");
  Faults* f = Hooks(env);
  Channel* ch = chw->Checked(env, "inject");
  Guard(env, [&] { f->spurious_wakeup(ch); });
  return env.Undefined();
}

Napi::Value FaultsWrap::DelayUs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t us = ArgU32(info, 0, "delay (us)", 0, 10000000);
  Faults* f = Hooks(env);
  Guard(env, [&] { f->delay_us(us); });
  return env.Undefined();
}

Napi::Value FaultsWrap::DuplicateEvents(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool on = ArgBool(info, 0, "on", true);
  Faults* f = Hooks(env);
  Guard(env, [&] { f->duplicate_events(on); });
  return env.Undefined();
}

Napi::Value FaultsWrap::DeviceFatal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Faults* f = Hooks(env);
  Guard(env, [&] { f->device_fatal(); });
  return env.Undefined();
}

Napi::Value FaultsWrap::PortEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t type = ArgU32(info, 0, "event type", 0, 18);
  Faults* f = Hooks(env);
  Guard(env, [&] { f->port_event(type); });
  return env.Undefined();
}

}  // namespace rxv
