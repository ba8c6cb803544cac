// The one-method interface the reaper closes at environment teardown.
#pragma once

namespace rxv {

class Closable {
 public:
  virtual ~Closable() = default;
  // Releases native resources. `force` is true at environment teardown and
  // from finalizers: then nothing may be reported to JS and everything held
  // must be released even if a verb refuses (acks are flushed first).
  virtual void Close(bool force) = 0;
};

}  // namespace rxv
