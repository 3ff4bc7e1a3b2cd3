#include "pdlaunch/options.h"

namespace pdlaunch {}  // namespace pdlaunch
