"""Reliability R1-R4: how fast and how completely a job is torn down (docs/reliability.md).

Bounds are generous (2 busy cores, sanitizer builds); the tight targets are in bench/.
"""
import os
import signal
import time

import harness
from harness import abort_line
from relcase import REL_RANK, RelTestCase

TREE = "fork,shell,double,stubborn"


class SiblingAbortTest(RelTestCase):
    """R1: 8 ranks; SIGKILL rank 5. Survivors get SIGTERM at once; the launcher exits at once."""

    SIGTERM_BOUND = 1.0  # target 0.02 s
    EXIT_BOUND = 2.0  # target: grace + 0.1 s; the survivors die on SIGTERM, so far less

    def test_sigkill_of_one_rank_sigterms_the_survivors_at_once(self):
        proc = self.start_timed(["--nproc_per_node", 8] + self.rel_args(
            "--on", "TERM:die", "--ready", "--sleep", 600))
        self.wait_ready_files(8, [proc])
        victim = self.recorded_pids("pid")[5]
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        exited_at = self.exit_time(proc)
        result = self.finish(proc)
        self.assertEqual(result.code, 137, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(8, [5]))
        survivors = [r for r in range(8) if r != 5]
        self.assertEqual(self.stamp_names(survivors), {r: ["TERM"] for r in survivors})
        latency = max(self.stamps(r)[0][1] for r in survivors) - killed_at
        self.measure("R1", "SIGTERM to the last of 7 survivors after kill -9", latency * 1000,
                     "ms", f"< {self.SIGTERM_BOUND * 1000:.0f} ms")
        self.measure("R1", "launcher exit after kill -9", (exited_at - killed_at) * 1000, "ms",
                     f"< {self.EXIT_BOUND * 1000:.0f} ms")
        self.assertLess(latency, self.SIGTERM_BOUND)
        self.assertLess(exited_at - killed_at, self.EXIT_BOUND)


class BoundedTeardownTest(RelTestCase):
    """R2: 8 ranks all ignore SIGTERM. All get it together; SIGKILL at one shared deadline."""

    GRACE = 1.0
    SPREAD_BOUND = 0.5  # between the first and the last rank's SIGTERM
    SLACK = 2.0  # total must stay under grace + SLACK (target grace + 0.2 s), never 8 x grace

    def test_ranks_ignoring_sigterm_share_one_grace_period(self):
        proc = self.start_timed(["--grace", self.GRACE, "--nproc_per_node", 8] + self.rel_args(
            "--on", "TERM:stay", "--ready", "--sleep", 600))
        self.wait_ready_files(8, [proc])
        pids = self.recorded_pids("pid")
        sent_at = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        exited_at = self.exit_time(proc)
        result = self.finish(proc)
        self.assertEqual(result.code, 143, result)
        self.assertEqual(self.stamp_names(range(8)), {r: ["TERM"] for r in range(8)})
        times = [self.stamps(r)[0][1] for r in range(8)]
        kills = [m for m in harness.log_messages(result.stderr, "INFO")
                 if m.startswith("kill process group gid:")]
        self.assertEqual(sorted(kills), sorted(f"kill process group gid:{p}"
                                               for p in pids.values()))
        total = exited_at - sent_at
        self.measure("R2", "spread of SIGTERM over 8 ranks", (max(times) - min(times)) * 1000,
                     "ms", f"< {self.SPREAD_BOUND * 1000:.0f} ms")
        self.measure("R2", "SIGTERM to launcher exit, grace 1 s", total * 1000, "ms",
                     f"{self.GRACE:.0f} s <= t < {self.GRACE + self.SLACK:.0f} s")
        self.assertLess(max(times) - min(times), self.SPREAD_BOUND)
        self.assertGreaterEqual(total, self.GRACE)
        self.assertLess(total, self.GRACE + self.SLACK)
        self.assert_all_gone(pids.values())


