#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pdlaunch/base/exit_status.h"

namespace pdlaunch {

struct SpawnArea;  // process-posix.cc
struct SpawnAreaDeleter {
  void operator()(SpawnArea* area) const noexcept;
};

/// What to start. The child gets: its own process group (pgid = pid), SIGKILL as parent-death
/// signal (it exits at once if the launcher is already gone), default signal dispositions and an
/// empty signal mask, stdin from /dev/null, stdout and stderr on `output_fd`, or on the file
/// `output_path` it opens itself, or the launcher's own, and no other descriptor of the launcher.
struct ProcessSpec {
  std::string executable;         ///< Path for execve (already resolved).
  std::vector<std::string> argv;  ///< argv[0] included.
  std::vector<std::string> env;   ///< "NAME=value" entries; with `shared_env`, the environment.
  int output_fd = -1;             ///< Borrowed; dup'ed onto 1 and 2 in the child.
  /// With output_fd -1: a file the child opens (created 0644; appended to, or truncated when
  /// `output_truncate`) and makes its stdout and stderr. Creating a file can be slow (ext4
  /// allocating an inode), and this way a job's log files are created by its children, in
  /// parallel, not one after another by the launcher. If the child cannot, ConfirmStarted
  /// throws "cannot open log file '<path>'" with the reason.
  std::string output_path{};
  bool output_truncate = false;
  /// Bytes the child writes to `output_path` as soon as it has opened it, before its own
  /// output: the line that opens this run in a log that holds an earlier run's (the supervisor
  /// keeps it only there, with a newline first where that output did not end with one).
  /// Empty: none.
  std::string output_banner{};
  /// Borrowed; the job's cgroup directory (JobCgroup::dir_fd): the child is created in it
  /// (clone3 with CLONE_INTO_CGROUP, Linux 5.7), so it and all it ever starts live there.
  /// -1: the launcher's own cgroup.
  int cgroup_dir_fd = -1;
  /// Borrowed; that cgroup's cgroup.procs open for writing: where clone3 cannot place the child,
  /// it forks and the child writes itself in before anything else.
  int cgroup_procs_fd = -1;
  /// The signals (bit sig-1) whose disposition the child sets back to SIG_DFL before its exec;
  /// all of them when unset. Handlers are reset by exec anyway, but a handler of the launcher
  /// must not run in the child before it (one that shares the launcher's memory least of all),
  /// and SIG_IGN survives exec. Resetting all 62 costs each child 9 us; a supervisor starting
  /// many children asks NonDefaultSignals() once and lets each reset only those.
  std::optional<uint64_t> reset_signals = std::nullopt;
  /// Entries common to the processes of a job (the launcher's environment without the names
  /// the job sets), put before `env`: shared by their specs rather than copied into each
  /// (ComposeEnvironments). Null: none.
  std::shared_ptr<const std::vector<std::string>> shared_env{};
  /// --numa_binding: the CPUs (at most 1024 of them, numbered below 1024) the child binds itself
  /// to with sched_setaffinity before its exec; empty: left alone. A refusal fails the start.
  std::vector<int> cpus{};
  /// --numa_binding node/exclusive: set_mempolicy(MPOL_PREFERRED) to this node (< 1024) before
  /// the exec; -1: left alone.
  int preferred_numa_node = -1;
};

/// Opens `spec.output_path` as the child would (the same flags, `output_banner` written first),
/// close-on-exec, for a launcher that must have the file before the child
/// starts. Throws "cannot open log file '<path>'".
int OpenOutput(const ProcessSpec& spec);

/// The signals (bit sig-1) whose disposition is not SIG_DFL now: handlers and SIG_IGN, ours or
/// inherited (nohup, a shell's `&`). One sigaction query per signal.
uint64_t NonDefaultSignals() noexcept;

/// A started child: move-only, waited exactly once. Not thread-safe.
class Process {
 public:
  /// Starts `spec` and waits until the exec has happened. Throws std::system_error when the clone
  /// or fork fails or exec fails in the child (the child reports its errno back in the
  /// launcher's memory or through a close-on-exec pipe; no process remains).
  static Process Spawn(const ProcessSpec& spec);
  /// The first half of Spawn: creates the child (clone3 with CLONE_VM on x86-64, fork elsewhere;
  /// docs/design.md, Child hygiene) and returns while it prepares and execs, so that many
  /// children start in parallel. `spec` must stay alive and unchanged until ConfirmStarted()
  /// (the child reads its argv and environment from it until its exec). Call ConfirmStarted()
  /// before relying on the child.
  static Process Start(const ProcessSpec& spec);
  /// The second half: waits for the child's exec; throws as Spawn does (the child is reaped).
  void ConfirmStarted();

