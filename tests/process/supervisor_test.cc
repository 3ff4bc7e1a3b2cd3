#include "pdlaunch/process/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/report_status.h"
#include "pdlaunch/process/supervisor_status.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using Clock = std::chrono::steady_clock;
using testutil::ProcessAlive;
using testutil::ReadFile;
using testutil::ScopedTempDir;
using testutil::WaitFor;

/// Writes down each event the supervisor tells, as one word with its main detail.
class EventLog : public SupervisorStatus {
 public:
  void NotStarted(int signal, size_t count) override {
    Add(fmt::format("not-started {} {}", signal, count));
  }
  void Starting(const std::vector<SupervisedProcess>& processes) override {
    Add(fmt::format("starting {}", processes.size()));
  }
  void Spawned(size_t index, const SupervisedProcess& /*process*/, pid_t /*pid*/) override {
    Add(fmt::format("spawned {}", index));
  }
  void Started(const std::vector<pid_t>& pids) override {
    Add(fmt::format("started {}", pids.size()));
  }
  void Exited(size_t index, const ExitStatus& status) override {
    Add(fmt::format("exited {} {}", index, status.ShellCode()));
  }
  void Aborting(const std::vector<FailedProcess>& failed) override {
    Add(fmt::format("aborting {}", failed.front().index));
  }
  void Failed(const std::vector<FailedProcess>& failed) override {
    Add(fmt::format("failed {}", failed.front().index));
  }
  void SignalReceived(const SignalEvent& event) override {
    Add(fmt::format("signal {} {}", event.signal, static_cast<int>(event.taken)));
  }
  void Ended(const RunEnd& end) override {
    Add(fmt::format("ended {} completed={}", end.result.exit_code, end.completed));
  }
  bool Has(const std::string& event) const {
    return std::find(events.begin(), events.end(), event) != events.end();
  }
  /// The index of `event` in the log; events.size() when absent.
  size_t IndexOf(const std::string& event) const {
    return static_cast<size_t>(std::find(events.begin(), events.end(), event) - events.begin());
  }
  std::vector<std::string> events;

 private:
  void Add(std::string event) { events.push_back(std::move(event)); }
};

