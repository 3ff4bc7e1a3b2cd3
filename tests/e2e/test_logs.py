"""Issue #2: log/workerlog.N, log/endpoints.log and the live console echo of local rank 0."""
import os
import re
import signal
import subprocess
from pathlib import Path

import harness
from harness import LaunchTestCase

LINES = 5000
LINE = re.compile(r"^rank (\d+) line (\d{6})/(\d+) x{80} end$")
FRAGMENT = re.compile(r"rank \d+ line|line \d+/")


def configuration_block(test, lines, header, rule):
    """The `name: value` lines of the configuration dump that opens `lines` (either console's):
    `header` first, then lines sorted by name up to `rule`. Returns them and the rule's index."""
    test.assertEqual(lines[0], header)
    end = lines.index(rule)
    block = lines[1:end]
    test.assertEqual(block, sorted(block))
    return block, end


class NoInotifyTest(LaunchTestCase):
    """fs.inotify.max_user_instances reached (128 by default: more than 128 launchers of one user
    on one host made every further one fail with 'inotify_init1: Too many open files'). The
    limit is set to 0 in a user namespace of the test's own (`unshare -Ur`), so the launcher's
    inotify_init1 really fails with EMFILE: the job runs anyway, rank 0's output reaches the
    console (the echo uses dnotify, which no such limit bounds, and says nothing), and a daemon
    a rank started is still stopped with the job (the wait for the cgroup to empty reads
    cgroup.events every 10 ms instead)."""

    NO_INOTIFY = ["unshare", "-Ur", "sh", "-c",
                  'echo 0 > /proc/sys/user/max_inotify_instances && exec "$@"', "sh"]

    def test_a_job_runs_echoes_and_contains_a_daemon_without_inotify(self):
        probe = subprocess.run(self.NO_INOTIFY + ["true"], capture_output=True, text=True)
        if probe.returncode != 0:
            self.skipTest(f"SKIPPED: a user namespace with max_inotify_instances 0 was refused: "
                          f"{probe.stderr.strip()}")
        script = self.dir / "train.sh"
        script.write_text("#!/bin/sh\n"
                          "echo \"hello from rank $PADDLE_TRAINER_ID\"\n"
                          "setsid sleep 300 </dev/null >/dev/null 2>&1 &\n"
                          "echo $! > \"$1/daemon.$PADDLE_TRAINER_ID\"\n"
                          "sleep 1\n")
        script.chmod(0o755)
        proc = self.start_launch(["--nproc_per_node", 2, script, self.rec],
                                 wrapper=self.NO_INOTIFY)
        result = self.finish(proc, timeout=60)
        self.assertEqual(result.code, 0, result)
        self.assertIn("hello from rank 0", result.stdout)
        self.assertNotIn("the console echo cannot be told of writes", result.stderr)
        daemons = [int((self.rec / f"daemon.{r}").read_text()) for r in (0, 1)]
        self.assert_all_gone(daemons)


class EchoWithoutDnotifyTest(LaunchTestCase):
    """Where the kernel refuses F_NOTIFY (fs.dir-notify-enable = 0, global, so the test forces the
    same path with PDLAUNCH_ECHO_POLL=1): one warning, the echoed log read every 50 ms, every
    line on the console all the same, the last partial one included."""

    def test_the_echo_polls_says_so_once_and_loses_nothing(self):
        script = self.dir / "train.sh"
        script.write_text("#!/bin/sh\n"
                          "for i in 1 2 3; do echo \"line $i of rank $PADDLE_TRAINER_ID\"; "
                          "sleep 0.2; done\n"
                          "printf 'no newline'\n")
        script.chmod(0o755)
        result = self.run_launch(["--nproc_per_node", 2, script],
                                 env=self.env(PDLAUNCH_ECHO_POLL="1"))
        self.assertEqual(result.code, 0, result)
        self.assertEqual(result.stderr.count("the console echo cannot be told of writes "
                                             "(PDLAUNCH_ECHO_POLL=1)"), 1, result.stderr)
        for i in (1, 2, 3):
            self.assertIn(f"line {i} of rank 0\n", result.stdout)
        self.assertIn("no newline", result.stdout)
        self.assertNotIn("of rank 1", result.stdout)


