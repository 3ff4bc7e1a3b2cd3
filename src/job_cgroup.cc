#include "pdlaunch/job_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "pdlaunch/cgroup_path.h"

namespace pdlaunch {
namespace {

/// The whole file, or "" when it cannot be read. (Plain read(2): cgroupfs and procfs files are
/// small, and this runs at every job's start and end.)
std::string ReadFile(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

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
  std::ifstream procs(dir / "cgroup.procs");
  pid_t pid;
  while (procs >> pid) members->push_back(pid);
  if (!recursive) return;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) CollectMembers(it->path(), members);
  }
}

}  // namespace

std::unique_ptr<JobCgroup> JobCgroup::Create(std::string* why_not) {
  const std::optional<std::string> own =
      OwnCgroupDir(ReadFile("/proc/self/mountinfo"), ReadFile("/proc/self/cgroup"));
  if (!own) {
    *why_not = "no cgroup v2 hierarchy (no cgroup2 mount, or no 0:: line in /proc/self/cgroup)";
    return nullptr;
  }
  static std::atomic<int> serial{0};
  const std::string dir =
      *own + "/pdlaunch-" + std::to_string(::getpid()) + "-" + std::to_string(serial.fetch_add(1));
  if (::mkdir(dir.c_str(), 0755) != 0) {
    *why_not = "cannot create " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  if (::access((dir + "/cgroup.kill").c_str(), W_OK) != 0) {
    *why_not = dir + "/cgroup.kill is missing (Linux 5.14 or newer is needed)";
    ::rmdir(dir.c_str());
    return nullptr;
  }
  const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  const int dir_fd = fd < 0 ? -1 : ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    *why_not = "cannot open " + dir + "/cgroup.procs: " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::rmdir(dir.c_str());
    return nullptr;
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(dir, dir_fd, fd));
}

JobCgroup::~JobCgroup() {
  ::close(procs_fd_);
  ::close(dir_fd_);
  KillAndRemoveCgroup(dir_, 5.0);
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
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  // The kernel signals every change of cgroup.events as a modification of the file.
  const int inotify = ::inotify_init1(IN_CLOEXEC);
  if (inotify >= 0) ::inotify_add_watch(inotify, (dir + "/cgroup.events").c_str(), IN_MODIFY);
  bool empty;
  while (!(empty = !Populated(dir))) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || inotify < 0) break;
    pollfd fd{inotify, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(left.count()) + 1) > 0) {
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
