// The supervisor's event loop: it starts the processes, watches their exits, signals, timers and
// the caller's events, and stops the job as Supervision decides. It tells observers
// (SupervisorStatus) what happens; it prints and records nothing itself.
#include "pdlaunch/process/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>  // Its process_handle.hpp alone does not compile (1.81).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>

#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/nested_launch.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/base/switches.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/job_cgroup.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/supervision.h"
#include "pdlaunch/process/supervisor_status.h"
#include "pdlaunch/process/watchdog.h"
#include "process/echo_watcher.h"
#include "process/process_launcher.h"
#include "process/signal_intake.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
using StreamDescriptor = asio::posix::stream_descriptor;

off_t FileSize(const std::string& path) {
  struct stat st {};
  return (!path.empty() && ::stat(path.c_str(), &st) == 0) ? st.st_size : 0;
}

/// Makes each ProcessSpec::output_banner the bytes to write: kept only for a log that is
/// appended to and holds an earlier run's output, after a newline when that output did not end
/// with one. Decided here, once, before any log is opened: the child (or CreateLogsFirst) only
/// writes them, and where this run's output starts follows from them.
std::vector<SupervisedProcess>& PrepareBanners(std::vector<SupervisedProcess>& processes) {
  for (SupervisedProcess& p : processes) {
    std::string& banner = p.spec.output_banner;
    if (banner.empty()) continue;
    const off_t size = p.spec.output_truncate ? 0 : FileSize(p.spec.output_path);
    if (size == 0) {
      banner.clear();
      continue;
    }
    char last = '\n';
    const UniqueFd fd(::open(p.spec.output_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() >= 0 && ::pread(fd.get(), &last, 1, size - 1) == 1 && last != '\n') {
      banner.insert(0, "\n");
    }
  }
  return processes;
}

/// One supervised child and Boost.Process v2's handle of it, which reports and reaps its exit.
struct Child {
  ProcessLauncher::Child process;      ///< v2's owner of the child while it runs.
  pid_t pid = -1;                      ///< Also its process group (each leads its own).
  std::optional<ExitStatus> status{};  ///< Once reaped.
  SupervisedProcess info;
  off_t log_start = 0;
};

std::vector<bool> Primaries(const std::vector<SupervisedProcess>& processes) {
  std::vector<bool> primary;
  for (const SupervisedProcess& p : processes) primary.push_back(p.primary);
  return primary;
}

/// The job's cgroup, or null with the launcher made a subreaper instead (docs/design.md,
/// "Containment"). PDLAUNCH_NO_CGROUP=1 forces the fallback (tests of both paths).
std::unique_ptr<JobCgroup> ContainJob(SupervisorStatus& status) {
  std::string why_not = "PDLAUNCH_NO_CGROUP is set";
  std::unique_ptr<JobCgroup> cgroup =
      SwitchOn(Switch::kNoCgroup) ? nullptr : JobCgroup::Create(&why_not);
  if (!cgroup) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  status.Contained(cgroup ? cgroup->dir() : std::string(), why_not);
  return cgroup;
}

class EventLoop {
 public:
  EventLoop(std::vector<SupervisedProcess> processes, const SupervisorOptions& options)
      : options_(options),
        status_(options.status ? options.status : std::make_shared<SupervisorStatus>()),
        own_io_(options.io ? nullptr : std::make_unique<asio::io_context>()),
        io_(options.io ? *options.io : *own_io_),
        signals_(io_, SupervisedSignalSet(), [this](int signal) { OnSignal(signal); }),
        grace_timer_(io_),
        tick_timer_(io_),
        external_event_(io_),
        policy_(Primaries(processes), options.hold_secondaries),
        created_logs_(CreateLogsFirst(PrepareBanners(processes), options)),
        echo_(io_, EchoSources(processes, options)),
        // A wait without processes (the rendezvous) contains nothing and needs no watchdog.
        cgroup_(processes.empty() ? nullptr : ContainJob(*status_)) {
    if (!processes.empty()) {
      // Without a cgroup, the processes that left the groups are found by their environment.
      watchdog_.emplace(options.remove_if_killed, cgroup_ ? cgroup_->dir() : std::string(),
                        processes.size(), cgroup_ ? std::string() : NestedMarkerEntry(::getpid()));
    }
    pending_ = std::move(processes);
    idle_ = pending_.empty() && (options_.external != nullptr || options_.stop_hook != nullptr);
  }

  SupervisorResult Run() {
    // A termination signal that came while no loop ran (a Ctrl-C between two auto-tuner trials,
    // during --elastic_pre_hook) stops the job before any process of it starts.
    if (!pending_.empty()) {
      if (const int signal = TakeTerminationSignal(); signal != 0) {
        status_->NotStarted(signal, pending_.size());
        return SupervisorResult{128 + signal, signal, false, false};
      }
    }
    signals_.Start();
    StartAll();
    if (options_.device_log && !policy_.all_exited()) {
      device_log_ = std::make_unique<DeviceLogSampler>(io_, *options_.device_log);
    }
    if (options_.external) {
      WaitForExternal();
      ArmTick();
    }
    if (options_.stop_hook) *options_.stop_hook = [this] { RequestStop(); };
    {
      // The hook is this loop's: cleared before the late-signal pass (a tick of the caller's
      // that runs there must not see it) and on an exception out of a handler.
      struct ClearHook {
        std::function<void()>* hook;
        ~ClearHook() {
          if (hook) *hook = nullptr;
        }
      } clear{options_.stop_hook};
      if (!policy_.all_exited() || idle_) {
        io_.restart();  // A shared loop was stopped by the previous run's Finish().
        io_.run();
      }
    }
    if (device_log_) {
      status_->DeviceUsageMeasured(device_log_->usage());
      device_log_.reset();  // Kills and reaps a sample in flight.
    }
    CollectLateSignals();
    echo_.Finish();
    // The job is contained and over: the watchdog may go now, on the other core, while we
    // finish; the launcher reaps it before it exits (ReapWatchdogs, in Main).
    if (watchdog_) watchdog_->Disarm();
    RunEnd end;
    end.result = SupervisorResult{policy_.exit_code(), policy_.received_signal(),
                                  !policy_.failed().empty(), policy_.stop_requested()};
    end.idle = idle_;
    end.completed = policy_.exit_code() == 0 && !idle_ && !policy_.stop_requested() &&
                    !policy_.received_signal();
    end.primaries_done = primaries_done_;
    end.processes = children_.size();
    for (const Child& child : children_) {
      if (std::find(end.roles.begin(), end.roles.end(), child.info.role) == end.roles.end()) {
        end.roles.push_back(child.info.role);
      }
    }
    status_->Ended(end);
    return end.result;
  }

 private:
  void StartAll() {
    std::fflush(stdout);  // Our own stdout text must precede the echoed rank output.
    children_.reserve(pending_.size());
    status_->Starting(pending_);
    // Asked once for the batch: each child then resets only these (ProcessSpec::reset_signals).
    const uint64_t reset_signals = NonDefaultSignals();
    std::vector<const ProcessSpec*> specs;
    std::vector<off_t> log_starts;
    for (SupervisedProcess& p : pending_) {
      p.spec.reset_signals = reset_signals;
      // Where this run's output starts, for the tail shown on failure: after the banner, which
      // CreateLogsFirst has written already to a log it opened, and the child writes first.
      log_starts.push_back(
          p.spec.output_truncate
              ? 0
              : FileSize(p.log_path) +
                    (p.spec.output_fd >= 0 ? 0 : static_cast<off_t>(p.spec.output_banner.size())));
      if (cgroup_) {
        p.spec.cgroup_dir_fd = cgroup_->dir_fd();
        p.spec.cgroup_procs_fd = cgroup_->procs_fd();
      }
      specs.push_back(&p.spec);
    }
    std::vector<pid_t> pids;
    std::vector<ProcessLauncher::Child> started =
        ProcessLauncher()(io_.get_executor(), specs, [&](size_t /*index*/, pid_t pid) {
          watchdog_->Register(pid);
          if (options_.on_spawn) options_.on_spawn(pid);
          pids.push_back(pid);
        });
    for (size_t i = 0; i < started.size(); ++i) {
      children_.push_back(Child{std::move(started[i]), pids[i], std::nullopt,
                                std::move(pending_[i]), log_starts[i]});
      status_->Spawned(i, children_.back().info, pids[i]);
    }
    status_->Started(pids);
    for (size_t i = 0; i < children_.size(); ++i) WaitForExit(i);
  }

  // v2's wait completes once the child has exited and been reaped (waitpid), with its wait
  // status; its pidfd wakes the loop. Under a tracer (strace -f, gdb) the pidfd fires when the
  // tracer is told of the exit and v2's waitpid then waits for the tracer to let the zombie go.
  void WaitForExit(size_t index) {
    children_[index].process.handle().async_wait(
        [this, index, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec,
                                                                int wait_status) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          // An error: a sweep reaped the child first (ECHILD), or the handle was closed.
          if (ec || children_[index].status) return;
          Reaped(index, FromWaitStatus(wait_status));
        });
  }

  // Records a reaped child and has the exits of this turn of the loop handled together: the
  // handlers of every child whose exit the kernel reported at once run before the posted one.
  void Reaped(size_t index, ExitStatus status) {
    Record(index, status);
    exits_.emplace_back(static_cast<int>(index), status);
    if (exits_.size() > 1) return;  // Already posted.
    asio::post(io_, [this, life = std::weak_ptr<const bool>(alive_)] {
      if (life.expired()) return;
      HandleExits(std::exchange(exits_, {}));
    });
  }

  void Record(size_t index, ExitStatus status) {
    Child& child = children_[index];
    child.status = status;
    // Reaped: v2's handle lets the pid go (its destructor would waitpid it, and kill whatever
    // process of ours was given that pid since).
    child.process.detach();
    status_->Exited(index, status);
  }

  // The exits of one turn of the loop. A failure first reaps every child that has exited by
  // now (v2's running(), which reaps without waiting), so that failures seen together are
  // reported together; a success is reported alone (sweeping all N children on each of N
  // successful exits cost O(N^2) waitpid calls).
  void HandleExits(std::vector<std::pair<int, ExitStatus>> exits) {
    const bool failure = std::any_of(exits.begin(), exits.end(),
                                     [](const auto& exit) { return !exit.second.success(); });
    if (failure) {
      for (size_t i = 0; i < children_.size(); ++i) {
        Child& child = children_[i];
        if (child.status) continue;
        int wait_status = 0;
        boost::system::error_code ec;
        if (!child.process.handle().running(wait_status, ec) && !ec) {
          Record(i, FromWaitStatus(wait_status));
          exits.emplace_back(static_cast<int>(i), *child.status);
        }
      }
    }
    const Supervision::Commands commands = policy_.OnExits(exits);
    if (!primaries_done_ && policy_.failed().empty() && policy_.primaries_succeeded()) {
      primaries_done_ = true;
      status_->PrimariesDone();
    }
    const std::vector<FailedProcess> failed = FailedOnes(commands.newly_failed);
    // The ABORT line comes before the lines of the stop it causes, as in Paddle (its
    // watch_local_trainers logs it, then terminate_local_procs stops the groups).
    if (!failed.empty()) status_->Aborting(failed);
    Execute(commands);
    if (commands.primaries_done && options_.on_primaries_done) options_.on_primaries_done();
    if (!failed.empty()) {
      if (options_.on_first_failure && policy_.failed().size() == failed.size()) {
        options_.on_first_failure(*failed.front().process, failed.front().status);
      }
      if (status_->WantsEchoBeforeFailure()) {
        // What the echo had still to show comes first, its last line ended: the account of
        // the failure starts lines of its own.
        echo_.DrainLines();
        echo_.EndLine();
        std::fflush(stdout);
      }
      status_->Failed(failed);
    }
    MaybeFinish();
  }

  // The external descriptor is dup'ed afresh after every callback: the owner may have replaced
  // (and closed) it, and a stale duplicate of a dead socket would stay readable forever.
  void WaitForExternal() {
    boost::system::error_code ignored;
    external_event_.close(ignored);
    if (finished_) return;
    const int fd = options_.external->fd();
    if (fd < 0) return;
    external_event_.assign(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    external_event_.async_wait(
        StreamDescriptor::wait_read,
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          if (ec || finished_) return;
          if (options_.external->OnReadable()) RequestStop();
          WaitForExternal();
        });
  }

  void ArmTick() {
    const double seconds = options_.external->tick_seconds();
    if (seconds <= 0 || finished_) return;
    tick_timer_.expires_after(SteadyDuration(seconds));
    tick_timer_.async_wait(
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          if (ec || finished_) return;
          if (options_.external->OnTick()) RequestStop();
          WaitForExternal();
          ArmTick();
        });
  }

  void RequestStop() {
    if (policy_.stopping() || finished_) return;
    Execute(policy_.OnStopRequest());
    MaybeFinish();
  }

  // A termination signal that came as the loop was finishing is still pending: a SIGTERM to an
  // elastic agent whose generation was stopping for another reason (a node had left) was lost
  // so once, and the agent went on waiting for nodes. Taken here, without blocking, and
  // recorded; job control and SIGUSR1/2 stay pending for the next loop, which forwards them.
  void CollectLateSignals() {
    if (!finished_) return;
    while (const int signal = TakeTerminationSignal()) OnSignal(signal);
  }

  void OnSignal(int signal) {
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    SignalEvent event{signal};
    event.processes = children_.size();
    event.grace_seconds = options_.grace_seconds;
    event.first_termination = !policy_.received_signal().has_value();
    if (finished_) {
      // Caught as the loop ended (above): nothing is left to stop, but the exit code and the
      // caller (an elastic agent, a master run) learn that a stop was asked for.
      if (Supervision::IsTerminationSignal(signal)) {
        policy_.OnSignal(signal, now);
        event.taken = SignalTaken::kWhileFinishing;
        status_->SignalReceived(event);
      }
      return;
    }
    const bool was_stopping = policy_.stopping();
    const Supervision::Commands commands = policy_.OnSignal(signal, now);
    event.running = RunningCount();
    event.again = !event.first_termination;
    if (commands.repeat_ignored) {
      event.taken = SignalTaken::kRepeatIgnored;
    } else if (signal == SIGTSTP) {
      event.taken = SignalTaken::kStop;
    } else if (signal == SIGCONT) {
      event.taken = SignalTaken::kContinue;
    } else if (Supervision::IsTerminationSignal(signal)) {
      event.taken = was_stopping ? SignalTaken::kKillingNow : SignalTaken::kStopping;
    }
    status_->SignalReceived(event);
    Execute(commands);
    MaybeFinish();
  }

  void Execute(const Supervision::Commands& commands) {
    if (commands.signal_groups) SignalAllGroups(*commands.signal_groups);
    if (commands.arm_grace_timer) ArmGraceTimer();
    if (commands.stop_launcher) {
      std::fflush(stdout);
      ::raise(SIGSTOP);  // Returns once resumed; the SIGCONT then reaches the loop, and the groups.
    }
  }

  size_t RunningCount() const {
    size_t running = 0;
    for (const Child& child : children_) running += child.status ? 0 : 1;
    return running;
  }

  void SignalAllGroups(int signal) {
    // Groups of children already reaped too: their grandchildren may still be in them.
    for (Child& child : children_) {
      if (SignalProcessGroup(child.pid, signal)) status_->GroupSignalled(child.pid, signal);
    }
    if (!Supervision::IsTerminationSignal(signal) && signal != SIGKILL && signal != SIGSTOP &&
        signal != SIGCONT) {
      return;
    }
    // What left the groups (setsid, a double fork) is stopped with them.
    if (signal == SIGKILL && cgroup_) {
      cgroup_->Kill();
      return;
    }
    for (pid_t pid : Escaped()) {
      status_->EscapedSignalled(pid, signal);
      ::kill(pid, signal);
    }
  }

  /// Live processes of the job outside every child's process group: members of the job's
  /// cgroup (not of a nested launcher's cgroup below it: that launcher, in one of our groups,
  /// stops its own job, and a second signal must not interrupt its ranks' handlers), or (the
  /// fallback) orphans re-parented to the launcher as their subreaper.
  std::vector<pid_t> Escaped() {
    std::vector<pid_t> known;
    for (const Child& child : children_) known.push_back(child.pid);
    std::vector<pid_t> escaped;
    if (cgroup_) {
      for (pid_t pid : cgroup_->DirectMembers()) {
        if (std::find(known.begin(), known.end(), ::getpgid(pid)) == known.end() &&
            ProcessLive(pid)) {
          escaped.push_back(pid);
        }
      }
      return escaped;
    }
    const std::vector<pid_t> watchdogs = WatchdogPids();  // Children of ours, not the job's.
    known.insert(known.end(), watchdogs.begin(), watchdogs.end());
    for (pid_t pid : AdoptedChildren(known)) {
      if (std::find(known.begin(), known.end(), ::getpgid(pid)) == known.end()) {
        escaped.push_back(pid);
      }
    }
    return escaped;
  }

  void ArmGraceTimer() {
    grace_timer_.expires_after(SteadyDuration(options_.grace_seconds));
    grace_timer_.async_wait(
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          if (ec) return;
          grace_expired_ = true;
          // SIGKILL to every group, whatever the policy says: this also takes stragglers left by
          // ranks that exited cleanly.
          policy_.OnGraceExpired();
          SignalAllGroups(SIGKILL);
          MaybeFinish();
        });
  }

  // Done when every child is reaped and no process of their groups can still run. Stragglers
  // (grandchildren) are watched through pidfds of their own, so even this wait is event-driven.
  void MaybeFinish() {
    if (!policy_.all_exited()) return;
    if (idle_ && !policy_.stopping()) return;  // Waiting with no processes: until told to stop.
    std::vector<pid_t> members;
    if (cgroup_) {
      // Everything the job started is in its cgroup, whatever group or session it moved to.
      // Usually it is empty by now, and removing it is the check (one rmdir, no read of
      // cgroup.events); a nested launcher's cgroup left below it makes the rmdir fail too.
      if (!cgroup_->RemoveIfEmpty() && cgroup_->Populated()) {
        for (pid_t pid : cgroup_->Members()) {
          if (ProcessLive(pid)) members.push_back(pid);
        }
      }
    } else {
      std::vector<pid_t> groups;  // Groups that still exist; usually none: no /proc scan.
      for (const Child& child : children_) {
        if (::kill(-child.pid, 0) == 0 || errno == EPERM) groups.push_back(child.pid);
      }
      if (!groups.empty()) members = LiveGroupMembers(groups);
      for (pid_t pid : Escaped()) members.push_back(pid);
    }
    if (members.empty() || grace_expired_) {
      Finish();
      return;
    }
    if (!policy_.stopping() && !straggler_cleanup_) {
      straggler_cleanup_ = true;
      status_->StragglersLeft(members.size());
      SignalAllGroups(SIGTERM);
      ArmGraceTimer();
    }
    WatchStragglers(members);
  }

  void WatchStragglers(const std::vector<pid_t>& members) {
    stragglers_.clear();
    const int generation = ++straggler_generation_;
    for (pid_t pid : members) {
      const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      if (fd < 0) continue;  // Already gone.
      stragglers_.emplace_back(io_, fd);
    }
    pending_stragglers_ = stragglers_.size();
    if (pending_stragglers_ == 0) {
      Finish();
      return;
    }
    for (StreamDescriptor& straggler : stragglers_) {
      straggler.async_wait(StreamDescriptor::wait_read,
                           [this, generation](boost::system::error_code ec) {
                             if (ec || generation != straggler_generation_) return;
                             if (--pending_stragglers_ == 0) MaybeFinish();
                           });
    }
  }

  void Finish() {
    finished_ = true;
    grace_timer_.cancel();
    tick_timer_.cancel();
    signals_.Stop();
    boost::system::error_code ignored;
    external_event_.close(ignored);
    io_.stop();
  }

  /// What observers are told of the processes at these indices, found failed together.
  std::vector<FailedProcess> FailedOnes(const std::vector<int>& indices) const {
    std::vector<FailedProcess> failed;
    for (int i : indices) {
      const Child& child = children_[static_cast<size_t>(i)];
      failed.push_back(
          {static_cast<size_t>(i), &child.info, child.pid, *child.status, child.log_start});
    }
    return failed;
  }

  SupervisorOptions options_;
  std::shared_ptr<SupervisorStatus> status_;  // Never null: a silent one when none is given.
  std::unique_ptr<asio::io_context> own_io_;  // Null when the caller shares its loop.
  asio::io_context& io_;
  SignalIntake signals_;  // SupervisedSignalSet(), from a signalfd.
  std::unique_ptr<DeviceLogSampler> device_log_;
  asio::steady_timer grace_timer_;
  asio::steady_timer tick_timer_;
  std::vector<std::pair<int, ExitStatus>> exits_;  // Reaped, not yet handled (Reaped).
  StreamDescriptor external_event_;
  Supervision policy_;
  std::vector<UniqueFd>
      created_logs_;  // Before echo_: the echoed files exist before it opens them.
  ConsoleEcho echo_;
  std::unique_ptr<JobCgroup> cgroup_;  // Null: the subreaper fallback. Removed last.
  std::optional<Watchdog>
      watchdog_;  // Declared before children_: it is disarmed only after they are gone.
  std::vector<SupervisedProcess> pending_;
  std::vector<Child> children_;
  std::vector<StreamDescriptor> stragglers_;
  size_t pending_stragglers_ = 0;
  int straggler_generation_ = 0;
  bool grace_expired_ = false;
  bool straggler_cleanup_ = false;
  bool primaries_done_ = false;
  bool idle_ = false;  // No processes, only external events: run until a stop.
  bool finished_ = false;
  // Expires with this object: a handler the loop runs after it (one that had completed before
  // the object was destroyed, on a loop shared with the master) touches nothing of it.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace

