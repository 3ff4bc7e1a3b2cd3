// Who listens to a supervised run: the console and the run report.
#include "run/job_status.h"

#include <utility>

#include "pdlaunch/process/report_status.h"
#include "pdlaunch/process/run_recorder.h"

namespace pdlaunch::internal {

std::shared_ptr<SupervisorStatus> JobStatus(ConsoleSettings console) {
  return std::make_shared<StatusFanOut>(std::vector<std::shared_ptr<SupervisorStatus>>{
      std::make_shared<ConsoleStatus>(std::move(console)),
      std::make_shared<ReportStatus>(TheRunReport())});
}

}  // namespace pdlaunch::internal
