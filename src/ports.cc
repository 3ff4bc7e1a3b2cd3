#include "pdlaunch/ports.h"

namespace pdlaunch {}  // namespace pdlaunch
