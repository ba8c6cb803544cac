#include "rules/srq.h"

#include <cerrno>
#include <string>

#include "provider/provider.h"

namespace rxv {
namespace rules {

void RefuseSrqLimit(const char* verb, uint32_t limit, uint32_t max_wr) {
  if (limit <= max_wr) return;
  throw VerbsError(EINVAL, verb,
                   "srq_limit exceeds max_wr (limit " + std::to_string(limit) + ", max_wr " +
                       std::to_string(max_wr) + ")");
}

}  // namespace rules
}  // namespace rxv
