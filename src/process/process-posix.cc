#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/process/process.h"
#include "process/raw_syscall.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace pdlaunch {
namespace {

// The soft RLIMIT_NOFILE the launcher started with, given back to every child (see
// RaiseOpenFileLimit). Written once before any child exists; read in forked children.
struct rlimit g_child_file_limit {};
bool g_restore_file_limit = false;
// False once clone3(CLONE_INTO_CGROUP) was refused as unknown: fork and move instead.
bool g_clone_into_cgroup = true;
// False once clone3 with CLONE_VM was refused, or when PDLAUNCH_SPAWN=fork asks for fork; false
// in a build without the clone path.
#ifdef PDLAUNCH_HAVE_CLONE_VM
bool g_clone_vm_spawn = raw::CloneVmWanted();
#else
bool g_clone_vm_spawn = false;
#endif

std::vector<char*> CStrings(const std::vector<std::string>& strings,
                            const std::vector<std::string>* before = nullptr) {
  std::vector<char*> result;
  result.reserve((before ? before->size() : 0) + strings.size() + 1);
  if (before) {
    for (const std::string& s : *before) result.push_back(const_cast<char*>(s.c_str()));
  }
  for (const std::string& s : strings) result.push_back(const_cast<char*>(s.c_str()));
  result.push_back(nullptr);
  return result;
}

using raw::Arg;

// Or'ed into the errno a child reports: opening its output file failed, not the exec.
constexpr int kOpeningOutput = 1 << 16;
constexpr int kBindingCpus = 1 << 17;  // sched_setaffinity or set_mempolicy refused.
constexpr size_t kMaskWords = 1024 / 64;
constexpr long kMpolPreferred = 1;  // <linux/mempolicy.h> MPOL_PREFERRED.

int OutputFlags(const ProcessSpec& spec) {
  // O_NOFOLLOW: a link planted as workerlog.N in a shared log directory is not written through.
  return O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (spec.output_truncate ? O_TRUNC : O_APPEND);
}

std::string OutputError(const std::string& path) {
  return fmt::format("cannot open log file '{}'", path);
}

/// Everything the child needs, prepared by the launcher before the clone.
struct ChildArgs {
  pid_t parent = 0;
  const char* executable = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int devnull = -1;
  int output_fd = -1;
  const char* output_path = nullptr;  ///< Opened by the child when output_fd is -1.
  int output_flags = 0;
  const char* banner = nullptr;  ///< ProcessSpec::output_banner; nullptr: none.
  size_t banner_size = 0;
  int cgroup_procs_fd = -1;  ///< Write "0" here first (a child not born in the cgroup).
  int error_fd = -1;         ///< A forked child reports its exec errno through this pipe...
  int error = 0;             ///< ...a cloned one writes it here, in the launcher's memory.
  uint64_t reset_signals = ~uint64_t{0};  ///< ProcessSpec::reset_signals.
  bool bind_cpus = false;                 ///< ProcessSpec::cpus as a mask.
  uint64_t cpu_mask[kMaskWords] = {};
  bool prefer_node = false;  ///< ProcessSpec::preferred_numa_node as a mask.
  uint64_t node_mask[kMaskWords] = {};

