"""Reliability R5-R7: signals to the launcher (docs/reliability.md).

Bounds are generous (2 busy cores, sanitizer builds); the tight targets are in bench/.
"""
import os
import re
import signal
import time
from pathlib import Path

import harness
from relcase import RelTestCase

ESCALATION_BOUND = 2.0  # second Ctrl-C to launcher exit; the ranks ignore SIGINT and SIGTERM


class SignalTestCase(RelTestCase):
    def start_job(self, nproc, *rank_flags, flags=(), rec=None, name="launcher"):
        """Starts `nproc` rel_rank.py ranks (recording into `rec`) and waits until all are
        ready. A job with its own `name` runs in self.dir/name."""
        rec = rec or self.rec
        rec.mkdir(exist_ok=True)
        cwd = self.dir / name
        cwd.mkdir(exist_ok=True)
        args = list(flags) + ["--nproc_per_node", nproc] + self.rel_args(
            "--ready", *rank_flags, rec=rec)
        proc = self.start_timed(args, cwd=cwd, name=name)
        self.wait_ready_files(nproc, [proc], rec=rec)
        return proc


class CtrlCTest(SignalTestCase):
    """R5: Ctrl-C is SIGINT to the terminal's foreground process group: here the launcher's own
    group (it runs in a session of its own). The ranks sit in groups of their own, so each must
    get SIGINT exactly once, forwarded by the launcher, and no other job is touched."""

    def test_ctrl_c_reaches_each_rank_once_and_no_other_job(self):
        other_rec = self.dir / "other_rec"
        other = self.start_job(4, "--on", "INT:exit=0", "--on", "TERM:exit=0", "--sleep", 600,
                               rec=other_rec, name="other")
        proc = self.start_job(4, "--on", "INT:exit=0", "--sleep", 600)
        os.killpg(proc.pid, signal.SIGINT)
        result = self.finish(proc)
        self.assertEqual(result.code, 130, result)
        self.assertEqual(self.stamp_names(range(4)), {r: ["INT"] for r in range(4)})
        self.assert_logged(result.stderr, "WARNING", "received SIGINT, stopping 4 processes "
                                                     "(grace 5s; again to kill at once)")
        # The other job on this host got nothing and still runs; then it is stopped by itself.
        self.assertEqual(self.stamp_names(range(4), other_rec), {r: [] for r in range(4)})
        self.assertIsNone(other.poll())
        os.kill(other.pid, signal.SIGTERM)
        self.assertEqual(self.finish(other).code, 143)
        self.assertEqual(self.stamp_names(range(4), other_rec), {r: ["TERM"] for r in range(4)})

    def test_second_ctrl_c_kills_at_once(self):
        proc = self.start_job(4, "--on", "INT:stay", "--on", "TERM:stay", "--sleep", 600,
                              flags=["--grace", 600])
        pids = self.recorded_pids("pid")
        os.killpg(proc.pid, signal.SIGINT)
        self.wait_until(lambda: all(self.stamps(r) for r in range(4)), "SIGINT in every rank")
        # A deliberate second Ctrl-C: one within 0.5 s is the same request (docs/exit-codes.md).
        time.sleep(0.6)
        second_at = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        exited_at = self.exit_time(proc)
        result = self.finish(proc)
        self.assertEqual(result.code, 130, result)
        self.assert_logged(result.stderr, "WARNING",
                           "received SIGINT again, killing all processes now")
        self.assertEqual(self.stamp_names(range(4)), {r: ["INT"] for r in range(4)})
        self.measure("R5", "second Ctrl-C to launcher exit (grace 600 s)",
                     (exited_at - second_at) * 1000, "ms", f"< {ESCALATION_BOUND * 1000:.0f} ms")
        self.assertLess(exited_at - second_at, ESCALATION_BOUND)
        self.assert_all_gone(pids.values())


class SignalForwardTest(SignalTestCase):
    """R6: TERM, HUP, QUIT reach every rank unchanged (and end the job with 128 + signal);
    USR1 and USR2 reach every rank and start no teardown."""

    def check_terminating(self, name, code):
        proc = self.start_job(2, "--on", f"{name}:exit=0", "--sleep", 600)
        os.kill(proc.pid, getattr(signal, "SIG" + name))
        result = self.finish(proc)
        self.assertEqual(result.code, code, result)
        self.assertEqual(self.stamp_names(range(2)), {0: [name], 1: [name]})
        self.assert_logged(result.stderr, "WARNING", f"received SIG{name}, stopping 2 "
                                                     "processes (grace 5s; again to kill at once)")

    def test_sigterm_is_forwarded(self):
        self.check_terminating("TERM", 143)

    def test_sighup_is_forwarded(self):
        self.check_terminating("HUP", 129)

    def test_sigquit_is_forwarded(self):
        self.check_terminating("QUIT", 131)

    def test_sigusr1_and_sigusr2_are_forwarded_without_teardown(self):
        proc = self.start_job(2, "--on", "USR1:stay", "--on", "USR2:stay", "--until-signals",
                              "USR1,USR2")
        os.kill(proc.pid, signal.SIGUSR1)
        # One at a time: two different signals pending together would arrive in either order.
        self.wait_until(lambda: all(self.stamps(r) for r in range(2)), "SIGUSR1 in every rank")
        os.kill(proc.pid, signal.SIGUSR2)
        result = self.finish(proc)
        self.assertEqual(result.code, 0, result)
        self.assertEqual(self.stamp_names(range(2)), {0: ["USR1", "USR2"], 1: ["USR1", "USR2"]})
        self.assertEqual([m for m in harness.log_messages(result.stderr, "WARNING")
                          if m.startswith("received")], [])
        self.assert_logged(result.stderr, "INFO", "Local processes completed.")


