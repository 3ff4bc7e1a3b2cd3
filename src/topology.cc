#include "pdlaunch/topology.h"

namespace pdlaunch {}  // namespace pdlaunch
