#include "pdlaunch/node.h"

namespace pdlaunch {}  // namespace pdlaunch