class ProcessTreeTest(RelTestCase):
    """R3: each rank starts a forked worker, `sh -c` waiting for a `sleep`, a double-forked
    orphan and a child that ignores SIGTERM. After any teardown nothing of the job remains (the
    R26 audit checks every process carrying the test's tag; these tests check the recorded
    pids too)."""

    GRACE = 1.0

    def run_tree_job(self, *flags):
        args = ["--grace", self.GRACE, "--nproc_per_node", 2] + self.rel_args(
            "--tree", TREE, "--ready", *flags)
        return self.start_timed(args)

    def check_tree_gone(self):
        tree = self.tree_pids()
        kinds = TREE.split(",") + ["shell-sleep"]
        self.assertEqual(sorted((rank, kind) for rank, kind, _ in tree),
                         sorted((rank, kind) for rank in (0, 1) for kind in kinds))
        self.assert_all_gone(pid for _, _, pid in tree)

    def test_failure_teardown_stops_the_whole_tree(self):
        proc = self.run_tree_job("--barrier", 2, "--exit", "1:3", "--sleep", 600)
        result = self.finish(proc)
        self.assertEqual(result.code, 3, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(2, [1]))
        self.check_tree_gone()

    def test_signal_teardown_stops_the_whole_tree(self):
        proc = self.run_tree_job("--sleep", 600)
        self.wait_ready_files(2, [proc])
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc)
        self.assertEqual(result.code, 130, result)
        self.check_tree_gone()

    def test_descendants_left_by_ranks_exiting_zero_are_stopped(self):
        proc = self.run_tree_job("--barrier", 2)
        result = self.finish(proc)
        self.assertEqual(result.code, 0, result)
        # Per rank: the forked worker, sh and its sleep, the orphan, the stubborn child.
        self.assert_logged(result.stderr, "WARNING", "all ranks exited but 10 processes they "
                                                     "started are still running; stopping them")
        self.check_tree_gone()


class LauncherKillTest(RelTestCase):
    """R4: `kill -9` of the launcher mid-run: every rank and descendant is gone quickly."""

    GONE_BOUND = 5.0  # target 1 s

    def test_sigkill_of_the_launcher_leaves_nothing(self):
        proc = self.start_timed(["--nproc_per_node", 4] + self.rel_args(
            "--tree", TREE, "--on", "TERM:stay", "--ready", "--sleep", 600))
        self.wait_ready_files(4, [proc])
        tree = [pid for _, _, pid in self.tree_pids()]
        ranks = list(self.recorded_pids("pid").values())
        self.assertEqual((len(ranks), len(tree)), (4, 20))
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        self.exit_time(proc)
        alive = ranks + tree
        while alive and time.monotonic() - killed_at < harness.GONE_TIMEOUT:
            alive = [pid for pid in alive if harness.pid_alive(pid)]
            time.sleep(0.002)
        gone_after = time.monotonic() - killed_at
        self.assertEqual(alive, [])
        self.measure("R4", "kill -9 launcher to last of 4 ranks + 20 descendants gone",
                     gone_after * 1000, "ms", f"< {self.GONE_BOUND * 1000:.0f} ms")
        self.assertLess(gone_after, self.GONE_BOUND)
        self.assertEqual(self.finish(proc).code, -signal.SIGKILL)


DAEMONS = "daemon,stubborn-daemon"
CGROUP_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def job_cgroups(launcher_pids):
    """The cgroup directories (pdlaunch-<pid>-<n>) of these launchers in the unified
    hierarchy."""
    prefixes = tuple(f"pdlaunch-{pid}-" for pid in launcher_pids)
    found = []
    for root in CGROUP_ROOTS:
        if os.path.exists(os.path.join(root, "cgroup.procs")):
            for dirpath, dirnames, _ in os.walk(root):
                found += [os.path.join(dirpath, d) for d in dirnames if d.startswith(prefixes)]
            break
    return found


