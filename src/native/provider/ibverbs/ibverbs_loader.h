// Lazy loader for rdma-core's libibverbs.
//
// The addon never links against libibverbs (binding.gyp links -ldl only), so
// the .node loads on machines without rdma-core. On first use we dlopen
// libibverbs.so.1 and resolve every exported function we call into a table.
// Inline verbs (ibv_poll_cq, ibv_req_notify_cq, ibv_post_send, ibv_post_recv)
// dispatch through ctx->ops and need no symbol.
//
// Member names deliberately drop the `ibv_` prefix: verbs.h defines
// function-like macros for some verbs (ibv_query_port, ibv_reg_mr, and
// ibv_get_device_list when RDMA_STATIC_PROVIDERS is set), which would expand
// on `api.ibv_query_port(...)`.
#pragma once

#ifdef RXV_HAVE_IBVERBS

#include <infiniband/verbs.h>

#include <string>

namespace rxv {
namespace ibv {

struct Api {
  // Devices.
  ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* device);
  __be64 (*get_device_guid)(ibv_device* device);
  ibv_context* (*open_device)(ibv_device* device);
  int (*close_device)(ibv_context* context);
  // Queries. The exported ibv_query_port takes the (smaller) compat struct;
  // the header's inline wrapper prefers verbs_context::query_port. We mirror
  // that in query_port() below.
  int (*query_device)(ibv_context* context, ibv_device_attr* attr);
  int (*query_port_compat)(ibv_context* context, uint8_t port_num,
                           struct _compat_ibv_port_attr* attr);
  int (*query_gid)(ibv_context* context, uint8_t port_num, int index,
                   ibv_gid* gid);
  // Async events.
  int (*get_async_event)(ibv_context* context, ibv_async_event* event);
  void (*ack_async_event)(ibv_async_event* event);
  // PD / MR. ibv_reg_mr is a macro over the exported `ibv_reg_mr` (plain
  // access flags) and `ibv_reg_mr_iova2` (optional-range flags); we only pass
  // the four basic access bits, so the exported ibv_reg_mr is the right one.
  ibv_pd* (*alloc_pd)(ibv_context* context);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access);
  int (*dereg_mr)(ibv_mr* mr);
  // Channels / CQs.
  ibv_comp_channel* (*create_comp_channel)(ibv_context* context);
  int (*destroy_comp_channel)(ibv_comp_channel* channel);
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context,
                       ibv_comp_channel* channel, int comp_vector);
  int (*destroy_cq)(ibv_cq* cq);
  int (*get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq,
                      void** cq_context);
  void (*ack_cq_events)(ibv_cq* cq, unsigned int nevents);
  // QPs.
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
  int (*query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                  ibv_qp_init_attr* init_attr);
  int (*destroy_qp)(ibv_qp* qp);
  // SRQs (ibv_post_srq_recv is inline: ctx->ops).
  ibv_srq* (*create_srq)(ibv_pd* pd, ibv_srq_init_attr* attr);
  int (*modify_srq)(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);
  int (*query_srq)(ibv_srq* srq, ibv_srq_attr* attr);
  int (*destroy_srq)(ibv_srq* srq);
  // Address handles (UD).
  ibv_ah* (*create_ah)(ibv_pd* pd, ibv_ah_attr* attr);
  int (*destroy_ah)(ibv_ah* ah);
};

// The loaded table, or nullptr when libibverbs cannot be used; then *why
// (if given) says what is missing. Thread-safe; loads once per process and
// never unloads. RXV_IBVERBS_LIBRARY overrides the file name (tests use it to
// simulate a machine without rdma-core).
const Api* api(std::string* why = nullptr);

// ibv_query_port as the header's inline wrapper does it: the extended
// verbs_context op when the provider has one, else the exported compat
// symbol on a zeroed full-size struct. Returns 0 or an errno value.
int query_port(const Api& a, ibv_context* ctx, uint8_t port,
               ibv_port_attr* out);

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
