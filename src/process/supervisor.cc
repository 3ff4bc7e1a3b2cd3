// The only translation unit that includes Boost.Asio.
#include "pdlaunch/process/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
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
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/console_echo.h"
#include "pdlaunch/process/job_cgroup.h"
#include "pdlaunch/process/pod_console.h"
#include "pdlaunch/process/run_recorder.h"
#include "pdlaunch/process/supervision.h"
#include "pdlaunch/process/watchdog.h"
#include "process/process_launcher.h"

namespace pdlaunch {
namespace {

namespace asio = boost::asio;
using StreamDescriptor = asio::posix::stream_descriptor;

std::chrono::steady_clock::duration Seconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

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

/// The last `max_lines` lines of `path` written at or after byte `from`.
std::string TailOfFile(const std::string& path, off_t from, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(from);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  std::string tail;
  for (const std::string& l : lines) tail += l + "\n";
  return tail;
}

/// The bytes of `path` from byte `from` on, at most the last `max_bytes` of them (the first line
/// may be cut, as Paddle's Container.tail cuts it), ending with a newline unless empty. A file
/// now shorter than `from` (truncated since) gives its last `max_bytes`.
std::string TailBytesOfFile(const std::string& path, off_t from, off_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  const off_t size = FileSize(path);
  if (from > size) from = 0;
  from = std::max(from, size - max_bytes);
  in.seekg(from);
  std::string tail{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!tail.empty() && tail.back() != '\n') tail.push_back('\n');
  return tail;
}

sigset_t EchoSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGIO);
  return set;
}

/// What the supervisor acts on (Supervision::OnSignal), read from a signalfd.
sigset_t SupervisedSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT}) {
    sigaddset(&set, signal);
  }
  return set;
}

/// SIGINT, SIGTERM, SIGHUP, SIGQUIT: the signals that stop a job.
sigset_t TerminationSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, signal);
  return set;
}

/// A non-blocking signalfd for `set` (blocked first), or a thrown system error.
int OpenSignalFd(const sigset_t& set) {
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) ThrowSystemError(errno, "signalfd");
  return fd;
}

/// A log file whose new lines go to the console.
struct EchoSource {
  std::string path;
  std::string prefix;  ///< Before every line; empty: the bytes as they are (Paddle's echo).
};

/// Copies what the chosen processes write to their log files onto the launcher's stdout, whole
/// lines only, so that lines of different processes never splice. The kernel writes the files;
/// we only read them. Driven by dnotify: `fcntl(F_NOTIFY, DN_MODIFY | DN_MULTISHOT)` on each
/// echoed file's directory makes the kernel raise SIGIO at every write to a file there; the
/// launcher keeps SIGIO blocked and reads it from a signalfd on the event loop (a standard
/// signal: a burst of writes while one is pending is one wake-up). No polling. Not inotify:
/// closing an inotify instance waits for an SRCU grace period (8-20 ms here), which would be on
/// the launcher's way out or its watchdog's, and instances are limited per user
/// (fs.inotify.max_user_instances, 128 by default); dnotify's marks belong to one group the
/// kernel keeps, and removing them costs a few microseconds. Where F_NOTIFY is refused
/// (fs.dir-notify-enable = 0; PDLAUNCH_ECHO_POLL=1 forces it for tests), the files are read
/// every kPollSeconds instead, said once.
class ConsoleEcho {
 public:
  ConsoleEcho(asio::io_context& io, const std::vector<EchoSource>& sources)
      : sigio_(io),
        poll_timer_(io),
        quiet_timer_(io),
        spurious_timer_(io),
        mux_(Prefixes(sources)) {
    if (sources.empty()) return;
    for (const EchoSource& source : sources) {
      const int fd = ::open(source.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) ThrowSystemError(errno, "cannot open " + source.path + " to echo it");
      ::lseek(fd, 0, SEEK_END);  // Earlier runs' output stays in the file, not on screen.
      files_.push_back(fd);
    }
    if (const std::string problem = WatchDirectories(sources); !problem.empty()) {
      StopWatching();
      PDLOG_WARN(
          "the console echo cannot be told of writes ({}): the echoed logs are read "
          "every {} s instead",
          problem, kPollSeconds);
      Poll();
    } else {
      Arm();
    }
  }
  ~ConsoleEcho() {
    StopWatching();
    for (int fd : files_) ::close(fd);
  }

