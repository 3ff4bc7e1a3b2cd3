#include "pdlaunch/supervisor.h"

namespace pdlaunch {}  // namespace pdlaunch