  /// No child (a placeholder to move a started one into).
  Process() = default;
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  /// A child not yet waited is killed (SIGKILL to its group) and reaped; never throws.
  ~Process();

  pid_t pid() const { return pid_; }
  /// A pidfd that becomes readable when the child exits; owned by this object until released.
  int pidfd() const { return pidfd_; }
  /// Hands the pidfd over to the caller (an event loop that waits on it); -1 afterwards.
  int ReleasePidfd() { return std::exchange(pidfd_, -1); }
  /// After ConfirmStarted(): hands the child (its pid and pidfd) over to a new owner, which
  /// reaps it (ProcessLauncher gives it to a Boost.Process v2 handle); this object is then empty
  /// and kills nothing.
  std::pair<pid_t, int> HandOver() noexcept {
    return {std::exchange(pid_, -1), std::exchange(pidfd_, -1)};
  }
  bool reaped() const { return status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }

  /// Records that the child was reaped elsewhere (Boost.Process v2's handle, which the
  /// supervisor waits on), with its status: it is not killed or waited for again.
  void MarkReaped(const ExitStatus& status) { status_ = status; }
  /// Reaps the child if it has exited (waitid WNOHANG on this pid only); never blocks.
  std::optional<ExitStatus> TryWait();
  /// Blocks until the child exits and reaps it.
  ExitStatus Wait();
  /// Sends `sig` to the child's process group, which outlives the child while grandchildren
  /// remain. Returns false when the group no longer exists (ESRCH). Never throws.
  bool SignalGroup(int sig) const noexcept;
  /// True while a process of the child's group is alive and not a zombie (kill(-pgid, 0), then
  /// a scan of /proc). Never throws.
  bool GroupAlive() const noexcept;

 private:
  Process(pid_t pid, int pidfd, int exec_error_fd)
      : pid_(pid), pidfd_(pidfd), exec_error_fd_(exec_error_fd) {}
  void Release() noexcept;
  /// Start's two ways (process-posix.cc): cloned with CLONE_VM onto a stack of its own, nullopt
  /// where the kernel refuses it (then forked); forked, born in the job's cgroup by clone3 where
  /// the kernel can.
  static std::optional<Process> StartCloned(const ProcessSpec& spec, pid_t parent, int devnull,
                                            bool into_cgroup);
  static Process StartForked(const ProcessSpec& spec, pid_t parent, int devnull, bool into_cgroup);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int exec_error_fd_ = -1;  ///< Read end of the exec-error pipe until ConfirmStarted().
  /// A cloned child's stack and arguments, until its exec.
  std::unique_ptr<SpawnArea, SpawnAreaDeleter> area_;
  std::string executable_;
  std::string output_path_;  ///< ProcessSpec::output_path, for ConfirmStarted's message.
  std::optional<ExitStatus> status_;
};

/// Raises the launcher's soft RLIMIT_NOFILE to the hard limit: a job holds about four
/// descriptors per local process (log file, pidfds, port lock), so the common soft limit of 1024
/// would cap it near 250 processes. Processes started afterwards get the original soft limit
/// back before exec (select()-based programs rely on it). Never throws; a failure leaves the
/// limit as it was.
void RaiseOpenFileLimit() noexcept;

/// True while `pid` exists and is not a zombie. Never throws.
bool ProcessLive(pid_t pid) noexcept;

/// Sends `sig` to the process group `pgid` (a started child's pid: each is the leader of its
/// own). False when the group no longer exists (ESRCH). Never throws.
bool SignalProcessGroup(pid_t pgid, int sig) noexcept;

/// Where AdoptedChildren finds this process's children.
enum class ChildListing {
  kAuto,      ///< The kernel's list (/proc/self/task/<tid>/children), else a scan of /proc.
  kProcScan,  ///< Every process's /proc/<pid>/stat: what a kernel without the list leaves.
};

/// Children of this process that it did not start itself (not in `known`): descendants orphaned
/// while the launcher is their subreaper (PR_SET_CHILD_SUBREAPER) and re-parented to it. Those
/// that have exited are reaped here; the live ones are returned. Reads the kernel's list of this
/// process's children, or scans /proc where the kernel has no such list (CONFIG_PROC_CHILDREN);
/// `how` forces the scan (tests of that path). Never throws.
std::vector<pid_t> AdoptedChildren(const std::vector<pid_t>& known,
                                   ChildListing how = ChildListing::kAuto) noexcept;

/// Processes of the given process groups that can still run (zombies excluded: kill() succeeds
/// for them, and a PID 1 that does not reap, common in containers, keeps them forever). Scans
/// /proc once. Never throws; an unreadable /proc gives an empty list.
std::vector<pid_t> LiveGroupMembers(const std::vector<pid_t>& pgids) noexcept;

}  // namespace pdlaunch
