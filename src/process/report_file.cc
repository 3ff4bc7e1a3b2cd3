#include "pdlaunch/process/report_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/small_file.h"

namespace pdlaunch {

double WallClockNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// Where --report writes (docs/report.md, "Where the report goes").
struct ReportTarget {
  enum class Kind { kStdout, kStraight, kFile };
  Kind kind = Kind::kFile;
  std::string path;  ///< kStraight: opened as given; kFile: the final regular file.
};

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// A path that ends in a dangling symbolic link: its final target (relative links resolved
// against their own directory), at most 40 links deep.
std::string FollowLinks(std::string path) {
  for (int depth = 0; depth < 40; ++depth) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    char buffer[4096];
    const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
    if (n <= 0) break;
    const std::string target(buffer, static_cast<size_t>(n));
    path = target.front() == '/' ? target : DirOf(path) + "/" + target;
  }
  return path;
}

ReportTarget ResolveReportTarget(const std::string& path) {
  if (path == "-") return {ReportTarget::Kind::kStdout, ""};
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  // A terminal, pipe, FIFO or socket, and anything under /dev or /proc (/dev/stdout onto a file
  // the shell opened): written straight, appended, never renamed over.
  char real[PATH_MAX];
  const std::string resolved = exists && ::realpath(path.c_str(), real) ? real : FollowLinks(path);
  if ((exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) ||
      path.starts_with("/dev/") || path.starts_with("/proc/") || resolved.starts_with("/dev/") ||
      resolved.starts_with("/proc/")) {
    return {ReportTarget::Kind::kStraight, path};
  }
  return {ReportTarget::Kind::kFile, resolved};
}

}  // namespace

std::optional<std::string> WriteRunReport(const std::string& given, const RunReport& report) {
  std::string text;
  try {
    text = FormatRunReport(report);
  } catch (const std::exception& e) {
    return std::string("cannot format the report: ") + e.what();
  }
  const ReportTarget target = ResolveReportTarget(given);
  if (target.kind != ReportTarget::Kind::kFile) {
    const int fd = target.kind == ReportTarget::Kind::kStdout
                       ? STDOUT_FILENO
                       : ::open(target.path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return "cannot open " + target.path + ": " + std::strerror(errno);
    const bool written = WriteAll(fd, text);
    const int write_errno = errno;
    if (fd != STDOUT_FILENO) ::close(fd);
    if (!written) return "cannot write " + given + ": " + std::strerror(write_errno);
    return std::nullopt;
  }
  // A regular file (through its symbolic links): atomically, a temporary beside it then rename,
  // so a reader never sees half a report and a link stays a link.
  const std::string& path = target.path;
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  // A fresh file, never one planted under that name (nor a link): O_EXCL.
  ::unlink(temporary.c_str());
  const int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + temporary + ": " + std::strerror(errno);
  const bool written = WriteAll(fd, text);
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    ::unlink(temporary.c_str());
    return "cannot write " + temporary + ": " + std::strerror(write_errno);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temporary.c_str());
    return "cannot rename " + temporary + " to " + path + ": " + std::strerror(rename_errno);
  }
  return std::nullopt;
}

std::optional<std::string> ReportPathProblem(const std::string& given) {
  const ReportTarget target = ResolveReportTarget(given);
  if (target.kind == ReportTarget::Kind::kStdout) return std::nullopt;
  struct stat st {};
  if (target.kind == ReportTarget::Kind::kStraight) {
    if (::access(target.path.c_str(), W_OK) != 0) {
      return "'" + target.path + "': " + std::strerror(errno);
    }
    return std::nullopt;
  }
  const std::string& path = target.path;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return "'" + given + "' is a directory";
  const std::string dir = DirOf(path);
  if (::stat(dir.c_str(), &st) != 0) return "directory '" + dir + "': " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  // Where the temporary file is created and renamed (WriteRunReport).
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return "directory '" + dir + "': " + std::strerror(errno);
  }
  return std::nullopt;
}

}  // namespace pdlaunch
