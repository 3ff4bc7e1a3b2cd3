"""Issue #2: log/workerlog.N, log/endpoints.log and the live console echo of local rank 0."""
import re
import subprocess
from pathlib import Path

import harness
from harness import LaunchTestCase

LINES = 5000
LINE = re.compile(r"^rank (\d+) line (\d{6})/(\d+) x{80} end$")
FRAGMENT = re.compile(r"rank \d+ line|line \d+/")


class LogFilesTest(LaunchTestCase):
    """Each rank's stdout and stderr go to log/workerlog.<local rank>."""

    def run_saying(self, text, *flags):
        result = self.run_launch(list(flags) + ["--nproc_per_node", 2]
                                 + self.rank_args("--say", text))
        self.assertEqual(result.code, 0, result)
        return result

    def worker_log(self, rank):
        return (self.dir / "log" / f"workerlog.{rank}").read_text()

    def test_worker_logs_hold_each_ranks_output(self):
        self.run_saying("hello")
        self.assertEqual(self.worker_log(0), "rank 0: hello\n")
        self.assertEqual(self.worker_log(1), "rank 1: hello\n")

    def test_worker_logs_get_stdout_and_stderr(self):
        result = self.run_launch(["/bin/sh", "-c", "echo to-out; echo to-err >&2; echo again"])
        self.assertEqual(result.code, 0, result)
        self.assertEqual(self.worker_log(0), "to-out\nto-err\nagain\n")

    def test_worker_logs_append_across_runs(self):
        self.run_saying("first run")
        self.run_saying("second run")
        self.assertEqual(self.worker_log(0), "rank 0: first run\nrank 0: second run\n")
        self.assertEqual(self.worker_log(1), "rank 1: first run\nrank 1: second run\n")

    def test_log_overwrite_truncates_worker_logs(self):
        self.run_saying("first run")
        self.run_saying("second run", "--log_overwrite")
        self.assertEqual(self.worker_log(0), "rank 0: second run\n")
        self.assertEqual(self.worker_log(1), "rank 1: second run\n")

    def test_endpoints_log_is_rewritten_each_run(self):
        self.run_saying("first run")
        self.run_saying("second run")
        endpoints = self.recorded_envs(2)[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
        self.assertEqual((self.dir / "log" / "endpoints.log").read_text(),
                         "PADDLE_TRAINER_ENDPOINTS: \n" + "\n".join(endpoints))

    def test_log_dir_holds_only_the_job_files(self):
        self.run_saying("x")
        self.assertEqual(sorted(p.name for p in (self.dir / "log").iterdir()),
                         ["endpoints.log", "workerlog.0", "workerlog.1"])

    def test_a_log_file_a_rank_cannot_open_stops_the_job_naming_the_file(self):
        # Each rank creates its own log before its exec (the launcher only the first and the
        # echoed ones). One that cannot, here because a directory stands in its place, fails
        # the launch as a failed exec does: one line naming the file, exit 1, and the ranks
        # already started are stopped at once, not after their sleep.
        (self.dir / "log" / "workerlog.3").mkdir(parents=True)
        marker = "31.4159"
        result = self.run_launch(["--nproc_per_node", 4, "/bin/sleep", marker])
        self.assertEqual(result.code, 1, result)
        self.assertIn(f"launch: error: cannot open log file '{self.dir / 'log' / 'workerlog.3'}': "
                      "Is a directory", result.stderr)
        self.assertLess(result.elapsed, 20, result)
        # Not the launcher's watchdog: it shares the launcher's memory, so its command line is
        # the job's until its exit is done (design.md, Parent death); no rank is named launch
        # once the launcher has returned (every rank was reaped after its exec or failure).
        left = [d.name for d in Path("/proc").iterdir() if d.name.isdigit()
                and marker in _read(d / "cmdline") and _comm(d) != "launch"]
        self.assertEqual(left, [], "ranks left running")

    def test_a_launcher_started_with_stdout_and_stderr_closed_still_logs_each_rank(self):
        # `launch ... >&- 2>&-`: descriptors 1 and 2 are free, and a log opened by the launcher
        # or a rank must not take their place.
        done = subprocess.run(
            ["/bin/sh", "-c", 'exec "$@" >&- 2>&-', "sh", harness.BIN, "--nproc_per_node", "2",
             "/bin/sh", "-c", "echo out $PADDLE_TRAINER_ID; echo err $PADDLE_TRAINER_ID >&2"],
            cwd=self.dir, env=self.env(), timeout=harness.RUN_TIMEOUT)
        self.assertEqual(done.returncode, 0)
        self.assertEqual(self.worker_log(0), "out 0\nerr 0\n")
        self.assertEqual(self.worker_log(1), "out 1\nerr 1\n")

    def test_an_unwritable_first_log_refuses_the_job_before_any_rank_starts(self):
        (self.dir / "log" / "workerlog.0").mkdir(parents=True)
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--say", "x"))
        self.assertEqual(result.code, 1, result)
        self.assertIn("cannot open log file", result.stderr)
        self.assertEqual(list(self.rec.glob("pid.*")), [], "a rank ran")
        self.assertNotIn("proc_id", result.stdout)


def _read(path):
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _comm(proc_dir):
    return _read(proc_dir / "comm").strip()


ECHO_LINE = re.compile(r"^\[rank (\d+)\]: rank (\d+) line (\d{6})/(\d+) x{80} end$")
MID_LINE = """import os, sys, time
rank = os.environ["PADDLE_TRAINER_ID"]
rec = sys.argv[1]
if rank == "1":  # fails only once rank 0 is done: its failure must not stop rank 0 first
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(rec, "done.0")) and time.monotonic() < deadline:
        time.sleep(0.01)
sys.stdout.write(f"rank {rank} whole\\nrank {rank} cut mid-li")
sys.stdout.flush()
open(os.path.join(rec, "done." + rank), "w").close()
os._exit(0 if rank == "0" else 3)
"""


class EchoTest(LaunchTestCase):
    """--echo (issue #11): the chosen local ranks' output on the console, each line prefixed
    with its rank; whole lines only, nothing lost or duplicated."""

    def test_sixteen_ranks_of_ten_thousand_lines_all_arrive_once_prefixed(self):
        lines = 10000
        result = self.run_launch(["--echo", "all", "--nproc_per_node", 16]
                                 + self.rank_args("--lines", lines))
        self.assertEqual(result.code, 0, result)
        numbers = {rank: [] for rank in range(16)}
        for line in result.stdout.splitlines():
            if "x" * 10 in line or FRAGMENT.search(line):
                m = ECHO_LINE.match(line)
                self.assertIsNotNone(m, f"split, spliced or unprefixed line: {line[:200]!r}")
                self.assertEqual(m.group(1), m.group(2), f"prefix of another rank: {line!r}")
                numbers[int(m.group(1))].append(int(m.group(3)))
        for rank in range(16):
            self.assertEqual(numbers[rank], list(range(1, lines + 1)), f"rank {rank}")

    def test_chosen_local_ranks_only(self):
        result = self.run_launch(["--echo", "3, 0", "--nproc_per_node", 4]
                                 + self.rank_args("--say", "hi"))
        self.assertEqual(result.code, 0, result)
        echoed = [line for line in result.stdout.splitlines() if line.endswith(": hi")]
        self.assertEqual(sorted(echoed), ["[rank 0]: rank 0: hi", "[rank 3]: rank 3: hi"])

    def test_local_ranks_this_node_does_not_have_get_one_warning(self):
        listed = ",".join(str(r) for r in [0] + list(range(5, 2005)))
        result = self.run_launch(["--echo", listed, "--nproc_per_node", 2]
                                 + self.rank_args("--say", "hi"))
        self.assertEqual(result.code, 0, result)
        self.assertIn("[rank 0]: rank 0: hi", result.stdout.splitlines())
        warnings = [m for m in harness.log_messages(result.stderr, "WARNING") if "--echo" in m]
        self.assertEqual(warnings, ["--echo: this node runs 2 processes (local ranks 0..1); "
                                    "nothing to echo for local ranks 5,6,7,8,9,10,11,12 and "
                                    "1992 more"])

    def test_environment_twin_and_default(self):
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--say", "hi"),
                                 env=self.env(PADDLE_ECHO="1"))
        self.assertIn("[rank 1]: rank 1: hi", result.stdout.splitlines())
        self.assertNotIn("rank 0: hi", result.stdout)
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--say", "hi"))
        self.assertIn("rank 0: hi", result.stdout.splitlines())  # Paddle's: rank 0, as it is
        self.assertNotIn("rank 1: hi", result.stdout)

    def test_a_rank_dying_mid_line_leaves_a_whole_prefixed_line(self):
        script = self.dir / "mid_line.py"
        script.write_text(MID_LINE)
        result = self.run_launch(["--echo", "all", "--nproc_per_node", 2, script, self.rec])
        self.assertEqual(result.code, 3, result)
        lines = result.stdout.splitlines()
        for rank in (0, 1):
            self.assertIn(f"[rank {rank}]: rank {rank} whole", lines)
            self.assertIn(f"[rank {rank}]: rank {rank} cut mid-li", lines)

    def test_bad_values_are_usage_errors(self):
        for value, message in [
                ("0,0", "--echo: local rank 0 is listed twice in '0,0'"),
                ("some", "--echo: 'some' is not a local rank (expected all, or local ranks "
                         "such as 0,3,5)"),
                ("", "--echo: '' names no process (expected all, or local ranks such as "
                     "0,3,5)")]:
            result = self.run_launch([f"--echo={value}"] + self.rank_args())
            self.assertEqual((result.code, result.stderr), (2, f"launch: error: {message}\n"))


