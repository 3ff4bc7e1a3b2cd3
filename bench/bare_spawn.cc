// The baseline of the launch-overhead benchmark: forks and execs N copies of a program and
// waits for all of them, with nothing else (no process groups, no logs, no environment).
//
//   bare_spawn N PROGRAM [ARGS...]
//
// Exit code: 0 when every child exited 0, 1 otherwise, 2 on bad usage.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bare_spawn N PROGRAM [ARGS...]\n");
    return 2;
  }
  const int count = std::atoi(argv[1]);
  for (int i = 0; i < count; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    if (pid == 0) {
      ::execv(argv[2], argv + 2);
      ::_exit(127);
    }
  }
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    int status = 0;
    if (::wait(&status) < 0) {
      std::perror("wait");
      return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
