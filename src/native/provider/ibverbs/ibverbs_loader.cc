#include "ibverbs_loader.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "util/dl_library.h"

namespace rxv {
namespace ibv {
namespace {

constexpr RuntimeLibrary kLibrary = {"RXV_IBVERBS_LIBRARY", "libibverbs.so.1",
                                     "ibverbs-providers / rdma-core", "rdma-core's libibverbs1"};

bool load(Api* api, std::string* why) {
  return OpenRuntimeLibrary(kLibrary, [api](void* handle, std::string* missing) {
    Api& a = *api;
    ResolveSymbol(handle, "ibv_get_device_list", &a.get_device_list, missing);
    ResolveSymbol(handle, "ibv_free_device_list", &a.free_device_list, missing);
    ResolveSymbol(handle, "ibv_get_device_name", &a.get_device_name, missing);
    ResolveSymbol(handle, "ibv_get_device_guid", &a.get_device_guid, missing);
    ResolveSymbol(handle, "ibv_open_device", &a.open_device, missing);
    ResolveSymbol(handle, "ibv_close_device", &a.close_device, missing);
    ResolveSymbol(handle, "ibv_query_device", &a.query_device, missing);
    ResolveSymbol(handle, "ibv_query_port", &a.query_port_compat, missing);
    ResolveSymbol(handle, "ibv_query_gid", &a.query_gid, missing);
    ResolveSymbol(handle, "ibv_get_async_event", &a.get_async_event, missing);
    ResolveSymbol(handle, "ibv_ack_async_event", &a.ack_async_event, missing);
    ResolveSymbol(handle, "ibv_alloc_pd", &a.alloc_pd, missing);
    ResolveSymbol(handle, "ibv_dealloc_pd", &a.dealloc_pd, missing);
    ResolveSymbol(handle, "ibv_reg_mr", &a.reg_mr, missing);
    ResolveSymbol(handle, "ibv_dereg_mr", &a.dereg_mr, missing);
    ResolveSymbol(handle, "ibv_create_comp_channel", &a.create_comp_channel, missing);
    ResolveSymbol(handle, "ibv_destroy_comp_channel", &a.destroy_comp_channel, missing);
    ResolveSymbol(handle, "ibv_create_cq", &a.create_cq, missing);
    ResolveSymbol(handle, "ibv_destroy_cq", &a.destroy_cq, missing);
    ResolveSymbol(handle, "ibv_get_cq_event", &a.get_cq_event, missing);
    ResolveSymbol(handle, "ibv_ack_cq_events", &a.ack_cq_events, missing);
    ResolveSymbol(handle, "ibv_create_qp", &a.create_qp, missing);
    ResolveSymbol(handle, "ibv_modify_qp", &a.modify_qp, missing);
    ResolveSymbol(handle, "ibv_query_qp", &a.query_qp, missing);
    ResolveSymbol(handle, "ibv_destroy_qp", &a.destroy_qp, missing);
    ResolveSymbol(handle, "ibv_create_srq", &a.create_srq, missing);
    ResolveSymbol(handle, "ibv_modify_srq", &a.modify_srq, missing);
    ResolveSymbol(handle, "ibv_query_srq", &a.query_srq, missing);
    ResolveSymbol(handle, "ibv_destroy_srq", &a.destroy_srq, missing);
    ResolveSymbol(handle, "ibv_create_ah", &a.create_ah, missing);
    ResolveSymbol(handle, "ibv_destroy_ah", &a.destroy_ah, missing);
  }, why);  // never dlclose: provider plugins stay registered
}

}  // namespace

const Api* api(std::string* why) { return LoadOnce<Api, load>(why); }

int query_port(const Api& a, ibv_context* ctx, uint8_t port,
               ibv_port_attr* out) {
  std::memset(out, 0, sizeof(*out));
  // Equivalent of verbs.h's verbs_get_ctx_op(ctx, query_port), written
  // without the GNU statement expression.
  verbs_context* vctx = verbs_get_ctx(ctx);
  if (vctx != nullptr &&
      vctx->sz >= sizeof(*vctx) - offsetof(verbs_context, query_port) &&
      vctx->query_port != nullptr) {
    return vctx->query_port(ctx, port, out, sizeof(*out));
  }
  errno = 0;
  int rc = a.query_port_compat(
      ctx, port, reinterpret_cast<struct _compat_ibv_port_attr*>(out));
  if (rc < 0) rc = errno != 0 ? errno : EIO;  // old libs: -1 + errno
  return rc;
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
