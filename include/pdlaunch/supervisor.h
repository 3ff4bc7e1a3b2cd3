#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/process.h"

namespace pdlaunch {

/// A process to supervise, with the data needed to report on it.
struct SupervisedProcess {
  ProcessSpec spec;
  std::string log_path;          ///< Its log file (tail shown on failure); may be empty.
  int rank = 0;                  ///< Global rank (index within its role) shown in messages.
  std::string role = "trainer";  ///< "trainer"; PS: "server", "worker", "heter_worker".
  int role_size = 0;             ///< Processes of this role in the whole job (ABORT line).
  bool primary = true;           ///< Its clean exit completes the job (see Supervision).
};

struct SupervisorOptions {
  double grace_seconds = 5.0;
  int world_size = 0;     ///< For the ABORT line.
  std::string echo_path;  ///< Log file to echo to stdout live (local rank 0's); empty: none.
  int tail_lines = 20;    ///< Lines of a failed rank's log shown on failure.
  /// Logged (INFO) once every primary process has exited 0 (PS: "all workers exit, going to
  /// finish parameter server and heter_worker."). Empty: nothing.
  std::string primaries_done_message;
  /// (role, line) pairs logged (INFO) in this order at the end, after primaries_done_message was,
  /// for each role that had processes here (PS: "all parameter server are killed").
  std::vector<std::pair<std::string, std::string>> role_stopped_messages;
  /// Called with each child's pid (= pgid) right after it is spawned.
  std::function<void(pid_t)> on_spawn;
  /// Called once every process is started, with their pids in order.
  std::function<void(const std::vector<pid_t>&)> on_started;
};

/// Runs the processes to the end under one event loop (Boost.Asio, single-threaded): exits come
/// from pidfds, signals from one signal_set, the grace period from one timer, the echo from
/// inotify. A Watchdog registered with every process group covers the launcher being SIGKILLed.
/// Owns the launcher's signal handling while Run() executes and restores it after. Returns the
/// launcher's exit code (see Supervision). Spawning errors throw; teardown of what was already
/// started happens first.
int RunSupervised(std::vector<SupervisedProcess> processes, const SupervisorOptions& options);

}  // namespace pdlaunch
