#include "pdlaunch/process.h"

namespace pdlaunch {}  // namespace pdlaunch