  ChildArgs() = default;
  ChildArgs(const ProcessSpec& spec, pid_t parent_pid, int devnull_fd, char* const* argv_array,
            char* const* envp_array)
      : parent(parent_pid),
        executable(spec.executable.c_str()),
        argv(argv_array),
        envp(envp_array),
        devnull(devnull_fd),
        output_fd(spec.output_fd),
        output_path(spec.output_path.empty() ? nullptr : spec.output_path.c_str()),
        output_flags(OutputFlags(spec)),
        banner(spec.output_banner.empty() ? nullptr : spec.output_banner.c_str()),
        banner_size(spec.output_banner.size()),
        reset_signals(spec.reset_signals.value_or(~uint64_t{0})) {
    for (int cpu : spec.cpus) {
      if (cpu < 0 || cpu >= static_cast<int>(kMaskWords * 64)) continue;
      cpu_mask[cpu / 64] |= uint64_t{1} << (cpu % 64);
      bind_cpus = true;
    }
    const int node = spec.preferred_numa_node;
    if (node >= 0 && node < static_cast<int>(kMaskWords * 64)) {
      node_mask[node / 64] |= uint64_t{1} << (node % 64);
      prefer_node = true;
    }
  }
};

// Runs in the new child: raw system calls only (src/process/raw_syscall.h), no allocation, no
// errno. Never returns.
[[noreturn]] void ExecChild(ChildArgs* a) {
  long rc = 0;
  int stage = 0;  // kOpeningOutput while opening the output file.
  int output = a->output_fd;
  // Into the job's cgroup first: whatever this process starts is born there too.
  if (a->cgroup_procs_fd >= 0) {
    rc = raw::Syscall(SYS_write, a->cgroup_procs_fd, Arg("0"), 1);
    if (rc != 1) goto fail;
  }
  // Own process group: terminal signals reach only the launcher, and teardown can signal the
  // rank together with every process it forks.
  raw::Syscall(SYS_setpgid, 0, 0);
  // Die with the launcher; if it is already gone, the signal will never come.
  raw::Syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (raw::Syscall(SYS_getppid) != a->parent) raw::Exit(127);
  raw::ResetSignals(a->reset_signals, [](int) { return false; });  // Defaults; no mask.
  // --numa_binding: next to the device, before anything of the program runs.
  if (a->bind_cpus) {
    stage = kBindingCpus;
    if ((rc = raw::Syscall(SYS_sched_setaffinity, 0, sizeof a->cpu_mask, Arg(a->cpu_mask))) < 0) {
      goto fail;
    }
    stage = 0;
  }
  if (a->prefer_node) {
    stage = kBindingCpus;
    if ((rc = raw::Syscall(SYS_set_mempolicy, kMpolPreferred, Arg(a->node_mask),
                           kMaskWords * 64 + 1)) < 0) {
      goto fail;
    }
    stage = 0;
  }
  if ((rc = raw::Syscall(SYS_dup3, a->devnull, STDIN_FILENO, 0)) < 0) goto fail;
  if (output < 0 && a->output_path != nullptr) {
    stage = kOpeningOutput;  // Close-on-exec: only the copies on 1 and 2 stay.
    if ((rc = raw::Syscall(SYS_openat, AT_FDCWD, Arg(a->output_path), a->output_flags, 0644)) < 0) {
      goto fail;
    }
    output = static_cast<int>(rc);
    stage = 0;
    if (a->banner != nullptr) raw::Syscall(SYS_write, output, Arg(a->banner), a->banner_size);
  }
  if (output >= 0) {
    if ((rc = raw::Syscall(SYS_dup3, output, STDOUT_FILENO, 0)) < 0) goto fail;
    if ((rc = raw::Syscall(SYS_dup3, output, STDERR_FILENO, 0)) < 0) goto fail;
  }
  // The launcher's own limit back only now: the log above takes the lowest free descriptor,
  // which in a large job is above the original soft limit (a copy of the launcher's table
  // holds a pidfd per rank started before this one); descriptors already open stay valid.
  if (g_restore_file_limit) {
    raw::Syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, Arg(&g_child_file_limit), 0);
  }
  // Only fds 0-2 survive exec; the error pipe closes itself on a successful exec.
  if (raw::Syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (long fd = 3; fd < 1024; ++fd) {
      if (fd != a->error_fd) raw::Syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
    }
  }
  rc = raw::Syscall(SYS_execve, Arg(a->executable), Arg(a->argv), Arg(a->envp));
fail:
  const int err = rc < 0 ? static_cast<int>(-rc) : EIO;
  const int report = err | stage;
  a->error = report;
  if (a->error_fd >= 0) raw::Syscall(SYS_write, a->error_fd, Arg(&report), sizeof report);
  raw::Exit(err == ENOENT && stage == 0 ? 127 : 126);
}

// /dev/null for the children's stdin, opened once (close-on-exec) and kept for the launcher's
// lifetime: one open and one close fewer per process started.
int DevNull() {
  static const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowSystemError(errno, "cannot open /dev/null");
  return fd;
}

