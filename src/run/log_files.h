#pragma once

// The files a run writes in its log directory beside the processes' logs (internal to run/):
// the directory itself, the pod log, endpoints.log, envlog.N, the mark of a run in a shared log,
// and the temporary directory of the gloo file store.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch::internal {

/// Paddle 3's envlog.N beside each process's log (today's interface): every variable the process
/// starts with, `NAME=value` sorted by name, appended or (`truncate`) rewritten; created 0600.
/// A file that cannot be written is logged (Paddle's "save pod env log failed") and skipped.
void WriteEnvLogs(const std::vector<SupervisedProcess>& processes, bool truncate);

/// LaunchError when another user can write `log_dir` (it belongs to another user, or everyone
/// may write it) and it is not sticky: a link planted there would be written through
/// (hostile review #38 item 7). The launcher's files there are opened with O_NOFOLLOW anyway.
void CheckLogDirOwnership(const std::string& log_dir);

/// Creates `log_dir` (and parents); returns its absolute path. Throws LaunchError naming it, and
/// when CheckLogDirOwnership refuses it.
std::filesystem::path PrepareLogDir(const std::string& log_dir);

/// The directories of `dir` and its parents that do not exist yet, deepest first: what
/// PrepareLogDir would make, and what a refused run removes again (RemoveEmptyDirectories).
std::vector<std::filesystem::path> MissingDirectories(const std::string& dir);

/// Removes each of `dirs` (deepest first) that is empty; stops at the first that is not.
void RemoveEmptyDirectories(const std::vector<std::filesystem::path>& dirs);

/// A temporary directory (PADDLE_GLOO_FS_PATH), removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Writes `content` to `path`, replacing it. Throws LaunchError naming the file.
void WriteTextFile(const std::filesystem::path& path, const std::string& content);

/// Marks this run in the logs its processes append to (docs/cli.md, "Runs that share a log
/// directory"): a process whose log already holds an earlier run's output writes, before its
/// own, "===== pdlaunch: job <job_id>[, pod <pod>], run of <local time> (launcher pid <pid>)
/// =====". `pod`: the pod of today's interface (its pod log's name), or empty.
void MarkRunInLogs(std::vector<SupervisedProcess>& processes, std::string_view job_id,
                   std::string_view pod = {});

/// Writes today's launcher's pod log `path` (<job_id>.<pod>.log; docs/cli.md, "Today's launcher
/// (paddle.distributed.launch since Paddle 2.3)"): when the file is empty (or `truncate`), the
/// launcher's environment as a Python dict first; then `topology` (the peers or the endpoints)
/// and a newline.
void WritePodLog(const std::filesystem::path& path, const std::string& topology, bool truncate);

/// A collective job's endpoint file, by the one rule of docs/cli.md ("Files"): with a `pod`
/// (today's interface) its endpoints appended to the pod log `<job_id>.<pod>.log`
/// (WritePodLog); with an empty `pod` the legacy `endpoints.log`, rewritten.
void WriteEndpointsFile(const std::filesystem::path& log_dir, const std::string& job_id,
                        const std::string& pod, const std::vector<Endpoint>& world, bool truncate);

}  // namespace pdlaunch::internal
