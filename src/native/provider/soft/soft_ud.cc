// UD QPs on the soft device: creation, the state table, post-time checks,
// routing a datagram and the GRH its receiver finds (see soft_ud.h).
#include "soft_ud.h"

#include <cstring>

#include "rules/datagrams.h"

namespace rxv {
namespace soft {

namespace m = qp_attr_mask;

std::unique_ptr<Qp> SoftPd::create_ud_qp(const QpInit& init) { return create_qp(core, init, qp_type::UD); }

UdRow ud_transition(uint32_t cur, uint32_t next) {
  using namespace qp_state;
  if (next == RESET || next == ERR) return {true, 0, 0};
  switch (cur) {
    case RESET:
      if (next == INIT) return {true, m::PKEY_INDEX | m::PORT | m::QKEY, 0};
      break;
    case INIT:
      if (next == INIT) return {true, 0, m::PKEY_INDEX | m::PORT | m::QKEY};
      if (next == RTR) return {true, 0, m::PKEY_INDEX | m::QKEY};
      break;
    case RTR:
      if (next == RTS) return {true, m::SQ_PSN, m::CUR_STATE | m::QKEY};
      break;
    case RTS:
      if (next == RTS) return {true, 0, m::CUR_STATE | m::QKEY};
      break;
    default:
      break;
  }
  return {};
}

const char* ud_refuse(const QpCore* q, const SendWr& w) {
  if (const char* why = rules::MalformedUdSendWr(w)) return why;
  auto* ah = dynamic_cast<SoftAh*>(w.ah);
  if (!ah) return "the address handle is not a soft device's";
  if (ah->core->pd != q->pd) return "the address handle belongs to another PD than the QP";
  return nullptr;
}

void ud_address(const SendWr& w, SendSlot* slot) {
  slot->av = static_cast<SoftAh*>(w.ah)->core->av;
  slot->remote_qpn = w.remote_qpn;
  slot->remote_qkey = w.remote_qkey;
}

uint64_t ud_mtu_bytes(const QpCore* s) {
  (void)s;
  return 4096;  // soft ports run IBV_MTU_4096 (soft_context.cc, query_port)
}

QpCore* ud_route(QpCore* s, const SendSlot& w) {
  const AddressVector& av = w.av;
  DeviceCore* sdev = s->ctx->dev.get();
  if (av.port_num < 1 || av.port_num > sdev->ports.size()) return nullptr;
  if (sdev->ports[av.port_num - 1].state != port_state::ACTIVE) return nullptr;
  const uint32_t qkey = w.remote_qkey;  // sent as given (see rules/datagrams.h)
  for (auto& d : fabric().devices) {
    for (size_t p = 0; p < d->ports.size(); ++p) {
      const DeviceCore::Port& port = d->ports[p];
      const bool hit = av.is_global ? std::memcmp(port.gid0.raw, av.dgid, 16) == 0 : port.lid == av.dlid;
      if (!hit) continue;
      if (port.state != port_state::ACTIVE) return nullptr;
      auto it = d->qps.find(w.remote_qpn);
      if (it == d->qps.end()) return nullptr;
      QpCore* r = it->second;
      if (r->type != qp_type::UD || r->dead) return nullptr;
      if (r->state != qp_state::RTR && r->state != qp_state::RTS) return nullptr;
      if (r->attr.port_num != p + 1) return nullptr;
      if (r->ctx->fatal.load(std::memory_order_relaxed)) return nullptr;
      if (r->attr.qkey != qkey) return nullptr;  // C9-49.2: dropped, no error
      return r;
    }
  }
  return nullptr;
}

bool ud_grh(const QpCore* s, const SendSlot& w, uint64_t payload, bool imm, uint8_t out[kGrhBytes]) {
  const AddressVector& av = w.av;
  if (!av.is_global) return false;
  const DeviceCore* dev = s->ctx->dev.get();
  // What follows the IPv6 header on RoCE v2: UDP 8, BTH 12, DETH 8, the
  // immediate 4, the payload padded to 4 bytes, ICRC 4.
  const uint64_t pad = (4 - payload % 4) % 4;
  const uint64_t len = 8 + 12 + 8 + (imm ? 4 : 0) + payload + pad + 4;
  std::memset(out, 0, kGrhBytes);
  out[0] = uint8_t(0x60 | (av.traffic_class >> 4));
  out[1] = uint8_t((av.traffic_class << 4) | ((av.flow_label >> 16) & 0xF));
  out[2] = uint8_t(av.flow_label >> 8);
  out[3] = uint8_t(av.flow_label);
  out[4] = uint8_t(len >> 8);
  out[5] = uint8_t(len);
  out[6] = 17;  // UDP
  out[7] = av.hop_limit;
  std::memcpy(out + 8, dev->ports[av.port_num - 1].gid0.raw, 16);
  std::memcpy(out + 24, av.dgid, 16);
  return true;
}

}  // namespace soft
}  // namespace rxv
