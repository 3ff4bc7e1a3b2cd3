// The launcher's own environment, read.
#include "pdlaunch/base/environment.h"

#include <cstdlib>

namespace pdlaunch {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace pdlaunch
