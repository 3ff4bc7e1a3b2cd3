// The program (pdlaunch/run/launch.h's Main): prepares the process, parses, runs one decision
// (or the auto tuner's sequence of them), and turns every error into its one line and exit code.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/version.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/pod_console.h"
#include "pdlaunch/process/process.h"
#include "pdlaunch/process/report_file.h"
#include "pdlaunch/process/watchdog.h"
#include "pdlaunch/run/launch.h"
#include "pdlaunch/tuner/driver.h"
#include "run/job_decision.h"
#include "run/log_files.h"
#include "run/node_inputs.h"
#include "run/tuner_wiring.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;
using internal::EnvironmentMap;

/// A launch refused at set-up (a missing script, a bad #! line, a duplicate endpoint) must not
/// leave behind a log directory it created: removed when this run created it and no process
/// wrote a byte there (what is left are empty logs and the launcher's own endpoints/pod logs).
class LogDirGuard {
 public:
  explicit LogDirGuard(std::string dir)
      : dir_(std::move(dir)), made_(internal::MissingDirectories(dir_)) {}
  void CleanUp() const {
    std::error_code ec;
    if (made_.empty() || !fs::is_directory(dir_, ec)) return;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
      const std::string name = entry.path().filename().string();
      const bool output = name.starts_with("workerlog.") || name.starts_with("serverlog.") ||
                          name.starts_with("heterlog.");
      if (!entry.is_regular_file(ec) || (output && entry.file_size(ec) != 0)) return;
    }
    fs::remove_all(dir_, ec);
    internal::RemoveEmptyDirectories(made_);  // The parents this run made, if still empty.
  }

 private:
  std::string dir_;
  std::vector<fs::path> made_;  // Deepest first; empty: the directory existed.
};

/// Fills in the outcome and writes --report, if asked; the launcher's exit code is unchanged.
int Finish(const std::optional<std::string>& report_path, RunReport& report, int code,
           const std::string& error) {
  if (!report_path) return code;
  report.exit_code = code;
  report.end_time = WallClockNow();
  if (!error.empty()) {
    report.reason = error;
  } else if (!report.reason.empty() && code != 0) {
    // Set where the error was said (a rendezvous that failed: its message).
  } else if (code == 0) {
    report.reason = "success";
  } else if (report.root_cause) {
    report.reason = "process failure";
  } else if (report.signal) {
    report.reason = "signal " + SignalName(*report.signal);
  } else {
    report.reason = fmt::format("exit code {}", code);
  }
  if (const auto failed = WriteRunReport(*report_path, report)) {
    fmt::print(stderr, "launch: warning: --report: {}\n", *failed);
  }
  return code;
}

std::string HostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

/// What the process needs before anything else runs: descriptors 0-2 exist (on /dev/null where
/// the caller closed them, `launch ... >&-`), so that a file opened later never becomes our
/// stdout or stderr, nor a rank's log its own stdout; a console that goes away (a closed pipe)
/// does not kill the launcher and orphan the job; the launcher's signals are blocked before any
/// thread exists (Asio's resolver's), so every thread inherits the block; SIGCHLD is not
/// ignored (an inherited SIG_IGN would make the kernel reap our children before we see their
/// status).
void PrepareProcess() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
  ::signal(SIGPIPE, SIG_IGN);
  BlockLauncherSignals();
  ::signal(SIGCHLD, SIG_DFL);
  RaiseOpenFileLimit();
  SetupLogging();
}

void StartReport(RunReport& report, int argc, char** argv) {
  report.version = kVersion;
  report.command_line.assign(argv, argv + argc);
  report.host = HostName();
  report.start_time = WallClockNow();
}

/// Prints the configuration dump, once; by value, as the error handlers may call it after the
/// options are gone. Today's interface logs its options, then the job, through its logger
/// (Paddle 2.3+, docs/cli.md, "Configuration dump"); the legacy one prints Paddle 2's dump.
/// Either releases the lines held since the planning began (logging.h).
std::function<void()> MakeAnnounce(const LaunchOptions& options, const JobDecision& decision,
                                   const std::string& mode, bool todays_console) {
  if (!todays_console) {
    return [dump = FormatConfigurationArguments(options), announced = false]() mutable {
      if (announced) return;
      announced = true;
      fmt::print("{}", dump);
      std::fflush(stdout);
      ReleaseHeldLines();
    };
  }
  std::vector<std::string> first = ConfigurationLogLines(options);
  // An elastic job of the legacy flags in today's console: its --np is its node count.
  const std::string nodes = options.nnodes
                                ? *options.nnodes
                                : (decision.elastic.config ? decision.options.np.value_or("") : "");
  first.push_back(FormatJobLine(options.job_id.value_or("default"), mode, nodes));
  return [first = std::move(first), announced = false]() mutable {
    if (announced) return;
    announced = true;
    ReleaseHeldLines(first);
  };
}

/// The job `decision` names, or the auto tuner's search when --auto_tuner_json is given, which
/// runs each trial and the best through RunJob; what they record goes into `report`.
int RunChosen(const LaunchOptions& options, JobDecision decision, const EnvMap& env,
              const std::function<void()>& announce, RunReport& report) {
  if (!options.auto_tuner_json) {
    return RunDecided(std::move(decision), env, announce, JobControls{}, report);
  }
  const TunerWiring tuner = WireTuner(options, decision, env);
  return RunAutoTuner(
      options, [&options] { return internal::ResolveCollectiveDevices(options); },
      [&](LaunchOptions trial, const JobControls& controls) {
        // With --ips, the --master is the tuner's, not the trial's.
        if (tuner.ips_search) trial.master.reset();
        JobDecision job = Decide(trial, env);
        job.token = decision.token;  // Every trial's master checks the search's token.
        return RunJob(std::move(job), env, announce, controls);
      },
      tuner.exchange, announce, report);
}

