#include "pdlaunch/training_command.h"

namespace pdlaunch {}  // namespace pdlaunch
