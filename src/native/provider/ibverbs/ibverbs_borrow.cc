// A verbs context over an ibv_context librdmacm opened: rdma_cm requires
// connections to use its own device context, so the CM lends it to our
// verbs objects (cm/rdmacm/) instead of the device being opened twice.
#include "ibverbs_objects.h"

#ifdef RXV_HAVE_IBVERBS

namespace rxv {
namespace ibv {

std::unique_ptr<Context> borrow_context(const Api* api, ibv_context* ctx,
                                        std::shared_ptr<void> keep) {
  const char* name = api->get_device_name(ctx->device);
  DeviceInfo info;
  info.name = name != nullptr ? name : "";
  info.provider = "ibverbs";
  ibv_port_attr pa;
  info.transport = query_port(*api, ctx, 1, &pa) == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET
                       ? "Ethernet"
                       : "InfiniBand";
  // As open() does: get_async_event() must say EAGAIN, never block.
  set_nonblock(ctx->async_fd);
  auto out = std::make_unique<IbvContext>(api, ctx, std::move(info));
  out->st_->borrowed = true;
  out->st_->keep = std::move(keep);
  return out;
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
