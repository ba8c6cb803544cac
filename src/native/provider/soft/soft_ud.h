// UD on the soft device: address handles, the UD rows of the QP state
// table, what a UD post must name, and where a datagram lands. The engine
// (soft_execute.cc, execute_ud) moves the bytes; this file decides.
//
// What the model follows (IB spec ch. 9-11, checked against rxe):
// - a datagram is unreliable: the sender's completion says it left, never
//   whether it arrived; nothing there (no QP, wrong state or type, qkey
//   mismatch, no receive posted) drops it silently;
// - every receive starts with 40 bytes for the GRH; byte_len counts them;
// - a message longer than the port's MTU sends nothing and completes
//   successfully (C10-93.1.1, as rxe does);
// - a send qkey travels as given, high bit included (as rxe sends it).
#pragma once

#include "soft_objects.h"

namespace rxv {
namespace soft {

struct AhCore : ChildCore {
  std::shared_ptr<PdCore> pd;
  AddressVector av;
  bool dead = false;  // G
};

class SoftAh final : public Ah {
 public:
  explicit SoftAh(std::shared_ptr<AhCore> c) : core(std::move(c)) {}
  ~SoftAh() override;
  const AddressVector& av() const override { return core->av; }
  void destroy() override;
  std::shared_ptr<AhCore> core;
};

// The UD rows of the QP state table, as the kernel enforces them: required
// and optional attribute mask bits for cur -> next.
struct UdRow {
  bool ok = false;
  uint32_t req = 0;
  uint32_t opt = 0;
};
UdRow ud_transition(uint32_t cur, uint32_t next);

// Post time (q->mu held): why `w` cannot go on UD QP q, or nullptr.
const char* ud_refuse(const QpCore* q, const SendWr& w);
// Copies the destination of an accepted UD WR into its slot.
void ud_address(const SendWr& w, SendSlot* slot);

// G held. The port MTU in bytes: the largest datagram s can send.
uint64_t ud_mtu_bytes(const QpCore* s);
// G held. The UD QP that accepts s's datagram `w`, or null (dropped).
QpCore* ud_route(QpCore* s, const SendSlot& w);
// G held. Writes the 40 bytes a receiver finds in front of the payload when
// the sender's address is global (returns false, writing nothing, when it
// is not: then no GRH travels). Built as RoCE v2 carries it (an IPv6
// header, next header UDP), as rxe hands it to a receiver.
bool ud_grh(const QpCore* s, const SendSlot& w, uint64_t payload, bool imm, uint8_t out[kGrhBytes]);

}  // namespace soft
}  // namespace rxv