  /// Echoes what every file holds so far, as EchoMux shows it (today's console does before it
  /// shows a failed process's tail, as Paddle echoes container 0 before it: the echo stays in
  /// order).
  /// True when any file had something new.
  bool DrainLines() {
    bool read = false;
    for (size_t i = 0; i < files_.size(); ++i) read |= Drain(i);
    ArmQuiet();
    return read;
  }

  /// Ends a prefixed line left open (a partial line shown after a quiet time, a progress bar's
  /// redraw), before something else is written to the console: a failed process's tail.
  void EndLine() { WriteOut(mux_.EndLine()); }

  /// Echoes everything up to the end of every file, partial segments included (a prefixed line
  /// left open gets a newline, so that the next line does not continue it).
  void Finish() {
    StopWatching();
    for (size_t i = 0; i < files_.size(); ++i) Drain(i);
    WriteOut(mux_.Finish());
    if (mux_.Fed()) NoteConsoleLineOpen(mux_.LeftLineOpen());
    finished_ = true;
    poll_timer_.cancel();
    quiet_timer_.cancel();
    spurious_timer_.cancel();
  }

 private:
  static std::vector<std::string> Prefixes(const std::vector<EchoSource>& sources) {
    std::vector<std::string> prefixes;
    for (const EchoSource& source : sources) prefixes.push_back(source.prefix);
    return prefixes;
  }

