#include "pdlaunch/process/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "process/raw_syscall.h"

namespace pdlaunch {

/// Everything the helper uses, prepared before it starts; afterwards the launcher writes only
/// `groups`, `group_count` and `disarmed` here, and only when the helper shares its memory.
/// With CLONE_VM it lives in the launcher's address space, which stays mapped after the launcher
/// dies for as long as the helper runs. Freed once the kernel has cleared `in_use`.
struct WatchdogArea {
  alignas(64) std::byte stack[64 * 1024];
  int read_fd = -1;  ///< The one descriptor the helper keeps (but 0-2, on /dev/null).
  std::string cgroup_dir;
  /// The environment entry every process of the job carries ("PDLAUNCH_PARENT=<pid>"); empty:
  /// none. Processes found with it are killed too (KillMarkedRaw).
  std::string job_marker;
  std::vector<std::string> remove_if_killed;
  /// Sized by the launcher before the helper starts (one entry per process it will register)
  /// and never grown. Filled by the launcher itself when the helper shares its memory (a store,
  /// then `group_count` published: no system call, and no wake-up of the helper on the other
  /// core for every rank); by the helper from the pipe's messages when it was forked.
  std::vector<pid_t> groups;
  size_t group_count = 0;
  bool shared = false;  ///< Cloned with CLONE_VM: the launcher writes `groups` (above).
  /// Set by a launcher sharing the helper's memory when it has cleaned up (Disarm); read by the
  /// helper at EOF. A forked helper is told with a 'Q' message instead.
  bool disarmed = false;
  pid_t in_use = 1;  ///< Cleared by the kernel when a cloned helper exits (CLONE_CHILD_CLEARTID).
};

namespace {

/// One message on the pipe; 8 bytes, so each write is atomic.
struct Message {
  char op;  // 'R': register `pgid`; 'Q': the launcher cleaned up, exit quietly.
  char padding[3];
  int32_t pgid;
};

using raw::Arg;
using raw::Syscall;

/// The helper's name (comm, 15 characters at most).
constexpr char kWatchdogName[] = "launch-watchdog";
static_assert(sizeof kWatchdogName <= 16);

// ---- The helper: raw system calls only, no allocation, no errno (it may share the launcher's
// ---- memory while the launcher runs, and the launcher may have died holding any lock).

bool ReadMessage(int fd, Message* message) {
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(message);
  while (got < sizeof *message) {
    const long n =
        Syscall(SYS_read, fd, Arg(bytes + got), static_cast<long>(sizeof *message - got));
    if (n == -EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

/// `dir` + "/" + `name` into `out` (capacity PATH_MAX); false when it does not fit.
bool JoinPath(const char* dir, const char* name, char (&out)[4096]) {
  const size_t a = std::strlen(dir);
  const size_t b = std::strlen(name);
  if (a + 1 + b + 1 > sizeof out) return false;
  std::memcpy(out, dir, a);
  out[a] = '/';
  std::memcpy(out + a + 1, name, b + 1);
  return true;
}

long NowMs() {
  timespec now{};
  Syscall(SYS_clock_gettime, CLOCK_MONOTONIC, Arg(&now));
  return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/// False once cgroup.events says "populated 0" or is gone; true otherwise.
bool CgroupPopulated(const char* events_path) {
  const long fd = Syscall(SYS_openat, AT_FDCWD, Arg(events_path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // Gone: nothing left in it.
  char text[256];
  const long n = Syscall(SYS_read, fd, Arg(text), sizeof text - 1);
  Syscall(SYS_close, fd);
  if (n <= 0) return true;
  text[n] = '\0';
  return std::strstr(text, "populated 0") == nullptr;
}

/// Calls `visit(entry)` for each entry (a dirent64) of the directory open as `fd`.
template <typename Visit>
void ForEachDirEntry(long fd, Visit visit) {
  alignas(8) char buffer[2048];
  long n;
  while ((n = Syscall(SYS_getdents64, fd, Arg(buffer), sizeof buffer)) > 0) {
    for (long offset = 0; offset < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer + offset);
      offset += entry->d_reclen;
      visit(*entry);
    }
  }
}

/// Removes the directory `name` (relative to `parent_fd`) and everything below it: with `files`,
/// files are unlinked; without (cgroupfs, whose interface files go with their directory), only
/// the directories are removed, deepest first. At most `depth` levels.
void RemoveTreeAt(int parent_fd, const char* name, bool files, int depth) {
  if (Syscall(SYS_unlinkat, parent_fd, Arg(name), AT_REMOVEDIR) == 0 || depth == 0) return;
  const long fd =
      Syscall(SYS_openat, parent_fd, Arg(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ForEachDirEntry(fd, [&](const dirent64& entry) {
    const char* entry_name = entry.d_name;
    if (std::strcmp(entry_name, ".") == 0 || std::strcmp(entry_name, "..") == 0) return;
    if (entry.d_type == DT_DIR) {
      RemoveTreeAt(static_cast<int>(fd), entry_name, files, depth - 1);
    } else if (files) {
      Syscall(SYS_unlinkat, fd, Arg(entry_name), 0);
    }
  });
  Syscall(SYS_close, fd);
  Syscall(SYS_unlinkat, parent_fd, Arg(name), AT_REMOVEDIR);
}

/// "/proc/<pid>/<file>" into `out` ("self" for `pid` 0); false when it does not fit.
bool ProcPath(long pid, const char* file, char (&out)[64]) {
  char digits[24];
  size_t count = 0;
  if (pid == 0) {
    // Digits, not a C string: `count` says how many (bugprone-not-null-terminated-result).
    std::memcpy(digits, "fles", 4);  // NOLINT: "self", reversed below.
    count = 4;
  }
  for (; pid > 0 && count < sizeof digits; pid /= 10)
    digits[count++] = static_cast<char>('0' + pid % 10);
  const size_t length = std::strlen(file);
  if (6 + count + 1 + length + 1 > sizeof out) return false;
  std::memcpy(out, "/proc/", 6);
  for (size_t i = 0; i < count; ++i) out[6 + i] = digits[count - 1 - i];
  out[6 + count] = '/';
  std::memcpy(out + 6 + count + 1, file, length + 1);
  return true;
}

/// Up to `size` - 1 bytes of a small /proc file, NUL-terminated; the count, or -1.
long ReadProcFile(long pid, const char* file, char* text, long size) {
  char path[64];
  if (!ProcPath(pid, file, path)) return -1;
  const long fd = Syscall(SYS_openat, AT_FDCWD, Arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const long n = Syscall(SYS_read, fd, Arg(text), size - 1);
  Syscall(SYS_close, fd);
  if (n < 0) return -1;
  text[n] = '\0';
  return n;
}

/// Whether /proc/`pid`/comm names the process a watchdog: that of a launcher the job started (a
/// nested launch), which must live to stop its own job (KillMembersAwaitingWatchdogs,
/// KillMarkedRaw). Its name is all that tells it (comm keeps 15 characters: a process that calls
/// itself launch-watchdog passes for one).
bool IsWatchdog(long pid) {
  char comm[32];
  const long n = ReadProcFile(pid, "comm", comm, sizeof comm);
  const size_t name = sizeof kWatchdogName - 1;
  return n == static_cast<long>(name + 1) && std::memcmp(comm, kWatchdogName, name) == 0;
}

/// The start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot; 0 for
/// "self"), or -1 when it cannot be read. The stat file takes none of the process's locks.
long StartTime(long pid) {
  char stat[1024];
  const long n = ReadProcFile(pid, "stat", stat, sizeof stat);
  if (n <= 0) return -1;
  const char* field = std::strrchr(stat, ')');  // After the name, which may hold anything.
  if (field == nullptr) return -1;
  for (int index = 2; index < 22; ++index) {  // Field 3 (the state) follows ") ".
    field = std::strchr(field + 1, ' ');
    if (field == nullptr) return -1;
  }
  long ticks = 0;
  for (++field; *field >= '0' && *field <= '9' && ticks < (1L << 56); ++field) {
    ticks = ticks * 10 + (*field - '0');
  }
  return ticks;
}

/// The target of the link /proc/`pid`/`file` ("self" for `pid` 0) into `out`, NUL-terminated;
/// false when it cannot be read.
bool ReadProcLink(long pid, const char* file, char (&out)[64]) {
  char path[64];
  if (!ProcPath(pid, file, path)) return false;
  const long n = Syscall(SYS_readlinkat, AT_FDCWD, Arg(path), Arg(out), sizeof out - 1);
  if (n <= 0) return false;
  out[n] = '\0';
  return true;
}

/// Whether `pid` is in the same pid namespace as the watchdog (`own`: its /proc/self/ns/pid
/// link). A process of a container in a namespace below ours shows that namespace's pids in its
/// environment: its PDLAUNCH_PARENT names another process than ours.
bool SamePidNamespace(long pid, const char* own) {
  char link[64];
  return ReadProcLink(pid, "ns/pid", link) && std::strcmp(link, own) == 0;
}

/// Waits until each of `pidfds` (`count`) is readable (its process has exited) or `deadline`
/// (NowMs) has passed, and closes them.
void AwaitAndClose(const int* pidfds, int count, long deadline) {
  for (int i = 0; i < count; ++i) {
    pollfd exited{pidfds[i], POLLIN, 0};
    const long left = deadline - NowMs();
    timespec timeout{left > 0 ? left / 1000 : 0, left > 0 ? (left % 1000) * 1000000 : 0};
    Syscall(SYS_ppoll, Arg(&exited), 1, Arg(&timeout), 0, 8);
    Syscall(SYS_close, pidfds[i]);
  }
}

/// A launcher the job started (a nested launch) sits in the job's cgroup with its watchdog, which
/// cgroup.kill would kill as well; then nothing would remove that launcher's temporary
/// directory. So the cgroup's own processes are SIGKILLed first, watchdogs excepted (nested
/// launchers die, wherever they moved in the session tree), and the watchdogs, now at work on
/// their own jobs (in cgroups below this one), get up to 10 s to finish. A watchdog's own work
/// is bounded by 5 s for its cgroup to empty, plus this wait for its nested ones; with more than
/// one level of nesting the deepest may be cut short.
[[gnu::noinline]] void KillMembersAwaitingWatchdogs(const char* dir) {
  char path[4096];
  if (!JoinPath(dir, "cgroup.procs", path)) return;
  const long fd = Syscall(SYS_openat, AT_FDCWD, Arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  constexpr int kMax = 64;
  int watchdogs[kMax];
  int count = 0;
  long pid = 0;
  char buffer[2048];
  long n;
  while ((n = Syscall(SYS_read, fd, Arg(buffer), sizeof buffer)) > 0) {
    for (long i = 0; i < n; ++i) {
      if (buffer[i] >= '0' && buffer[i] <= '9') {
        if (pid < (1L << 40)) pid = pid * 10 + (buffer[i] - '0');
        continue;
      }
      if (pid > 0 && !IsWatchdog(pid)) {
        Syscall(SYS_kill, pid, SIGKILL);
      } else if (pid > 0 && count < kMax) {
        const long pidfd = Syscall(SYS_pidfd_open, pid, 0);
        if (pidfd >= 0) watchdogs[count++] = static_cast<int>(pidfd);
      }
      pid = 0;
    }
  }
  Syscall(SYS_close, fd);
  AwaitAndClose(watchdogs, count, NowMs() + 10000);
}

/// The members killed and the nested launchers' watchdogs done (above), cgroup.kill, then up to
/// 5 s (inotify on cgroup.events) for the cgroup to empty, then rmdir of it and the cgroups
/// below.
void KillAndRemoveCgroupRaw(const char* dir) {
  KillMembersAwaitingWatchdogs(dir);
  char path[4096];
  if (JoinPath(dir, "cgroup.kill", path)) {
    const long fd = Syscall(SYS_openat, AT_FDCWD, Arg(path), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      Syscall(SYS_write, fd, Arg("1"), 1);
      Syscall(SYS_close, fd);
    }
  }
  if (JoinPath(dir, "cgroup.events", path)) {
    const long inotify = Syscall(SYS_inotify_init1, IN_CLOEXEC);
    if (inotify >= 0) Syscall(SYS_inotify_add_watch, inotify, Arg(path), IN_MODIFY);
    const long deadline = NowMs() + 5000;
    while (CgroupPopulated(path)) {
      const long left = deadline - NowMs();
      if (left <= 0 || inotify < 0) break;
      pollfd fd{static_cast<int>(inotify), POLLIN, 0};
      timespec timeout{left / 1000, (left % 1000) * 1000000};
      if (Syscall(SYS_ppoll, Arg(&fd), 1, Arg(&timeout), 0, 8) > 0) {
        char events[1024];
        Syscall(SYS_read, inotify, Arg(events), sizeof events);
      }
    }
    if (inotify >= 0) Syscall(SYS_close, inotify);
  }
  RemoveTreeAt(AT_FDCWD, dir, /*files=*/false, 16);
}

/// Whether the NUL-separated environment at `path` (/proc/<pid>/environ) has the entry `needle`
/// (`length` bytes) exactly. False when it cannot be read: gone, a zombie (no memory: empty), or
/// not ours to read.
bool EnvironHasEntry(const char* path, const char* needle, size_t length) {
  const long fd = Syscall(SYS_openat, AT_FDCWD, Arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[4096];
  size_t matched = 0;    // Bytes of `needle` matched by the current entry so far...
  bool matching = true;  // ...while it still can match.
  bool found = false;
  long n = 0;
  while (!found) {
    n = Syscall(SYS_read, fd, Arg(buffer), sizeof buffer);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long i = 0; i < n && !found; ++i) {
      const char c = buffer[i];
      if (c == '\0') {
        found = matching && matched == length;
        matched = 0;
        matching = true;
      } else if (matching && matched < length && c == needle[matched]) {
        ++matched;
      } else {
        matching = false;
      }
    }
  }
  Syscall(SYS_close, fd);
  // At the end of the file, a last entry without its NUL counts too; not after a failed read.
  return found || (n == 0 && matching && matched == length);
}

/// Without a cgroup, the launcher's death sends the job's orphans (a daemon that called setsid,
/// a double fork) to init, out of every registered group; what still finds them is the
/// environment entry the launcher gave every process it started, which their descendants
/// inherit (HTCondor tracks its jobs' processes the same way). Scans /proc and SIGKILLs every
/// process that has `needle`, started no earlier than the watchdog (every process of the job
/// did; an older one with the entry belongs to an earlier launcher that had the same pid), in
/// the watchdog's pid namespace, and not a watchdog; again until a scan finds no process it had
/// not yet killed (one may fork while a scan runs), 5 s at most; then waits for them to exit.
/// Each is held by a pidfd from before its environment is read to the signal, so a pid reused
/// meanwhile is not signalled. Not found: a process that cleared its environment (env -i), or
/// moved to another pid namespace.
[[gnu::noinline]] void KillMarkedRaw(const char* needle) {
  const size_t length = std::strlen(needle);
  const long self = Syscall(SYS_getpid);
  const long earliest = StartTime(0);
  char own_namespace[64];
  if (earliest < 0 || !ReadProcLink(0, "ns/pid", own_namespace)) return;
  const long deadline = NowMs() + 5000;
  constexpr int kMaxKilled = 1024;
  long killed[kMaxKilled];
  int pidfds[kMaxKilled];
  int count = 0;
  for (bool fresh = true; fresh && NowMs() < deadline;) {
    fresh = false;
    const long proc =
        Syscall(SYS_openat, AT_FDCWD, Arg("/proc"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) break;
    ForEachDirEntry(proc, [&](const dirent64& entry) {
      long pid = 0;
      const char* name = entry.d_name;
      for (; *name >= '0' && *name <= '9' && pid < (1L << 40); ++name) {
        pid = pid * 10 + (*name - '0');
      }
      if (*name != '\0' || pid <= 0 || pid == self) return;
      if (std::find(killed, killed + count, pid) != killed + count) return;
      if (StartTime(pid) < earliest) return;
      char path[64];
      if (!ProcPath(pid, "environ", path)) return;
      const long pidfd = Syscall(SYS_pidfd_open, pid, 0);  // -ENOSYS before Linux 5.3.
      if (!EnvironHasEntry(path, needle, length) || IsWatchdog(pid) ||
          !SamePidNamespace(pid, own_namespace)) {
        if (pidfd >= 0) Syscall(SYS_close, pidfd);
        return;
      }
      const long sent = pidfd >= 0 ? Syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, 0, 0)
                                   : Syscall(SYS_kill, pid, SIGKILL);
      if (sent != 0 || count == kMaxKilled) {
        if (pidfd >= 0) Syscall(SYS_close, pidfd);
        fresh = fresh || sent == 0;  // Beyond what we track: scan again while they live.
        return;
      }
      fresh = true;
      killed[count] = pid;
      pidfds[count] = static_cast<int>(pidfd);
      ++count;
    });
    Syscall(SYS_close, proc);
  }
  // Until each has exited (a zombie has no environment; without pidfds, no wait).
  int open = 0;
  for (int i = 0; i < count; ++i) {
    if (pidfds[i] >= 0) pidfds[open++] = pidfds[i];
  }
  AwaitAndClose(pidfds, open, deadline);
}

void Detach(const WatchdogArea& a) {
  Syscall(SYS_prctl, PR_SET_NAME, Arg(kWatchdogName));  // What ps shows, and IsWatchdog.
  Syscall(SYS_setpgid, 0, 0);  // Out of the terminal's foreground group: Ctrl-C is not for us.
  // No handler of the launcher's may run here: terminal signals ignored, the others default.
  raw::ResetSignals(~uint64_t{0}, [](int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 ||
           sig == SIGUSR2 || sig == SIGPIPE || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
  });
  // Hold nothing of the launcher's: not its console (a reader waiting for EOF), not its log
  // files, not its port locks.
  const long devnull = Syscall(SYS_openat, AT_FDCWD, Arg("/dev/null"), O_RDWR | O_CLOEXEC);
  for (long fd = 0; fd <= 2 && devnull >= 0; ++fd) {
    if (devnull != fd) Syscall(SYS_dup3, devnull, fd, 0);
  }
  const auto keep = static_cast<unsigned long>(a.read_fd);  // >= 3: 0-2 exist (Main).
  if (keep > 3) Syscall(SYS_close_range, 3, keep - 1, 0);
  Syscall(SYS_close_range, keep + 1, ~0U, 0);
}

[[noreturn]] void WatchdogMain(WatchdogArea* a) {
  Detach(*a);
  Message message{};
  while (ReadMessage(a->read_fd, &message)) {
    if (message.op == 'Q') raw::Exit(0);
    if (message.op == 'R' && !a->shared && a->group_count < a->groups.size()) {
      a->groups[a->group_count++] = message.pgid;
    }
  }
  // A launcher sharing our memory says it cleaned up with a store before it closes the pipe.
  if (a->shared && __atomic_load_n(&a->disarmed, __ATOMIC_ACQUIRE)) raw::Exit(0);
  // EOF without 'Q': the launcher died without tearing down. Nothing else will stop these.
  // The groups first: a nested launcher in one of them dies, and its watchdog starts stopping
  // its own job, which the cgroup.kill below waits for.
  const size_t count = __atomic_load_n(&a->group_count, __ATOMIC_ACQUIRE);
  for (size_t i = 0; i < count; ++i) Syscall(SYS_kill, -a->groups[i], SIGKILL);
  if (!a->cgroup_dir.empty()) KillAndRemoveCgroupRaw(a->cgroup_dir.c_str());
  if (!a->job_marker.empty()) KillMarkedRaw(a->job_marker.c_str());
  for (const std::string& path : a->remove_if_killed) {
    RemoveTreeAt(AT_FDCWD, path.c_str(), /*files=*/true, 16);
  }
  raw::Exit(0);
}

#ifdef PDLAUNCH_HAVE_CLONE_VM
[[noreturn]] void WatchdogEntry(void* area) { WatchdogMain(static_cast<WatchdogArea*>(area)); }
#endif

// ---- The launcher's side.

/// Areas of disarmed helpers that may still be running on them; freed once they have exited.
/// Never destroyed: a helper may outlive the launcher's static destructors.
std::vector<WatchdogArea*>& Retired() {
  static auto* retired = new std::vector<WatchdogArea*>();
  return *retired;
}

/// Pids of the helpers not yet reaped (armed or disarmed): children of ours until they are.
std::vector<pid_t>& Unreaped() {
  static auto* pids = new std::vector<pid_t>();
  return *pids;
}

/// Frees the areas of helpers that have left them and reaps the helpers that have exited,
/// without waiting for either: a launcher that runs several jobs (elastic generations, master
/// runs) reaps each earlier helper at the next one's start or end, so zombies do not pile up.
void FreeExited() {
  std::vector<WatchdogArea*>& retired = Retired();
  std::erase_if(retired, [](WatchdogArea* area) {
    if (__atomic_load_n(&area->in_use, __ATOMIC_ACQUIRE) != 0) return false;
    delete area;
    return true;
  });
  std::erase_if(Unreaped(), [](pid_t pid) {
    siginfo_t info{};
    // Reaped, or not ours any more (ECHILD): either way nothing is left to do.
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG) != 0 ||
           info.si_pid == pid;
  });
}

}  // namespace

Watchdog::Watchdog(std::vector<std::string> remove_if_killed, std::string cgroup_dir,
                   size_t max_groups, std::string job_marker) {
  FreeExited();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) ThrowSystemError(errno, "pipe2 for the watchdog");
  auto* area = new WatchdogArea;
  area->read_fd = fds[0];
  area->cgroup_dir = std::move(cgroup_dir);
  area->job_marker = std::move(job_marker);
  area->remove_if_killed = std::move(remove_if_killed);
  // On the heap with the rest: a mapping of its own (it was 4 MiB, for any number of groups)
  // cost every job an munmap, and a TLB shoot-down on the other core, on its way out.
  area->groups.resize(max_groups);

  long pid = -ENOSYS;
  {
    ScopedBlockAllSignals blocked;
#ifdef PDLAUNCH_HAVE_CLONE_VM
    clone_args args{};
    args.flags = CLONE_VM | CLONE_CHILD_CLEARTID;
    args.exit_signal = SIGCHLD;
    args.child_tid = reinterpret_cast<uint64_t>(&area->in_use);
    args.stack = reinterpret_cast<uint64_t>(area->stack);
    args.stack_size = sizeof area->stack;
    area->shared = true;  // Read by the helper, so set before it starts; undone if not cloned.
    if (raw::CloneVmWanted()) pid = raw::Clone3OnStack(&args, &WatchdogEntry, area);
#endif
    if (pid == -ENOSYS || pid == -EINVAL || pid == -E2BIG) {
      area->shared = false;
      pid = ::fork();  // The helper gets a copy of the area; ours is free at once.
      if (pid == 0) WatchdogMain(area);
      if (pid < 0) pid = -errno;
      area->in_use = 0;
    }
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    delete area;
    ThrowSystemError(static_cast<int>(-pid), "cannot start the watchdog");
  }
  pid_ = static_cast<pid_t>(pid);
  fd_ = fds[1];
  area_ = area;
  Unreaped().push_back(pid_);
}

namespace {

/// Waits until `pid` (a helper of ours) has exited, until `deadline` at most, and reaps it.
void AwaitHelper(pid_t pid, std::chrono::steady_clock::time_point deadline) noexcept {
  const auto left_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
               .count()));
  };
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd exited{pidfd, POLLIN, 0};  // Readable once it has exited.
    while (::poll(&exited, 1, left_ms()) < 0 && errno == EINTR) {
    }
    ::close(pidfd);
    return;
  }
  if (errno != ENOSYS) return;  // ESRCH: already reaped.
  // Before Linux 5.3: look every millisecond until it can be reaped or the deadline passes.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid != pid && left_ms() > 0) {
    ::usleep(1000);
  }
}

}  // namespace

size_t ReapWatchdogs(std::chrono::milliseconds limit) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  FreeExited();
  const std::vector<pid_t> pending = Unreaped();
  for (pid_t pid : pending) AwaitHelper(pid, deadline);
  FreeExited();
  return Unreaped().size();
}

std::vector<pid_t> WatchdogPids() {
  FreeExited();
  return Unreaped();
}

Watchdog::~Watchdog() {
  Disarm();
  if (area_ != nullptr) Retired().push_back(area_);
  FreeExited();
}

void Watchdog::Register(pid_t pgid) noexcept {
  if (fd_ < 0) return;
  if (area_->shared) {  // Seen by the helper once the launcher is gone, whenever that is.
    const size_t count = area_->group_count;
    if (count < area_->groups.size()) {
      area_->groups[count] = pgid;
      __atomic_store_n(&area_->group_count, count + 1, __ATOMIC_RELEASE);
    }
    return;
  }
  const Message message{'R', {}, static_cast<int32_t>(pgid)};
  while (::write(fd_, &message, sizeof message) < 0 && errno == EINTR) {
  }
}

void Watchdog::Disarm() noexcept {
  if (fd_ < 0) return;
  if (area_->shared) {
    // The flag, then EOF: the helper reads the flag at EOF and exits without killing.
    __atomic_store_n(&area_->disarmed, true, __ATOMIC_RELEASE);
  } else {
    const Message message{'Q', {}, 0};
    while (::write(fd_, &message, sizeof message) < 0 && errno == EINTR) {
    }
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace pdlaunch
