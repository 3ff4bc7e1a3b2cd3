// Who listens to a supervised run: the console and the job's record.
#include "run/job_status.h"

#include <utility>
#include <vector>

#include "pdlaunch/process/report_status.h"

namespace pdlaunch::internal {

std::shared_ptr<SupervisorStatus> JobStatus(ConsoleSettings console, RunReport* record) {
  auto printer = std::make_shared<ConsoleStatus>(std::move(console));
  if (record == nullptr) return printer;
  return std::make_shared<StatusFanOut>(std::vector<std::shared_ptr<SupervisorStatus>>{
      std::move(printer), std::make_shared<ReportStatus>(*record)});
}

}  // namespace pdlaunch::internal