#ifdef PDLAUNCH_HAVE_CLONE_VM
[[noreturn]] void ExecChildOnStack(void* args) { ExecChild(static_cast<ChildArgs*>(args)); }

#endif

int ReadChildError(int fd) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(fd, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof child_errno) ? child_errno : 0;
}

}  // namespace

#ifdef PDLAUNCH_HAVE_CLONE_VM
/// The memory a child cloned with CLONE_VM runs on until it execs: its stack, its ChildArgs and
/// the argv and envp arrays (pointing into the caller's ProcessSpec, which must stay put until
/// ConfirmStarted). The launcher goes on at once while the child prepares and execs on the other
/// core; the kernel clears `in_use` and wakes a futex waiter when the child leaves this address
/// space (CLONE_CHILD_CLEARTID: at its exec or its exit), and only then may the area be freed.
struct SpawnArea {
  SpawnArea(const ProcessSpec& spec, pid_t parent, int devnull)
      : argv(CStrings(spec.argv)),
        envp(CStrings(spec.env, spec.shared_env.get())),
        args(spec, parent, devnull, argv.data(), envp.data()) {}
  /// Blocks until the child has exec'ed or exited. The child is in code of ours that makes a few
  /// system calls and then execs, so this is the time of an exec.
  void AwaitExec() {
    for (;;) {
      const pid_t value = __atomic_load_n(&in_use, __ATOMIC_ACQUIRE);
      if (value == 0) return;
      // Not FUTEX_PRIVATE: the kernel's wake-up at exec/exit is a shared-futex wake.
      ::syscall(SYS_futex, &in_use, FUTEX_WAIT, value, nullptr, nullptr, 0);
    }
  }

  alignas(64) std::byte stack[16 * 1024];
  std::vector<char*> argv;
  std::vector<char*> envp;
  ChildArgs args;    ///< Points into argv and envp (declared before it).
  pid_t in_use = 1;  ///< Cleared by the kernel (CLONE_CHILD_CLEARTID).
};
#else
struct SpawnArea {
  void AwaitExec() {}
  ChildArgs args;
};
#endif

void SpawnAreaDeleter::operator()(SpawnArea* area) const noexcept { delete area; }

void RaiseOpenFileLimit() noexcept {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const struct rlimit original = limit;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  g_child_file_limit = original;
  g_restore_file_limit = true;
}

Process Process::Spawn(const ProcessSpec& spec) {
  Process process = Start(spec);
  process.ConfirmStarted();
  return process;
}

Process Process::Start(const ProcessSpec& spec) {
  const int devnull = DevNull();
  const pid_t parent = ::getpid();
  const bool into_cgroup = spec.cgroup_dir_fd >= 0 && g_clone_into_cgroup;
  if (g_clone_vm_spawn) {
    if (std::optional<Process> cloned = StartCloned(spec, parent, devnull, into_cgroup)) {
      return std::move(*cloned);
    }
  }
  return StartForked(spec, parent, devnull, into_cgroup);
}

