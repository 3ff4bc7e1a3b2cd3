"""Issue #2: signals to the launcher stop the whole job; nothing survives the launcher."""
import os
import signal
import time

import harness
from harness import LaunchTestCase

SLEEP = 600  # ranks would sleep this long; only the launcher's teardown ends them in time
PROMPT = 60


class SignalTest(LaunchTestCase):
    """SIGINT/SIGTERM/SIGHUP: teardown and 128+signal; SIGUSR1 forwarded; SIGKILL: watchdog."""

    def start_job(self, nproc=2, *rank_flags, flags=()):
        proc = self.start_launch(list(flags) + ["--nproc_per_node", nproc] + self.rank_args(
            "--grandchild", self.rec, "--ready", self.rec, "--sleep", SLEEP, *rank_flags))
        self.wait_ready(nproc, proc)
        return proc

    def job_pids(self):
        pids = self.recorded_pids("pid")
        grandchildren = self.recorded_pids("grandchild")
        self.assertEqual(sorted(pids), sorted(grandchildren))
        return list(pids.values()) + list(grandchildren.values())

    def check_signal_ends_job(self, sig, expected_code):
        proc = self.start_job(2)
        pids = self.job_pids()
        os.kill(proc.pid, sig)
        result = self.finish(proc, PROMPT)
        self.assertEqual(result.code, expected_code, result)
        self.assert_all_gone(pids)
        self.assertNotIn("ABORT", result.stderr)

    def test_sigint_gives_130_and_stops_every_rank(self):
        self.check_signal_ends_job(signal.SIGINT, 130)

    def test_sigterm_gives_143_and_stops_every_rank(self):
        self.check_signal_ends_job(signal.SIGTERM, 143)

    def test_sighup_gives_129_and_stops_every_rank(self):
        self.check_signal_ends_job(signal.SIGHUP, 129)

    def test_ranks_ignoring_the_signal_are_killed_after_the_grace_period(self):
        proc = self.start_job(2, "--ignore", "TERM,INT,HUP", flags=["--grace", "1"])
        pids = self.job_pids()
        start = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc, PROMPT)
        self.assertEqual(result.code, 143, result)
        self.assertGreaterEqual(time.monotonic() - start, 1.0)
        self.assert_all_gone(pids)

    def test_second_sigint_kills_without_waiting_for_the_grace_period(self):
        proc = self.start_job(2, "--ignore", "TERM,INT,HUP", flags=["--grace", "600"])
        pids = self.job_pids()
        os.kill(proc.pid, signal.SIGINT)
        # A deliberate second Ctrl-C: one within 0.5 s of the first's handling is the same
        # request (docs/exit-codes.md), so wait for the handling, then longer than that.
        self.wait_until(lambda: "received SIGINT, stopping" in
                        (self.dir / "launcher.stderr").read_text(), "the first SIGINT handled")
        time.sleep(0.8)
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc, PROMPT)
        self.assertEqual(result.code, 130, result)
        self.assert_all_gone(pids)

    def test_sigkill_of_the_launcher_leaves_no_process(self):
        proc = self.start_job(2, "--ignore", "TERM,INT,HUP")
        pids = self.job_pids()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        self.assert_all_gone(pids)

    def test_sigusr1_is_forwarded_without_teardown(self):
        proc = self.start_job(2, "--trap", self.rec)
        os.kill(proc.pid, signal.SIGUSR1)
        result = self.finish(proc, PROMPT)
        self.assertEqual(result.code, 0, result)
        self.assertEqual(sorted(p.name for p in self.rec.glob("got.*")),
                         ["got.SIGUSR1.0", "got.SIGUSR1.1"])
        self.assert_logged(result.stderr, "INFO", "Local processes completed.")


# Runs the launcher 20 times as a subreaper that never reaps anything but its direct children
# (as a container entrypoint written in Python or shell does), then lists the processes whose
# parent it is: a launch-watchdog that outlived its launcher would be one, a zombie for good.
SUBREAPER_DRIVER = r"""
import ctypes, json, os, subprocess, sys, time
assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
for argv in json.loads(sys.argv[1]):
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=60)
time.sleep(0.5)
left = []
for name in os.listdir("/proc"):
    try:
        stat = open(f"/proc/{name}/stat").read()
    except (OSError, ValueError):
        continue
    comm, fields = stat[:stat.rindex(")") + 1], stat[stat.rindex(")") + 2:].split()
    if int(fields[1]) == os.getpid():
        left.append(f"{comm} {fields[0]}")
print(json.dumps(left))
"""


class NoZombieTest(LaunchTestCase):
    """Issue #29 item 2: a launcher that exits normally has reaped its launch-watchdog helper, so
    a parent that never reaps (a PID 1 or subreaper that does not) collects no zombie, job after
    job. The console echo no longer holds an inotify instance whose teardown the helper's exit
    had to pay, so reaping it costs the launcher nothing to speak of."""

    def runs_leave(self, runs):
        import json
        import subprocess
        out = subprocess.run([harness.SYSTEM_PYTHON, "-c", SUBREAPER_DRIVER, json.dumps(runs)],
                             cwd=self.dir, env=self.env(), capture_output=True, text=True,
                             timeout=harness.RUN_TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_twenty_jobs_under_a_subreaper_that_never_reaps_leave_no_zombie(self):
        runs = [[harness.BIN, "--nproc_per_node", 2, "--log_dir", f"log{i}", "/bin/true"]
                for i in range(18)]
        # A failing job and today's console (the echo of rank 0) too.
        runs.append([harness.BIN, "--nproc_per_node", 2, "--log_dir", "logf", "/bin/false"])
        runs[-1] = ["sh", "-c", '"$0" "$@" || true'] + [str(a) for a in runs[-1]]
        runs.append([harness.BIN, "--log_level", "INFO", "--nproc_per_node", 2, "--log_dir", "logn",
                     "/bin/echo", "hi"])
        self.assertEqual(self.runs_leave([[str(a) for a in run] for run in runs]), [])


if __name__ == "__main__":
    harness.main()
