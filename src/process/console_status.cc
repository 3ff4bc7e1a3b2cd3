// What the console says of a supervised run: the supervisor's events in Paddle's words.
#include "pdlaunch/process/console_status.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdio.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <iterator>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/process/pod_console.h"
#include "pdlaunch/process/supervision.h"

namespace pdlaunch {

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

std::string TailBytesOfFile(const std::string& path, off_t from, off_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<off_t>(in.tellg());
  if (from > size) from = 0;
  from = std::max(from, size - max_bytes);
  in.seekg(from);
  std::string tail{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!tail.empty() && tail.back() != '\n') tail.push_back('\n');
  return tail;
}

void ConsoleStatus::Contained(const std::string& cgroup_dir, const std::string& why_not) {
  if (!cgroup_dir.empty()) {
    PDLOG_DEBUG("containment: the job's cgroup is {}", cgroup_dir);
  } else {
    PDLOG_DEBUG(
        "containment: no cgroup ({}); orphaned descendants are re-parented to the "
        "launcher (PR_SET_CHILD_SUBREAPER)",
        why_not);
  }
}

void ConsoleStatus::NotStarted(int signal, size_t count) {
  if (today()) PDLOG_INFO("Terminating with signal {}", signal);
  PDLOG_WARN("received {} before the {} processes started: none is started", SignalName(signal),
             count);
  if (today()) PDLOG_INFO("Exit with signal {}", signal);
}

void ConsoleStatus::Starting(const std::vector<SupervisedProcess>& processes) {
  if (today() && !processes.empty()) {
    PDLOG_INFO("Run {}",
               FormatPodLine(settings_.pod_name, static_cast<int>(processes.size()), "ready"));
  }
}

void ConsoleStatus::Started(const std::vector<pid_t>& pids) {
  if (settings_.print_started) {
    for (size_t i = 0; i < pids.size(); ++i) fmt::print("launch proc_id:{} idx:{}\n", pids[i], i);
  }
  std::fflush(stdout);  // Before the echo of what the processes write.
  if (today() && !pids.empty()) {
    PDLOG_INFO("Watching {}",
               FormatPodLine(settings_.pod_name, static_cast<int>(pids.size()), "running"));
  }
}

void ConsoleStatus::PrimariesDone() {
  if (!settings_.primaries_done_message.empty()) {
    PDLOG_INFO("{}", settings_.primaries_done_message);
  }
}

// One ABORT line per role, in the order the roles first failed.
void ConsoleStatus::Aborting(const std::vector<FailedProcess>& failed) {
  std::vector<std::string> roles;
  for (const FailedProcess& f : failed) {
    const std::string& role = f.process->role;
    if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
  }
  for (const std::string& role : roles) {
    std::vector<int> ranks;
    int role_size = 0;
    for (const FailedProcess& f : failed) {
      if (f.process->role != role) continue;
      ranks.push_back(f.process->rank);
      role_size = f.process->role_size;
    }
    PDLOG_ERROR("{}", FormatAbortLine(role_size, ranks, role));
  }
}

// What failed, after the ABORT line and the stop: the legacy console's tail of each failed
// log, or today's console's failed container.
void ConsoleStatus::Failed(const std::vector<FailedProcess>& failed) {
  if (today()) {
    ShowFailedContainer(failed);
    return;
  }
  for (const FailedProcess& f : failed) {
    const SupervisedProcess& p = *f.process;
    if (p.log_path.empty()) continue;
    PDLOG_ERROR("{} {} (pid {}) ended with {}; last {} lines of {}:\n{}",
                p.role == "trainer" ? "rank" : p.role, p.rank, f.pid, f.status.Describe(),
                settings_.tail_lines, p.log_path,
                TailOfFile(p.log_path, f.log_start, settings_.tail_lines));
  }
}

// Today's launcher's account of a failure (docs/cli.md), once per run as Paddle's: the pod's
// status, the first failed container (in local order among those found together) and the end
// of its log, on stderr after what the echo had still to show.
void ConsoleStatus::ShowFailedContainer(const std::vector<FailedProcess>& failed) {
  if (container_shown_ || failed.empty()) return;
  container_shown_ = true;
  const FailedProcess& first = *std::min_element(
      failed.begin(), failed.end(),
      [](const FailedProcess& a, const FailedProcess& b) { return a.index < b.index; });
  PDLOG_INFO("Pod failed");
  const ProcessSpec& spec = first.process->spec;
  PDLOG_ERROR("Container failed !!!\n{}{}",
              FormatContainerLine(static_cast<int>(first.index), "failed", spec.argv,
                                  PythonReturnCode(first.status), first.process->log_path),
              settings_.print_env_on_failure
                  ? " \nenv " + FormatEnvDict(spec.shared_env.get(), spec.env)
                  : std::string());
  PDLOG_INFO("{}", kErrorLogDetail);
  if (first.process->log_path.empty()) return;
  // On stderr with its header (Paddle prints it on stdout, apart from the header above it).
  // EPIPE or a closed terminal: the tail is lost, the teardown goes on (as the echo's).
  WriteLogBytes(TailBytesOfFile(first.process->log_path, first.log_start, kErrorTailBytes));
}

void ConsoleStatus::SignalReceived(const SignalEvent& event) {
  const std::string name = SignalName(event.signal);
  switch (event.taken) {
    case SignalTaken::kForwarded:
      return;
    case SignalTaken::kWhileFinishing:
      PDLOG_WARN("received {} while finishing: nothing was left to stop", name);
      return;
    case SignalTaken::kRepeatIgnored:
      PDLOG_INFO(
          "received {} again within {} s: the same request (a wrapper relaying it?), "
          "still stopping gracefully",
          name, Supervision::kRepeatWindow);
      return;
    case SignalTaken::kStop:
      PDLOG_INFO(
          "received SIGTSTP: stopping {} processes and the launcher (fg or SIGCONT "
          "resumes them)",
          event.running);
      return;
    case SignalTaken::kContinue:
      PDLOG_INFO("received SIGCONT: resuming {} processes", event.running);
      return;
    case SignalTaken::kKillingNow:
    case SignalTaken::kStopping:
      break;
  }
  if (event.first_termination && today()) PDLOG_INFO("Terminating with signal {}", event.signal);
  if (event.taken == SignalTaken::kKillingNow) {
    PDLOG_WARN("received {} {}, killing all processes now", name,
               event.again ? "again" : "while stopping");
  } else if (event.processes == 0) {
    PDLOG_WARN("received {}, stopping", name);
  } else {
    PDLOG_WARN("received {}, stopping {} processes (grace {}s; again to kill at once)", name,
               event.processes, event.grace_seconds);
  }
}

void ConsoleStatus::GroupSignalled(pid_t group, int signal) {
  if (signal == SIGTERM || signal == SIGKILL) {
    PDLOG_INFO("{} process group gid:{}", signal == SIGKILL ? "kill" : "terminate", group);
  }
}

void ConsoleStatus::EscapedSignalled(pid_t pid, int signal) {
  if (signal != SIGSTOP && signal != SIGCONT) {
    PDLOG_INFO("{} to pid {}, which left its rank's process group", SignalName(signal), pid);
  }
}

void ConsoleStatus::StragglersLeft(size_t count) {
  PDLOG_WARN("all ranks exited but {} processes they started are still running; stopping them",
             count);
}

void ConsoleStatus::Ended(const RunEnd& end) {
  const SupervisorResult& result = end.result;
  if (end.primaries_done && !settings_.primaries_done_message.empty()) {
    for (const auto& [role, line] : settings_.role_stopped_messages) {
      if (std::find(end.roles.begin(), end.roles.end(), role) != end.roles.end()) {
        PDLOG_INFO("{}", line);
      }
    }
  }
  if (end.completed && settings_.say_completed) {
    PDLOG_INFO("{}", today() ? "Pod completed" : "Local processes completed.");
  } else if (result.signal && !end.idle && !result.failed) {
    // The last line after a Ctrl-C says what happened.
    PDLOG_WARN("stopped by {}: all {} processes ended; exit code {}", SignalName(*result.signal),
               end.processes, result.exit_code);
  } else if (result.signal && end.idle && !settings_.waiting_for.empty()) {
    PDLOG_WARN("stopped by {} while waiting for {}", SignalName(*result.signal),
               settings_.waiting_for);
  }
  if (today() && result.signal) PDLOG_INFO("Exit with signal {}", *result.signal);
}

}  // namespace pdlaunch
