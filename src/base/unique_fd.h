#pragma once
// One owner for a file descriptor, shared by the .cc files that hold descriptors of their own.

#include <unistd.h>

#include <utility>

namespace pdlaunch {

/// Owns a file descriptor (or none, -1); closes it on destruction. Movable, not copyable.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&&) = delete;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }
  int get() const noexcept { return fd_; }
  /// Gives the descriptor up without closing it.
  int Release() noexcept { return std::exchange(fd_, -1); }
  void Reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace pdlaunch
