// The one place that reads the launcher's own switches (pdlaunch/base/switches.h).
#include "pdlaunch/base/switches.h"

#include <cstdlib>

namespace pdlaunch {

std::optional<std::string> ReadSwitch(Switch which) {
  const char* value = std::getenv(SwitchName(which));
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool SwitchOn(Switch which) {
  const std::optional<std::string> value = ReadSwitch(which);
  return value && *value != "0";
}

}  // namespace pdlaunch
