#include "wrap/poller.h"

#include <cstdio>
#include <string>

#include "util/deliver.h"
#include "util/errors.h"
#include "wrap/addon.h"

namespace rxv {

Napi::Function Poller::HandlerOf(Napi::Env env, Napi::Value owner, const char* method) {
  Napi::Value fn = owner.IsObject() ? owner.As<Napi::Object>().Get(method) : Napi::Value();
  if (fn.IsEmpty() || !fn.IsFunction()) {
    throw Napi::TypeError::New(
        env, std::string("owner must be an object with a ") + method + " method");
  }
  return fn.As<Napi::Function>();
}

void Poller::SetOwner(Napi::Env env, Napi::Object owner, Napi::Function handler) {
  ClearOwner();
  owner_ = Napi::Weak(owner);
  handler_ = Napi::Weak(handler);
  if (held_) {
    owner_.Ref();
    handler_.Ref();
  }
  if (!async_) async_ = std::make_unique<Napi::AsyncContext>(env, resource_);
}

void Poller::ClearOwner() {
  if (held_ && !owner_.IsEmpty()) {
    owner_.Unref();
    handler_.Unref();
  }
  owner_.Reset();
  handler_.Reset();
}

void Poller::Hold(bool on) {
  if (on == held_) return;
  held_ = on;
  if (owner_.IsEmpty()) return;
  if (on) {
    owner_.Ref();
    handler_.Ref();
  } else {
    owner_.Unref();
    handler_.Unref();
  }
}

void Poller::Start(Napi::Env env, int fd, Read read) {
  if (!poll_.Valid()) {
    int rc = poll_.Init(addon_->env, addon_->loop, fd,
                        [this](int) { OnReadable(addon_->env); });
    if (rc != 0) throw ErrnoError(env, -rc, "uv_poll_init");
  }
  read_ = std::move(read);
  int rc = poll_.Start();
  if (rc != 0) throw ErrnoError(env, -rc, "uv_poll_start");
}

void Poller::Failed(const VerbsError& e) {
  fprintf(stderr, "rx-verbs: reading the %s failed: %s\n", what_, e.what());
  poll_.Stop();
  Hold(false);
}

void Poller::Close() {
  poll_.Close();
  held_ = false;
  // At teardown Node releases the references itself, and deleting them
  // then is not allowed.
  if (!addon_->tearing_down) ClearOwner();
  async_.reset();
}

void Poller::CallNow(Napi::Env env, size_t argc, const napi_value* argv) {
  if (owner_.IsEmpty() || handler_.IsEmpty()) return;
  Napi::Object owner = owner_.Value();
  Napi::Function fn = handler_.Value();
  if (owner.IsEmpty() || fn.IsEmpty()) return;
  fn.Call(owner, argc, argv);
}

// Nothing is read while JS cannot take it (a worker being terminated): the
// events stay pending and the teardown releases them.
void Poller::OnReadable(napi_env env) {
  if (addon_->tearing_down || owner_.IsEmpty() || !read_) return;
  if (!CanRunJs(env)) return;
  wakeups_++;
  Wakeup w;
  read_(env, w);
  if (!w.read_any) {
    spurious_++;
    return;
  }
  if (w.argc == 0) return;
  napi_value owner = nullptr, fn = nullptr;
  // A collected owner has no one left to tell; its finalizer releases what
  // was read.
  if (napi_get_reference_value(env, static_cast<napi_ref>(owner_), &owner) != napi_ok || !owner ||
      napi_get_reference_value(env, static_cast<napi_ref>(handler_), &fn) != napi_ok || !fn) {
    return;
  }
  DeliverToJs(env, static_cast<napi_async_context>(*async_), owner, fn, w.argc, w.argv);
}

}  // namespace rxv
