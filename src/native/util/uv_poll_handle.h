// One uv_poll_t over a descriptor on the environment's own loop. The handle is
// freed in uv_close's callback (libuv requires the memory to outlive the
// close), so the owner can be destroyed at any time after Close(). Every
// callback runs under NoEscape (util/uv_guard.h): this is the one place the
// addon's fd watchers are entered from libuv.
#pragma once

#include <node_api.h>
#include <uv.h>

#include <functional>

#include "util/uv_guard.h"

namespace rxv {

class UvPoll {
 public:
  using Callback = std::function<void(int status)>;

  UvPoll() = default;
  UvPoll(const UvPoll&) = delete;
  UvPoll& operator=(const UvPoll&) = delete;
  ~UvPoll() { Close(); }

  // Returns a libuv error code (0 on success). `env` is the environment the
  // callback may call into (the guard clears what it leaves pending).
  int Init(napi_env env, uv_loop_t* loop, int fd, Callback cb) {
    Close();
    auto* h = new Handle;
    h->env = env;
    h->cb = std::move(cb);
    int rc = uv_poll_init(loop, &h->poll, fd);
    if (rc != 0) {
      delete h;
      return rc;
    }
    h->poll.data = h;
    handle_ = h;
    return 0;
  }
  bool Valid() const { return handle_ != nullptr; }

  int Start() {
    if (!handle_) return UV_EBADF;
    if (active_) return 0;
    int rc = uv_poll_start(&handle_->poll, UV_READABLE, &UvPoll::OnPoll);
    if (rc == 0) active_ = true;
    return rc;
  }
  void Stop() {
    if (handle_ && active_) uv_poll_stop(&handle_->poll);
    active_ = false;
  }
  bool Active() const { return active_; }
  void Ref(bool on) {
    if (!handle_) return;
    if (on) uv_ref(reinterpret_cast<uv_handle_t*>(&handle_->poll));
    else uv_unref(reinterpret_cast<uv_handle_t*>(&handle_->poll));
  }
  void Close() {
    if (!handle_) return;
    Stop();
    handle_->cb = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&handle_->poll), &UvPoll::OnClosed);
    handle_ = nullptr;
  }

 private:
  struct Handle {
    uv_poll_t poll;
    napi_env env = nullptr;
    Callback cb;
  };
  static void OnPoll(uv_poll_t* p, int status, int events) noexcept {
    auto* h = static_cast<Handle*>(p->data);
    if (h->cb) NoEscape(h->env, "fd watcher", [&] { h->cb(status); });
  }
  static void OnClosed(uv_handle_t* h) noexcept {
    delete static_cast<Handle*>(h->data);
  }
  Handle* handle_ = nullptr;
  bool active_ = false;
};

}  // namespace rxv
