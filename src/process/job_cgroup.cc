#include "pdlaunch/process/job_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/small_file.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/process/cgroup_path.h"

namespace pdlaunch {
namespace {

/// The unified hierarchy at one of its usual mount points, found with statfs(2):
/// /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones. Empty: neither.
std::string UsualUnifiedMount() {
  for (const char* dir : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs {};
    if (::statfs(dir, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return dir;
  }
  return {};
}

/// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path) { return ReadSmallFile(path).value_or(""); }

bool WriteString(const std::string& path, const char* text) noexcept {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t length = std::char_traits<char>::length(text);
  const bool ok = ::write(fd, text, length) == static_cast<ssize_t>(length);
  ::close(fd);
  return ok;
}

bool Populated(const std::string& dir) noexcept {
  try {
    return CgroupEventsValue(ReadFile(dir + "/cgroup.events"), "populated").value_or(0) != 0;
  } catch (...) {
    return false;
  }
}

/// rmdir of `dir` and every cgroup below it, deepest first (cgroupfs directories hold only
/// interface files, which go with the directory).
bool RemoveTree(const std::filesystem::path& dir) noexcept {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) RemoveTree(it->path());
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

void CollectMembers(const std::filesystem::path& dir, std::vector<pid_t>* members,
                    bool recursive = true) {
  // Not an std::ifstream: this runs at every teardown signal (Escaped() in the supervisor),
  // which must not pay for setting up the C++ locale (small_file.h).
  const std::vector<pid_t> procs =
      ReadPidList((dir / "cgroup.procs").string()).value_or(std::vector<pid_t>{});
  members->insert(members->end(), procs.begin(), procs.end());
  if (!recursive) return;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) CollectMembers(it->path(), members);
  }
}

}  // namespace

std::unique_ptr<JobCgroup> JobCgroup::Create(std::string* why_not) {
  const std::string self_cgroup = ReadFile("/proc/self/cgroup");
  // Reading /proc/self/mountinfo costs every job 32 us here, more among a container's many
  // mounts: the usual mount points are asked first, with statfs. Should such a mount show only
  // a subtree of the hierarchy (a container without a cgroup namespace of its own), the
  // launcher's path is not under it, the mkdir below fails with ENOENT and mountinfo decides.
  const std::string usual = UsualUnifiedMount();
  std::optional<std::string> own =
      usual.empty() ? std::nullopt : OwnCgroupDirUnder(usual, self_cgroup);
  const bool from_mountinfo = !own;
  if (from_mountinfo) own = OwnCgroupDir(ReadFile("/proc/self/mountinfo"), self_cgroup);
  static std::atomic<int> serial{0};
  const std::string name =
      "/pdlaunch-" + std::to_string(::getpid()) + "-" + std::to_string(serial.fetch_add(1));
  std::string dir;
  int error = 0;
  const auto make = [&] {
    dir = *own + name;
    error = ::mkdir(dir.c_str(), 0755) == 0 ? 0 : errno;
  };
  if (own) make();
  if (own && error == ENOENT && !from_mountinfo) {
    own = OwnCgroupDir(ReadFile("/proc/self/mountinfo"), self_cgroup);
    if (own) make();
  }
  if (!own) {
    *why_not = "no cgroup v2 hierarchy (no cgroup2 mount, or no 0:: line in /proc/self/cgroup)";
    return nullptr;
  }
  if (error != 0) {
    *why_not = "cannot create " + dir + ": " + std::strerror(error);
    return nullptr;
  }
  // Opened relative to the directory: one path walk instead of three.
  const int dir_fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0 && ::faccessat(dir_fd, "cgroup.kill", W_OK, 0) != 0) {
    *why_not = dir + "/cgroup.kill is missing (Linux 5.14 or newer is needed)";
    ::close(dir_fd);
    ::rmdir(dir.c_str());
    return nullptr;
  }
  const int fd = dir_fd < 0 ? -1 : ::openat(dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *why_not = "cannot open " + dir + "/cgroup.procs: " + std::strerror(errno);
    if (dir_fd >= 0) ::close(dir_fd);
    ::rmdir(dir.c_str());
    return nullptr;
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(dir, dir_fd, fd));
}

JobCgroup::~JobCgroup() {
  ::close(procs_fd_);
  ::close(dir_fd_);
  if (!removed_) KillAndRemoveCgroup(dir_, 5.0);
}

bool JobCgroup::RemoveIfEmpty() noexcept {
  if (!removed_) removed_ = (::rmdir(dir_.c_str()) == 0) || (errno == ENOENT);
  return removed_;
}

std::vector<pid_t> JobCgroup::Members() const noexcept {
  std::vector<pid_t> members;
  try {
    CollectMembers(dir_, &members);
  } catch (...) {
  }
  return members;
}

std::vector<pid_t> JobCgroup::DirectMembers() const noexcept {
  std::vector<pid_t> members;
  try {
    CollectMembers(dir_, &members, false);
  } catch (...) {
  }
  return members;
}

bool JobCgroup::Populated() const noexcept { return pdlaunch::Populated(dir_); }

bool JobCgroup::Kill() const noexcept { return WriteString(dir_ + "/cgroup.kill", "1"); }

bool JobCgroup::WaitEmpty(double seconds) const noexcept { return WaitCgroupEmpty(dir_, seconds); }

bool WaitCgroupEmpty(const std::string& dir, double seconds) noexcept {
  // The common case, and cheap: closing an inotify instance waits for an SRCU grace period
  // (5-25 ms), which a launcher whose job ended cleanly must not pay.
  if (!Populated(dir)) return true;
  const auto deadline = std::chrono::steady_clock::now() + SteadyDuration(seconds);
  // The kernel signals every change of cgroup.events as a modification of the file.
  const int inotify = ::inotify_init1(IN_CLOEXEC);
  if (inotify >= 0) ::inotify_add_watch(inotify, (dir + "/cgroup.events").c_str(), IN_MODIFY);
  bool empty;
  while (!(empty = !Populated(dir))) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    // Without an inotify instance (fs.inotify.max_user_instances reached): cgroup.events is
    // read again every 10 ms until the deadline.
    pollfd fd{inotify, POLLIN, 0};
    if (::poll(inotify >= 0 ? &fd : nullptr, inotify >= 0 ? 1 : 0,
               inotify >= 0 ? static_cast<int>(left.count()) + 1 : 10) > 0) {
      char events[1024];
      [[maybe_unused]] ssize_t ignored = ::read(inotify, events, sizeof events);
    }
  }
  if (inotify >= 0) ::close(inotify);
  return empty;
}

bool KillAndRemoveCgroup(const std::string& dir, double seconds) noexcept {
  // The common case costs one rmdir: it fails (EBUSY) while a process or a child cgroup remains.
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
  if (Populated(dir)) WriteString(dir + "/cgroup.kill", "1");
  WaitCgroupEmpty(dir, seconds);
  return RemoveTree(dir);
}

}  // namespace pdlaunch
