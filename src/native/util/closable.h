// The one-method interface the reaper closes at environment teardown.
#pragma once

#include "util/uv_guard.h"

namespace rxv {

class Closable {
 public:
  virtual ~Closable() = default;
  // Releases native resources. `force` is true at environment teardown and
  // from finalizers: then nothing may be reported to JS and everything held
  // must be released even if a verb refuses (acks are flushed first).
  virtual void Close(bool force) = 0;
  // Close(true) from where nothing may escape (destructors run by the GC,
  // teardown): a failure is reported and the rest of the release goes on.
  void CloseQuietly() noexcept {
    NoEscape(nullptr, "releasing a native object", [this] { Close(true); });
  }
};

}  // namespace rxv
