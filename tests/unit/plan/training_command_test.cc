#include "pdlaunch/plan/training_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pdlaunch/base/errors.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

/// A scratch directory with helpers to create files with given permission bits.
class ScopedTempDir : public testutil::ScopedTempDir {
 public:
  /// Absolute path of `name` inside the directory.
  std::string Path(const std::string& name) const { return File(name); }
  std::string path() const { return testutil::ScopedTempDir::path().string(); }

  /// Creates the file `name` with permission bits `mode`; returns its path.
  std::string Touch(const std::string& name, fs::perms mode = fs::perms::owner_read) const {
    std::string file = Path(name);
    std::ofstream(file) << "#!/bin/sh\n";
    fs::permissions(file, mode);
    return file;
  }
  std::string TouchExecutable(const std::string& name) const {
    return Touch(name, fs::perms::owner_read | fs::perms::owner_exec);
  }
  std::string MakeDir(const std::string& name) const {
    fs::create_directories(Path(name));
    return Path(name);
  }
};

/// Changes the working directory for its lifetime.
class ScopedChdir {
 public:
  explicit ScopedChdir(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedChdir() {
    std::error_code ec;
    fs::current_path(old_, ec);
  }
  ScopedChdir(const ScopedChdir&) = delete;
  ScopedChdir& operator=(const ScopedChdir&) = delete;

 private:
  fs::path old_;
};

std::string ResolveError(const std::string& script, const std::optional<std::string>& python,
                         const std::string& path) {
  try {
    ResolveTrainingCommand(script, {}, python, path);
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitSetupError);
    return e.what();
  }
  return "no LaunchError";
}

TEST(FindProgramTest, FindsTheFirstExecutableInPathOrder) {
  ScopedTempDir tmp;
  std::string a = tmp.MakeDir("a");
  std::string b = tmp.MakeDir("b");
  std::string c = tmp.MakeDir("c");
  tmp.TouchExecutable("b/tool");
  tmp.TouchExecutable("c/tool");
  EXPECT_EQ(FindProgram("tool", a + ":" + b + ":" + c), b + "/tool");
}

TEST(FindProgramTest, SkipsNonExecutableFilesAndDirectories) {
  ScopedTempDir tmp;
  std::string a = tmp.MakeDir("a");
  std::string b = tmp.MakeDir("b");
  std::string c = tmp.MakeDir("c");
  tmp.Touch("a/tool");
  tmp.MakeDir("b/tool");
  tmp.TouchExecutable("c/tool");
  EXPECT_EQ(FindProgram("tool", a + ":" + b + ":" + c), c + "/tool");
}

TEST(FindProgramTest, NotFoundIsNullopt) {
  ScopedTempDir tmp;
  tmp.Touch("tool");
  EXPECT_EQ(FindProgram("tool", tmp.path()), std::nullopt);
  EXPECT_EQ(FindProgram("other", tmp.path()), std::nullopt);
  EXPECT_EQ(FindProgram("", tmp.path()), std::nullopt);
}

TEST(FindProgramTest, TrailingSlashInEntryGivesNoDoubleSlash) {
  ScopedTempDir tmp;
  std::string tool = tmp.TouchExecutable("tool");
  EXPECT_EQ(FindProgram("tool", tmp.path() + "/"), tool);
}

TEST(FindProgramTest, EmptyEntryMeansTheCurrentDirectory) {
  ScopedTempDir tmp;
  tmp.TouchExecutable("tool");
  ScopedChdir chdir(tmp.path());
  EXPECT_EQ(FindProgram("tool", "/nonexistent:"), "./tool");
  EXPECT_EQ(FindProgram("tool", ":/nonexistent"), "./tool");
  EXPECT_EQ(FindProgram("tool", "/nonexistent::/also-not"), "./tool");
  EXPECT_EQ(FindProgram("tool", ""), "./tool");
  EXPECT_EQ(FindProgram("tool", "/nonexistent"), std::nullopt);
}