std::optional<Process> Process::StartCloned(const ProcessSpec& spec, pid_t parent, int devnull,
                                            bool into_cgroup) {
#ifdef PDLAUNCH_HAVE_CLONE_VM
  std::unique_ptr<SpawnArea, SpawnAreaDeleter> area(new SpawnArea(spec, parent, devnull));
  // Born in the job's cgroup, or (a kernel without CLONE_INTO_CGROUP) moving itself there.
  if (!into_cgroup) area->args.cgroup_procs_fd = spec.cgroup_procs_fd;
  int pidfd = -1;
  clone_args args{};
  args.flags =
      CLONE_VM | CLONE_PIDFD | CLONE_CHILD_CLEARTID | (into_cgroup ? CLONE_INTO_CGROUP : 0);
  args.exit_signal = SIGCHLD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.child_tid = reinterpret_cast<uint64_t>(&area->in_use);
  args.stack = reinterpret_cast<uint64_t>(area->stack);
  args.stack_size = sizeof area->stack;
  if (into_cgroup) args.cgroup = static_cast<uint64_t>(spec.cgroup_dir_fd);
  long ret;
  {
    // The child starts with every signal blocked, so no handler of the launcher can run in
    // it before it has reset the dispositions.
    ScopedBlockAllSignals blocked;
    ret = raw::Clone3OnStack(&args, &ExecChildOnStack, &area->args);
  }
  if (ret > 0) {
    const auto pid = static_cast<pid_t>(ret);
    // The child does this too; doing it here as well means the group exists before any
    // teardown signal can be aimed at it (EACCES once the child has exec'ed is fine).
    ::setpgid(pid, pid);
    Process process(pid, pidfd, -1);
    process.area_ = std::move(area);
    process.executable_ = spec.executable;
    process.output_path_ = spec.output_path;
    return process;
  }
  if (ret == -ENOSYS || ret == -EINVAL || ret == -E2BIG) {
    // An older kernel or a refused flag: without CLONE_INTO_CGROUP first, then fork.
    if (into_cgroup) {
      g_clone_into_cgroup = false;
    } else {
      g_clone_vm_spawn = false;
    }
    return Start(spec);
  }
  errno = static_cast<int>(-ret);  // EAGAIN, ENOMEM: fork says it again, or succeeds.
  return std::nullopt;
#else
  (void)spec;
  (void)parent;
  (void)devnull;
  (void)into_cgroup;
  return std::nullopt;
#endif
}

Process Process::StartForked(const ProcessSpec& spec, pid_t parent, int devnull, bool into_cgroup) {
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env, spec.shared_env.get());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) ThrowSystemError(errno, "pipe2");
  UniqueFd error_read(pipe_fds[0]);
  UniqueFd error_write(pipe_fds[1]);
  ChildArgs child(spec, parent, devnull, argv.data(), envp.data());
  child.cgroup_procs_fd = spec.cgroup_procs_fd;
  child.error_fd = error_write.get();

  pid_t pid = -1;
  int pidfd = -1;
  {
    ScopedBlockAllSignals blocked;
    if (into_cgroup) {
      // Born in the job's cgroup: no migration afterwards, which costs a write lock on the
      // kernel's thread-group semaphore per child (measured: +8 ms for 64 ranks).
      clone_args args{};
      args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
      args.exit_signal = SIGCHLD;
      args.cgroup = static_cast<uint64_t>(spec.cgroup_dir_fd);
      args.pidfd = reinterpret_cast<uint64_t>(&pidfd);  // One syscall fewer than pidfd_open.
      pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
      if (pid >= 0) {
        child.cgroup_procs_fd = -1;  // Already there.
      } else if (errno == ENOSYS || errno == EINVAL || errno == E2BIG) {
        g_clone_into_cgroup = false;  // An older kernel: fork and move, from now on.
      }  // Anything else (EAGAIN, ENOMEM): fork says it again, or succeeds.
    }
    if (pid < 0) pid = ::fork();
    if (pid == 0) ExecChild(&child);
  }
  if (pid < 0) ThrowSystemError(errno, fmt::format("cannot fork to start '{}'", spec.executable));
  ::setpgid(pid, pid);  // As above.
  error_write.Reset();
  if (pidfd < 0) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const int pidfd_errno = errno;
  Process process(pid, pidfd, error_read.Release());  // Reaps the child on every path from here.
  process.executable_ = spec.executable;
  process.output_path_ = spec.output_path;
  if (pidfd < 0) ThrowSystemError(pidfd_errno, "pidfd_open (Linux 5.3 or newer is required)");
  return process;
}