class LogLevelTest(LaunchTestCase):
    """--log_level (and PADDLE_LOG_LEVEL) filters the launcher's own messages, case-insensitive;
    the ABORT line is an ERROR and "Local processes completed." an INFO line, as in Paddle."""

    def levels(self, stderr):
        return {m.group(1) for m in map(harness.LOG_LINE.match, stderr.splitlines()) if m}

    def test_each_level_filters(self):
        failing = self.rank_args("--exit", "1:3")
        seen = {}
        for level in ("debug", "INFO", "Warning", "ERROR", "CRITICAL"):
            ok = self.run_launch(["--log_level", level, "--nproc_per_node", 2] + self.rank_args())
            bad = self.run_launch(["--log_level", level, "--nproc_per_node", 2] + failing)
            self.assertEqual((ok.code, bad.code), (0, 3), (ok, bad))
            seen[level.upper()] = (self.levels(ok.stderr) | self.levels(bad.stderr),
                                   "Local processes completed." in ok.stderr,
                                   "ABORT!!!" in bad.stderr)
        self.assertEqual(seen["DEBUG"], ({"DEBUG", "INFO", "WARNING", "ERROR"}, True, True))
        self.assertEqual(seen["INFO"], ({"INFO", "WARNING", "ERROR"}, True, True))
        self.assertEqual(seen["WARNING"], ({"WARNING", "ERROR"}, False, True))
        self.assertEqual(seen["ERROR"], ({"ERROR"}, False, True))
        self.assertEqual(seen["CRITICAL"], (set(), False, False))

    def test_environment_twin(self):
        result = self.run_launch(["--nproc_per_node", 1] + self.rank_args(),
                                 env=self.env(PADDLE_LOG_LEVEL="warning"))
        self.assertEqual(result.code, 0, result)
        self.assertNotIn("INFO", self.levels(result.stderr))


