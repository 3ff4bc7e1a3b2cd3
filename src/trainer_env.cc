#include "pdlaunch/trainer_env.h"

namespace pdlaunch {}  // namespace pdlaunch
