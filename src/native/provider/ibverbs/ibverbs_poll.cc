// Completion queue of the ibverbs provider, data path: poll (ibv_wc to Wc),
// arm and ack. Creation and destroy are ibverbs_cq.cc.
#include "ibverbs_objects.h"

#ifdef RXV_HAVE_IBVERBS

#include <arpa/inet.h>

#include <string>

namespace rxv {
namespace ibv {

void IbvCq::req_notify(bool solicited_only) {
  if (cq_ == nullptr) fail_closed("ibv_req_notify_cq");
  int ret = ibv_req_notify_cq(cq_, solicited_only ? 1 : 0);  // inline (ops)
  if (ret != 0)
    fail(ret > 0 ? ret : EIO, "ibv_req_notify_cq",
         solicited_only ? "arming for solicited completions" : "arming");
}

int IbvCq::poll(int max, Wc* out) {
  if (cq_ == nullptr) fail_closed("ibv_poll_cq");
  constexpr int kChunk = 32;
  ibv_wc wc[kChunk];
  int total = 0;
  while (total < max) {
    int want = max - total < kChunk ? max - total : kChunk;
    int n = ibv_poll_cq(cq_, want, wc);  // inline (ops)
    if (n < 0) {
      if (total > 0) return total;  // report what we got; next poll throws
      fail(EIO, "ibv_poll_cq",
           "the CQ is in error (overrun?), provider returned " +
               std::to_string(n));
    }
    for (int i = 0; i < n; ++i) {
      const ibv_wc& s = wc[i];
      Wc& d = out[total + i];
      d = Wc{};
      d.wr_id = s.wr_id;
      d.status = s.status;
      d.vendor_err = s.vendor_err;
      d.qp_num = s.qp_num;
      // Only wr_id, status, qp_num and vendor_err are defined on an error
      // completion; leave the rest 0 rather than pass garbage on.
      if (s.status == IBV_WC_SUCCESS) {
        d.opcode = s.opcode;
        d.byte_len = s.byte_len;
        d.src_qp = s.src_qp;
        d.wc_flags = s.wc_flags;
        d.slid = s.slid;
        d.sl = s.sl;
        d.dlid_path_bits = s.dlid_path_bits;
        // imm_data is network byte order (__be32) in libibverbs; Wc::imm is
        // the host-order value (post_send converts back with htonl), so an
        // immediate posted as X is received as X on both providers.
        if (s.wc_flags & IBV_WC_WITH_IMM) d.imm = ntohl(s.imm_data);
      }
    }
    total += n;
    if (n < want) break;
  }
  return total;
}

void IbvCq::ack_events(uint32_t n) {
  if (n == 0) return;
  if (cq_ == nullptr) fail_closed("ibv_ack_cq_events");
  // Over-acking would corrupt libibverbs' counters and make ibv_destroy_cq
  // wait forever.
  events.Ack(n);
  st_->api->ack_cq_events(cq_, n);
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