class EscapeTest(RelTestCase):
    """R3, the part process groups cannot do: daemons (fork, setsid, fork; one of them ignoring
    SIGTERM) started by the ranks are found through the job's cgroup and stopped after a
    failure, after a clean exit and after a SIGKILL of the launcher (labels reliability,
    cgroup). EscapeFallbackTest runs the same without cgroups (the subreaper path)."""

    GRACE = 0.3
    RUNS = 20
    ENV = {}

    def setUp(self):
        super().setUp()
        probe = self.run_launch(["--log_level", "DEBUG"] + self.rank_args(),
                                env=self.env(**self.ENV))
        self.assertEqual(probe.code, 0, probe)
        self.containment = next((m for m in harness.log_messages(probe.stderr, "DEBUG")
                                 if m.startswith("containment: ")), None)
        self.assertIsNotNone(self.containment, probe)
        if not self.ENV and "the job's cgroup is" not in self.containment:
            self.skipTest(f"SKIPPED: no cgroup v2 here: {self.containment}")

    def daemon_job(self, *flags):
        return self.start_timed(["--grace", self.GRACE, "--nproc_per_node", 2] + self.rel_args(
            "--tree", DAEMONS, "--ready", *flags), env=self.env(**self.ENV))

    def daemons(self):
        found = [pid for _, kind, pid in self.tree_pids() if kind in DAEMONS.split(",")]
        self.assertEqual(len(found), 4, self.tree_pids())
        return found

    def cgroups_left(self):
        return job_cgroups(proc.pid for proc in self.launchers())

    def assert_no_cgroup_left(self):
        self.assertEqual(self.cgroups_left(), [])

    def test_daemons_are_stopped_after_a_failure_twenty_times(self):
        for run in range(self.RUNS):
            for path in self.rec.iterdir():
                path.unlink()
            proc = self.daemon_job("--barrier", 2, "--exit", "1:3", "--sleep", 600)
            result = self.finish(proc)
            self.assertEqual(result.code, 3, f"run {run}: {result!r}")
            self.assert_all_gone(self.daemons())
            self.assert_no_cgroup_left()

    def test_daemons_left_by_ranks_exiting_zero_are_stopped(self):
        result = self.finish(self.daemon_job("--barrier", 2))
        self.assertEqual(result.code, 0, result)
        self.assert_logged(result.stderr, "WARNING", "all ranks exited but 4 processes they "
                                                     "started are still running; stopping them")
        self.assert_all_gone(self.daemons())
        self.assert_no_cgroup_left()

    def test_sigkill_of_the_launcher_stops_the_daemons_twenty_times(self):
        # With the cgroup, the watchdog's cgroup.kill; without, its scan for the processes that
        # carry the job's PDLAUNCH_PARENT (the daemons were re-parented to init).
        for run in range(self.RUNS):
            for path in self.rec.iterdir():
                path.unlink()
            proc = self.daemon_job("--sleep", 600)
            self.wait_ready_files(2, [proc])
            daemons = self.daemons()
            os.kill(proc.pid, signal.SIGKILL)
            self.finish(proc)  # Reaped, its pipes closed (it died by SIGKILL).
            self.assert_all_gone(daemons)
            self.wait_until(lambda: not self.cgroups_left(), f"run {run}: the job's cgroup removed",
                            timeout=harness.GONE_TIMEOUT)


    def test_a_nested_launch_is_stopped_with_its_daemons(self):
        # Rank 0 starts a launcher of its own (2 ranks, each with a daemon), then fails.
        script = self.dir / "nested.py"
        script.write_text(NESTED_PY)
        inner = self.rec / "inner"
        inner.mkdir()
        proc = self.start_timed(["--grace", self.GRACE, "--nproc_per_node", 2, script,
                                 harness.BIN, REL_RANK, inner], env=self.env(**self.ENV))
        result = self.finish(proc)
        self.assertEqual(result.code, 3, result)
        inner_launcher = int((inner / "launcher").read_text())
        pids = [inner_launcher] + [int(p.read_text()) for p in inner.glob("pid.*")]
        daemons = [int(line.split()[1]) for p in inner.glob("tree.*")
                   for line in p.read_text().splitlines()]
        self.assertEqual((len(pids), len(daemons)), (3, 2), result)
        self.assert_all_gone(pids + daemons)
        self.assertEqual(job_cgroups([proc.pid, inner_launcher]), [])

    def test_sigkill_of_an_outer_launcher_stops_a_nested_jobs_daemons(self):
        # Rank 0 starts a launcher of its own (2 ranks, each with a daemon) and waits; then the
        # outer launcher is SIGKILLed. Without a cgroup the inner job's processes carry the
        # inner launcher's PDLAUNCH_PARENT, not the outer's: the inner watchdog stops them, and
        # the outer watchdog's scan must spare it (it shows the inner launcher's environment).
        script = self.dir / "nested.py"
        script.write_text(NESTED_PY)
        for run in range(5):
            inner = self.rec / f"inner{run}"
            inner.mkdir()
            proc = self.start_timed(["--nproc_per_node", 1, script, harness.BIN, REL_RANK,
                                     inner, "hold"], env=self.env(**self.ENV))
            self.wait_ready_files(2, [proc], rec=inner)
            self.wait_until(lambda: (inner / "launcher").exists(), "the inner launcher's pid")
            inner_launcher = int((inner / "launcher").read_text())
            pids = [inner_launcher] + [int(p.read_text()) for p in inner.glob("pid.*")]
            daemons = [int(line.split()[1]) for p in inner.glob("tree.*")
                       for line in p.read_text().splitlines()]
            self.assertEqual((len(pids), len(daemons)), (3, 2), f"run {run}")
            os.kill(proc.pid, signal.SIGKILL)
            self.finish(proc)
            self.assert_all_gone(pids + daemons)
            self.wait_until(lambda: not job_cgroups([proc.pid, inner_launcher]),
                            f"run {run}: the cgroups removed", timeout=harness.GONE_TIMEOUT)

    def test_a_clean_nested_launch_leaves_the_outer_launcher_nothing_to_stop(self):
        # The inner launcher waits for its watchdog, which the outer one would otherwise find
        # still exiting and stop as a process its rank left behind (design.md, Parent death).
        for run in range(5):
            result = self.run_launch(["--nproc_per_node", 1, harness.BIN, "--log_dir",
                                      f"inner{run}", "--nproc_per_node", 2, "/bin/true"],
                                     env=self.env(**self.ENV))
            self.assertEqual(result.code, 0, f"run {run}: {result!r}")
            self.assertNotIn("still running", result.stderr, f"run {run}")
            self.assertNotIn("left its rank's process group", result.stderr, f"run {run}")