class EchoProgressTest(LaunchTestCase):
    """Issue #29 item 5: a rank that draws a '\r' progress bar showed nothing until its newline,
    and with --echo the '\r' then overwrote the `[rank N]:` prefix. Now the default echo passes
    the bytes through as they come, and a prefixed echo gives every redraw its prefix and shows a
    partial line after 0.5 s of quiet (docs/cli.md, "Console")."""

    BAR = ("#!/bin/sh\n"
           "printf 'loading... '; sleep 1; echo done\n"
           "for p in 10 50; do printf '\\r%3d%%' $p; sleep 0.3; done; printf '\\r100%%\\n'\n")

    def script(self):
        script = self.dir / "bar.sh"
        script.write_text(self.BAR)
        script.chmod(0o755)
        return script

    def test_the_default_echo_shows_a_partial_line_before_its_end(self):
        proc = self.start_launch(["--nproc_per_node", 1, self.script()])
        # "loading... " shows while the rank still sleeps before "done".
        self.wait_until(lambda: "loading... " in (self.dir / "launcher.stdout").read_text(),
                        "the partial line on the console", 10)
        self.assertNotIn("done", (self.dir / "launcher.stdout").read_text())
        result = self.finish(proc)
        self.assertEqual(result.code, 0, result)
        self.assertIn("loading... done\n\r 10%\r 50%\r100%\n", result.stdout)

    def test_a_prefixed_echo_keeps_the_prefix_on_every_redraw(self):
        proc = self.start_launch(["--echo", "all", "--nproc_per_node", 1, self.script()])
        self.wait_until(lambda: "[rank 0]: loading... " in
                        (self.dir / "launcher.stdout").read_text(),
                        "the partial line after the quiet time", 10)
        result = self.finish(proc)
        self.assertEqual(result.code, 0, result)
        self.assertIn("[rank 0]: loading... done\n", result.stdout)
        self.assertIn("[rank 0]: 100%\n", result.stdout)
        # Every redraw that reached the console came with its prefix.
        for part in result.stdout.split("\r")[1:]:
            self.assertTrue(part.startswith("[rank 0]: ") or part == "", repr(result.stdout))


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
        # Issue #42 item 7: the second run's output starts after a line naming that run.
        self.run_saying("first run")
        second = self.run_saying("second run", "--echo", "all")
        banner = (r"===== pdlaunch: job default, run of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
                  r"\(launcher pid \d+\) =====")
        for rank in (0, 1):
            self.assertRegex(self.worker_log(rank),
                             rf"^rank {rank}: first run\n{banner}\nrank {rank}: second run\n$")
        # Not output of the run: the console echo starts after it.
        self.assertNotIn("===== pdlaunch", second.stdout + second.stderr)

    def test_a_log_that_ends_without_a_newline_gets_one_before_the_line(self):
        for text in ("first", "second"):
            result = self.run_launch(["/bin/sh", "-c", f"printf {text}"])
            self.assertEqual(result.code, 0, result)
        self.assertRegex(self.worker_log(0), r"^first\n===== pdlaunch: job default, run of .*\nsecond$")

    def test_todays_banner_names_the_pod_of_the_run(self):
        # The pod log of each run stays Paddle's <job_id>.<pod>.log, no file beside it (Paddle's
        # test_run.py counts them); the banner and the console's "Run Pod:" line name it.
        self.run_saying("first", "--job_id", "jj", "--nnodes", 1)
        second = self.run_saying("second", "--job_id", "jj", "--nnodes", 1)
        pod = re.search(r"Run Pod: ([a-z]{6}),", second.stderr + second.stdout).group(1)
        self.assertRegex(self.worker_log(0),
                         rf"\n===== pdlaunch: job jj, pod {pod}, run of .*=====\nrank 0: second\n$")
        self.assertTrue((self.dir / "log" / f"jj.{pod}.log").is_file())

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
        # Not the launcher's watchdog (named launch-watchdog): it shares the launcher's memory,
        # so its command line is the job's until its exit is done (design.md, Parent death).
        left = [d.name for d in Path("/proc").iterdir() if d.name.isdigit()
                and marker in _read(d / "cmdline") and _comm(d) != "launch-watchdog"]
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
                ("some", "--echo: 'some' is not a local rank (expected all, none, or local ranks "
                         "such as 0,3,5)"),
                ("", "--echo: '' names no process (expected all, none, or local ranks such as "
                     "0,3,5)")]:
            result = self.run_launch([f"--echo={value}"] + self.rank_args())
            self.assertEqual((result.code, result.stderr), (2, f"launch: error: {message}\n"))


