#include "ibverbs_loader.h"

#ifdef RXV_HAVE_IBVERBS

#include <dlfcn.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "util/dl_symbol.h"

namespace rxv {
namespace ibv {
namespace {

constexpr const char* kDefaultLibrary = "libibverbs.so.1";

struct Loaded {
  Api api{};
  bool ok = false;
  std::string why;
};

void load(Loaded* out) {
  const char* env = std::getenv("RXV_IBVERBS_LIBRARY");
  const char* file = (env != nullptr && *env != '\0') ? env : kDefaultLibrary;
  dlerror();
  void* handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    out->why = std::string(file) +
               " not found: install ibverbs-providers / rdma-core (dlopen: " +
               (err != nullptr ? err : "unknown error") + ")";
    return;
  }
  Api& a = out->api;
  std::string missing;
  bool ok = true;
  ok &= ResolveSymbol(handle, "ibv_get_device_list", &a.get_device_list, &missing);
  ok &= ResolveSymbol(handle, "ibv_free_device_list", &a.free_device_list, &missing);
  ok &= ResolveSymbol(handle, "ibv_get_device_name", &a.get_device_name, &missing);
  ok &= ResolveSymbol(handle, "ibv_get_device_guid", &a.get_device_guid, &missing);
  ok &= ResolveSymbol(handle, "ibv_open_device", &a.open_device, &missing);
  ok &= ResolveSymbol(handle, "ibv_close_device", &a.close_device, &missing);
  ok &= ResolveSymbol(handle, "ibv_query_device", &a.query_device, &missing);
  ok &= ResolveSymbol(handle, "ibv_query_port", &a.query_port_compat, &missing);
  ok &= ResolveSymbol(handle, "ibv_query_gid", &a.query_gid, &missing);
  ok &= ResolveSymbol(handle, "ibv_get_async_event", &a.get_async_event, &missing);
  ok &= ResolveSymbol(handle, "ibv_ack_async_event", &a.ack_async_event, &missing);
  ok &= ResolveSymbol(handle, "ibv_alloc_pd", &a.alloc_pd, &missing);
  ok &= ResolveSymbol(handle, "ibv_dealloc_pd", &a.dealloc_pd, &missing);
  ok &= ResolveSymbol(handle, "ibv_reg_mr", &a.reg_mr, &missing);
  ok &= ResolveSymbol(handle, "ibv_dereg_mr", &a.dereg_mr, &missing);
  ok &= ResolveSymbol(handle, "ibv_create_comp_channel", &a.create_comp_channel,
                &missing);
  ok &= ResolveSymbol(handle, "ibv_destroy_comp_channel", &a.destroy_comp_channel,
                &missing);
  ok &= ResolveSymbol(handle, "ibv_create_cq", &a.create_cq, &missing);
  ok &= ResolveSymbol(handle, "ibv_destroy_cq", &a.destroy_cq, &missing);
  ok &= ResolveSymbol(handle, "ibv_get_cq_event", &a.get_cq_event, &missing);
  ok &= ResolveSymbol(handle, "ibv_ack_cq_events", &a.ack_cq_events, &missing);
  ok &= ResolveSymbol(handle, "ibv_create_qp", &a.create_qp, &missing);
  ok &= ResolveSymbol(handle, "ibv_modify_qp", &a.modify_qp, &missing);
  ok &= ResolveSymbol(handle, "ibv_query_qp", &a.query_qp, &missing);
  ok &= ResolveSymbol(handle, "ibv_destroy_qp", &a.destroy_qp, &missing);
  ok &= ResolveSymbol(handle, "ibv_create_srq", &a.create_srq, &missing);
  ok &= ResolveSymbol(handle, "ibv_modify_srq", &a.modify_srq, &missing);
  ok &= ResolveSymbol(handle, "ibv_query_srq", &a.query_srq, &missing);
  ok &= ResolveSymbol(handle, "ibv_destroy_srq", &a.destroy_srq, &missing);
  ok &= ResolveSymbol(handle, "ibv_create_ah", &a.create_ah, &missing);
  ok &= ResolveSymbol(handle, "ibv_destroy_ah", &a.destroy_ah, &missing);
  if (!ok) {
    out->why = std::string(file) + " is too old or not rdma-core's (missing " +
               missing + "): install rdma-core's libibverbs1";
    // Keep the handle: unloading a library that registered providers is not
    // safe, and a retry would fail the same way.
    return;
  }
  out->ok = true;  // never dlclose: provider plugins stay registered
}

}  // namespace

const Api* api(std::string* why) {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, load, &loaded);
  if (!loaded.ok) {
    if (why != nullptr) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

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