class JobControlTest(SignalTestCase):
    """R6, job control: in an interactive bash on a real terminal, Ctrl-Z stops the ranks and
    the launcher (bash says the job stopped), `fg` resumes them all, and the job ends with
    exit 0; the ranks saw SIGCONT only (SIGSTOP cannot be caught; no SIGTSTP, no SIGTERM)."""

    STOPPED_FOR = 1.5  # seconds the job must stay stopped, its ranks' sleep notwithstanding

    @staticmethod
    def state(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    def test_ctrl_z_stops_everything_and_fg_resumes_it(self):
        term = self.terminal(["bash", "--norc", "--noprofile", "-i"],
                             env=self.env(PS1="$ ", TERM="dumb"))
        command = " ".join(str(a) for a in [harness.BIN, "--nproc_per_node", 2] + self.rel_args(
            "--on", "CONT:stay", "--on", "TSTP:stay", "--on", "TERM:stay", "--ready",
            "--sleep", 3))
        term.press(f"{command}\n".encode())
        self.wait_ready_files(2)
        ranks = list(self.recorded_pids("pid").values())
        launcher = int(Path(f"/proc/{ranks[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
        term.press(b"\x1a")  # Ctrl-Z
        everyone = ranks + [launcher]
        self.wait_until(lambda: all(self.state(p) == "T" for p in everyone),
                        "the launcher and both ranks stopped")
        self.wait_until(lambda: "Stopped" in term.output(), "bash saying the job stopped")
        time.sleep(self.STOPPED_FOR)
        self.assertEqual([self.state(p) for p in everyone], ["T"] * 3, term.output())
        term.press(b"fg\n")
        self.wait_until(lambda: self.state(launcher) == "gone", "the job's end after fg")
        term.press(b"echo EXIT=$?\n")  # fg's status: the job's
        # The terminal echoes the command line itself, "EXIT=$?", before its output.
        self.wait_until(lambda: re.search(r"EXIT=\d", term.output().split("fg", 1)[-1]),
                        "the exit code")
        text = term.output()
        self.assertIn("EXIT=0", text.split("fg", 1)[-1])
        self.assertIn("received SIGTSTP: stopping 2 processes and the launcher", text)
        self.assertIn("received SIGCONT: resuming 2 processes", text)
        self.assertIn("Local processes completed.", text)
        self.assertEqual(self.stamp_names(range(2)), {0: ["CONT"], 1: ["CONT"]})
        term.press(b"exit\n")
        self.assertEqual(term.wait(), 0, text)


class PreemptionTest(SignalTestCase):
    """R7, scaled down: SIGTERM (preemption), the ranks need 2 s to checkpoint, --grace 20.
    They finish and exit 0; the launcher exits 143 as soon as they are done, and says why."""

    CHECKPOINT = 2.0
    GRACE = 20

    def test_ranks_checkpoint_within_the_grace_period(self):
        proc = self.start_job(2, "--on", f"TERM:finish={self.CHECKPOINT}", "--sleep", 600,
                              flags=["--grace", self.GRACE])
        sent_at = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        exited_at = self.exit_time(proc)
        result = self.finish(proc)
        self.assertEqual(result.code, 143, result)
        self.assertEqual(self.stamp_names(range(2)), {0: ["TERM"], 1: ["TERM"]})
        for rank in range(2):
            log = (self.dir / "launcher" / "log" / f"workerlog.{rank}").read_text()
            self.assertEqual(log, f"rank {rank}: checkpoint saved\n")
        self.assert_logged(result.stderr, "WARNING", f"received SIGTERM, stopping 2 processes "
                                                     f"(grace {self.GRACE}s; again to kill at "
                                                     "once)")
        self.assertFalse([m for m in harness.log_messages(result.stderr)
                          if m.startswith("kill process group")], result.stderr)
        total = exited_at - sent_at
        self.measure("R7", "SIGTERM to launcher exit, 2 s checkpoint, grace 20 s",
                     total * 1000, "ms", f"{self.CHECKPOINT:.0f} s <= t < {self.GRACE / 2:.0f} s")
        self.assertGreaterEqual(total, self.CHECKPOINT)
        self.assertLess(total, self.GRACE / 2)


if __name__ == "__main__":
    harness.main()
