#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pdlaunch {

/// The command line of each trainer and the file to execute.
struct TrainingCommand {
  std::string executable;         ///< Path handed to execve.
  std::vector<std::string> argv;  ///< argv[0] included.
};

/// Builds the trainer command (issue #2 item 3). A script ending in ".py" runs as
/// `<python> -u script args...`, with <python> = `python_override` (env PADDLE_LAUNCH_PYTHON) or
/// "python3", looked up in `path`; anything else is executed directly, looked up like a shell
/// would (a name with '/' is used as is, otherwise searched in `path`). Throws LaunchError before
/// anything starts when the script does not exist, the program is not found, or is not
/// executable; the message names the script or program.
TrainingCommand ResolveTrainingCommand(const std::string& script,
                                       const std::vector<std::string>& args,
                                       const std::optional<std::string>& python_override,
                                       const std::string& path);

/// Finds `name` like execvp would: a name containing '/' is returned as is if it exists;
/// otherwise the first executable regular file `dir/name` for dir in `path` (':'-separated,
/// an empty entry meaning the current directory). nullopt when none.
std::optional<std::string> FindProgram(const std::string& name, const std::string& path);

}  // namespace pdlaunch
