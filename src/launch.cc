#include "pdlaunch/launch.h"

namespace pdlaunch {}  // namespace pdlaunch
