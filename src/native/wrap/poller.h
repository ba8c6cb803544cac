// Poller: the one watcher of every descriptor the addon reads for JS
// (completion channels, a context's async events and CM event channels).
// It owns what each of them needs and must get right once:
// - the uv_poll on the environment's own loop (util/uv_poll_handle.h, whose
//   callback already runs under NoEscape with a handle scope open);
// - the owner: the JS object whose handler receives each wakeup, held weakly
//   (it can be collected) or strongly while a subscription holds it;
// - the handler, looked up once when the owner is set, so a wakeup runs no
//   getter before it calls into JS;
// - the async context and the callback scope of that call (util/deliver.h),
//   after checking that the environment can still run JS at all;
// - the wakeup counters (readiness can be spurious: reading nothing is fine).
// The source (completion channel, context, CM channel) only reads its
// descriptor and builds the handler's arguments.
#pragma once

#include <napi.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "util/uv_poll_handle.h"

namespace rxv {

class Addon;
class VerbsError;

class Poller {
 public:
  static constexpr size_t kMaxArgs = 5;
  // What one wakeup read: `read_any` false means the readiness was spurious;
  // `argc` values in `argv` go to the handler (none: nothing for JS).
  struct Wakeup {
    bool read_any = false;
    size_t argc = 0;
    napi_value argv[kMaxArgs] = {};
  };
  // Reads the descriptor (JS can run; a handle scope is open). A source that
  // cannot read any more calls Failed() and fills in what it did read.
  using Read = std::function<void(napi_env env, Wakeup& out)>;

  // `what` names the descriptor in messages, `resource` the async resource
  // of the calls into JS (both string literals).
  Poller(Addon* addon, const char* what, const char* resource)
      : addon_(addon), what_(what), resource_(resource) {}
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // The owner's handler `method`, or a TypeError. Reading it may run a
  // getter that closes anything: call it before taking a native object.
  static Napi::Function HandlerOf(Napi::Env env, Napi::Value owner, const char* method);
  // Sets the owner and its handler (from HandlerOf), keeping the hold.
  void SetOwner(Napi::Env env, Napi::Object owner, Napi::Function handler);
  void ClearOwner();
  bool has_owner() const { return !owner_.IsEmpty(); }

  // Starts watching `fd` (once per descriptor: the handle is made on the
  // first start). Throws the uv failure as a JS error.
  void Start(Napi::Env env, int fd, Read read);
  void Stop() { poll_.Stop(); }
  // Around a verb that may refuse to destroy the descriptor: Pause() stops
  // reading and says whether it was reading; Resume() reads again.
  bool Pause() {
    bool was = poll_.Active();
    poll_.Stop();
    return was;
  }
  void Resume() { poll_.Start(); }
  bool active() const { return poll_.Active(); }
  // While held the owner (and its handler) are strong references: the
  // subscription owns them even if the user dropped every other reference.
  void Hold(bool on);
  bool held() const { return held_; }
  // Whether the handle keeps the loop alive while active.
  void KeepAlive(bool on) { poll_.Ref(on); }
  // Reading failed for good: reported, and the descriptor is no longer read.
  void Failed(const VerbsError& e);
  // The owner's descriptor is gone: closes the handle and drops the owner
  // (at environment teardown references are left to Node) and the context.
  void Close();

  // Calls the handler synchronously, from inside a JS call (tryGetEvent).
  void CallNow(Napi::Env env, size_t argc, const napi_value* argv);

  uint64_t wakeups() const { return wakeups_; }
  uint64_t spurious() const { return spurious_; }

 private:
  void OnReadable(napi_env env);

  Addon* addon_;
  const char* what_;
  const char* resource_;
  UvPoll poll_;
  Read read_;
  Napi::ObjectReference owner_;
  Napi::FunctionReference handler_;
  std::unique_ptr<Napi::AsyncContext> async_;
  bool held_ = false;
  uint64_t wakeups_ = 0;
  uint64_t spurious_ = 0;
};

}  // namespace rxv
