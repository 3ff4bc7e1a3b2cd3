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
/// "python3", looked up in `path`; a ".pyxes" file as `<python> script args...` (Paddle's rule);
/// the script "-m" (the command line `launch -m module args`) as `<python> -u -m module args...`;
/// anything else is executed directly, looked up like a shell
/// would (a name with '/' is used as is, otherwise searched in `path`). Throws LaunchError before
/// anything starts when the script does not exist, the program is not found, or is not
/// executable; the message names the script or program.
///
/// Details: a ".py" script is checked to exist relative to the current directory (the trainers
/// inherit it) and is passed unchanged; executable and argv[0] are the interpreter's resolved
/// path (as Paddle's sys.executable). An empty `python_override` counts as unset. A direct
/// program's argv[0] is `script` as given, executable its resolved path. Messages:
/// "training script not found: 'x.py'", "training program not found in PATH: 'foo'",
/// "training program not found: './x.sh'" (name with '/'), "training program is not executable:
/// './x.sh'" (for a PATH lookup the non-executable file found, e.g. '/opt/bin/foo'),
/// "Python interpreter not found in PATH: 'python3' (set PADDLE_LAUNCH_PYTHON to choose one)";
/// with the override the suffix is " (from PADDLE_LAUNCH_PYTHON)", e.g. "Python interpreter
/// not found: '/opt/py' (from PADDLE_LAUNCH_PYTHON)".
TrainingCommand ResolveTrainingCommand(const std::string& script,
                                       const std::vector<std::string>& args,
                                       const std::optional<std::string>& python_override,
                                       const std::string& path);

/// Finds `name` like execvp would: a name containing '/' is returned as is if it exists;
/// otherwise the first executable regular file `dir/name` for dir in `path` (':'-separated,
/// an empty entry meaning the current directory). nullopt when none.
/// A match in an empty entry is returned as "./name"; otherwise "dir/name". `path` is used as
/// given: the caller substitutes execvp's default ("/bin:/usr/bin") when PATH is unset.
std::optional<std::string> FindProgram(const std::string& name, const std::string& path);

}  // namespace pdlaunch
