#include "ibverbs_ud.h"

#ifdef RXV_HAVE_IBVERBS

#include <cerrno>
#include <cstring>

#include "rules/datagrams.h"

namespace rxv {
namespace ibv {

IbvAh::IbvAh(StatePtr st, IbvPd* pd, ibv_ah* ah, const AddressVector& av)
    : pd_(pd), st_(std::move(st)), ah_(ah), av_(av) {}

IbvAh::~IbvAh() {
  std::lock_guard<std::mutex> lock(st_->mu);
  release_locked();
  st_->children.Remove(rules::Kind::kAh, this);
}

void IbvAh::release_locked() noexcept {
  if (ah_ == nullptr) return;
  if (st_->api->destroy_ah(ah_) == 0 && pd_ != nullptr) pd_->users.Drop(rules::Kind::kAh);
  ah_ = nullptr;
}

void IbvAh::destroy() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (ah_ == nullptr) return;
  // Nothing counts an AH's users: the kernel lets it go with WRs posted.
  int ret = st_->api->destroy_ah(ah_);
  if (ret != 0) fail(ret, "ibv_destroy_ah", "");
  if (pd_ != nullptr) pd_->users.Drop(rules::Kind::kAh);
  ah_ = nullptr;
  st_->children.Remove(rules::Kind::kAh, this);
}

std::unique_ptr<Ah> IbvPd::create_ah(const AddressVector& av) {
  if (pd_ == nullptr) fail_closed("ibv_create_ah");
  ibv_ah_attr a;
  std::memset(&a, 0, sizeof a);
  a.dlid = av.dlid;
  a.sl = av.sl;
  a.port_num = av.port_num;
  a.is_global = av.is_global ? 1 : 0;
  if (av.is_global) {
    std::memcpy(a.grh.dgid.raw, av.dgid, sizeof av.dgid);
    a.grh.sgid_index = av.sgid_index;
    a.grh.hop_limit = av.hop_limit;
    a.grh.traffic_class = av.traffic_class;
    a.grh.flow_label = av.flow_label;
  }
  errno = 0;
  ibv_ah* ah = st_->api->create_ah(pd_, &a);
  if (ah == nullptr)
    fail(errno, "ibv_create_ah",
         av.is_global ? "global address (sgid_index " + std::to_string(av.sgid_index) + ")"
                      : "LID " + std::to_string(av.dlid) + " (RoCE needs a dgid)");
  std::lock_guard<std::mutex> lock(st_->mu);
  auto out = std::make_unique<IbvAh>(st_, this, ah, av);
  st_->children.Add(rules::Kind::kAh, out.get());
  users.Add(rules::Kind::kAh);
  return out;
}

std::unique_ptr<Qp> IbvPd::create_ud_qp(const QpInit& init) { return create_qp_of_type(init, qp_type::UD); }

const char* ud_refuse(const SendWr& w, const ibv_pd* pd) {
  if (const char* why = rules::MalformedUdSendWr(w)) return why;
  auto* ah = dynamic_cast<IbvAh*>(w.ah);
  if (ah == nullptr || ah->raw() == nullptr) return "the address handle is destroyed or not this device's";
  if (ah->raw()->pd != pd) return "the address handle belongs to another PD than the QP";
  return nullptr;
}

void ud_address(const SendWr& w, ibv_send_wr* d) {
  d->wr.ud.ah = static_cast<IbvAh*>(w.ah)->raw();
  d->wr.ud.remote_qpn = w.remote_qpn;
  d->wr.ud.remote_qkey = w.remote_qkey;
}

}  // namespace ibv
}  // namespace rxv

#endif  // RXV_HAVE_IBVERBS
