// The console echo: the ranks' log files copied live onto the launcher's stdout.
#include "process/echo_watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/small_file.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/base/switches.h"
#include "pdlaunch/options/echo_choice.h"
#include "pdlaunch/process/console_echo.h"
#include "pdlaunch/process/launcher_signals.h"
#include "process/signal_intake.h"

namespace pdlaunch {

namespace asio = boost::asio;
using StreamDescriptor = asio::posix::stream_descriptor;

namespace {

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

}  // namespace

class ConsoleEcho::Impl {
 public:
  Impl(asio::io_context& io, const std::vector<EchoSource>& sources)
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
  ~Impl() {
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
    quiet_timer_.expires_after(SteadyDuration(std::max(0.0, *next - Now()) + 0.001));
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
    if (ReadSwitch(Switch::kEchoPoll) == "1") return "PDLAUNCH_ECHO_POLL=1";
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
      spurious_timer_.expires_after(SteadyDuration(kSpuriousSeconds));
      spurious_timer_.async_wait(
          [this, life = std::weak_ptr<const bool>(alive_)](boost::system::error_code wait_ec) {
            if (life.expired()) return;  // Gone: a handler that completed before it was destroyed.
            if (!wait_ec && !finished_) Arm();
          });
    });
  }

  void Poll() {
    poll_timer_.expires_after(SteadyDuration(kPollSeconds));
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

ConsoleEcho::ConsoleEcho(asio::io_context& io, const std::vector<EchoSource>& sources)
    : impl_(std::make_unique<Impl>(io, sources)) {}
ConsoleEcho::~ConsoleEcho() = default;
bool ConsoleEcho::DrainLines() { return impl_->DrainLines(); }
void ConsoleEcho::EndLine() { impl_->EndLine(); }
void ConsoleEcho::Finish() { impl_->Finish(); }

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

}  // namespace pdlaunch
