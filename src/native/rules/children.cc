#include "rules/children.h"

namespace rxv {
namespace rules {

namespace {

struct KindInfo {
  const char* noun;
  const char* destroy_verb;
};

// Indexed by Kind, in its order.
constexpr KindInfo kInfo[kKinds] = {
    {"QP", "ibv_destroy_qp"},
    {"SRQ", "ibv_destroy_srq"},
    {"AH", "ibv_destroy_ah"},
    {"CQ", "ibv_destroy_cq"},
    {"MR", "ibv_dereg_mr"},
    {"PD", "ibv_dealloc_pd"},
    {"completion channel", "ibv_destroy_comp_channel"},
    {"CM id", "rdma_destroy_id"},
    {"CM event channel", "rdma_destroy_event_channel"},
    {"context", "ibv_close_device"},
};

}  // namespace

const char* Noun(Kind k) { return kInfo[Rank(k)].noun; }
const char* DestroyVerb(Kind k) { return kInfo[Rank(k)].destroy_verb; }

}  // namespace rules
}  // namespace rxv
