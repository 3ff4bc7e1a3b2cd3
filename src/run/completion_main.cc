// pdlaunch_completion bash|zsh: prints launch's completion script for that shell. Run at build
// time (CMakeLists.txt) to make the files `cmake --install` and the Debian package ship.
#include <cstdio>
#include <exception>
#include <string>

#include "pdlaunch/cli/completion.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pdlaunch_completion bash|zsh\n");
    return 2;
  }
  try {
    const std::string script = pdlaunch::CompletionScript(pdlaunch::ParseShell(argv[1]));
    return std::fputs(script.c_str(), stdout) < 0 || std::fflush(stdout) != 0 ? 1 : 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pdlaunch_completion: %s\n", error.what());
    return 2;
  }
}
