#pragma once

#include <string>
#include <string_view>

namespace pdlaunch {

/// Turns a byte stream into whole lines for the console: Feed() returns the bytes up to and
/// including the last '\n' seen so far; the rest waits for its newline. Finish() returns what is
/// left (a last line without newline). Lines are never split. Pure.
class LineAssembler {
 public:
  /// Appends `bytes`; returns the complete lines now available (possibly empty).
  std::string Feed(std::string_view bytes);
  /// Returns the pending partial line and clears it.
  std::string Finish();
  size_t pending() const { return partial_.size(); }

 private:
  std::string partial_;
};

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Returns false on any other
/// error (e.g. EPIPE when the console went away). Never throws.
bool WriteAll(int fd, std::string_view data) noexcept;

}  // namespace pdlaunch
