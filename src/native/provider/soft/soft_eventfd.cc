// EventFd and the error helper.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "soft_core.h"

namespace rxv {
namespace soft {

void fail(int err, const char* verb, const std::string& detail) {
  throw VerbsError(err, verb, detail);
}

EventFd::~EventFd() { close(); }

void EventFd::open(const char* verb) {
  if (fd_ >= 0) return;
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    fail(e, verb, std::string("eventfd: ") + std::strerror(e));
  }
}

void EventFd::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void EventFd::signal() {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = ::write(fd_, &one, sizeof one);
  } while (r < 0 && errno == EINTR);
  // EAGAIN means the counter is saturated: the fd is readable anyway.
}

uint64_t EventFd::reset() {
  if (fd_ < 0) return 0;
  uint64_t v = 0;
  ssize_t r;
  do {
    r = ::read(fd_, &v, sizeof v);
  } while (r < 0 && errno == EINTR);
  return r == sizeof v ? v : 0;  // EAGAIN: already clear
}

}  // namespace soft
}  // namespace rxv
