#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/process/supervisor_status.h"

namespace pdlaunch {

/// What the console says of a supervised run, and in which of Paddle's two voices.
struct ConsoleSettings {
  /// Non-empty: today's launcher's console (docs/cli.md, "Console"), this node's pod name in its
  /// lines: `Run Pod: ...`, `Watching Pod: ...`, `Pod completed`/`Pod failed`, `Container failed
  /// !!!` with the last 3000 bytes of the log instead of `tail_lines`, `Terminating with signal
  /// N`, `Exit with signal N`. Empty: the legacy launcher's.
  std::string pod_name;
  int tail_lines = 20;  ///< Legacy console: lines of a failed rank's log shown on failure.
  /// Legacy console: `launch proc_id:PID idx:I` on stdout for each process started.
  bool print_started = false;
  /// Today's console: `Container failed !!!` also shows the process's environment as a Python
  /// dict (Paddle 3's FLAGS_print_launcher_env=true or 1, read by the run).
  bool print_env_on_failure = false;
  /// Says `Local processes completed.` (`Pod completed`) when every process exited 0; false for
  /// a stage before the job's own processes (--auto_parallel_config's tuner stage).
  bool say_completed = true;
  /// Logged (INFO) once every primary process has exited 0 (PS: "all workers exit, going to
  /// finish parameter server and heter_worker."). Empty: nothing.
  std::string primaries_done_message;
  /// (role, line) pairs logged (INFO) in this order at the end, after primaries_done_message was,
  /// for each role that had processes here (PS: "all parameter server are killed").
  std::vector<std::pair<std::string, std::string>> role_stopped_messages;
  /// A wait with no processes (an idle run): what it waits for, e.g. "the other nodes". A
  /// signal that ends it is told as `stopped by SIGINT while waiting for <waiting_for>`, before
  /// today's console's `Exit with signal N`. Empty: nothing is said.
  std::string waiting_for;
};

/// The console's observer of a supervised run: every line the launcher says of it (the ABORT
/// line, the failed rank's tail or container, what a signal does, how the run ended), through
/// the launcher's logger (base/logging.h) and, for `launch proc_id`, stdout.
class ConsoleStatus : public SupervisorStatus {
 public:
  explicit ConsoleStatus(ConsoleSettings settings) : settings_(std::move(settings)) {}

  void Contained(const std::string& cgroup_dir, const std::string& why_not) override;
  void NotStarted(int signal, size_t count) override;
  void Starting(const std::vector<SupervisedProcess>& processes) override;
  void Started(const std::vector<pid_t>& pids) override;
  void PrimariesDone() override;
  void Aborting(const std::vector<FailedProcess>& failed) override;
  void Failed(const std::vector<FailedProcess>& failed) override;
  bool WantsEchoBeforeFailure() const override { return today() && !container_shown_; }
  void SignalReceived(const SignalEvent& event) override;
  void GroupSignalled(pid_t group, int signal) override;
  void EscapedSignalled(pid_t pid, int signal) override;
  void StragglersLeft(size_t count) override;
  void Ended(const RunEnd& end) override;

 private:
  bool today() const { return !settings_.pod_name.empty(); }
  void ShowFailedContainer(const std::vector<FailedProcess>& failed);

  ConsoleSettings settings_;
  bool container_shown_ = false;  ///< Today's console shows one failed container per run.
};

/// The last `max_lines` lines of `path` written at or after byte `from`.
std::string TailOfFile(const std::string& path, off_t from, int max_lines);

/// The bytes of `path` from byte `from` on, at most the last `max_bytes` of them (the first line
/// may be cut, as Paddle's Container.tail cuts it), ending with a newline unless empty. A file
/// now shorter than `from` (truncated since) gives its last `max_bytes`.
std::string TailBytesOfFile(const std::string& path, off_t from, off_t max_bytes);

}  // namespace pdlaunch
