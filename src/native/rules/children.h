// Which objects an object has and the order they go in, for every provider
// and for the wrap layer's reaper. The kinds are listed in the safe teardown
// order: each kind is destroyed before every kind it uses (a QP uses its PD,
// CQs and perhaps an SRQ; an SRQ, an address handle and an MR use their PD;
// a CQ its channel; all of them their context), so walking them in this
// order never asks a verb to destroy something still in use. A new kind of object (a CM id, an SRQ) is one line in Kind, and one
// in the tables of children.cc, placed before what it uses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace rxv {
namespace rules {

enum class Kind : uint8_t { kQp, kSrq, kAh, kCq, kMr, kPd, kChannel, kCmId, kCmChannel, kContext };
constexpr size_t kKinds = static_cast<size_t>(Kind::kContext) + 1;

// Lower goes first at teardown.
constexpr size_t Rank(Kind k) { return static_cast<size_t>(k); }
// "QP", "CQ", ... as messages name them.
const char* Noun(Kind k);
// The verb that destroys one ("ibv_destroy_qp", ...).
const char* DestroyVerb(Kind k);

// How many objects of each kind use one object (a PD's MRs and QPs, a CQ's
// QPs, a channel's CQs) or are still open on it (a context's children).
class Users {
 public:
  static Users Of(Kind k, size_t n) {
    Users u;
    u.Add(k, n);
    return u;
  }
  void Add(Kind k, size_t n = 1) { n_[Rank(k)] += n; }
  void Drop(Kind k) {
    if (n_[Rank(k)] > 0) --n_[Rank(k)];
  }
  size_t operator[](Kind k) const { return n_[Rank(k)]; }
  bool any() const {
    for (size_t n : n_)
      if (n) return true;
    return false;
  }

 private:
  std::array<size_t, kKinds> n_{};
};

// An object cannot go while anything uses it: VerbsError(EBUSY,
// DestroyVerb(self), "2 QP(s) and 1 MR(s) still use this PD").
void RefuseBusy(Kind self, const Users& users);

// The live children of one context, by kind. `T` is the provider's common
// base of its objects; typed access casts down from it, so a provider files
// each object under the kind it is. Not synchronized: its owner says which
// lock guards it.
template <typename T>
class Registry {
 public:
  void Add(Kind k, T* c) { live_[Rank(k)].insert(c); }
  void Remove(Kind k, T* c) { live_[Rank(k)].erase(c); }
  bool Has(Kind k, T* c) const { return live_[Rank(k)].count(c) != 0; }
  size_t Count(Kind k) const { return live_[Rank(k)].size(); }

  // A copy: the caller may add or remove children while it walks it.
  template <typename U>
  std::vector<U*> List(Kind k) const {
    std::vector<U*> out;
    out.reserve(live_[Rank(k)].size());
    for (T* c : live_[Rank(k)]) out.push_back(static_cast<U*>(c));
    return out;
  }

  Users Open() const {
    Users u;
    for (size_t i = 0; i < kKinds; ++i) u.Add(static_cast<Kind>(i), live_[i].size());
    return u;
  }

  // release(kind, child) for every child, kinds in teardown order. Walks a
  // copy, so release may remove children (its own or others').
  template <typename F>
  void Teardown(F release) const {
    for (size_t i = 0; i < kKinds; ++i) {
      std::vector<T*> now(live_[i].begin(), live_[i].end());
      for (T* c : now)
        if (live_[i].count(c)) release(static_cast<Kind>(i), c);
    }
  }

 private:
  std::array<std::set<T*>, kKinds> live_;
};

}  // namespace rules
}  // namespace rxv