TEST(FindProgramTest, NameWithSlashIsReturnedAsIsWhenItExists) {
  ScopedTempDir tmp;
  std::string plain = tmp.Touch("plain");
  EXPECT_EQ(FindProgram(plain, "/nonexistent"), plain);
  EXPECT_EQ(FindProgram(tmp.Path("missing"), tmp.path()), std::nullopt);
  ScopedChdir chdir(tmp.path());
  EXPECT_EQ(FindProgram("./plain", ""), "./plain");
}

TEST(ResolveTrainingCommandTest, PythonScriptRunsUnbufferedUnderPython3FromPath) {
  ScopedTempDir tmp;
  std::string bin = tmp.MakeDir("bin");
  std::string python = tmp.TouchExecutable("bin/python3");
  std::string script = tmp.Touch("train.py");
  TrainingCommand command =
      ResolveTrainingCommand(script, {"--lr", "0.1"}, std::nullopt, "/nonexistent:" + bin);
  EXPECT_EQ(command.executable, python);
  EXPECT_EQ(command.argv, (std::vector<std::string>{python, "-u", script, "--lr", "0.1"}));
}

TEST(ResolveTrainingCommandTest, PyxesRunsBufferedAndAModuleUnbufferedAsPaddleRunsThem) {
  ScopedTempDir tmp;
  std::string bin = tmp.MakeDir("bin");
  std::string python = tmp.TouchExecutable("bin/python3");
  std::string compiled = tmp.Touch("train.pyxes");
  EXPECT_EQ(ResolveTrainingCommand(compiled, {"--lr"}, std::nullopt, bin).argv,
            (std::vector<std::string>{python, compiled, "--lr"}));
  // `launch -m pkg.train --lr`: the scanner makes "-m" the script.
  EXPECT_EQ(ResolveTrainingCommand("-m", {"pkg.train", "--lr"}, std::nullopt, bin).argv,
            (std::vector<std::string>{python, "-u", "-m", "pkg.train", "--lr"}));
  EXPECT_EQ(ResolveError(tmp.Path("gone.pyxes"), std::nullopt, bin),
            "training script not found: '" + tmp.Path("gone.pyxes") + "'");
}

TEST(ResolveTrainingCommandTest, RelativeScriptIsCheckedAgainstTheWorkingDirectory) {
  ScopedTempDir tmp;
  std::string python = tmp.TouchExecutable("python3");
  tmp.MakeDir("src");
  tmp.Touch("src/train.py");
  ScopedChdir chdir(tmp.path());
  TrainingCommand command = ResolveTrainingCommand("src/train.py", {}, std::nullopt, tmp.path());
  EXPECT_EQ(command.argv, (std::vector<std::string>{python, "-u", "src/train.py"}));
  EXPECT_EQ(ResolveError("train.py", std::nullopt, tmp.path()),
            "training script not found: 'train.py'");
}

TEST(ResolveTrainingCommandTest, OverrideNamesTheInterpreter) {
  ScopedTempDir tmp;
  std::string mine = tmp.TouchExecutable("mypython");
  tmp.TouchExecutable("python3");
  std::string script = tmp.Touch("train.py");
  TrainingCommand by_name = ResolveTrainingCommand(script, {}, "mypython", tmp.path());
  EXPECT_EQ(by_name.executable, mine);
  TrainingCommand by_path = ResolveTrainingCommand(script, {"x"}, mine, "/nonexistent");
  EXPECT_EQ(by_path.executable, mine);
  EXPECT_EQ(by_path.argv, (std::vector<std::string>{mine, "-u", script, "x"}));
}

TEST(ResolveTrainingCommandTest, EmptyOverrideCountsAsUnset) {
  ScopedTempDir tmp;
  std::string python = tmp.TouchExecutable("python3");
  std::string script = tmp.Touch("train.py");
  EXPECT_EQ(ResolveTrainingCommand(script, {}, "", tmp.path()).executable, python);
}