class LogLevelTest(LaunchTestCase):
    """--log_level (and PADDLE_LOG_LEVEL) filters the launcher's own messages, case-insensitive,
    in both consoles: with --legacy the ABORT line is an ERROR and "Local processes completed."
    an INFO line, as in the legacy launcher; in today's console (--log_level is one of its flags)
    "Pod completed" is INFO and "Container failed !!!" ERROR, as in Paddle 2.3+."""

    def levels(self, stderr):
        return {m.group("level") for m in map(harness.LOG_LINE.match, stderr.splitlines()) if m}

    def seen_at_each_level(self, extra, completed, failed):
        failing = self.rank_args("--exit", "1:3")
        seen = {}
        for level in ("debug", "INFO", "Warning", "ERROR", "CRITICAL"):
            args = extra + ["--log_level", level, "--nproc_per_node", 2]
            ok = self.run_launch(args + self.rank_args())
            bad = self.run_launch(args + failing)
            self.assertEqual((ok.code, bad.code), (0, 3), (ok, bad))
            seen[level.upper()] = (self.levels(ok.stderr) | self.levels(bad.stderr),
                                   completed in ok.stderr, "ABORT!!!" in bad.stderr,
                                   failed in bad.stderr)
        return seen

    def test_each_level_filters_the_legacy_console(self):
        seen = self.seen_at_each_level(["--legacy"], "Local processes completed.", "ABORT!!!")
        self.assertEqual(seen["DEBUG"], ({"DEBUG", "INFO", "WARNING", "ERROR"}, True, True, True))
        self.assertEqual(seen["INFO"], ({"INFO", "WARNING", "ERROR"}, True, True, True))
        self.assertEqual(seen["WARNING"], ({"WARNING", "ERROR"}, False, True, True))
        self.assertEqual(seen["ERROR"], ({"ERROR"}, False, True, True))
        self.assertEqual(seen["CRITICAL"], (set(), False, False, False))

    def test_each_level_filters_todays_console(self):
        # A clean run of today's console has no WARNING line (no "CPUONLY" line there).
        seen = self.seen_at_each_level([], "Pod completed", "Container failed !!!")
        self.assertEqual(seen["DEBUG"], ({"DEBUG", "INFO", "ERROR"}, True, True, True))
        self.assertEqual(seen["INFO"], ({"INFO", "ERROR"}, True, True, True))
        self.assertEqual(seen["WARNING"], ({"ERROR"}, False, True, True))
        self.assertEqual(seen["ERROR"], ({"ERROR"}, False, True, True))
        self.assertEqual(seen["CRITICAL"], (set(), False, False, False))

    def test_environment_twin(self):
        result = self.run_launch(["--nproc_per_node", 1] + self.rank_args(),
                                 env=self.env(PADDLE_LOG_LEVEL="warning"))
        self.assertEqual(result.code, 0, result)
        self.assertNotIn("INFO", self.levels(result.stderr))