/// What an error's handler needs of the run that was under way.
struct RunState {
  RunReport report;  // What --report writes: the run's, filled as it goes.
  std::optional<LogDirGuard> log_dir;
  std::optional<std::string> report_path;  // Known once parsed; a usage error writes none.
  std::function<void()> announce;          // Prints the configuration dump, once.
};

/// Parses and runs; throws what the run cannot recover from.
int ParseAndRun(int argc, char** argv, RunState& state) {
  CommandLine command_line = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (command_line.exit_text) {
    fmt::print("{}", *command_line.exit_text);
    return 0;
  }
  LaunchOptions& options = command_line.options;
  // Taken out of the environment before anything reads it or starts (a malformed one is a
  // usage error): no child inherits it; the job's decision carries it.
  std::optional<JobToken> token = internal::TakeJobToken();
  const EnvMap env = EnvironmentMap();
  const std::vector<std::string> notes = ApplyEnvironmentTwins(options, env);
  // The auto tuner's nodes agree on each trial through its own master, and each trial is an
  // --ips job of the list as Paddle 2 ran it (docs/auto-tuner.md, "Several nodes").
  if (options.auto_tuner_json) options.nodes_meet = false;
  SetLogLevel(options.log_level);
  // Today's interface gets today's console (docs/cli.md, "Console"), usage errors aside.
  const bool todays_console = UsesNewInterface(options);
  if (todays_console) SetLogStyle(LogStyle::kLaunch);
  options.program = argv[0];
  options.command_line.assign(argv + 1, argv + argc);
  JobDecision decision = Decide(options, env);  // Usage errors: one line, nothing else.
  decision.token = std::move(token);
  if (options.auto_tuner_json && options.dry_run) {
    return PrintAutoTunerPlan(options,
                              [&options] { return internal::ResolveCollectiveDevices(options); });
  }
  if (options.dry_run) return RunDryRun(decision);  // No dump, no log dir, no report.
  if (options.report) {
    // A report that cannot be written is said now, before anything starts: set-up error.
    if (const std::optional<std::string> problem = ReportPathProblem(*options.report)) {
      throw LaunchError(
          fmt::format("cannot write --report file '{}': {}", *options.report, *problem));
    }
  }
  state.report_path = options.report;
  RunReport& report = state.report;
  report.mode = decision.rpc ? "rpc" : decision.mode == JobMode::kCollective ? "collective" : "ps";
  report.launch_path = PathName(decision);
  state.log_dir.emplace(decision.options.log_dir);
  // The dump comes first on the console, once the path's usage checks have passed: what the
  // planning logs before it is held and written right after it (logging.h).
  HoldLines();
  for (const std::string& note : notes) PDLOG_INFO("{}", note);
  state.announce = MakeAnnounce(options, decision, report.mode, todays_console);
  const int code = RunChosen(options, std::move(decision), env, state.announce, report);
  ReleaseHeldLines();
  // Paddle's finalize line, once a pod was deployed (not after a failed rendezvous).
  // A run ended by a signal ends with "Exit with signal N" instead, as Paddle's.
  if (todays_console && !report.processes.empty() && !report.signal) {
    PDLOG_INFO("Exit code {}", code);
  }
  return Finish(state.report_path, report, code, "");
}

/// An error's one line, after what the run printed: a usage error is alone; a set-up error
/// comes after the dump and what was logged, as the run would have printed them. `bare`: the
/// command line was a bare `launch`, which gets the short usage line first.
int Fail(RunState& state, const std::string& what, int code, bool bare) {
  if (code == kExitUsageError) {
    DropHeldLines();
  } else if (state.announce) {
    state.announce();
  }
  std::fflush(stdout);
  if (bare) {
    fmt::print(stderr, "usage: launch [options] training_script [training_script_args ...]\n");
  }
  fmt::print(stderr, "launch: error: {}\n", OneLine(what));
  if (state.log_dir) state.log_dir->CleanUp();
  return Finish(code == kExitUsageError ? std::nullopt : state.report_path, state.report, code,
                what);
}

}  // namespace

int Main(int argc, char** argv) {
  // On every way out: the watchdogs, disarmed, exit at once; reaped here, none is left a zombie
  // for a PID 1 that does not reap (docs/design.md, Parent death).
  struct ReapAtExit {
    ~ReapAtExit() {
      if (const size_t left = ReapWatchdogs(std::chrono::seconds(2)); left > 0) {
        PDLOG_DEBUG("{} watchdog(s) had not exited 2 s after the job", left);
      }
    }
  } reap_at_exit;
  PrepareProcess();
  RunState state;
  StartReport(state.report, argc, argv);
  try {
    return ParseAndRun(argc, argv, state);
  } catch (const LaunchError& e) {
    return Fail(state, e.what(), e.exit_code(), /*bare=*/argc == 1);
  } catch (const std::exception& e) {
    return Fail(state, e.what(), kExitSetupError, /*bare=*/false);
  }
}

}  // namespace pdlaunch
