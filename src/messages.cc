#include "pdlaunch/messages.h"

namespace pdlaunch {}  // namespace pdlaunch
