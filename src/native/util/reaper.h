// Tracks live native objects so the environment's teardown can close them,
// newest first. An object is always created after everything it uses, so
// reverse creation order honours every edge of the rule book's teardown
// order (rules/children.h) without the reaper knowing any kind.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "util/closable.h"

namespace rxv {

class Reaper {
 public:
  void Add(Closable* c) { live_[c] = ++seq_; }
  void Remove(Closable* c) { live_.erase(c); }
  size_t size() const { return live_.size(); }

  void CloseAll() {
    // Copy first: closing an object deregisters it (and may close children).
    std::vector<std::pair<uint64_t, Closable*>> order;
    order.reserve(live_.size());
    for (auto& [c, n] : live_) order.emplace_back(n, c);
    std::sort(order.begin(), order.end(),
              [](auto& a, auto& b) { return a.first > b.first; });
    for (auto& [n, c] : order) {
      if (live_.count(c)) c->CloseQuietly();  // one failure must not keep the rest
    }
    live_.clear();
  }

 private:
  std::map<Closable*, uint64_t> live_;
  uint64_t seq_ = 0;
};

}  // namespace rxv
