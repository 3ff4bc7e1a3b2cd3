#include "pdlaunch/endpoint.h"

namespace pdlaunch {}  // namespace pdlaunch
