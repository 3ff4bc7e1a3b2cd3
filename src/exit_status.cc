#include "pdlaunch/exit_status.h"

namespace pdlaunch {}  // namespace pdlaunch
