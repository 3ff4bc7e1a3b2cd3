#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/base/exit_status.h"
#include "pdlaunch/options/echo_choice.h"
#include "pdlaunch/process/device_log.h"
#include "pdlaunch/process/process.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

class SupervisorStatus;  // process/supervisor_status.h

/// A process to supervise, with the data needed to report on it.
struct SupervisedProcess {
  ProcessSpec spec;
  std::string log_path;          ///< Its log file (tail shown on failure); may be empty.
  int rank = 0;                  ///< Global rank (index within its role) shown in messages.
  std::string role = "trainer";  ///< "trainer"; PS: "server", "worker", "heter_worker".
  int role_size = 0;             ///< Processes of this role in the whole job (ABORT line).
  bool primary = true;           ///< Its clean exit completes the job (see Supervision).
};

/// Something besides the processes that can end a run early: the elastic controller's etcd watch
/// and lease keep-alive. Both hooks run on the event loop, between its other events.
class ExternalEvents {
 public:
  virtual ~ExternalEvents() = default;
  /// The descriptor to wait for readability on, or -1 for none at the moment. Asked again after
  /// every OnReadable and OnTick (it may change, e.g. after a reconnect).
  virtual int fd() = 0;
  /// fd() is readable. Returns true to stop the run (SIGTERM to every group, shared grace).
  virtual bool OnReadable() = 0;
  /// Seconds between OnTick calls; 0: no ticks.
  virtual double tick_seconds() const = 0;
  /// The periodic tick. Returns true to stop the run.
  virtual bool OnTick() = 0;
};

struct SupervisorOptions {
  double grace_seconds = 5.0;
  int world_size = 0;     ///< For the ABORT line.
  std::string echo_path;  ///< Log file to echo to stdout live (local rank 0's); empty: none.
  /// --echo: echo these local processes (indices into the processes) instead of echo_path, each
  /// line prefixed (EchoPrefix); `echo_host` non-empty puts the node's host in the prefix.
  std::optional<EchoChoice> echo;
  std::string echo_host;
  /// Told of everything the run does, as it happens (ninja's Status): the console and the run
  /// report listen (process/console_status.h, process/report_status.h); the supervisor itself
  /// prints and records nothing. Null: nobody is told.
  std::shared_ptr<SupervisorStatus> status;
  /// Keep the non-primary processes running once the primaries are done (Supervision's
  /// hold_secondaries); `on_primaries_done` is told, and the caller ends the run through
  /// `stop_hook` when the whole job is done.
  bool hold_secondaries = false;
  std::function<void()> on_primaries_done;
  /// Called with each child's pid (= pgid) right after it is spawned.
  std::function<void(pid_t)> on_spawn;
  /// Called once, for the first process seen failing (the root cause), right after its siblings
  /// were sent SIGTERM and before the ABORT line.
  std::function<void(const SupervisedProcess&, const ExitStatus&)> on_first_failure;
  /// Directories the watchdog removes if the launcher dies without cleaning up (the gloo
  /// temporary directory): SIGKILL of the launcher must not leave them behind.
  std::vector<std::string> remove_if_killed;
  /// Not owned; may be null. With no processes at all, the loop runs until it asks to stop or a
  /// termination signal arrives (the elastic controller waits for its peers this way).
  ExternalEvents* external = nullptr;
  /// The event loop to run on; null: a private one. The master mode shares one loop with its
  /// HTTP server and clients across its phases (rendezvous, run, completion): they make progress
  /// whenever a Supervise call runs it.
  boost::asio::io_context* io = nullptr;
  /// Not owned; may be null. Supervise stores here, for the time it runs, a function that stops
  /// the run as ExternalEvents can (SIGTERM to every group, shared grace; with no processes it
  /// ends the wait), and clears it before returning. Handlers on the shared `io` call it.
  std::function<void()>* stop_hook = nullptr;
  /// The <job_id>.gpu.log to write while the processes run (process/device_log.h); none: no log.
  std::optional<DeviceLogSettings> device_log;
};

/// How a supervised run ended.
struct SupervisorResult {
  int exit_code = 0;          ///< As RunSupervised returns it.
  std::optional<int> signal;  ///< The termination signal the launcher received, if any.
  bool failed = false;        ///< A process failed (the ABORT line named it).
  bool stopped = false;       ///< ExternalEvents asked for the stop.
};

/// Runs the processes to the end under one event loop (Boost.Asio, single-threaded): exits come
/// from pidfds, signals from a signalfd, the grace period from one timer, the echo from
/// dnotify's SIGIO on a signalfd. A Watchdog registered with every process group covers the
/// launcher being SIGKILLed. The signals it acts on are blocked (BlockLauncherSignals) and stay
/// so after it returns: one that comes between two runs waits for the next. Returns the launcher's
/// exit code (see Supervision). Spawning errors throw; teardown of what was already started happens
/// first.
int RunSupervised(std::vector<SupervisedProcess> processes, const SupervisorOptions& options);

/// Starts `spec`, a helper the launcher runs outside a loop (--elastic_pre_hook), and waits for
/// it. A termination signal meanwhile (SIGINT, SIGTERM, SIGHUP, SIGQUIT: blocked, see above)
/// stops it, SIGTERM to its group and SIGKILL after `grace_seconds`, and stays pending for the
/// next loop, which acts on it: the helper is not left running, nor the launcher deaf until it
/// ends. Throws as a failed start of a rank does.
ExitStatus RunStoppingOnSignal(const ProcessSpec& spec, double grace_seconds);

/// RunSupervised, telling how the run ended.
SupervisorResult Supervise(std::vector<SupervisedProcess> processes,
                           const SupervisorOptions& options);

}  // namespace pdlaunch
