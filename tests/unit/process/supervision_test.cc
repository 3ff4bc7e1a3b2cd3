#include "pdlaunch/process/supervision.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace pdlaunch {
namespace {

TEST(SupervisionTest, AllSucceedGivesZeroWithoutSignals) {
  Supervision s(3);
  for (int i = 0; i < 3; ++i) {
    const auto c = s.OnExit(i, ExitStatus::Exited(0));
    EXPECT_FALSE(c.signal_groups);
    EXPECT_FALSE(c.arm_grace_timer);
  }
  EXPECT_TRUE(s.all_exited());
  EXPECT_FALSE(s.stopping());
  EXPECT_EQ(s.exit_code(), 0);
}

TEST(SupervisionTest, FailureTerminatesAllGroupsAndArmsGraceOnce) {
  Supervision s(4);
  const auto c = s.OnExit(2, ExitStatus::Exited(7));
  EXPECT_EQ(c.signal_groups, SIGTERM);
  EXPECT_TRUE(c.arm_grace_timer);
  EXPECT_EQ(c.newly_failed, std::vector<int>{2});
  // Siblings dying of our SIGTERM are consequences, not failures, and re-arm nothing.
  const auto c2 = s.OnExit(0, ExitStatus::Killed(SIGTERM));
  EXPECT_FALSE(c2.signal_groups);
  EXPECT_FALSE(c2.arm_grace_timer);
  EXPECT_TRUE(c2.newly_failed.empty());
  EXPECT_EQ(s.failed(), std::vector<int>{2});
  EXPECT_EQ(s.exit_code(), 7);
}

TEST(SupervisionTest, SimultaneousFailuresAreAllRootCauses) {
  Supervision s(4);
  const auto c = s.OnExits({{1, ExitStatus::Exited(3)}, {3, ExitStatus::Killed(SIGSEGV)}});
  EXPECT_EQ(c.newly_failed, (std::vector<int>{1, 3}));
  EXPECT_EQ(s.exit_code(), 3);  // The first one found.
}

TEST(SupervisionTest, SignalDeathGives128PlusSignal) {
  Supervision s(2);
  s.OnExit(1, ExitStatus::Killed(SIGSEGV));
  s.OnExit(0, ExitStatus::Killed(SIGTERM));
  EXPECT_EQ(s.exit_code(), 139);
}

TEST(SupervisionTest, GraceExpiryKillsOnce) {
  Supervision s(2);
  s.OnExit(0, ExitStatus::Exited(1));
  EXPECT_EQ(s.OnGraceExpired().signal_groups, SIGKILL);
  EXPECT_FALSE(s.OnGraceExpired().signal_groups);
}

TEST(SupervisionTest, InterruptIsForwardedAndGives130) {
  Supervision s(2);
  const auto c = s.OnSignal(SIGINT);
  EXPECT_EQ(c.signal_groups, SIGINT);
  EXPECT_TRUE(c.arm_grace_timer);
  s.OnExit(0, ExitStatus::Killed(SIGINT));
  s.OnExit(1, ExitStatus::Exited(1));  // A rank exiting 1 on SIGINT is not a root cause.
  EXPECT_TRUE(s.failed().empty());
  EXPECT_EQ(s.exit_code(), 130);
}

TEST(SupervisionTest, TerminateGives143) {
  Supervision s(1);
  EXPECT_EQ(s.OnSignal(SIGTERM).signal_groups, SIGTERM);
  s.OnExit(0, ExitStatus::Exited(0));
  EXPECT_EQ(s.exit_code(), 143);
}

TEST(SupervisionTest, SecondInterruptKillsAtOnce) {
  Supervision s(2);
  s.OnSignal(SIGINT, 10.0);
  const auto c = s.OnSignal(SIGINT, 10.0 + Supervision::kRepeatWindow);
  EXPECT_EQ(c.signal_groups, SIGKILL);
  EXPECT_FALSE(c.arm_grace_timer);
  EXPECT_FALSE(s.OnGraceExpired().signal_groups);  // Already killed.
  EXPECT_EQ(s.received_signal(), SIGINT);
}

TEST(SupervisionTest, RepeatWithinTheWindowIsTheSameRequest) {
  // Ctrl-C under `timeout`: the terminal's SIGINT and the wrapper's relayed one, 1 ms apart.
  Supervision s(1);
  EXPECT_EQ(s.OnSignal(SIGINT, 5.000).signal_groups, SIGINT);
  const auto repeat = s.OnSignal(SIGINT, 5.001);
  EXPECT_TRUE(repeat.repeat_ignored);
  EXPECT_FALSE(repeat.signal_groups);
  EXPECT_EQ(s.OnGraceExpired().signal_groups, SIGKILL);  // The grace still runs its course.
  s.OnExit(0, ExitStatus::Exited(0));
  EXPECT_EQ(s.exit_code(), 130);
}

TEST(SupervisionTest, UserSignalsAreForwardedWithoutTeardown) {
  Supervision s(2);
  for (int sig : {SIGUSR1, SIGUSR2}) {
    const auto c = s.OnSignal(sig);
    EXPECT_EQ(c.signal_groups, sig);
    EXPECT_FALSE(c.arm_grace_timer);
  }
  EXPECT_FALSE(s.stopping());
  s.OnExit(0, ExitStatus::Exited(0));
  s.OnExit(1, ExitStatus::Exited(0));
  EXPECT_EQ(s.exit_code(), 0);
}

TEST(SupervisionTest, CtrlZStopsTheGroupsThenTheLauncherAndContinueResumes) {
  Supervision s(2);
  const auto stop = s.OnSignal(SIGTSTP);
  EXPECT_EQ(stop.signal_groups, SIGSTOP);  // not TSTP: a rank may catch or ignore that
  EXPECT_TRUE(stop.stop_launcher);
  EXPECT_FALSE(stop.arm_grace_timer);
  const auto resume = s.OnSignal(SIGCONT);
  EXPECT_EQ(resume.signal_groups, SIGCONT);
  EXPECT_FALSE(resume.stop_launcher);
  EXPECT_FALSE(s.stopping());
  EXPECT_FALSE(s.received_signal());
  s.OnExit(0, ExitStatus::Exited(0));
  s.OnExit(1, ExitStatus::Exited(0));
  EXPECT_EQ(s.exit_code(), 0);
}

TEST(SupervisionTest, HangupAndQuitTearDown) {
  for (int sig : {SIGHUP, SIGQUIT}) {
    Supervision s(1);
    EXPECT_EQ(s.OnSignal(sig).signal_groups, sig);
    s.OnExit(0, ExitStatus::Killed(sig));
    EXPECT_EQ(s.exit_code(), 128 + sig);
  }
}

TEST(SupervisionTest, FailureBeforeSignalStaysTheRootCause) {
  Supervision s(2);
  s.OnExit(1, ExitStatus::Exited(4));
  const auto c = s.OnSignal(SIGINT);  // Ctrl-C during teardown: kill now, keep the cause.
  EXPECT_EQ(c.signal_groups, SIGKILL);
  s.OnExit(0, ExitStatus::Killed(SIGKILL));
  EXPECT_EQ(s.exit_code(), 4);
}

TEST(SupervisionTest, DuplicateExitReportIsIgnored) {
  Supervision s(2);
  s.OnExit(0, ExitStatus::Exited(0));
  s.OnExit(0, ExitStatus::Exited(5));
  EXPECT_FALSE(s.all_exited());
  EXPECT_FALSE(s.stopping());
}

TEST(SupervisionTest, OtherSignalsAreIgnored) {
  Supervision s(1);
  const auto c = s.OnSignal(SIGWINCH);
  EXPECT_FALSE(c.signal_groups);
  EXPECT_FALSE(s.stopping());
}

TEST(SupervisionTest, CleanExitOfThePrimariesStopsTheRest) {
  // Two servers (not primary), two workers (primary).
  Supervision s({false, false, true, true});
  EXPECT_FALSE(s.OnExit(2, ExitStatus::Exited(0)).signal_groups);
  const auto c = s.OnExit(3, ExitStatus::Exited(0));
  EXPECT_TRUE(c.completing);
  EXPECT_EQ(c.signal_groups, SIGTERM);
  EXPECT_TRUE(c.arm_grace_timer);
  EXPECT_TRUE(s.completing());
  // Servers dying of our SIGTERM (or exiting 1 on it) are not failures.
  EXPECT_TRUE(s.OnExit(0, ExitStatus::Killed(SIGTERM)).newly_failed.empty());
  EXPECT_TRUE(s.OnExit(1, ExitStatus::Exited(1)).newly_failed.empty());
  EXPECT_TRUE(s.all_exited());
  EXPECT_EQ(s.exit_code(), 0);
}

TEST(SupervisionTest, ServerFailureBeforeCompletionFailsTheJob) {
  Supervision s({false, true});
  const auto c = s.OnExit(0, ExitStatus::Exited(5));
  EXPECT_EQ(c.newly_failed, std::vector<int>{0});
  EXPECT_FALSE(c.completing);
  s.OnExit(1, ExitStatus::Killed(SIGTERM));
  EXPECT_EQ(s.exit_code(), 5);
}

TEST(SupervisionTest, NonPrimaryCleanExitChangesNothing) {
  Supervision s({false, true});
  const auto c = s.OnExit(0, ExitStatus::Exited(0));
  EXPECT_FALSE(c.signal_groups);
  EXPECT_FALSE(s.stopping());
  const auto c2 = s.OnExit(1, ExitStatus::Exited(0));
  EXPECT_FALSE(c2.completing);  // Nothing left to stop.
  EXPECT_EQ(s.exit_code(), 0);
}

TEST(SupervisionTest, FailedPrimaryIsNotACompletion) {
  Supervision s({false, true, true});
  s.OnExit(1, ExitStatus::Exited(0));
  const auto c = s.OnExit(2, ExitStatus::Exited(3));
  EXPECT_FALSE(c.completing);
  EXPECT_EQ(c.newly_failed, std::vector<int>{2});
  EXPECT_EQ(s.exit_code(), 3);
}

TEST(SupervisionTest, HeldSecondariesKeepRunningUntilTheStop) {
  Supervision s({false, true}, /*hold_secondaries=*/true);
  const auto done = s.OnExit(1, ExitStatus::Exited(0));
  EXPECT_TRUE(done.primaries_done);
  EXPECT_FALSE(done.signal_groups);  // The server is not stopped...
  EXPECT_FALSE(s.stopping());
  // ...until the whole job is done elsewhere and the loop asks for the stop.
  const auto stop = s.OnStopRequest();
  EXPECT_EQ(stop.signal_groups, SIGTERM);
  s.OnExit(0, ExitStatus::Killed(SIGTERM));
  EXPECT_TRUE(s.all_exited());
  EXPECT_EQ(s.exit_code(), 0);
  EXPECT_TRUE(s.failed().empty());
}

TEST(SupervisionTest, HeldSecondaryFailingIsStillAFailure) {
  Supervision s({false, true}, /*hold_secondaries=*/true);
  s.OnExit(1, ExitStatus::Exited(0));
  const auto c = s.OnExit(0, ExitStatus::Exited(5));
  EXPECT_EQ(c.newly_failed, std::vector<int>{0});
  EXPECT_EQ(s.exit_code(), 5);
}

}  // namespace
}  // namespace pdlaunch