class SupervisorTest : public ::testing::Test {
 protected:
  // As Main does before any thread exists: a test's sender thread must not take a signal meant
  // for the loop. The mask is the test's again afterwards, with nothing left pending.
  SupervisorTest() {
    SetupLogging();
    ::pthread_sigmask(SIG_BLOCK, nullptr, &saved_mask_);
    BlockLauncherSignals();
  }
  ~SupervisorTest() override {
    for (int fd : fds_) ::close(fd);
    sigset_t blocked;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
    const timespec now{0, 0};
    while (::sigtimedwait(&blocked, nullptr, &now) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
  }

  /// A rank running `script` under /bin/sh with its output in log.<rank>.
  void AddRank(const std::string& script) {
    const int rank = static_cast<int>(processes_.size());
    SupervisedProcess p;
    p.rank = rank;
    p.log_path = dir_.File("log." + std::to_string(rank));
    const int fd = ::open(p.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    fds_.push_back(fd);
    p.spec = ProcessSpec{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, fd};
    processes_.push_back(std::move(p));
  }

  int Run(double grace = 5.0) { return Supervise(grace).exit_code; }

  SupervisorResult Supervise(double grace = 5.0, ExternalEvents* external = nullptr) {
    SupervisorOptions options;
    options.external = external;
    options.on_first_failure = [this](const SupervisedProcess& p, const ExitStatus& status) {
      first_failures_.emplace_back(p.rank, status);
    };
    options.grace_seconds = grace;
    for (SupervisedProcess& p : processes_) p.role_size = static_cast<int>(processes_.size());
    options.on_spawn = [this](pid_t pid) { pids_.push_back(pid); };
    options.status = std::make_shared<StatusFanOut>(std::vector<std::shared_ptr<SupervisorStatus>>{
        std::make_shared<ConsoleStatus>(ConsoleSettings{}), events_,
        std::make_shared<ReportStatus>(report_)});
    const auto start = Clock::now();
    const SupervisorResult result = pdlaunch::Supervise(std::move(processes_), options);
    elapsed_ = Clock::now() - start;
    return result;
  }

  double elapsed_seconds() const { return std::chrono::duration<double>(elapsed_).count(); }

  ScopedTempDir dir_;
  std::vector<SupervisedProcess> processes_;
  std::vector<int> fds_;
  sigset_t saved_mask_;
  std::vector<pid_t> pids_;
  std::vector<std::pair<int, ExitStatus>> first_failures_;
  std::shared_ptr<EventLog> events_ = std::make_shared<EventLog>();
  RunReport report_;
  Clock::duration elapsed_{};
};

/// External events from a pipe: a byte written to it is one event; stops on the byte 's' or once
/// `stop_after_ticks` ticks have happened.
class PipeEvents : public ExternalEvents {
 public:
  explicit PipeEvents(double tick_seconds = 0, int stop_after_ticks = -1)
      : tick_seconds_(tick_seconds), stop_after_ticks_(stop_after_ticks) {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) ADD_FAILURE() << "pipe2";
  }
  ~PipeEvents() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void Send(char byte) { EXPECT_EQ(::write(fds_[1], &byte, 1), 1); }
  int fd() override { return fds_[0]; }
  bool OnReadable() override {
    char byte = 0;
    bool stop = false;
    while (::read(fds_[0], &byte, 1) == 1) {
      ++events;
      stop = stop || byte == 's';
    }
    return stop;
  }
  double tick_seconds() const override { return tick_seconds_; }
  bool OnTick() override { return ++ticks == stop_after_ticks_; }

  int events = 0;
  int ticks = 0;

 private:
  int fds_[2] = {-1, -1};
  double tick_seconds_;
  int stop_after_ticks_;
};

/// Asks the loop to stop at its first event and raises SIGTERM in the launcher as it does: the
/// signal reaches asio's handler while the loop is finishing.
class StopWithASignal : public PipeEvents {
 public:
  bool OnReadable() override {
    PipeEvents::OnReadable();
    ::raise(SIGTERM);
    return true;
  }
};

TEST_F(SupervisorTest, ASignalCaughtAsTheLoopStopsIsNotLost) {
  // An elastic agent's loop stopping for another reason (the world is ready, a node left) as a
  // SIGTERM comes: the result must carry the signal, or the agent goes on as if none had come
  // (e2e.ElasticTest hung so once). Here the loop waits with no process, as the agent does.
  StopWithASignal events;
  events.Send('x');
  const SupervisorResult result = Supervise(5.0, &events);
  EXPECT_EQ(result.signal, std::optional<int>(SIGTERM));
  EXPECT_EQ(result.exit_code, 143);
}

TEST_F(SupervisorTest, ASignalBetweenTwoLoopsIsTakenByTheNext) {
  // Main blocks the signals from its start: a SIGINT before a loop runs (the rendezvous's
  // set-up) waits for it, instead of ending the launcher by its default action.
  ::raise(SIGINT);
  PipeEvents events(/*tick_seconds=*/0.05);
  const SupervisorResult result = Supervise(5.0, &events);
  EXPECT_EQ(result.signal, std::optional<int>(SIGINT));
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_FALSE(result.stopped);
}

TEST_F(SupervisorTest, ATerminationSignalBeforeTheStartStartsNothing) {
  // A Ctrl-C between two auto-tuner trials: the next job is not started and then killed.
  const std::string marker = dir_.File("started");
  AddRank("touch " + marker);
  ::raise(SIGTERM);
  const SupervisorResult result = Supervise();
  EXPECT_EQ(result.signal, std::optional<int>(SIGTERM));
  EXPECT_EQ(result.exit_code, 143);
  EXPECT_TRUE(pids_.empty());
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(events_->events, std::vector<std::string>{"not-started 15 1"});
  EXPECT_EQ(report_.signal, std::optional<int>(SIGTERM));
}

TEST_F(SupervisorTest, AllSucceedGivesZero) {
  for (int i = 0; i < 4; ++i) AddRank("exit 0");
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(pids_.size(), 4u);
}

TEST_F(SupervisorTest, FailureStopsSiblingsAndPassesTheCodeThrough) {
  // `exec`: the siblings are the sleeps themselves. Without it, dash forks the sleep, and a
  // group SIGTERM sent while it forks (rank 1 fails at once) can miss the new sleep: seen 2 times
  // in 2000 runs under load, the sleep then going only at the grace's SIGKILL (docs/design.md,
  // "Known limits"); this test is about processes that honour SIGTERM.
  AddRank("exec sleep 60");
  AddRank("exit 7");
  AddRank("exec sleep 60");
  EXPECT_EQ(Run(), 7);
  EXPECT_LT(elapsed_seconds(), 4.0);  // Siblings honour SIGTERM: no grace wait (bound generous).
  for (pid_t pid : pids_) EXPECT_FALSE(ProcessAlive(pid));
}

// The supervisor decides and tells; observers say and record (ninja's Status). What the
// console and the report are told comes in the order it happened.
TEST_F(SupervisorTest, ObserversAreToldEachEventInOrder) {
  AddRank("sleep 60");
  AddRank("exit 7");
  EXPECT_EQ(Run(), 7);
  const std::vector<std::string>& events = events_->events;
  ASSERT_GE(events.size(), 8u) << fmt::format("{}", fmt::join(events, " | "));
  EXPECT_EQ(events[0], "starting 2");
  EXPECT_EQ(events[1], "spawned 0");
  EXPECT_EQ(events[2], "spawned 1");
  EXPECT_EQ(events[3], "started 2");
  EXPECT_LT(events_->IndexOf("exited 1 7"), events_->IndexOf("aborting 1"));
  EXPECT_LT(events_->IndexOf("aborting 1"), events_->IndexOf("failed 1"));
  EXPECT_LT(events_->IndexOf("failed 1"), events_->IndexOf("exited 0 143"));
  EXPECT_EQ(events.back(), "ended 7 completed=false");
  // The report's observer recorded both processes, the root cause and the exits.
  ASSERT_EQ(report_.processes.size(), 2u);
  EXPECT_EQ(report_.processes[0].pid, pids_.at(0));
  EXPECT_EQ(report_.root_cause, 1u);
  ASSERT_TRUE(report_.processes[1].status.has_value());
  EXPECT_EQ(report_.processes[1].status->ShellCode(), 7);
  EXPECT_GT(report_.processes[0].end_time, 0);
}

TEST_F(SupervisorTest, ASuccessfulRunIsToldCompleted) {
  AddRank("exit 0");
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(events_->events.back(), "ended 0 completed=true");
  EXPECT_FALSE(report_.root_cause.has_value());
}

TEST_F(SupervisorTest, SignalDeathGives128PlusSignal) {
  AddRank("sleep 60");
  AddRank("kill -SEGV $$");
  EXPECT_EQ(Run(), 139);
}

TEST_F(SupervisorTest, SigtermIgnoringSiblingsShareOneGracePeriod) {
  for (int i = 0; i < 4; ++i) AddRank("trap '' TERM; sleep 60 & wait; sleep 60");
  AddRank("sleep 0.3; exit 2");
  EXPECT_EQ(Run(/*grace=*/1.0), 2);
  // One shared grace of 1 s, then SIGKILL: well under 4 x grace.
  EXPECT_GE(elapsed_seconds(), 1.0);
  EXPECT_LT(elapsed_seconds(), 3.5);
}

TEST_F(SupervisorTest, GrandchildrenOfAFailedRankAreKilled) {
  const std::string pid_file = dir_.File("grandchild.pid");
  AddRank("trap '' TERM; sleep 60 & echo $! > " + pid_file + "; exit 3");
  EXPECT_EQ(Run(/*grace=*/0.5), 3);
  ASSERT_FALSE(ReadFile(pid_file).empty());
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(std::stoi(ReadFile(pid_file))); }));
}