class TodaysConsoleTest(LaunchTestCase):
    """A command of today's interface gets the console of `python -m paddle.distributed.launch`
    since Paddle 2.3 (docs/cli.md, "Console"): LAUNCH log lines, the Configuration block, the
    Job, Pod and Container lines, the ERROR LOG DETAIL tail, `Exit code N`."""

    LAUNCH = re.compile(r"^LAUNCH (DEBUG|INFO|WARNING|ERROR) \d{4}-\d\d-\d\d "
                        r"\d\d:\d\d:\d\d,\d{3} (.*)$")

    def messages(self, stderr):
        return [m.group(2) for m in map(self.LAUNCH.match, stderr.splitlines()) if m]

    def pod_of(self, job):
        logs = [p.name for p in (self.dir / "log").iterdir() if p.name.startswith(job + ".")]
        self.assertEqual(len(logs), 1, logs)
        return logs[0][len(job) + 1:-len(".log")]

    def test_a_clean_run(self):
        result = self.run_launch(["--job_id", "t1", "--nnodes", "1", "--nproc_per_node", 2]
                                 + self.rank_args("--say", "hello"))
        self.assertEqual(result.code, 0, result)
        lines = result.stderr.splitlines()
        self.assertTrue(all(self.LAUNCH.match(line) for line in lines), result.stderr)
        messages = self.messages(result.stderr)
        options, end = configuration_block(
            self, messages, "-----------  Configuration  ----------------------", "-" * 50)
        self.assertIn("job_id: t1", options)
        self.assertIn("nnodes: 1", options)
        self.assertIn("nproc_per_node: 2", options)
        pod = self.pod_of("t1")
        self.assertEqual(messages[end + 1:],
                         ["Job: t1, mode collective, replicas 1[1:1], elastic False",
                          f"Run Pod: {pod}, replicas 2, status ready",
                          f"Watching Pod: {pod}, replicas 2, status running",
                          "Pod completed",
                          "Exit code 0"])
        # Nothing of the legacy console on stdout: only rank 0's output.
        self.assertNotIn("Configuration Arguments", result.stdout)
        self.assertNotIn("launch proc_id", result.stdout)
        self.assertNotIn("launch train in", result.stdout)

    def test_a_failure_shows_the_container_and_the_end_of_its_log(self):
        # Each rank writes 5000 lines of 100 bytes; rank 1 exits 3: the tail is its last 3000.
        result = self.run_launch(["--job_id", "t2", "--nproc_per_node", 2]
                                 + self.rank_args("--lines", 5000, "--exit", "1:3"))
        self.assertEqual(result.code, 3, result)
        messages = self.messages(result.stderr)
        log = self.dir / "log" / "workerlog.1"
        self.assertIn(harness.abort_line(2, [1]), messages)
        failed = messages.index("Pod failed")
        self.assertEqual(messages[failed + 1], "Container failed !!!")
        lines = result.stderr.splitlines()
        header = next(i for i, line in enumerate(lines) if line.endswith(" Container failed !!!"))
        self.assertRegex(lines[header + 1],
                         r"^Container rank 1 status failed cmd \[.*'-u', "
                         + re.escape(repr(str(harness.RANK_PY))) + r", '--record', .*\] code 3 log "
                         + re.escape(str(log)) + "$")
        self.assertEqual(messages[failed + 2],
                         "------------------------- ERROR LOG DETAIL -------------------------")
        self.assertEqual(messages[-1], "Exit code 3")
        content = log.read_bytes()
        self.assertGreater(len(content), 3000)
        # The tail is one piece on stderr, right after its header (issue #42 item 5: one
        # stream), cut mid-line as Paddle cuts it.
        tail = content[-3000:].decode()
        detail = result.stderr.index("ERROR LOG DETAIL")
        self.assertIn(tail, result.stderr[detail:])
        self.assertNotIn(content[-3001:].decode(), result.stderr)
        self.assertNotIn(tail, result.stdout)

    def test_rank_zeros_failure_shows_its_echo_first_then_its_tail_once(self):
        # Rank 0 fails (rank 1, stopped by the launcher, is no failure): one container is
        # shown; what rank 0 wrote is echoed whole before its tail, as Paddle does.
        result = self.run_launch(["--job_id", "t3", "--nproc_per_node", 2]
                                 + self.rank_args("--lines", 2000, "--exit", "0:4", "--sleep",
                                                  30))
        self.assertEqual(result.code, 4, result)
        messages = self.messages(result.stderr)
        self.assertEqual(messages.count("Pod failed"), 1)
        self.assertEqual(messages.count("Container failed !!!"), 1)
        self.assertRegex(result.stderr, r"\nContainer rank 0 status failed cmd .* code 4 log ")
        content = (self.dir / "log" / "workerlog.0").read_text()
        self.assertEqual(result.stdout, content)  # Its echo; the tail is on stderr, once.
        self.assertEqual(result.stderr.count(content[-3000:]), 1)

    def test_the_tail_is_this_runs_output_only(self):
        first = self.run_launch(["--nnodes", "1"] + self.rank_args("--lines", 100, "--exit",
                                                                   "0:3"))
        self.assertEqual(first.code, 3, first)
        second = self.run_launch(["--nnodes", "1"] + self.rank_args("--say", "second run",
                                                                    "--exit", "0:3"))
        self.assertEqual(second.code, 3, second)
        self.assertEqual(second.stdout, "rank 0: second run\n")  # The echo.
        tail = second.stderr[second.stderr.index("ERROR LOG DETAIL"):]
        self.assertIn("rank 0: second run\n", tail)  # The tail: this run's output only.
        self.assertNotIn(" line 0", tail)  # Nothing of the first run's numbered lines.

    def test_a_signal_ends_with_exit_with_signal(self):
        proc = self.start_launch(["--nnodes", "1", "--nproc_per_node", 2]
                                 + self.rank_args("--ready", self.rec, "--sleep", 60))
        self.wait_ready(2, proc)
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc, 30)
        self.assertEqual(result.code, 130, result)
        messages = self.messages(result.stderr)
        terminating = messages.index("Terminating with signal 2")
        self.assertTrue(messages[terminating + 1].startswith("received SIGINT, stopping 2"),
                        messages)
        self.assertEqual(messages[-1], "Exit with signal 2")
        self.assertFalse(any(m.startswith("Exit code") for m in messages), messages)

    def test_a_signal_during_the_rendezvous_ends_with_exit_with_signal(self):
        # Paddle's handler is in place from the start of its rendezvous: the same two lines.
        port = harness.fixed_port_base() + 3
        proc = self.start_launch(["--master", f"127.0.0.1:{port}", "--nnodes", 2, "/bin/true"])
        err = self.dir / "launcher.stderr"
        self.wait_until(lambda: "Waiting peer start..." in err.read_text(), "the rendezvous")
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc, 30)
        self.assertEqual(result.code, 130, result)
        messages = self.messages(result.stderr)
        terminating = messages.index("Terminating with signal 2")
        self.assertEqual(messages[terminating:], [
            "Terminating with signal 2", "received SIGINT, stopping",
            "stopped by SIGINT while waiting for the other nodes", "Exit with signal 2"])
        self.assertEqual(list((self.dir).glob("log")), [], "the log directory made is kept")

    def test_a_rank_killed_by_a_signal_has_pythons_negative_code(self):
        result = self.run_launch(["--nnodes", "1", "--nproc_per_node", 2]
                                 + self.rank_args("--signal", "0:KILL"))
        self.assertEqual(result.code, 137, result)
        self.assertRegex(result.stderr, r"\nContainer rank 0 status failed cmd .* code -9 log ")
        self.assertEqual(self.messages(result.stderr)[-1], "Exit code 137")

    def test_the_legacy_flag_keeps_the_legacy_console(self):
        result = self.run_launch(["--legacy", "--nnodes", "1"] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assertEqual(result.stdout.splitlines()[0],
                         "-----------  Configuration Arguments -----------")
        self.assertNotIn("LAUNCH ", result.stderr)
        self.assertIn("Local processes completed.", result.stderr)


class ConsoleTest(LaunchTestCase):
    """The launcher's stdout: configuration, pids, and local rank 0's output, whole lines."""

    def test_the_configuration_dump_comes_before_every_log_line(self):
        # What the planning logs (a warning, the node line of --ips) is held until the dump is
        # out, so that on a terminal (stdout and stderr together) the dump is first.
        with open(self.dir / "both", "wb") as both:
            # One node of the list runs alone: its nodes do not meet (--nodes_meet false).
            code = subprocess.run([str(harness.BIN), "--max_restart", "3", "--host", "127.0.0.1",
                                   "--ips", "127.0.0.1,127.0.0.2", "--nodes_meet", "false",
                                   "/bin/true"],
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
        block, footer = configuration_block(
            self, lines, "-----------  Configuration Arguments -----------", "-" * 48)
        self.assertIn("nproc_per_node: 2", block)
        self.assertIn("log_dir: log", block)
        self.assertIn(f"training_script: {harness.RANK_PY}", block)
        self.assertIn(f"training_script_args: ['--record', '{self.rec}', '--say', 'hi']", block)
        self.assertIn("rank 0: hi", lines[footer:])


if __name__ == "__main__":
    harness.main()