  static double Now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  /// A prefixed partial segment is shown once its process has been quiet for kQuietSeconds.
  void ArmQuiet() {
    const std::optional<double> next = mux_.NextQuiet(kQuietSeconds);
    if (!next || finished_ || quiet_armed_) return;
    quiet_armed_ = true;
    quiet_timer_.expires_after(Seconds(std::max(0.0, *next - Now()) + 0.001));
    quiet_timer_.async_wait(
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          // Aborted: the echo may be gone by now (a loop shared with the master outlives it, and
          // runs the aborted handler later), so nothing of it is touched. It is cancelled only by
          // Finish, after which it is never armed again.
          if (ec) return;
          quiet_armed_ = false;
          if (finished_) return;
          WriteOut(mux_.FlushQuiet(Now(), kQuietSeconds));
          ArmQuiet();
        });
  }

  /// Blocks SIGIO (for good: a SIGIO that comes after the marks are gone must not find its
  /// default action, termination; children start with an empty mask), opens the signalfd and
  /// marks each directory. Empty, or what failed.
  std::string WatchDirectories(const std::vector<EchoSource>& sources) {
    const char* forced = std::getenv("PDLAUNCH_ECHO_POLL");
    if (forced != nullptr && std::string_view(forced) == "1") return "PDLAUNCH_ECHO_POLL=1";
    BlockLauncherSignals();  // Main has; a caller of the supervisor alone (a test) may not have.
    const sigset_t sigio = EchoSignalSet();
    const int fd = ::signalfd(-1, &sigio, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) return fmt::format("signalfd: {}", std::strerror(errno));
    sigio_.assign(fd);
    std::vector<std::string> directories;
    for (const EchoSource& source : sources) {
      std::string directory = std::filesystem::path(source.path).parent_path().string();
      if (directory.empty()) directory = ".";
      if (std::find(directories.begin(), directories.end(), directory) != directories.end()) {
        continue;
      }
      directories.push_back(directory);
      const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) return fmt::format("open {}: {}", directory, std::strerror(errno));
      directories_.push_back(dir);
      if (::fcntl(dir, F_NOTIFY, DN_MODIFY | DN_MULTISHOT) != 0) {
        return fmt::format("F_NOTIFY on {}: {}", directory, std::strerror(errno));
      }
    }
    return {};
  }

  /// Removes the marks (closing the directories does) and takes any SIGIO still pending, so
  /// that the next job's echo starts clean.
  void StopWatching() {
    for (int dir : directories_) ::close(dir);
    directories_.clear();
    if (!sigio_.is_open()) return;
    boost::system::error_code ignored;
    sigio_.close(ignored);
    const sigset_t sigio = EchoSignalSet();
    const timespec now{0, 0};
    while (::sigtimedwait(&sigio, nullptr, &now) == SIGIO) {
    }
  }

  /// Waits for the next SIGIO. dnotify marks a directory: a write to any file there (a rank
  /// that is not echoed, the GPU log) wakes the loop too. A wake-up that found nothing new in
  /// the echoed files waits kSpuriousSeconds before the next, so that ranks writing busily to
  /// their own logs cost the launcher at most that many wake-ups a second; a SIGIO meanwhile
  /// stays pending and is taken then: nothing is missed, an echo may come that much later.
  void Arm() {
    sigio_.async_wait(StreamDescriptor::wait_read, [this, life = std::weak_ptr<const bool>(alive_)](
                                                       boost::system::error_code ec) {
      if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
      if (ec || finished_) return;
      signalfd_siginfo taken[8];
      while (::read(sigio_.native_handle(), taken, sizeof taken) > 0) {
      }
      if (DrainLines()) return Arm();
      spurious_timer_.expires_after(Seconds(kSpuriousSeconds));
      spurious_timer_.async_wait(
          [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code wait_ec) {
            if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
            if (!wait_ec && !finished_) Arm();
          });
    });
  }

  void Poll() {
    poll_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(kPollSeconds)));
    poll_timer_.async_wait(
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          if (ec || finished_) return;
          DrainLines();
          Poll();
        });
  }

  /// Echoes what file `index` holds past what was read; true when there was something.
  bool Drain(size_t index) {
    // Until there is output, reads go to a small buffer on the stack: a job that printed nothing
    // finds nothing at its last drain, and mapping the large buffer for that (and unmapping it,
    // a TLB shoot-down while the watchdog shares the address space) was on every such job's way
    // out.
    bool read_any = false;
    char first[4096];
    for (;;) {
      char* const into = buffer_ ? buffer_.get() : first;
      const ssize_t n = ::read(files_[index], into, buffer_ ? kEchoBufferSize : sizeof first);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return read_any;
      read_any = true;
      WriteOut(mux_.Feed(index, std::string_view(into, static_cast<size_t>(n)), Now()));
      // Not zero-filled: only the pages a read fills are ever touched.
      if (!buffer_) buffer_ = std::make_unique_for_overwrite<char[]>(kEchoBufferSize);
    }
  }

  void WriteOut(const std::string& text) {
    if (!console_ok_ || text.empty()) return;
    console_ok_ = WriteAll(STDOUT_FILENO, text);  // EPIPE: the console went away; keep going.
  }

  static constexpr double kPollSeconds = 0.05;
  /// How long a prefixed process's partial line waits for its end before it is shown.
  static constexpr double kQuietSeconds = 0.5;
  StreamDescriptor sigio_;         ///< The signalfd for SIGIO.
  std::vector<int> directories_;   ///< Marked with F_NOTIFY.
  asio::steady_timer poll_timer_;  // Without dnotify only.
  asio::steady_timer quiet_timer_;
  asio::steady_timer spurious_timer_;
  /// See Arm.
  static constexpr double kSpuriousSeconds = 0.01;
  bool quiet_armed_ = false;
  EchoMux mux_;
  bool finished_ = false;
  // Expires with this object: a handler the loop runs after it (one that had completed before
  // the object was destroyed, on a loop shared with the master) touches nothing of it.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
  std::vector<int> files_;  ///< The echoed logs, open for reading; mux_'s sources.
  static constexpr size_t kEchoBufferSize = 1 << 20;
  std::unique_ptr<char[]> buffer_;
  bool console_ok_ = true;
};