void Process::ConfirmStarted() {
  int child_errno = 0;
  if (area_) {
    area_->AwaitExec();
    child_errno = area_->args.error;
    area_.reset();
  } else if (exec_error_fd_ >= 0) {
    child_errno = ReadChildError(exec_error_fd_);
    ::close(exec_error_fd_);
    exec_error_fd_ = -1;
  }
  if (child_errno != 0) {
    Wait();
    if ((child_errno & kOpeningOutput) != 0) {
      ThrowSystemError(child_errno & ~kOpeningOutput, OutputError(output_path_));
    }
    if ((child_errno & kBindingCpus) != 0) {
      ThrowSystemError(
          child_errno & ~kBindingCpus,
          fmt::format("cannot bind '{}' to its NUMA node (--numa_binding)", executable_));
    }
    // execve says ENOENT both for a missing file and for a missing #! interpreter.
    if (child_errno == ENOENT && ::access(executable_.c_str(), F_OK) == 0) {
      std::ifstream script(executable_);
      std::string line;
      if (std::getline(script, line) && line.starts_with("#!")) {
        std::string interpreter = line.substr(2);
        interpreter.erase(0, interpreter.find_first_not_of(" \t"));
        interpreter = interpreter.substr(0, interpreter.find_first_of(" \t\r"));
        throw LaunchError(
            fmt::format("cannot execute '{}': its interpreter '{}' (the #! line) does not exist",
                        executable_, interpreter));
      }
    }
    ThrowSystemError(child_errno, fmt::format("cannot execute '{}'", executable_));
  }
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      exec_error_fd_(std::exchange(other.exec_error_fd_, -1)),
      area_(std::move(other.area_)),
      executable_(std::move(other.executable_)),
      output_path_(std::move(other.output_path_)),
      status_(other.status_) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    exec_error_fd_ = std::exchange(other.exec_error_fd_, -1);
    area_ = std::move(other.area_);
    executable_ = std::move(other.executable_);
    output_path_ = std::move(other.output_path_);
    status_ = other.status_;
  }
  return *this;
}

Process::~Process() { Release(); }

void Process::Release() noexcept {
  if (pid_ > 0 && !status_) {
    SignalGroup(SIGKILL);
    Wait();
  }
  // Reaped: a cloned child has left the spawn area (it exec'ed or exited).
  area_.reset();
  if (pidfd_ >= 0) ::close(pidfd_);
  if (exec_error_fd_ >= 0) ::close(exec_error_fd_);
  pid_ = -1;
  pidfd_ = -1;
  exec_error_fd_ = -1;
}

std::optional<ExitStatus> Process::TryWait() {
  if (status_ || pid_ <= 0) return status_;
  siginfo_t info{};
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0 && info.si_pid == pid_) status_ = FromSigInfo(info.si_code, info.si_status);
  return status_;
}

ExitStatus Process::Wait() {
  if (status_) return *status_;
  siginfo_t info{};
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED);
  } while (rc < 0 && errno == EINTR);
  // ECHILD cannot happen for a child only we reap; record something rather than loop forever.
  status_ = rc == 0 ? FromSigInfo(info.si_code, info.si_status) : ExitStatus::Killed(SIGKILL);
  return *status_;
}

bool Process::SignalGroup(int sig) const noexcept { return SignalProcessGroup(pid_, sig); }

bool SignalProcessGroup(pid_t pgid, int sig) noexcept {
  if (pgid <= 0) return false;
  return ::kill(-pgid, sig) == 0;
}

bool Process::GroupAlive() const noexcept {
  if (pid_ <= 0) return false;
  if (::kill(-pid_, 0) != 0 && errno != EPERM) return false;
  return !LiveGroupMembers({pid_}).empty();
}

namespace {

/// One /proc/<pid>/stat: state, ppid, pgrp. False when gone or unreadable.
bool ReadStat(const char* pid, char* state, int* ppid, int* pgrp) noexcept {
  char path[300];
  char stat[512];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, stat, sizeof stat - 1);
  ::close(fd);
  if (n <= 0) return false;
  stat[n] = '\0';
  // The command name may contain anything; the fields after its ')' are: state ppid pgrp.
  const char* after_comm = std::strrchr(stat, ')');
  return after_comm != nullptr && std::sscanf(after_comm + 1, " %c %d %d", state, ppid, pgrp) == 3;
}

/// ReadStat for a pid.
bool ReadStatOf(pid_t pid, char* state, int* ppid, int* pgrp) noexcept {
  char name[16];
  std::snprintf(name, sizeof name, "%d", static_cast<int>(pid));
  return ReadStat(name, state, ppid, pgrp);
}

