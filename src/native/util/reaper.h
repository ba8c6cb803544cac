// Tracks live native objects so the environment's teardown can close them.
// It files each under its kind and closes them in the rule book's teardown
// order (rules::Registry::Teardown, rules/children.h): the order is stated
// once, there, for the providers' contexts and for this reaper alike.
#pragma once

#include <cstddef>

#include "rules/children.h"
#include "util/closable.h"

namespace rxv {

class Reaper {
 public:
  void Add(rules::Kind kind, Closable* c) { live_.Add(kind, c); }
  void Remove(rules::Kind kind, Closable* c) { live_.Remove(kind, c); }
  size_t size() const {
    size_t n = 0;
    for (size_t i = 0; i < rules::kKinds; ++i) n += live_.Count(static_cast<rules::Kind>(i));
    return n;
  }

  void CloseAll() {
    // Closing an object deregisters it (and may close others): Teardown
    // walks a copy and skips what is gone. One failure must not keep the
    // rest, and nothing may escape: each is closed quietly.
    live_.Teardown([](rules::Kind, Closable* c) { c->CloseQuietly(); });
    live_ = rules::Registry<Closable>();
  }

 private:
  rules::Registry<Closable> live_;
};

}  // namespace rxv