/// Whether the console shows process `i`'s output: --echo's choice, or the one `echo_path` names.
bool Echoed(const std::vector<SupervisedProcess>& processes, size_t i,
            const SupervisorOptions& options) {
  const SupervisedProcess& p = processes[i];
  if (p.log_path.empty()) return false;
  if (!options.echo) return p.log_path == options.echo_path;
  const EchoChoice& choice = *options.echo;
  return choice.all || std::find(choice.locals.begin(), choice.locals.end(), static_cast<int>(i)) !=
                           choice.locals.end();
}

/// Creates the log files that must exist before their process starts, and gives each to its
/// process (output_fd): the echoed ones (the echo reads on from where a file ended when the job
/// started, so the file must not be created or truncated after that) and the first (a log
/// directory the launcher cannot write refuses the job before anything runs). Every other child
/// creates its own (ProcessSpec::output_path), in parallel with the launcher.
std::vector<UniqueFd> CreateLogsFirst(std::vector<SupervisedProcess>& processes,
                                      const SupervisorOptions& options) {
  std::vector<UniqueFd> created;
  for (size_t i = 0; i < processes.size(); ++i) {
    ProcessSpec& spec = processes[i].spec;
    if (spec.output_fd >= 0 || spec.output_path.empty()) continue;
    if (i > 0 && !Echoed(processes, i, options)) continue;
    spec.output_fd = created.emplace_back(OpenOutput(spec)).get();
  }
  return created;
}

/// The files to echo: --echo's choice, prefixed, or `echo_path` as it is.
std::vector<EchoSource> EchoSources(const std::vector<SupervisedProcess>& processes,
                                    const SupervisorOptions& options) {
  std::vector<EchoSource> sources;
  if (!options.echo) {
    if (!options.echo_path.empty()) sources.push_back({options.echo_path, ""});
    return sources;
  }
  const EchoChoice& choice = *options.echo;
  for (size_t i = 0; i < processes.size(); ++i) {
    const SupervisedProcess& p = processes[i];
    if (Echoed(processes, i, options)) {
      sources.push_back({p.log_path, EchoPrefix(p.role, p.rank, options.echo_host)});
    }
  }
  if (const std::optional<std::string> absent = EchoAbsentWarning(choice, processes.size())) {
    PDLOG_WARN("{}", *absent);
  }
  return sources;
}

/// One supervised child and Boost.Process v2's handle of it, which reports and reaps its exit.
struct Child {
  ProcessLauncher::Child process;      ///< v2's owner of the child while it runs.
  pid_t pid = -1;                      ///< Also its process group (each leads its own).
  std::optional<ExitStatus> status{};  ///< Once reaped.
  SupervisedProcess info;
  off_t log_start = 0;
  size_t report_index = 0;  ///< Its record in TheRunReport().processes.
};

/// The value of `name` in a process's environment ("NAME=value" entries), or "".
std::string EnvValue(const ProcessSpec& spec, std::string_view name) {
  const auto find_in = [name](const std::vector<std::string>& env) -> const std::string* {
    for (const std::string& entry : env) {
      if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
        return &entry;
      }
    }
    return nullptr;
  };
  const std::string* entry = find_in(spec.env);
  if (entry == nullptr && spec.shared_env) entry = find_in(*spec.shared_env);
  return entry ? entry->substr(name.size() + 1) : std::string();
}

/// What --report says of a process about to start.
ProcessRecord RecordOf(const SupervisedProcess& p, int local_rank, pid_t pid) {
  ProcessRecord record;
  record.role = p.role;
  record.rank = p.rank;
  record.local_rank = local_rank;
  record.pid = pid;
  record.endpoint = EnvValue(p.spec, "PADDLE_CURRENT_ENDPOINT");
  record.devices = EnvValue(p.spec, "FLAGS_selected_gpus");
  if (record.devices.empty()) record.devices = EnvValue(p.spec, "FLAGS_selected_xpus");
  if (const std::string custom = EnvValue(p.spec, "PADDLE_XCCL_BACKEND");
      record.devices.empty() && !custom.empty()) {
    record.devices = EnvValue(p.spec, "FLAGS_selected_" + custom + "s");
  }
  record.log_path = p.log_path;
  record.start_time = WallClockNow();
  return record;
}

