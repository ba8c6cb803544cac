// The live native objects behind JS wrappers, each with its class's type tag:
// how a receiver or argument is checked with one private-symbol lookup
// (napi_unwrap) instead of two (the tag, then the wrap). napi_unwrap alone
// would trust whatever pointer any addon wrapped into the object; the
// registry accepts only the addresses of our own live objects of the class
// asked for.
#pragma once

#include <node_api.h>

namespace rxv {
namespace wrap_registry {

// Called by TaggedWrap's constructor and destructor (any thread that runs
// JS: every environment, main or worker, shares the one registry).
void Add(const void* self, const napi_type_tag& tag);
void Remove(const void* self);

// Whether `p` is a live object registered with `tag`.
bool Holds(const void* p, const napi_type_tag& tag);

}  // namespace wrap_registry
}  // namespace rxv
