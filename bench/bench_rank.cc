// A stand-in for one rank of a training job, for the abort-latency, teardown and scale benchmarks.
// It finds its rank in the variable each launcher sets (PADDLE_TRAINER_ID for pdlaunch and
// Paddle, RANK for torchrun, OMPI_COMM_WORLD_RANK for Open MPI).
//
//   bench_rank fail STAMP_FILE [DELAY_MS]      rank 1 sleeps DELAY_MS (default 200), writes
//                                              CLOCK_MONOTONIC in ns to STAMP_FILE, exits 1;
//                                              the other ranks sleep 60 s (SIGTERM kills them)
//   bench_rank fail-ignore STAMP_FILE [DELAY]  as `fail`, but the other ranks ignore SIGTERM
//   bench_rank ignore MARKER                   every rank ignores SIGTERM and sleeps 60 s
//                                              (MARKER only tags the processes)
//   bench_rank sleep SECONDS                   every rank sleeps SECONDS and exits 0
//   bench_rank report FILE [HOLD_MS]           appends one line "ROLE IP:PORT ID PID NS" to FILE
//                                              (TRAINING_ROLE, POD_IP, PADDLE_PORT,
//                                              PADDLE_TRAINER_ID or -, CLOCK_MONOTONIC ns);
//                                              trainer 0 also appends "LISTS <servers>
//                                              <trainers> <gloo http>"; then a PSERVER sleeps
//                                              60 s (SIGTERM kills it), the others sleep
//                                              HOLD_MS (default 0) and exit 0
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int RankFromEnvironment() {
  for (const char* name : {"PADDLE_TRAINER_ID", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return -1;
}

void SleepSeconds(double seconds) {
  timespec ts{
      static_cast<time_t>(seconds),
      static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  while (::nanosleep(&ts, &ts) != 0) {
  }
}

// Opens the stamp file first so that the time written is taken as late as possible: the
// only work between the clock read and exit_group is one pwrite.
[[noreturn]] void StampAndFail(const char* stamp_path) {
  const int fd = ::open(stamp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(stamp_path);
    ::_exit(3);
  }
  char text[32];
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const int length = std::snprintf(text, sizeof text, "%lld\n",
                                   static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  if (::pwrite(fd, text, static_cast<size_t>(length), 0) != length) ::_exit(3);
  ::_exit(1);
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

// One write(2) per line on an O_APPEND file: lines of concurrent processes never interleave.
void AppendLine(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(3);
}

[[noreturn]] void Report(const char* path, double hold_ms) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(path);
    ::_exit(3);
  }
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const std::string role = EnvOr("TRAINING_ROLE", "-");
  const std::string id = EnvOr("PADDLE_TRAINER_ID", "-");
  AppendLine(fd, role + " " + EnvOr("POD_IP", "-") + ":" + EnvOr("PADDLE_PORT", "-") + " " + id +
                     " " + std::to_string(::getpid()) + " " +
                     std::to_string(now.tv_sec * 1000000000LL + now.tv_nsec) + "\n");
  if (role == "TRAINER" && id == "0") {
    AppendLine(fd, std::string("LISTS ") + EnvOr("PADDLE_PSERVERS_IP_PORT_LIST", "-") + " " +
                       EnvOr("PADDLE_TRAINER_ENDPOINTS", "-") + " " +
                       EnvOr("PADDLE_GLOO_HTTP_ENDPOINT", "-") + "\n");
  }
  ::close(fd);
  SleepSeconds(role == "PSERVER" ? 60.0 : hold_ms / 1000.0);
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: bench_rank fail|fail-ignore STAMP_FILE [DELAY_MS]\n"
                 "       bench_rank ignore MARKER | sleep SECONDS\n"
                 "       bench_rank report FILE [HOLD_MS]\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "sleep") {
    SleepSeconds(std::atof(argv[2]));
    return 0;
  }
  if (mode == "report") Report(argv[2], argc > 3 ? std::atof(argv[3]) : 0.0);
  if (mode == "ignore") {
    ::signal(SIGTERM, SIG_IGN);
    SleepSeconds(60.0);
    return 0;
  }
  if (mode != "fail" && mode != "fail-ignore") {
    std::fprintf(stderr, "bench_rank: unknown mode '%s'\n", argv[1]);
    return 2;
  }
  if (RankFromEnvironment() == 1) {
    SleepSeconds((argc > 3 ? std::atof(argv[3]) : 200.0) / 1000.0);
    StampAndFail(argv[2]);
  }
  if (mode == "fail-ignore") ::signal(SIGTERM, SIG_IGN);
  SleepSeconds(60.0);
  return 0;
}
