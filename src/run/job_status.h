#pragma once

#include <memory>

#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/run_report.h"
#include "pdlaunch/process/supervisor_status.h"

namespace pdlaunch::internal {

/// The observers of a run the launcher supervises: the console, in `console`'s voice, and the
/// job's record `record` (--report), in that order; a wait with no processes of a job (the auto
/// tuner's exchanges) passes a null `record` and has the console alone. `record` must outlive
/// the observers.
std::shared_ptr<SupervisorStatus> JobStatus(ConsoleSettings console, RunReport* record);

}  // namespace pdlaunch::internal