TEST_F(SupervisorTest, StragglersOfACleanExitAreStopped) {
  const std::string pid_file = dir_.File("straggler.pid");
  AddRank("sleep 60 & echo $! > " + pid_file + "; exit 0");
  EXPECT_EQ(Run(/*grace=*/0.5), 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(std::stoi(ReadFile(pid_file))); }));
}

TEST_F(SupervisorTest, InterruptIsForwardedAndGives130) {
  const std::string marker = dir_.File("got-int");
  AddRank("trap 'echo int > " + marker + "; exit 1' INT; sleep 60 & wait");
  AddRank("sleep 0.3; kill -INT $PPID; sleep 60 & wait");
  EXPECT_EQ(Run(), 130);
  EXPECT_EQ(ReadFile(marker), "int\n");
}

TEST_F(SupervisorTest, TerminateGives143) {
  AddRank("sleep 0.3; kill -TERM $PPID; sleep 60 & wait");
  EXPECT_EQ(Run(), 143);
}

TEST_F(SupervisorTest, SecondInterruptSkipsGracePeriod) {
  // The second interrupt comes after Supervision::kRepeatWindow: a deliberate one.
  // 1.5 s apart: the window is measured between the launcher's handling of the two, which
  // a loaded machine may delay differently.
  AddRank("trap '' INT TERM; sleep 0.3; kill -INT $PPID; sleep 1.5; kill -INT $PPID; sleep 60");
  EXPECT_EQ(Run(/*grace=*/30.0), 130);
  EXPECT_LT(elapsed_seconds(), 10.0);
}

