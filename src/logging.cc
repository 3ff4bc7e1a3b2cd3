#include "pdlaunch/logging.h"

namespace pdlaunch {}  // namespace pdlaunch
