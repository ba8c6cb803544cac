// UD on rdma-core: address handles (ibv_create_ah) and the translation of
// a UD send WR's destination into ibv_send_wr's wr.ud.
#pragma once

#ifdef RXV_HAVE_IBVERBS

#include "ibverbs_objects.h"

namespace rxv {
namespace ibv {

class IbvAh final : public Ah, public IbvChild {
 public:
  IbvAh(StatePtr st, IbvPd* pd, ibv_ah* ah, const AddressVector& av);
  ~IbvAh() override;
  const AddressVector& av() const override { return av_; }
  void destroy() override;

  ibv_ah* raw() const { return ah_; }
  void release_locked() noexcept override;
  IbvPd* pd_;  // nulled if the PD object goes away first

 private:
  StatePtr st_;
  ibv_ah* ah_;
  AddressVector av_;
};

// Why `w` cannot go on a UD QP of `pd` (nullptr: it can). A driver
// dereferences wr.ud.ah unchecked, so a missing or dead AH stops here.
const char* ud_refuse(const SendWr& w, const ibv_pd* pd);
// Fills d.wr.ud from an accepted WR.
void ud_address(const SendWr& w, ibv_send_wr* d);

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
