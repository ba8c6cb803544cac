// One uv_poll_t over a descriptor on the environment's own loop. The handle is
// freed in uv_close's callback (libuv requires the memory to outlive the
// close), so the owner can be destroyed at any time after Close().
#pragma once

#include <uv.h>

#include <functional>

namespace rxv {

class UvPoll {
 public:
  using Callback = std::function<void(int status)>;

  UvPoll() = default;
  UvPoll(const UvPoll&) = delete;
  UvPoll& operator=(const UvPoll&) = delete;
  ~UvPoll() { Close(); }

  // Returns a libuv error code (0 on success).
  int Init(uv_loop_t* loop, int fd, Callback cb) {
    Close();
    auto* h = new Handle;
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
    uv_close(reinterpret_cast<uv_handle_t*>(&handle_->poll),
              [](uv_handle_t* h) { delete static_cast<Handle*>(h->data); });
    handle_ = nullptr;
  }

 private:
  struct Handle {
    uv_poll_t poll;
    Callback cb;
  };
  static void OnPoll(uv_poll_t* p, int status, int events) {
    auto* h = static_cast<Handle*>(p->data);
    if (h->cb) h->cb(status);
  }
  Handle* handle_ = nullptr;
  bool active_ = false;
};

}  // namespace rxv
