#pragma once

#include <memory>

#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/supervisor_status.h"

namespace pdlaunch::internal {

/// The observers of every run the launcher supervises: the console, in `console`'s voice, and
/// the run report (--report), in that order.
std::shared_ptr<SupervisorStatus> JobStatus(ConsoleSettings console = {});

}  // namespace pdlaunch::internal