std::vector<bool> Primaries(const std::vector<SupervisedProcess>& processes) {
  std::vector<bool> primary;
  for (const SupervisedProcess& p : processes) primary.push_back(p.primary);
  return primary;
}

/// The job's cgroup, or null with the launcher made a subreaper instead (docs/design.md,
/// "Containment"). PDLAUNCH_NO_CGROUP=1 forces the fallback (tests of both paths).
std::unique_ptr<JobCgroup> ContainJob() {
  std::string why_not = "PDLAUNCH_NO_CGROUP is set";
  const char* off = std::getenv("PDLAUNCH_NO_CGROUP");
  std::unique_ptr<JobCgroup> cgroup = off != nullptr && *off != '\0' && std::string(off) != "0"
                                          ? nullptr
                                          : JobCgroup::Create(&why_not);
  if (cgroup) {
    PDLOG_DEBUG("containment: the job's cgroup is {}", cgroup->dir());
  } else {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    PDLOG_DEBUG(
        "containment: no cgroup ({}); orphaned descendants are re-parented to the "
        "launcher (PR_SET_CHILD_SUBREAPER)",
        why_not);
  }
  return cgroup;
}

class EventLoop {
 public:
  EventLoop(std::vector<SupervisedProcess> processes, const SupervisorOptions& options)
      : options_(options),
        own_io_(options.io ? nullptr : std::make_unique<asio::io_context>()),
        io_(options.io ? *options.io : *own_io_),
        signals_(io_, OpenSignalFd(SupervisedSignalSet())),
        grace_timer_(io_),
        tick_timer_(io_),
        external_event_(io_),
        policy_(Primaries(processes), options.hold_secondaries),
        created_logs_(CreateLogsFirst(PrepareBanners(processes), options)),
        echo_(io_, EchoSources(processes, options)),
        // A wait without processes (the rendezvous) contains nothing and needs no watchdog.
        cgroup_(processes.empty() ? nullptr : ContainJob()) {
    if (!processes.empty()) {
      // Without a cgroup, the processes that left the groups are found by their environment.
      watchdog_.emplace(options.remove_if_killed, cgroup_ ? cgroup_->dir() : std::string(),
                        processes.size(), cgroup_ ? std::string() : NestedMarkerEntry());
    }
    pending_ = std::move(processes);
    idle_ = pending_.empty() && (options_.external != nullptr || options_.stop_hook != nullptr);
  }

