#pragma once

// One environment variable set (or unset) for a scope, and its earlier value, or absence, put
// back at the end: a test that changes the environment leaves it as it found it, even when an
// assertion returns early.

#include <stdlib.h>

#include <optional>
#include <string>

namespace pdlaunch::testutil {

class ScopedEnv {
 public:
  /// Sets `name` to `value`, or unsets it when `value` is nullopt.
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = ::getenv(name_.c_str())) saved_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (saved_) {
      ::setenv(name_.c_str(), saved_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

}  // namespace pdlaunch::testutil