/// Calls visit(pid, state, ppid, pgrp) for every process in /proc.
template <typename Visit>
void ScanProc(Visit visit) noexcept {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char state = 0;
    int ppid = 0;
    int pgrp = 0;
    if (ReadStat(entry->d_name, &state, &ppid, &pgrp)) {
      visit(static_cast<pid_t>(std::atoi(entry->d_name)), state, ppid, pgrp);
    }
  }
  ::closedir(proc);
}

}  // namespace

int OpenOutput(const ProcessSpec& spec) {
  const int fd = ::open(spec.output_path.c_str(), OutputFlags(spec), 0644);
  if (fd < 0) ThrowSystemError(errno, OutputError(spec.output_path));
  if (!spec.output_banner.empty()) {
    static_cast<void>(::write(fd, spec.output_banner.data(), spec.output_banner.size()));
  }
  return fd;
}

uint64_t NonDefaultSignals() noexcept {
  uint64_t signals = 0;
  for (long sig = 1; sig <= 64; ++sig) {
    raw::KernelSigaction action;  // Not glibc's sigaction: it refuses its own signals 32 and 33.
    if (raw::Syscall(SYS_rt_sigaction, sig, 0, Arg(&action), 8) == 0 && action.handler != 0) {
      signals |= uint64_t{1} << (sig - 1);
    }
  }
  return signals;
}

bool ProcessLive(pid_t pid) noexcept {
  char state = 0;
  int ppid = 0;
  int pgrp = 0;
  return ReadStatOf(pid, &state, &ppid, &pgrp) && state != 'Z' && state != 'X';
}

namespace {

/// Calls visit(pid) for every child of this process as the kernel lists them in
/// /proc/self/task/<tid>/children (orphans re-parented to a subreaper included; a child stays
/// listed until it is reaped). False when the kernel has no such file (CONFIG_PROC_CHILDREN).
template <typename Visit>
bool ForEachListedChild(Visit visit) noexcept {
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool listed = false;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%.20s/children", entry->d_name);
    const std::optional<std::vector<pid_t>> children = ReadPidList(path);
    if (!children) continue;
    listed = true;
    for (pid_t pid : *children) visit(pid);
  }
  ::closedir(tasks);
  return listed;
}

}  // namespace

std::vector<pid_t> AdoptedChildren(const std::vector<pid_t>& known, ChildListing how) noexcept {
  std::vector<pid_t> live;
  std::vector<pid_t> exited;
  const pid_t self = ::getpid();
  const auto sort = [&](pid_t pid, char state) {
    if (std::find(known.begin(), known.end(), pid) != known.end()) return;
    (state == 'Z' || state == 'X' ? exited : live).push_back(pid);
  };
  // The kernel's list of our children costs a read; the fallback reads every process's stat
  // (2 ms for 120 processes on the project's VM, far more on a busy node).
  const auto visit = [&](pid_t pid) {
    char state = 0;
    int ppid = 0;
    int pgrp = 0;
    if (ReadStatOf(pid, &state, &ppid, &pgrp) && ppid == self) sort(pid, state);
  };
  const bool listed = how == ChildListing::kAuto && ForEachListedChild(visit);
  if (!listed) {
    ScanProc([&](pid_t pid, char state, int ppid, int) {
      if (ppid == self) sort(pid, state);
    });
  }
  // A process is re-parented to us before its parent becomes a zombie, so the orphans of the
  // exited ones are already among the live.
  for (pid_t pid : exited) {
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
  }
  return live;
}

std::vector<pid_t> LiveGroupMembers(const std::vector<pid_t>& pgids) noexcept {
  std::vector<pid_t> members;
  ScanProc([&](pid_t pid, char state, int, int pgrp) {
    if (state == 'Z' || state == 'X') return;
    for (pid_t pgid : pgids) {
      if (pgrp == pgid) members.push_back(pid);
    }
  });
  return members;
}

}  // namespace pdlaunch
