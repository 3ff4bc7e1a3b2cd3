#include "pdlaunch/console_echo.h"

namespace pdlaunch {}  // namespace pdlaunch
