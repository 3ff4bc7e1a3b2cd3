#pragma once

#include <map>
#include <string>
#include <vector>

#include "pdlaunch/process/run_report.h"
#include "pdlaunch/process/supervisor_status.h"

namespace pdlaunch {

/// The run report's observer of a supervised run (--report, docs/report.md): a record of every
/// process (its role, rank, pid, endpoint, devices, log, times, exit), the first failure as the
/// root cause, the termination signal, and what the device log measured. Several runs may
/// report into one RunReport (elastic restarts, auto-tuner trials): each adds its processes.
class ReportStatus : public SupervisorStatus {
 public:
  /// `report` must outlive this observer.
  explicit ReportStatus(RunReport& report) : report_(report) {}

  void NotStarted(int signal, size_t count) override;
  void Starting(const std::vector<SupervisedProcess>& processes) override;
  void Spawned(size_t index, const SupervisedProcess& process, pid_t pid) override;
  void Exited(size_t index, const ExitStatus& status) override;
  void Aborting(const std::vector<FailedProcess>& failed) override;
  void SignalReceived(const SignalEvent& event) override;
  void DeviceUsageMeasured(const std::map<std::string, DeviceUsage>& usage) override;

 private:
  void NoteSignal(int signal);

  RunReport& report_;
  size_t first_record_ = 0;                     ///< This run's first process in report_.processes.
  std::map<std::string, int> started_of_role_;  ///< For each process's local_rank.
};

}  // namespace pdlaunch
