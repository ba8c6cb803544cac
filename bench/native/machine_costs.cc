// machineCosts(): what two kernel services cost on this machine, measured
// on the calling thread. Every consumer woken by Node's loop pays a few
// system calls per wakeup, and a consumer that writes into fresh memory
// pays a page fault per new page; on a paravirtualised VM both cost many
// times what they cost on bare metal, and the throughput suite's CPU per
// WC is read against these figures.
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "baselines.h"

namespace rxv {
namespace bench {
namespace {

double NowNs() {
  timespec ts{0, 0};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

double Median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

// First write to each page of a fresh anonymous mapping: one minor fault
// per page (the kernel zeroes the page and maps it). -1 if mmap fails.
double PageFaultNs(size_t pages) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  auto* bytes = static_cast<volatile unsigned char*>(mem);
  const double t0 = NowNs();
  for (size_t i = 0; i < pages; i++) bytes[i * page] = 1;
  const double ns = (NowNs() - t0) / double(pages);
  munmap(mem, pages * page);
  return ns;
}

// epoll_wait with a zero timeout on an epoll set watching nothing: the
// call libuv makes before it sleeps, with no work behind it. -1 if the
// epoll set cannot be made.
double SyscallNs(int calls) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  epoll_event ev;
  const double t0 = NowNs();
  for (int i = 0; i < calls; i++) epoll_wait(ep, &ev, 1, 0);
  const double ns = (NowNs() - t0) / double(calls);
  close(ep);
  return ns;
}

}  // namespace

Napi::Value MachineCosts(const Napi::CallbackInfo& info) {
  // Three rounds of each, the median: a round can be slowed by the machine,
  // never sped up.
  std::vector<double> faults, calls;
  for (int r = 0; r < 3; r++) {
    faults.push_back(PageFaultNs(4096));  // 16 MiB of 4 KiB pages
    calls.push_back(SyscallNs(50000));
  }
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("pageFaultNs", Median(faults));
  out.Set("syscallNs", Median(calls));
  return out;
}

}  // namespace bench
}  // namespace rxv
