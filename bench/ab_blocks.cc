// A/B timing of a few commands in rotated blocks, for deciding whether a change to the launcher
// is worth keeping (docs/performance.md, eighth measurement).
//
//   ab_blocks ROUNDS BLOCK cmd1 [args...] -- cmd2 [args...] [-- cmd3 ...]
//
// Each round runs every command BLOCK times back to back (two warm-up runs first, not counted),
// the order of the commands rotated by one per round; then prints each command's median wall
// time (fork to waitpid) over all its runs (the upper middle one of an even count) and its
// ratio to the first command. Commands are
// exec'ed directly (no shell, a full path needed), stdin/stdout/stderr on /dev/null.
//
// Why blocks and not alternation: a launch leaves work behind it (its watchdog finishing its
// exit, the kernel's cgroup and inotify teardown), which falls into whatever runs next. Run
// alternately with the bare loop, that work is charged to the loop; run back to back, as
// hyperfine and bench.py do, to the launcher itself, which is what a user running job after job
// sees. Many short rounds instead of hyperfine's few long ones: this machine's speed drifts by
// several percent over minutes, and a round of 30 runs sees little of it.
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

long long NowNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

long long RunOnce(char* const* argv, int devnull) {
  const long long start = NowNs();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull, fd);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const long long elapsed = NowNs() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ab_blocks: %s did not exit 0\n", argv[0]);
    std::exit(1);
  }
  return elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: ab_blocks ROUNDS BLOCK cmd [args...] [-- cmd [args...]]...\n");
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  const int block = std::atoi(argv[2]);
  if (rounds < 1 || block < 1) {
    std::fprintf(stderr, "ab_blocks: ROUNDS and BLOCK must be positive\n");
    return 2;
  }
  std::vector<char**> commands{argv + 3};
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      argv[i] = nullptr;  // Ends the previous command's argv.
      commands.push_back(argv + i + 1);
    }
  }
  for (char** command : commands) {
    if (command[0] == nullptr) {
      std::fprintf(stderr, "ab_blocks: an empty command (a trailing or doubled --)\n");
      return 2;
    }
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    std::perror("/dev/null");
    return 1;
  }
  std::vector<std::vector<long long>> times(commands.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < commands.size(); ++k) {
      const size_t c = (k + static_cast<size_t>(round)) % commands.size();
      for (int run = 0; run < block + 2; ++run) {
        const long long ns = RunOnce(commands[c], devnull);
        if (run >= 2) times[c].push_back(ns);
      }
    }
  }
  double first = 0;
  for (size_t c = 0; c < commands.size(); ++c) {
    std::vector<long long>& t = times[c];
    std::sort(t.begin(), t.end());
    const double median = static_cast<double>(t[t.size() / 2]) / 1000.0;
    if (c == 0) first = median;
    std::printf("%-40s median %9.1f us  ratio %.3f  (p25 %.0f, p75 %.0f, n=%zu)\n", commands[c][0],
                median, median / first, static_cast<double>(t[t.size() / 4]) / 1000.0,
                static_cast<double>(t[t.size() * 3 / 4]) / 1000.0, t.size());
  }
  return 0;
}
