#include "pdlaunch/supervision.h"

namespace pdlaunch {}  // namespace pdlaunch
