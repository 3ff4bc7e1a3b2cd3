#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "pdlaunch/process/supervisor.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace pdlaunch {

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
  /// Starts watching `sources` from their current ends; throws when one cannot be opened.
  ConsoleEcho(boost::asio::io_context& io, const std::vector<EchoSource>& sources);
  ~ConsoleEcho();
  ConsoleEcho(const ConsoleEcho&) = delete;
  ConsoleEcho& operator=(const ConsoleEcho&) = delete;

  /// Echoes what every file holds so far, as EchoMux shows it (before a failed process's tail
  /// is shown, so that the echo stays in order). True when any file had something new.
  bool DrainLines();
  /// Ends a prefixed line left open (a partial line shown after a quiet time, a progress bar's
  /// redraw), before something else is written to the console: a failed process's tail.
  void EndLine();
  /// Echoes everything up to the end of every file, partial segments included (a prefixed line
  /// left open gets a newline, so that the next line does not continue it).
  void Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Creates the log files that must exist before their process starts, and gives each to its
/// process (output_fd): the echoed ones (the echo reads on from where a file ended when the job
/// started, so the file must not be created or truncated after that) and the first (a log
/// directory the launcher cannot write refuses the job before anything runs). Every other child
/// creates its own (ProcessSpec::output_path), in parallel with the launcher.
std::vector<UniqueFd> CreateLogsFirst(std::vector<SupervisedProcess>& processes,
                                      const SupervisorOptions& options);

/// The files to echo: --echo's choice, prefixed, or `echo_path` as it is. Warns (the console)
/// when --echo names local processes this node does not have.
std::vector<EchoSource> EchoSources(const std::vector<SupervisedProcess>& processes,
                                    const SupervisorOptions& options);

}  // namespace pdlaunch
