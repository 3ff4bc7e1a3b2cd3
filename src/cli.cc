#include "pdlaunch/cli.h"

namespace pdlaunch {}  // namespace pdlaunch