  SupervisorResult Run() {
    // A termination signal that came while no loop ran (a Ctrl-C between two auto-tuner trials,
    // during --elastic_pre_hook) stops the job before any process of it starts.
    if (!pending_.empty()) {
      if (const int signal = TakeTerminationSignal(); signal != 0) {
        if (!options_.pod_name.empty()) PDLOG_INFO("Terminating with signal {}", signal);
        PDLOG_WARN("received {} before the {} processes started: none is started",
                   SignalName(signal), pending_.size());
        if (!TheRunReport().signal) TheRunReport().signal = signal;
        if (!options_.pod_name.empty()) PDLOG_INFO("Exit with signal {}", signal);
        return SupervisorResult{128 + signal, signal, false, false};
      }
    }
    WaitForSignal();
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
      const std::map<std::string, DeviceUsage> usage = device_log_->usage();
      if (options_.on_device_usage) options_.on_device_usage(usage);
      auto& records = TheRunReport().device_usage;
      records.clear();
      for (const auto& [index, device] : usage) {
        records.push_back(
            {index, device.peak_memory_used_mib, device.mean_utilization(), device.samples});
      }
      device_log_.reset();  // Kills and reaps a sample in flight.
    }
    CollectLateSignals();
    echo_.Finish();
    // The job is contained and over: the watchdog may go now, on the other core, while we
    // finish; the launcher reaps it before it exits (ReapWatchdogs, in Main).
    if (watchdog_) watchdog_->Disarm();
    if (primaries_done_ && !options_.primaries_done_message.empty()) {
      for (const auto& [role, line] : options_.role_stopped_messages) {
        if (HasRole(role)) PDLOG_INFO("{}", line);
      }
    }
    if (policy_.exit_code() == 0 && !idle_ && !policy_.stop_requested() &&
        !policy_.received_signal() && options_.say_completed) {
      if (options_.pod_name.empty()) {
        PDLOG_INFO("Local processes completed.");
      } else {
        PDLOG_INFO("Pod completed");
      }
    } else if (policy_.received_signal() && !idle_ && policy_.failed().empty()) {
      // The last line after a Ctrl-C says what happened.
      PDLOG_WARN("stopped by {}: all {} processes ended; exit code {}",
                 SignalName(*policy_.received_signal()), children_.size(), policy_.exit_code());
    } else if (policy_.received_signal() && idle_ && !options_.waiting_for.empty()) {
      PDLOG_WARN("stopped by {} while waiting for {}", SignalName(*policy_.received_signal()),
                 options_.waiting_for);
    }
    if (!options_.pod_name.empty() && policy_.received_signal()) {
      PDLOG_INFO("Exit with signal {}", *policy_.received_signal());
    }
    return SupervisorResult{policy_.exit_code(), policy_.received_signal(),
                            !policy_.failed().empty(), policy_.stop_requested()};
  }

 private:
  void StartAll() {
    std::fflush(stdout);  // Our own stdout text must precede the echoed rank output.
    children_.reserve(pending_.size());
    if (!options_.pod_name.empty() && !pending_.empty()) {
      PDLOG_INFO("Run {}",
                 FormatPodLine(options_.pod_name, static_cast<int>(pending_.size()), "ready"));
    }
    // Asked once for the batch: each child then resets only these (ProcessSpec::reset_signals).
    const uint64_t reset_signals = NonDefaultSignals();
    std::map<std::string, int> started_of_role;  // For each process's local_rank.
    RunReport& report = TheRunReport();
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
    const size_t first_record = report.processes.size();
    for (const SupervisedProcess& p : pending_) {
      // local_rank: its index among this node's processes of its role, the N of its log file
      // (docs/report.md), as --dry_run says it.
      report.processes.push_back(RecordOf(p, started_of_role[p.role]++, 0));
    }
    std::vector<pid_t> pids;
    std::vector<ProcessLauncher::Child> started;
    try {
      started = ProcessLauncher()(io_.get_executor(), specs, [&](size_t i, pid_t pid) {
        report.processes[first_record + i].pid = pid;
        watchdog_->Register(pid);
        if (options_.on_spawn) options_.on_spawn(pid);
        pids.push_back(pid);
      });
    } catch (...) {
      report.processes.resize(first_record);
      throw;
    }
    for (size_t i = 0; i < started.size(); ++i) {
      children_.push_back(Child{std::move(started[i]), pids[i], std::nullopt,
                                std::move(pending_[i]), log_starts[i], first_record + i});
    }
    if (options_.on_started) options_.on_started(pids);
    std::fflush(stdout);
    if (!options_.pod_name.empty() && !children_.empty()) {
      PDLOG_INFO("Watching {}",
                 FormatPodLine(options_.pod_name, static_cast<int>(children_.size()), "running"));
    }
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

  // The signals stay blocked from the start of Main to its end (BlockLauncherSignals): one that
  // comes while no loop runs (the planning, between the rendezvous and the ranks' start) waits
  // in the kernel for the next loop's signalfd instead of finding its default action.
  void WaitForSignal() {
    signals_.async_wait(
        StreamDescriptor::wait_read,
        [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code ec) {
          if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
          if (ec) return;
          TakeSignals();
          if (!finished_) WaitForSignal();
        });
  }

  /// Acts on every signal pending on the signalfd, in the order they are read.
  void TakeSignals() {
    signalfd_siginfo taken[8];
    for (;;) {
      const ssize_t n = ::read(signals_.native_handle(), taken, sizeof taken);
      if (n <= 0) return;  // EAGAIN: none left.
      for (size_t i = 0; i < static_cast<size_t>(n) / sizeof taken[0]; ++i) {
        OnSignal(static_cast<int>(taken[i].ssi_signo));
      }
    }
  }

  void Record(size_t index, ExitStatus status) {
    Child& child = children_[index];
    child.status = status;
    // Reaped: v2's handle lets the pid go (its destructor would waitpid it, and kill whatever
    // process of ours was given that pid since).
    child.process.detach();
    ProcessRecord& record = TheRunReport().processes.at(child.report_index);
    record.status = status;
    record.end_time = WallClockNow();
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
      if (!options_.primaries_done_message.empty()) {
        PDLOG_INFO("{}", options_.primaries_done_message);
      }
    }
    // The ABORT line comes before the lines of the stop it causes, as in Paddle (its
    // watch_local_trainers logs it, then terminate_local_procs stops the groups).
    if (!commands.newly_failed.empty()) ReportAbortLines(commands.newly_failed);
    Execute(commands);
    if (commands.primaries_done && options_.on_primaries_done) options_.on_primaries_done();
    if (!commands.newly_failed.empty()) {
      RunReport& report = TheRunReport();
      if (!report.root_cause) {
        report.root_cause =
            children_[static_cast<size_t>(commands.newly_failed.front())].report_index;
      }
      if (options_.on_first_failure && policy_.failed().size() == commands.newly_failed.size()) {
        const Child& first = children_[static_cast<size_t>(commands.newly_failed.front())];
        options_.on_first_failure(first.info, *first.status);
      }
      ReportFailures(commands.newly_failed);
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
    tick_timer_.expires_after(Seconds(seconds));
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
    if (finished_) {
      // Caught as the loop ended (above): nothing is left to stop, but the exit code and the
      // caller (an elastic agent, a master run) learn that a stop was asked for.
      if (Supervision::IsTerminationSignal(signal)) {
        PDLOG_WARN("received {} while finishing: nothing was left to stop", SignalName(signal));
        policy_.OnSignal(signal, now);
        if (!TheRunReport().signal) TheRunReport().signal = signal;
      }
      return;
    }
    const bool was_signalled = policy_.received_signal().has_value();
    const bool was_stopping = policy_.stopping();
    const Supervision::Commands commands = policy_.OnSignal(signal, now);
    if (commands.repeat_ignored) {
      PDLOG_INFO(
          "received {} again within {} s: the same request (a wrapper relaying it?), "
          "still stopping gracefully",
          SignalName(signal), Supervision::kRepeatWindow);
    } else if (signal == SIGTSTP) {
      PDLOG_INFO(
          "received SIGTSTP: stopping {} processes and the launcher (fg or SIGCONT "
          "resumes them)",
          RunningCount());
    } else if (signal == SIGCONT) {
      PDLOG_INFO("received SIGCONT: resuming {} processes", RunningCount());
    } else if (Supervision::IsTerminationSignal(signal)) {
      if (!was_signalled && !options_.pod_name.empty()) {
        PDLOG_INFO("Terminating with signal {}", signal);
      }
      if (was_stopping && was_signalled) {
        PDLOG_WARN("received {} again, killing all processes now", SignalName(signal));
      } else if (was_stopping) {
        PDLOG_WARN("received {} while stopping, killing all processes now", SignalName(signal));
      } else if (children_.empty()) {
        PDLOG_WARN("received {}, stopping", SignalName(signal));
      } else {
        PDLOG_WARN("received {}, stopping {} processes (grace {}s; again to kill at once)",
                   SignalName(signal), children_.size(), options_.grace_seconds);
      }
    }
    if (Supervision::IsTerminationSignal(signal) && !TheRunReport().signal) {
      TheRunReport().signal = signal;
    }
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
      if (SignalProcessGroup(child.pid, signal) && (signal == SIGTERM || signal == SIGKILL)) {
        PDLOG_INFO("{} process group gid:{}", signal == SIGKILL ? "kill" : "terminate", child.pid);
      }
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
      if (signal != SIGSTOP && signal != SIGCONT) {
        PDLOG_INFO("{} to pid {}, which left its rank's process group", SignalName(signal), pid);
      }
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
    grace_timer_.expires_after(Seconds(options_.grace_seconds));
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
      PDLOG_WARN("all ranks exited but {} processes they started are still running; stopping them",
                 members.size());
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
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    external_event_.close(ignored);
    io_.stop();
  }

  bool HasRole(const std::string& role) const {
    for (const Child& child : children_) {
      if (child.info.role == role) return true;
    }
    return false;
  }

  void ReportAbortLines(const std::vector<int>& indices) {
    // One ABORT line per role, in the order the roles first failed.
    std::vector<std::string> roles;
    for (int i : indices) {
      const std::string& role = children_[static_cast<size_t>(i)].info.role;
      if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
    }
    for (const std::string& role : roles) {
      std::vector<int> ranks;
      int role_size = 0;
      for (int i : indices) {
        const SupervisedProcess& info = children_[static_cast<size_t>(i)].info;
        if (info.role != role) continue;
        ranks.push_back(info.rank);
        role_size = info.role_size;
      }
      PDLOG_ERROR("{}", FormatAbortLine(role_size, ranks, role));
    }
  }

  // What failed, after the ABORT line and the stop: the legacy console's tail of each failed
  // log, or today's console's failed container.
  void ReportFailures(const std::vector<int>& indices) {
    if (!options_.pod_name.empty()) {
      ReportFailedContainers(indices);
      return;
    }
    for (int i : indices) {
      const Child& child = children_[static_cast<size_t>(i)];
      if (child.info.log_path.empty()) continue;
      PDLOG_ERROR("{} {} (pid {}) ended with {}; last {} lines of {}:\n{}",
                  child.info.role == "trainer" ? "rank" : child.info.role, child.info.rank,
                  child.pid, child.status->Describe(), options_.tail_lines, child.info.log_path,
                  TailOfFile(child.info.log_path, child.log_start, options_.tail_lines));
    }
  }

  // Today's launcher's account of a failure (docs/cli.md), once per run as Paddle's: the
  // pod's status, the first failed container (in local order among those found together) and
  // the end of its log, on stderr after what the echo had still to show.
  void ReportFailedContainers(const std::vector<int>& indices) {
    if (container_reported_) return;
    container_reported_ = true;
    const int first = *std::min_element(indices.begin(), indices.end());
    const Child& child = children_[static_cast<size_t>(first)];
    // What the echo had still to show first, its last line ended: these lines start their own.
    echo_.DrainLines();
    echo_.EndLine();
    std::fflush(stdout);
    PDLOG_INFO("Pod failed");
    const ProcessSpec& spec = child.info.spec;
    PDLOG_ERROR("Container failed !!!\n{}{}",
                FormatContainerLine(first, "failed", spec.argv, PythonReturnCode(*child.status),
                                    child.info.log_path),
                options_.print_env_on_failure
                    ? " \nenv " + FormatEnvDict(spec.shared_env.get(), spec.env)
                    : std::string());
    PDLOG_INFO("{}", kErrorLogDetail);
    if (child.info.log_path.empty()) return;
    // On stderr with its header (Paddle prints it on stdout, apart from the header above it).
    // EPIPE or a closed terminal: the tail is lost, the teardown goes on (as the echo's).
    WriteLogBytes(TailBytesOfFile(child.info.log_path, child.log_start, kErrorTailBytes));
  }

  SupervisorOptions options_;
  std::unique_ptr<asio::io_context> own_io_;  // Null when the caller shares its loop.
  asio::io_context& io_;
  StreamDescriptor signals_;  // A signalfd for SupervisedSignalSet().
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
  bool container_reported_ = false;  // Today's console: the failed container was shown.
  bool idle_ = false;                // No processes, only external events: run until a stop.
  bool finished_ = false;
  // Expires with this object: a handler the loop runs after it (one that had completed before
  // the object was destroyed, on a loop shared with the master) touches nothing of it.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace

void BlockLauncherSignals() noexcept {
  sigset_t set = SupervisedSignalSet();
  sigaddset(&set, SIGIO);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int TakeTerminationSignal() noexcept {
  const sigset_t termination = TerminationSignalSet();
  const timespec now{0, 0};
  const int signal = ::sigtimedwait(&termination, nullptr, &now);
  return signal > 0 ? signal : 0;
}

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
    grace.expires_after(Seconds(std::max(0.0, grace_seconds)));
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
