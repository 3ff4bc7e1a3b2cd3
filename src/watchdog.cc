#include "pdlaunch/watchdog.h"

namespace pdlaunch {}  // namespace pdlaunch