TEST(ResolveTrainingCommandTest, MissingScriptIsNamed) {
  ScopedTempDir tmp;
  tmp.TouchExecutable("python3");
  EXPECT_EQ(ResolveError(tmp.Path("nope.py"), std::nullopt, tmp.path()),
            "training script not found: '" + tmp.Path("nope.py") + "'");
}

TEST(ResolveTrainingCommandTest, MissingPythonMentionsTheOverrideVariable) {
  ScopedTempDir tmp;
  std::string script = tmp.Touch("train.py");
  EXPECT_EQ(ResolveError(script, std::nullopt, tmp.path()),
            "Python interpreter not found in PATH: 'python3' (set PADDLE_LAUNCH_PYTHON to choose "
            "one)");
  EXPECT_EQ(ResolveError(script, "python3.99", tmp.path()),
            "Python interpreter not found in PATH: 'python3.99' (from PADDLE_LAUNCH_PYTHON)");
  EXPECT_EQ(ResolveError(script, "/nonexistent/py", tmp.path()),
            "Python interpreter not found: '/nonexistent/py' (from PADDLE_LAUNCH_PYTHON)");
}

TEST(ResolveTrainingCommandTest, NonExecutablePythonIsNamed) {
  ScopedTempDir tmp;
  std::string script = tmp.Touch("train.py");
  std::string python = tmp.Touch("python3");
  EXPECT_EQ(ResolveError(script, std::nullopt, tmp.path()),
            "Python interpreter is not executable: '" + python +
                "' (set PADDLE_LAUNCH_PYTHON to choose one)");
  EXPECT_EQ(ResolveError(script, python, "/nonexistent"),
            "Python interpreter is not executable: '" + python + "' (from PADDLE_LAUNCH_PYTHON)");
}

TEST(ResolveTrainingCommandTest, OtherProgramRunsDirectlyFromPath) {
  ScopedTempDir tmp;
  std::string program = tmp.TouchExecutable("run.sh");
  TrainingCommand command = ResolveTrainingCommand("run.sh", {"-v"}, "ignored", tmp.path());
  EXPECT_EQ(command.executable, program);
  EXPECT_EQ(command.argv, (std::vector<std::string>{"run.sh", "-v"}));
}

TEST(ResolveTrainingCommandTest, ProgramWithSlashIsUsedAsIs) {
  ScopedTempDir tmp;
  tmp.TouchExecutable("run.sh");
  ScopedChdir chdir(tmp.path());
  TrainingCommand command = ResolveTrainingCommand("./run.sh", {}, std::nullopt, "/nonexistent");
  EXPECT_EQ(command.executable, "./run.sh");
  EXPECT_EQ(command.argv, (std::vector<std::string>{"./run.sh"}));
}

TEST(ResolveTrainingCommandTest, ProgramErrorsNameTheProgram) {
  ScopedTempDir tmp;
  std::string hidden = tmp.Touch("hidden");
  tmp.Touch("x.sh");
  tmp.MakeDir("dir");
  ScopedChdir chdir(tmp.path());
  EXPECT_EQ(ResolveError("foo", std::nullopt, tmp.path()),
            "training program not found in PATH: 'foo'");
  EXPECT_EQ(ResolveError("hidden", std::nullopt, tmp.path()),
            "training program is not executable: '" + hidden + "'");
  EXPECT_EQ(ResolveError("./x.sh", std::nullopt, tmp.path()),
            "training program is not executable: './x.sh'");
  EXPECT_EQ(ResolveError("./dir", std::nullopt, tmp.path()),
            "training program is not executable: './dir'");
  EXPECT_EQ(ResolveError("./nope.sh", std::nullopt, tmp.path()),
            "training program not found: './nope.sh'");
}

}  // namespace
}  // namespace pdlaunch