class ConsoleTest(LaunchTestCase):
    """The launcher's stdout: configuration, pids, and local rank 0's output, whole lines."""

    def test_the_configuration_dump_comes_before_every_log_line(self):
        # What the planning logs (a warning, the node line of --ips) is held until the dump is
        # out, so that on a terminal (stdout and stderr together) the dump is first.
        with open(self.dir / "both", "wb") as both:
            code = subprocess.run([str(harness.BIN), "--max_restart", "3", "--host", "127.0.0.1",
                                   "--ips", "127.0.0.1,127.0.0.2", "/bin/true"],
                                  cwd=self.dir, env=self.env(), stdout=both,
                                  stderr=subprocess.STDOUT, timeout=60).returncode
        self.assertEqual(code, 0)
        lines = (self.dir / "both").read_text().splitlines()
        self.assertEqual(lines[0], "-----------  Configuration Arguments -----------")
        end = lines.index("------------------------------------------------")
        self.assertRegex(lines[end + 1], r"^WARNING .*--max_restart has no effect here")
        self.assertRegex(lines[end + 2], r"^INFO .*This node is 127\.0\.0\.1, node 0 of 2")

    def test_rank_zero_output_reaches_the_console_complete_and_in_order(self):
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--lines", LINES))
        self.assertEqual(result.code, 0, result)
        numbers = []
        for line in result.stdout.splitlines():
            if "x" * 10 in line or FRAGMENT.search(line):
                m = LINE.match(line)
                self.assertIsNotNone(m, f"split or mangled console line: {line!r}")
                self.assertEqual(m.group(1), "0", f"a line of rank 1 on the console: {line!r}")
                self.assertEqual(m.group(3), str(LINES))
                numbers.append(int(m.group(2)))
        self.assertEqual(numbers, list(range(1, LINES + 1)))
        self.assertEqual(len((self.dir / "log" / "workerlog.1").read_text().splitlines()), LINES)

    def test_success_logs_local_processes_completed(self):
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assert_logged(result.stderr, "INFO", "Local processes completed.")
        self.assertNotIn("ABORT", result.stdout + result.stderr)

    def test_stdout_prints_each_rank_pid(self):
        result = self.run_launch(["--nproc_per_node", 3] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        pids = self.recorded_pids("pid")
        for idx in range(3):
            self.assertIn(f"launch proc_id:{pids[idx]} idx:{idx}", result.stdout.splitlines())

    def test_stdout_starts_with_configuration_arguments(self):
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--say", "hi"))
        self.assertEqual(result.code, 0, result)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0], "-----------  Configuration Arguments -----------")
        footer = lines.index("-" * 48)
        block = lines[1:footer]
        self.assertEqual(block, sorted(block))
        self.assertIn("nproc_per_node: 2", block)
        self.assertIn("log_dir: log", block)
        self.assertIn(f"training_script: {harness.RANK_PY}", block)
        self.assertIn(f"training_script_args: ['--record', '{self.rec}', '--say', 'hi']", block)
        self.assertIn("rank 0: hi", lines[footer:])


if __name__ == "__main__":
    harness.main()
