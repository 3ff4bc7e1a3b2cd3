#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/process/device_log.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch {

/// A process the run saw fail, as observers are told of it. Valid during the call only.
struct FailedProcess {
  size_t index = 0;  ///< Among this run's processes, in the order given to Supervise.
  const SupervisedProcess* process = nullptr;
  pid_t pid = 0;
  ExitStatus status;
  off_t log_start = 0;  ///< Where this run's output starts in its log (an earlier run's before).
};

/// How the run takes a signal it received (the console words it differently for each).
enum class SignalTaken {
  kForwarded,       ///< SIGUSR1/SIGUSR2: passed to every group, nothing else.
  kRepeatIgnored,   ///< The same termination signal again within the repeat window.
  kStop,            ///< SIGTSTP: the groups and the launcher stop.
  kContinue,        ///< SIGCONT: they resume.
  kStopping,        ///< A first termination signal: SIGTERM to every group, grace timer.
  kKillingNow,      ///< A termination signal while stopping: SIGKILL to every group.
  kWhileFinishing,  ///< A termination signal as the loop ended: nothing left to stop.
};

struct SignalEvent {
  int signal = 0;
  SignalTaken taken = SignalTaken::kForwarded;
  /// No termination signal had been received before this one (today's console says
  /// `Terminating with signal N` once).
  bool first_termination = false;
  /// kKillingNow: the stop under way was itself asked for by a signal (`received X again`).
  bool again = false;
  size_t processes = 0;  ///< Processes of the run.
  size_t running = 0;    ///< Of them, still running.
  double grace_seconds = 0;
};

/// How the run ended, as observers are told of it.
struct RunEnd {
  SupervisorResult result;
  bool idle = false;            ///< A wait with no processes (the rendezvous).
  bool completed = false;       ///< Every process exited 0, no stop asked for, no signal.
  bool primaries_done = false;  ///< Every primary process exited 0 (PrimariesDone was told).
  size_t processes = 0;
  std::vector<std::string> roles;  ///< The roles that had processes here, each once.
};

/// What a supervised run reports as it goes, as ninja's Status: the supervisor decides and acts,
/// observers say (the console, process/console_status.h) and record (the run report,
/// process/report_status.h). Every call comes from the event loop's thread, in the order the
/// events happen; none may throw. The base class hears nothing: each event is a no-op.
class SupervisorStatus {
 public:
  virtual ~SupervisorStatus() = default;

  /// Where the job's processes are contained: the job's cgroup `cgroup_dir`, or (empty) none,
  /// for `why_not`, the launcher being their subreaper instead.
  virtual void Contained(const std::string& /*cgroup_dir*/, const std::string& /*why_not*/) {}
  /// A termination signal came before any of the `count` processes started: none is started.
  virtual void NotStarted(int /*signal*/, size_t /*count*/) {}
  /// The processes are about to start.
  virtual void Starting(const std::vector<SupervisedProcess>& /*processes*/) {}
  /// Process `index` started as `pid`. Told for each, in order, once all are started.
  virtual void Spawned(size_t /*index*/, const SupervisedProcess& /*process*/, pid_t /*pid*/) {}
  /// Every process started, with these pids in order.
  virtual void Started(const std::vector<pid_t>& /*pids*/) {}
  /// Process `index` exited and was reaped.
  virtual void Exited(size_t /*index*/, const ExitStatus& /*status*/) {}
  /// Every primary process exited 0 (the parameter-server job's workers).
  virtual void PrimariesDone() {}
  /// These processes were found failed, before the run stops the others.
  virtual void Aborting(const std::vector<FailedProcess>& /*failed*/) {}
  /// The same processes, once the stop is under way (and, if WantsEchoBeforeFailure, what the
  /// echo had still to show is shown, its last line ended).
  virtual void Failed(const std::vector<FailedProcess>& /*failed*/) {}
  /// Whether the next Failed is to come after the echo is drained and its last line ended
  /// (today's console shows a failed container after what the echo had, as Paddle's does; the
  /// legacy console leaves the echo as it is, byte for byte).
  virtual bool WantsEchoBeforeFailure() const { return false; }
  virtual void SignalReceived(const SignalEvent& /*event*/) {}
  /// `signal` (SIGTERM, SIGKILL) went to the process group led by `group`.
  virtual void GroupSignalled(pid_t /*group*/, int /*signal*/) {}
  /// `signal` went to `pid`, a process of the job outside every rank's group.
  virtual void EscapedSignalled(pid_t /*pid*/, int /*signal*/) {}
  /// Every process exited but `count` processes they started still run; they are stopped.
  virtual void StragglersLeft(size_t /*count*/) {}
  /// What <job_id>.gpu.log measured while the processes ran, per device index.
  virtual void DeviceUsageMeasured(const std::map<std::string, DeviceUsage>& /*usage*/) {}
  /// The run is over.
  virtual void Ended(const RunEnd& /*end*/) {}
};

/// Tells every observer in turn, in the order given.
class StatusFanOut : public SupervisorStatus {
 public:
  explicit StatusFanOut(std::vector<std::shared_ptr<SupervisorStatus>> observers)
      : observers_(std::move(observers)) {}

  void Contained(const std::string& cgroup_dir, const std::string& why_not) override {
    for (const auto& o : observers_) o->Contained(cgroup_dir, why_not);
  }
  void NotStarted(int signal, size_t count) override {
    for (const auto& o : observers_) o->NotStarted(signal, count);
  }
  void Starting(const std::vector<SupervisedProcess>& processes) override {
    for (const auto& o : observers_) o->Starting(processes);
  }
  void Spawned(size_t index, const SupervisedProcess& process, pid_t pid) override {
    for (const auto& o : observers_) o->Spawned(index, process, pid);
  }
  void Started(const std::vector<pid_t>& pids) override {
    for (const auto& o : observers_) o->Started(pids);
  }
  void Exited(size_t index, const ExitStatus& status) override {
    for (const auto& o : observers_) o->Exited(index, status);
  }
  void PrimariesDone() override {
    for (const auto& o : observers_) o->PrimariesDone();
  }
  void Aborting(const std::vector<FailedProcess>& failed) override {
    for (const auto& o : observers_) o->Aborting(failed);
  }
  void Failed(const std::vector<FailedProcess>& failed) override {
    for (const auto& o : observers_) o->Failed(failed);
  }
  bool WantsEchoBeforeFailure() const override {
    for (const auto& o : observers_) {
      if (o->WantsEchoBeforeFailure()) return true;
    }
    return false;
  }
  void SignalReceived(const SignalEvent& event) override {
    for (const auto& o : observers_) o->SignalReceived(event);
  }
  void GroupSignalled(pid_t group, int signal) override {
    for (const auto& o : observers_) o->GroupSignalled(group, signal);
  }
  void EscapedSignalled(pid_t pid, int signal) override {
    for (const auto& o : observers_) o->EscapedSignalled(pid, signal);
  }
  void StragglersLeft(size_t count) override {
    for (const auto& o : observers_) o->StragglersLeft(count);
  }
  void DeviceUsageMeasured(const std::map<std::string, DeviceUsage>& usage) override {
    for (const auto& o : observers_) o->DeviceUsageMeasured(usage);
  }
  void Ended(const RunEnd& end) override {
    for (const auto& o : observers_) o->Ended(end);
  }

 private:
  std::vector<std::shared_ptr<SupervisorStatus>> observers_;
};

}  // namespace pdlaunch