ExitStatus RunStoppingOnSignal(const ProcessSpec& spec, double grace_seconds) {
  asio::io_context io;
  // Watched, never read: the signal stays pending for the next loop.
  StreamDescriptor signals(io, OpenSignalFd(TerminationSignalSet()));
  asio::steady_timer grace(io);
  ProcessLauncher::Child process = ProcessLauncher()(io.get_executor(), spec);
  const pid_t group = process.id();
  std::optional<ExitStatus> status;
  boost::system::error_code wait_error;
  process.handle().async_wait([&](boost::system::error_code ec, int wait_status) {
    if (ec)
      wait_error = ec;
    else
      status = FromWaitStatus(wait_status);
    signals.cancel();
    grace.cancel();
  });
  signals.async_wait(StreamDescriptor::wait_read, [&](boost::system::error_code ec) {
    if (ec) return;
    SignalProcessGroup(group, SIGTERM);
    grace.expires_after(SteadyDuration(std::max(0.0, grace_seconds)));
    grace.async_wait([group](boost::system::error_code timer_ec) {
      if (!timer_ec) SignalProcessGroup(group, SIGKILL);
    });
  });
  io.run();
  process.detach();  // Reaped by the wait above: nothing left for its destructor.
  if (!status) {
    ThrowSystemError(wait_error.value(), fmt::format("cannot wait for '{}'", spec.executable));
  }
  return *status;
}

SupervisorResult Supervise(std::vector<SupervisedProcess> processes,
                           const SupervisorOptions& options) {
  // Before any process starts: one that cannot be exec'd would fail the job after its siblings
  // started.
  for (const SupervisedProcess& process : processes) CheckEnvironmentSizes(process.spec.env);
  EventLoop loop(std::move(processes), options);
  return loop.Run();
}

int RunSupervised(std::vector<SupervisedProcess> processes, const SupervisorOptions& options) {
  return Supervise(std::move(processes), options).exit_code;
}

}  // namespace pdlaunch
