#include "pdlaunch/devices.h"

namespace pdlaunch {}  // namespace pdlaunch