NESTED_PY = """import os, subprocess, sys, time
launcher, rel_rank, rec = sys.argv[1:4]
hold = sys.argv[4:] == ["hold"]  # Wait to be killed instead of failing.
if os.environ["PADDLE_TRAINER_ID"] != "0":
    time.sleep(600)
inner = subprocess.Popen([launcher, "--log_dir", "inner_log", "--nproc_per_node", "2", rel_rank,
                          "--rec", rec, "--tree", "daemon", "--ready", "--sleep", "600"])
with open(os.path.join(rec, "launcher"), "w") as f:
    f.write(str(inner.pid))
deadline = time.monotonic() + 60
while len([n for n in os.listdir(rec) if n.startswith("ready.")]) < 2:
    if time.monotonic() > deadline:
        sys.exit("nested.py: the inner launcher's ranks are not ready after 60 s")
    time.sleep(0.02)
if hold:
    time.sleep(600)
sys.exit(3)
"""


class EscapeFallbackTest(EscapeTest):
    """EscapeTest with cgroups off (PDLAUNCH_NO_CGROUP=1): the launcher is the subreaper of its
    descendants and stops the orphans re-parented to it; when it is SIGKILLed, its watchdog
    finds them by their environment."""

    ENV = {"PDLAUNCH_NO_CGROUP": "1"}


if __name__ == "__main__":
    harness.main()
