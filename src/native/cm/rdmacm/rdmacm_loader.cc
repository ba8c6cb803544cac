#include "cm/rdmacm/rdmacm_loader.h"

#ifdef RXV_RDMACM_BUILT

#include <cerrno>
#include <cstring>

#include "provider/ibverbs/ibverbs_loader.h"
#include "util/dl_library.h"

namespace rxv {
namespace cm {
namespace rdmacm {
namespace {

constexpr RuntimeLibrary kLibrary = {"RXV_RDMACM_LIBRARY", "librdmacm.so.1", "librdmacm1 (rdma-core)",
                                     "rdma-core's librdmacm1"};

bool load(Api* api, std::string* why) {
  // The CM hands out ibv_contexts that our verbs code drives: libibverbs
  // must be usable first.
  std::string ibv_why;
  if (ibv::api(&ibv_why) == nullptr) {
    *why = "librdmacm needs libibverbs: " + ibv_why;
    return false;
  }
  return OpenRuntimeLibrary(kLibrary, [api](void* handle, std::string* missing) {
    Api& a = *api;
    ResolveSymbol(handle, "rdma_create_event_channel", &a.create_event_channel, missing);
    ResolveSymbol(handle, "rdma_destroy_event_channel", &a.destroy_event_channel, missing);
    ResolveSymbol(handle, "rdma_create_id", &a.create_id, missing);
    ResolveSymbol(handle, "rdma_destroy_id", &a.destroy_id, missing);
    ResolveSymbol(handle, "rdma_bind_addr", &a.bind_addr, missing);
    ResolveSymbol(handle, "rdma_listen", &a.listen, missing);
    ResolveSymbol(handle, "rdma_resolve_addr", &a.resolve_addr, missing);
    ResolveSymbol(handle, "rdma_resolve_route", &a.resolve_route, missing);
    ResolveSymbol(handle, "rdma_connect", &a.connect, missing);
    ResolveSymbol(handle, "rdma_accept", &a.accept, missing);
    ResolveSymbol(handle, "rdma_reject", &a.reject, missing);
    ResolveSymbol(handle, "rdma_establish", &a.establish, missing);
    ResolveSymbol(handle, "rdma_disconnect", &a.disconnect, missing);
    ResolveSymbol(handle, "rdma_migrate_id", &a.migrate_id, missing);
    ResolveSymbol(handle, "rdma_get_cm_event", &a.get_cm_event, missing);
    ResolveSymbol(handle, "rdma_ack_cm_event", &a.ack_cm_event, missing);
    ResolveSymbol(handle, "rdma_init_qp_attr", &a.init_qp_attr, missing);
    ResolveSymbol(handle, "rdma_get_devices", &a.get_devices, missing);
    ResolveSymbol(handle, "rdma_free_devices", &a.free_devices, missing);
  }, why);  // never dlclose (as libibverbs)
}

}  // namespace

const Api* api(std::string* why) { return LoadOnce<Api, load>(why); }

rdma_event_channel* open_event_channel(const Api* a, int* err, std::string* why) {
  errno = 0;
  rdma_event_channel* ch = a->create_event_channel();
  if (ch == nullptr) {
    *err = errno != 0 ? errno : ENODEV;
    *why = std::string("cannot open the kernel's RDMA CM (/dev/infiniband/rdma_cm): ") + std::strerror(*err) +
           " (is the rdma_ucm module loaded, and an RDMA device present?)";
  }
  return ch;
}

}  // namespace rdmacm

bool rdmacm_available(std::string* why) {
  const rdmacm::Api* a = rdmacm::api(why);
  if (a == nullptr) return false;
  int err = 0;
  std::string reason;
  rdma_event_channel* ch = rdmacm::open_event_channel(a, &err, &reason);
  if (ch == nullptr) {
    if (why != nullptr) *why = reason;
    return false;
  }
  a->destroy_event_channel(ch);
  return true;
}

}  // namespace cm
}  // namespace rxv

#else

namespace rxv {
namespace cm {

bool rdmacm_available(std::string* why) {
  if (why != nullptr)
    *why = "rx-verbs was built without librdmacm headers (rdma/rdma_cma.h): install librdmacm-dev "
           "(and libibverbs-dev) and rebuild";
  return false;
}

}  // namespace cm
}  // namespace rxv

#endif
