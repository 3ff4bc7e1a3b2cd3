#include "pdlaunch/plan/training_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

constexpr std::string_view kDefaultPython = "python3";

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `dir/name` for each ':'-separated entry of `path`, "./name" for an empty entry.
std::vector<std::string> PathCandidates(const std::string& name, const std::string& path) {
  std::vector<std::string> candidates;
  size_t begin = 0;
  while (true) {
    size_t colon = path.find(':', begin);
    const std::string dir = path.substr(begin, colon == std::string::npos ? colon : colon - begin);
    if (dir.empty()) {
      candidates.push_back("./" + name);
    } else {
      candidates.push_back(dir.back() == '/' ? dir + name : dir + "/" + name);
    }
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  return candidates;
}

// The first regular file `dir/name` in `path`, executable or not: what execvp fails on with
// EACCES.
std::optional<std::string> FindNonExecutable(const std::string& name, const std::string& path) {
  for (const std::string& candidate : PathCandidates(name, path)) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
  }
  return std::nullopt;
}

// The path to execute for `name`, or a LaunchError "<what> not found..." ending in `hint`.
std::string ResolveProgram(const std::string& name, const std::string& path, std::string_view what,
                           std::string_view hint) {
  if (name.find('/') != std::string::npos) {
    if (!Exists(name)) throw LaunchError(fmt::format("{} not found: '{}'{}", what, name, hint));
    if (!IsExecutableFile(name)) {
      throw LaunchError(fmt::format("{} is not executable: '{}'{}", what, name, hint));
    }
    return name;
  }
  if (std::optional<std::string> found = FindProgram(name, path)) return *found;
  if (std::optional<std::string> file = FindNonExecutable(name, path)) {
    throw LaunchError(fmt::format("{} is not executable: '{}'{}", what, *file, hint));
  }
  throw LaunchError(fmt::format("{} not found in PATH: '{}'{}", what, name, hint));
}

}  // namespace

TrainingCommand ResolveTrainingCommand(const std::string& script,
                                       const std::vector<std::string>& args,
                                       const std::optional<std::string>& python_override,
                                       const std::string& path) {
  TrainingCommand command;
  const bool module = script == "-m";
  const bool pyxes = script.ends_with(".pyxes");
  if (module || pyxes || script.ends_with(".py")) {
    if (!module && !Exists(script)) {
      throw LaunchError(fmt::format("training script not found: '{}'", script));
    }
    const bool overridden = python_override && !python_override->empty();
    std::string python = overridden ? *python_override : std::string(kDefaultPython);
    command.executable = ResolveProgram(
        python, path, "Python interpreter",
        overridden ? " (from PADDLE_LAUNCH_PYTHON)" : " (set PADDLE_LAUNCH_PYTHON to choose one)");
    // Paddle runs a .pyxes file (compiled Python) without -u; -m module unbuffered, as a .py.
    command.argv = pyxes ? std::vector<std::string>{command.executable, script}
                         : std::vector<std::string>{command.executable, "-u", script};
  } else {
    command.executable = ResolveProgram(script, path, "training program", "");
    command.argv = {script};
  }
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  return command;
}

std::optional<std::string> FindProgram(const std::string& name, const std::string& path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (Exists(name)) return name;
    return std::nullopt;
  }
  for (const std::string& candidate : PathCandidates(name, path)) {
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace pdlaunch
