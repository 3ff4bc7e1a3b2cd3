#include "pdlaunch/process/run_recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "pdlaunch/process/console_echo.h"

namespace pdlaunch {

RunReport& TheRunReport() {
  static RunReport report;
  return report;
}

double WallClockNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<std::string> WriteRunReport(const std::string& path, const RunReport& report) {
  std::string text;
  try {
    text = FormatRunReport(report);
  } catch (const std::exception& e) {
    return std::string("cannot format the report: ") + e.what();
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

std::optional<std::string> ReportPathProblem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "'" + path + "' is a directory";
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0) return "directory '" + dir + "': " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  // Where the temporary file is created and renamed (WriteRunReport).
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return "directory '" + dir + "': " + std::strerror(errno);
  }
  return std::nullopt;
}

}  // namespace pdlaunch
