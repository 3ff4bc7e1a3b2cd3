#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "pdlaunch/base/exit_status.h"

namespace pdlaunch {

/// The supervision policy as a pure state machine (no clocks, no processes): the event loop in
/// supervisor.cc feeds it events and carries out the commands it returns. Rules (docs/design.md):
/// * a process exiting non-zero or by a signal fails the job: every group gets SIGTERM at once and
///   one shared grace timer starts; when it expires, SIGKILL to every group;
/// * SIGINT, SIGTERM, SIGHUP, SIGQUIT to the launcher: the same teardown, but the signal itself is
///   what the groups receive; a second SIGINT (or any second termination signal) kills at once,
///   if it comes kRepeatWindow or more after the first: one Ctrl-C under a wrapper that relays it
///   (timeout, srun) arrives twice within milliseconds and is one request (docs/exit-codes.md);
/// * SIGUSR1/SIGUSR2 are forwarded without teardown;
/// * job control: SIGTSTP (Ctrl-Z) stops every group with SIGSTOP, then the launcher itself;
///   SIGCONT (`fg`, `bg`) is forwarded to every group. A stopped rank is not an exit;
/// * exit code: the first failing process's ShellCode(), or 128 + the launcher's signal; 0 only
///   when every process exited 0 and no signal arrived;
/// * completion: once every *primary* process has exited 0 (collective: all of them; PS: the
///   workers), the others (servers, heter workers) get SIGTERM and the shared grace; their exits
///   are then consequences, and the exit code stays 0. With `hold_secondaries` (a parameter-server
///   job across nodes, whose servers also serve other nodes' workers) the others are not stopped
///   then: the loop is told (`primaries_done`) and stops the run when the whole job is done.
class Supervision {
 public:
  /// What the event loop must do next, in this order.
  struct Commands {
    std::optional<int> signal_groups;  ///< Send this signal to every process group.
    bool arm_grace_timer = false;      ///< Start the shared grace timer (once per teardown).
    std::vector<int> newly_failed;     ///< Indices that failed in this event (report them).
    bool completing = false;           ///< The primaries are done; the rest are being stopped.
    bool primaries_done = false;       ///< hold_secondaries: the primaries are done, the rest held.
    bool repeat_ignored = false;       ///< A repeated termination signal inside kRepeatWindow.
    bool stop_launcher = false;        ///< Job control: stop the launcher too, after the groups.
  };

  /// Seconds within which a repeated termination signal is the same request, not a second one.
  static constexpr double kRepeatWindow = 0.5;

  /// Every process is primary.
  explicit Supervision(int num_processes);
  /// `primary[i]`: whether process i's clean exit is part of completing the job.
  explicit Supervision(std::vector<bool> primary, bool hold_secondaries = false);

  /// Processes that were found exited together (one sweep of the event loop). Every failure in
  /// one batch counts as a root cause, so simultaneous failures are all named in the ABORT line;
  /// exits after a teardown began are its consequences and are not failures.
  Commands OnExits(const std::vector<std::pair<int, ExitStatus>>& exits);
  Commands OnExit(int index, ExitStatus status) { return OnExits({{index, status}}); }
  /// `now`: seconds on any monotonic clock (only differences matter).
  Commands OnSignal(int signal, double now = 0);
  Commands OnGraceExpired();
  /// Something outside the processes ends the run: the same teardown as a failure (SIGTERM, shared
  /// grace), but nothing failed and the exit code stays as it is.
  Commands OnStopRequest();

  /// True once every process has been reaped.
  bool all_exited() const { return running_ == 0; }
  bool stopping() const { return stopping_; }
  /// True once OnStopRequest began a teardown.
  bool stop_requested() const { return stop_requested_; }
  /// True once the completion teardown began (see the class comment).
  bool completing() const { return completing_; }
  /// True when every primary process has exited 0 (whether or not others remain).
  bool primaries_succeeded() const { return PrimariesSucceeded(); }
  /// Indices of failed processes in the order their failures were seen.
  const std::vector<int>& failed() const { return failed_; }
  /// First failure, if any.
  std::optional<int> first_failure() const;
  /// The launcher's exit code; meaningful once all_exited().
  int exit_code() const;
  /// The termination signal that started a teardown, if one did.
  std::optional<int> received_signal() const { return signal_; }

  static bool IsTerminationSignal(int signal);
  static bool IsForwardedSignal(int signal);
  /// SIGTSTP and SIGCONT.
  static bool IsJobControlSignal(int signal);

 private:
  Commands BeginTeardown(int signal);

  bool PrimariesSucceeded() const;

  std::vector<std::optional<ExitStatus>> statuses_;
  std::vector<bool> primary_;
  std::vector<int> failed_;
  int running_;
  bool completing_ = false;
  bool stopping_ = false;
  bool killed_ = false;
  bool stop_requested_ = false;
  bool hold_secondaries_ = false;
  bool held_ = false;
  std::optional<int> signal_;
  double signal_time_ = 0;
};

}  // namespace pdlaunch
