#include "run/log_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <ctime>
#include <string_view>
#include <system_error>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/process/pod_console.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {

namespace fs = std::filesystem;

fs::path PrepareLogDir(const std::string& log_dir) {
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  if (ec) {
    throw LaunchError(fmt::format("cannot create log directory '{}': {}", log_dir, ec.message()));
  }
  CheckLogDirOwnership(log_dir);
  return fs::absolute(log_dir);
}

void CheckLogDirOwnership(const std::string& log_dir) {
  struct stat st {};
  if (::stat(log_dir.c_str(), &st) != 0) return;  // create_directories said it exists.
  // Its group may write it: with umask 002 (user private groups) every directory is 775, and
  // the group is the user's own; a link planted by a group member still fails O_NOFOLLOW.
  const bool others_write = st.st_uid != ::geteuid() || (st.st_mode & S_IWOTH) != 0;
  // A sticky directory (/tmp's kind) keeps each user's files to that user; the files are opened
  // without following links, so one planted there fails to open rather than being written.
  if (!others_write || (st.st_mode & S_ISVTX) != 0) return;
  throw LaunchError(fmt::format(
      "log directory '{}' can be written by another user ({}; mode {:o}): a file or link planted "
      "there would be written through; use a directory of your own, or make it sticky "
      "(chmod +t)",
      log_dir,
      st.st_uid != ::geteuid() ? fmt::format("owned by uid {}", st.st_uid)
                               : std::string("writable by all"),
      st.st_mode & 07777));
}

std::vector<fs::path> MissingDirectories(const std::string& dir) {
  std::vector<fs::path> missing;
  // Usually it exists: one stat, not the 15 us of getcwd and path arithmetic below.
  struct stat st {};
  if (!dir.empty() && ::stat(dir.c_str(), &st) == 0) return missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty(); p = p.parent_path()) {
    if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) continue;  // "a/b/"
    if (fs::exists(p, ec) || ec || p == p.root_path()) break;
    missing.push_back(p);
  }
  return missing;
}

void RemoveEmptyDirectories(const std::vector<fs::path>& dirs) {
  std::error_code ec;
  for (const fs::path& dir : dirs) {
    if (!fs::remove(dir, ec)) return;  // Not empty (or gone): its parents are not ours to take.
  }
}

namespace {

// Without TMPDIR: /dev/shm where it is a writable tmpfs, else /tmp. A directory on disk costs a
// mkdir and an rmdir per job that take 0.16 ms together on ext4 mounted with `discard`
// (docs/performance.md); the gloo file store needs no more than memory.
fs::path TempBase() {
  if (std::optional<std::string> tmpdir = GetEnv("TMPDIR")) return *tmpdir;
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) == 0 && shm.f_type == TMPFS_MAGIC &&
      ::access("/dev/shm", W_OK | X_OK) == 0) {
    return "/dev/shm";
  }
  return "/tmp";
}

}  // namespace

TempDir::TempDir() {
  const fs::path base = TempBase();
  std::string pattern = (base / "tmpXXXXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) ThrowSystemError(errno, "mkdtemp in " + base.string());
  path_ = pattern;
}

TempDir::~TempDir() {
  if (::rmdir(path_.c_str()) == 0) return;  // Usually empty: one call instead of a walk.
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void WriteTextFile(const std::filesystem::path& path, const std::string& content) {
  // Written over in place and then cut to length, not truncated first: truncating frees the
  // file's blocks and the write allocates them again, which on ext4 mounted with `discard`
  // costs about 0.25 ms (a discard per run; measured, docs/performance.md). Same result.
  // O_NOFOLLOW: a link planted in a shared log directory is not written through.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  bool ok = fd >= 0 && WriteAll(fd, content);
  ok = ok && ::ftruncate(fd, static_cast<off_t>(content.size())) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) ThrowSystemError(error, fmt::format("cannot write '{}'", path.string()));
}

void WriteEnvLogs(const std::vector<SupervisedProcess>& processes, bool truncate) {
  for (size_t i = 0; i < processes.size(); ++i) {
    const SupervisedProcess& p = processes[i];
    if (p.log_path.empty()) continue;
    const fs::path path = fs::path(p.log_path).parent_path() / fmt::format("envlog.{}", i);
    // It holds every variable the launcher had, secrets included: this user's only (Paddle
    // writes it with the umask's 0644).
    const UniqueFd fd(::open(
        path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : O_APPEND),
        0600));
    const std::string text = FormatEnvLog(p.spec.shared_env.get(), p.spec.env);
    if (fd.get() < 0 || !WriteAll(fd.get(), text)) {
      PDLOG_ERROR("save pod env log failed because {}: {}", path.string(),
                  std::system_category().message(errno));
    }
  }
}

void WriteEndpointsFile(const std::filesystem::path& log_dir, const std::string& job_id,
                        const std::string& pod, const std::vector<Endpoint>& world, bool truncate) {
  if (pod.empty()) {
    WriteTextFile(log_dir / "endpoints.log", FormatEndpointsLog(world));
    return;
  }
  WritePodLog(log_dir / fmt::format("{}.{}.log", job_id, pod),
              PythonListRepr(EndpointStrings(world)), truncate);
}

void MarkRunInLogs(std::vector<SupervisedProcess>& processes, std::string_view job_id,
                   std::string_view pod) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
  const std::string banner =
      fmt::format("===== pdlaunch: job {}{}{}, run of {} (launcher pid {}) =====\n", job_id,
                  pod.empty() ? "" : ", pod ", pod, when, ::getpid());
  for (SupervisedProcess& p : processes) {
    if (!p.spec.output_truncate) p.spec.output_banner = banner;
  }
}

void WritePodLog(const std::filesystem::path& path, const std::string& topology, bool truncate) {
  // open(2) and write(2), as WriteTextFile: an std::ofstream would set up the C++ locale on the
  // start of every job of today's interface (small_file.h).
  // It holds the launcher's whole environment, secrets included: this user's only, and never
  // written through a planted link.
  const UniqueFd fd(
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : O_APPEND), 0600));
  struct stat st {};
  const bool ok = fd.get() >= 0 && ::fstat(fd.get(), &st) == 0;
  std::string text;
  if (ok && st.st_size == 0) {
    text = "{";
    for (const std::string& entry : ParentEnvironment()) {
      const size_t equals = entry.find('=');
      if (equals == std::string::npos) continue;
      text += (text.size() > 1 ? ", " : "") + PythonStrRepr(entry.substr(0, equals)) + ": " +
              PythonStrRepr(entry.substr(equals + 1));
    }
    text += "}\n";
  }
  text += topology + "\n";
  if (!ok || !WriteAll(fd.get(), text)) {
    throw LaunchError(fmt::format("cannot write '{}'", path.string()));
  }
}

}  // namespace pdlaunch::internal