TEST_F(SupervisorTest, UserSignalsAreForwardedWithoutTeardown) {
  const std::string marker = dir_.File("got-usr1");
  AddRank("trap 'echo usr1 > " + marker + "' USR1; sleep 0.3; kill -USR1 $PPID; sleep 1; exit 0");
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(ReadFile(marker), "usr1\n");
}

TEST_F(SupervisorTest, FailedRankLogTailIsShown) {
  AddRank("for i in $(seq 1 30); do echo line$i; done; exit 1");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run(), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 1 trainers, the trainer process with rank=[0] was "
                     "aborted. Please check its log."),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("line30\n"), std::string::npos);
  EXPECT_NE(err.find("line11\n"), std::string::npos);
  EXPECT_EQ(err.find("line10\n"), std::string::npos);  // Only the last 20 lines.
}

TEST_F(SupervisorTest, FirstFailureIsReportedOnceWithItsStatus) {
  AddRank("sleep 60");
  AddRank("exit 7");
  AddRank("sleep 0.2; exit 9");
  EXPECT_EQ(Run(), 7);
  ASSERT_EQ(first_failures_.size(), 1u);
  EXPECT_EQ(first_failures_[0].first, 1);
  EXPECT_EQ(first_failures_[0].second, ExitStatus::Exited(7));
}

TEST_F(SupervisorTest, ExternalStopTearsTheRanksDown) {
  PipeEvents events;
  AddRank("sleep 60");
  AddRank("sleep 60");
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    events.Send('x');
    events.Send('s');
  });
  const SupervisorResult result = Supervise(5.0, &events);
  sender.join();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(result.stopped);
  EXPECT_FALSE(result.failed);
  EXPECT_FALSE(result.signal);
  EXPECT_EQ(events.events, 2);
  EXPECT_LT(elapsed_seconds(), 4.0);  // sleep honours SIGTERM: no grace wait.
  for (pid_t pid : pids_) EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_TRUE(first_failures_.empty());
}

TEST_F(SupervisorTest, IdleLoopRunsUntilTheExternalSideStops) {
  PipeEvents events(/*tick_seconds=*/0.05, /*stop_after_ticks=*/3);
  const SupervisorResult result = Supervise(5.0, &events);
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(events.ticks, 3);
  EXPECT_GE(elapsed_seconds(), 0.14);
}

TEST_F(SupervisorTest, IdleLoopEndsOnATerminationSignal) {
  PipeEvents events(/*tick_seconds=*/0.05);
  std::thread sender([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGTERM);
  });
  const SupervisorResult result = Supervise(5.0, &events);
  sender.join();
  EXPECT_EQ(result.exit_code, 143);
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_FALSE(result.stopped);
  EXPECT_GE(events.ticks, 2);
}

TEST_F(SupervisorTest, RanksFinishingEndTheRunDespiteExternalEvents) {
  PipeEvents events(/*tick_seconds=*/0.05);
  AddRank("sleep 0.3; exit 0");
  const SupervisorResult result = Supervise(5.0, &events);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.stopped);
  EXPECT_GE(events.ticks, 2);
}

}  // namespace
}  // namespace pdlaunch
