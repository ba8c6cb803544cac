// Lazy loader for rdma-core's librdmacm, in the manner of the libibverbs
// loader (provider/ibverbs/ibverbs_loader.h): the addon never links it, so
// it loads where librdmacm is absent; the first CM call dlopens
// librdmacm.so.1 and resolves what we call into a table.
#pragma once

#include <string>

#if defined(RXV_HAVE_RDMACM) && defined(RXV_HAVE_IBVERBS)
#define RXV_RDMACM_BUILT 1
#include <rdma/rdma_cma.h>

namespace rxv {
namespace cm {
namespace rdmacm {

struct Api {
  rdma_event_channel* (*create_event_channel)();
  void (*destroy_event_channel)(rdma_event_channel* channel);
  int (*create_id)(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps);
  int (*destroy_id)(rdma_cm_id* id);
  int (*bind_addr)(rdma_cm_id* id, sockaddr* addr);
  int (*listen)(rdma_cm_id* id, int backlog);
  int (*resolve_addr)(rdma_cm_id* id, sockaddr* src, sockaddr* dst, int timeout_ms);
  int (*resolve_route)(rdma_cm_id* id, int timeout_ms);
  int (*connect)(rdma_cm_id* id, rdma_conn_param* param);
  int (*accept)(rdma_cm_id* id, rdma_conn_param* param);
  int (*reject)(rdma_cm_id* id, const void* private_data, uint8_t private_data_len);
  int (*establish)(rdma_cm_id* id);
  int (*disconnect)(rdma_cm_id* id);
  int (*migrate_id)(rdma_cm_id* id, rdma_event_channel* channel);
  int (*get_cm_event)(rdma_event_channel* channel, rdma_cm_event** event);
  int (*ack_cm_event)(rdma_cm_event* event);
  int (*init_qp_attr)(rdma_cm_id* id, ibv_qp_attr* attr, int* mask);
  ibv_context** (*get_devices)(int* num);
  void (*free_devices)(ibv_context** list);
};

// The table, or nullptr with *why naming what is missing. Loads once per
// process, never unloads. RXV_RDMACM_LIBRARY overrides the file name (tests
// use it to play a machine without librdmacm).
const Api* api(std::string* why = nullptr);

// A new event channel, or nullptr with *err (an errno) and *why naming the
// kernel's RDMA CM device node: librdmacm loads on a machine whose kernel
// has no RDMA CM (no rdma_ucm module, no RDMA device), and only opening a
// channel finds that out.
rdma_event_channel* open_event_channel(const Api* a, int* err, std::string* why);

}  // namespace rdmacm
}  // namespace cm
}  // namespace rxv
#endif

namespace rxv {
namespace cm {
// Whether a connection can be made with librdmacm here: the library loads
// and the kernel's RDMA CM gives an event channel (one is opened and closed
// on each call, so loading rdma_ucm later is seen). If not, *why says what
// is missing.
bool rdmacm_available(std::string* why);
}  // namespace cm
}  // namespace rxv
