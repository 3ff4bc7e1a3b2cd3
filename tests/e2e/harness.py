"""Shared support of the e2e tests: run the built `launch` binary in a fresh directory.

Environment (set by tests/e2e/CMakeLists.txt; defaults make a manual run from the repo work):
  PDLAUNCH_BIN          the launcher binary (default: <repo>/build/launch)
  PDLAUNCH_E2E_WORKDIR  where each test method gets its directory (default: a temp dir)
The directory of a test method is wiped when the method starts and left in place afterwards, so
the logs of a failed test can be read.
"""
import atexit
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "tests" / "helpers"
RANK_PY = HELPERS / "rank.py"
EXAMPLES = REPO / "examples"
BIN = os.environ.get("PDLAUNCH_BIN", str(REPO / "build" / "launch"))
SYSTEM_PYTHON = "/usr/bin/python3"
# Without PDLAUNCH_E2E_WORKDIR: a directory of this process's own under the temp dir, made by
# the first test that needs it (a module that only imports this one, or a run whose setUp
# fails, leaves nothing) and removed at exit if no test left anything in it.
WORKDIR = Path(os.environ.get("PDLAUNCH_E2E_WORKDIR") or
               Path(tempfile.gettempdir()) / f"pdlaunch-e2e-{os.getpid()}-{os.urandom(3).hex()}")


def _remove_empty_dirs(top):
    """Removes `top` and the directories below it that hold no file, deepest first."""
    for dirpath, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


if not os.environ.get("PDLAUNCH_E2E_WORKDIR"):
    atexit.register(_remove_empty_dirs, WORKDIR)

# Generous bounds: a loaded 2-core machine must never make a correct launcher fail.
RUN_TIMEOUT = 180
GONE_TIMEOUT = 30

# A line of the launcher's log in either console (docs/cli.md, "Console"): the legacy launcher's
# `LEVEL time file:line] message` or today's `LAUNCH LEVEL time message`. Groups: "level", "message".
LOG_LINE = re.compile(
    r"^(LAUNCH )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?(1)|\S+:\d+\] )(?P<message>.*)$")

# Variables of an outer launcher or cluster that would change what the launcher under test does.
_INHERITED_PREFIXES = ("PADDLE_", "FLAGS_", "DISTRIBUTED_", "POD_IP", "TRAINER_", "CUDA_VISIBLE",
                       "MASTER_", "GLOO_", "SLURM_", "SLURMD_")
_INHERITED_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


class Terminal:
    """A pseudo-terminal of our own whose controlling process is `argv`: a session leader whose
    group is the terminal's foreground group, as an interactive shell with job control makes
    a job (or, with `bash -i`, the shell itself). Keys go in with press(); everything shown
    comes out in output(). No `script(1)`: which shell it starts, and whether that shell execs,
    comes from $SHELL and decides whether a job is in the foreground group at all."""

    def __init__(self, argv, env, cwd):
        self.master, slave = pty.openpty()

        def take_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([str(a) for a in argv], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=take_terminal)
        os.close(slave)
        self._chunks = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                return
            if not data:
                return
            self._chunks.append(data)

    def press(self, keys):
        os.write(self.master, keys)

    def output(self):
        return b"".join(self._chunks).decode(errors="replace")

    def wait(self, timeout=RUN_TIMEOUT):
        """The controlling process's exit code, once everything holding the terminal let go."""
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=GONE_TIMEOUT)
        return code

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


class Result:
    """How a launcher run ended: exit code, both streams, seconds taken."""

    def __init__(self, args, code, stdout, stderr, elapsed):
        self.args, self.code, self.stdout, self.stderr = args, code, stdout, stderr
        self.elapsed = elapsed

    def __repr__(self):
        return (f"launch {self.args!r} -> exit {self.code} after {self.elapsed:.1f}s\n"
                f"--- stdout (last 3000 chars) ---\n{self.stdout[-3000:]}\n"
                f"--- stderr (last 3000 chars) ---\n{self.stderr[-3000:]}")


def pid_alive(pid):
    """True while `pid` exists and is not a zombie (an orphan's zombie may wait for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def fixed_port_base():
    """A first port for --start_port tests: above the ephemeral range, where the launcher's own
    allocator (below it) never looks, and spread by pid so parallel test runs differ."""
    return 61000 + os.getpid() % 1000 * 4


def log_messages(stream, level=None):
    """The messages of the launcher's log lines in `stream` (optionally of one level)."""
    found = []
    for line in stream.splitlines():
        m = LOG_LINE.match(line)
        if m and (level is None or m.group("level") == level):
            found.append(m.group("message"))
    return found


def abort_line(world_size, ranks):
    return (f"ABORT!!! Out of all {world_size} trainers, the trainer process with "
            f"rank={ranks!r} was aborted. Please check its log.")


class LaunchTestCase(unittest.TestCase):
    """Gives each test method a fresh directory `self.dir` and ways to run the launcher in it."""

    maxDiff = None

    def setUp(self):
        self.assertTrue(os.access(BIN, os.X_OK), f"no launcher binary {BIN} (build it first)")
        self.dir = WORKDIR / type(self).__name__ / self._testMethodName
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.rec = self.dir / "rec"  # where rank.py records envs and pids
        self.rec.mkdir()
        self._started = []
        self.addCleanup(self._kill_leftovers)

    # --- environment --------------------------------------------------------------------------

    def env(self, **extra):
        """The launcher's environment: ours without outer-launcher variables, trainers on the
        system python (fast start, deterministic), plus `extra`."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(_INHERITED_PREFIXES) and k not in _INHERITED_NAMES}
        env["PADDLE_LAUNCH_PYTHON"] = SYSTEM_PYTHON
        env.update(extra)
        return env

    # --- running ------------------------------------------------------------------------------

    def terminal(self, argv, env=None):
        """A Terminal running `argv` in self.dir, closed (its group killed) after the test."""
        term = Terminal(argv, env or self.env(), self.dir)
        self.addCleanup(term.close)
        return term

    def run_launch(self, args, env=None, timeout=RUN_TIMEOUT, cwd=None):
        """Runs `launch args` to completion; fails the test if it takes more than `timeout`."""
        proc = self.start_launch(args, env=env, cwd=cwd)
        return self.finish(proc, timeout)

    def start_launch(self, args, env=None, cwd=None, name="launcher", wrapper=(), launcher=None):
        """Starts `launch args` in its own session; stdout/stderr go to files in self.dir.
        `wrapper`: a command that execs the launcher (prlimit ... --), same pid. `launcher`: the
        command that is the launcher, instead of BIN (the wheel's `pdlaunch`, `python -m
        pdlaunch`)."""
        args = [str(a) for a in args]
        launcher = [BIN] if launcher is None else [str(a) for a in launcher]
        out = open(self.dir / f"{name}.stdout", "wb")
        err = open(self.dir / f"{name}.stderr", "wb")
        proc = subprocess.Popen(list(wrapper) + launcher + args, cwd=cwd or self.dir, env=env or self.env(),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        out.close()
        err.close()
        proc.pdl_args, proc.pdl_name, proc.pdl_start = args, name, time.monotonic()
        self._started.append(proc)
        return proc

    def finish(self, proc, timeout=RUN_TIMEOUT):
        """Waits for a started launcher and returns its Result."""
        try:
            code = proc.wait(timeout=max(0.0, proc.pdl_start + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"launch {proc.pdl_args!r} still running after {timeout}s; killed it\n"
                      + repr(self._result(proc, None)))
        return self._result(proc, code)

    def _result(self, proc, code):
        def read(suffix):
            path = self.dir / f"{proc.pdl_name}.{suffix}"
            return path.read_bytes().decode("utf-8", "replace")
        return Result(proc.pdl_args, code, read("stdout"), read("stderr"),
                      time.monotonic() - proc.pdl_start)

    def _kill_leftovers(self):
        for proc in self._started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        # Checked by command line: a pid recorded long ago may belong to someone else by now.
        for pid in self.recorded_pids("pid").values():
            _kill_if_running(pid, RANK_PY.name)
        for pid in self.recorded_pids("grandchild").values():
            _kill_if_running(pid, "sleep")

    # --- rank.py records ----------------------------------------------------------------------

    def rank_args(self, *extra):
        """Launcher arguments that end with the rank.py helper recording into self.rec."""
        return [RANK_PY, "--record", self.rec] + [str(e) for e in extra]

    def recorded_pids(self, kind):
        """{rank: pid} from the files `kind`.RANK in self.rec (kind: pid, grandchild, ready)."""
        pids = {}
        for path in self.rec.glob(f"{kind}.*"):
            suffix = path.name[len(kind) + 1:]
            if suffix.isdigit():
                pids[int(suffix)] = int(path.read_text())
        return pids

    def recorded_envs(self, count):
        """The environments ranks 0..count-1 recorded, in rank order; fails if one is missing."""
        envs = []
        for rank in range(count):
            path = self.rec / f"env.{rank}.json"
            self.assertTrue(path.exists(), f"rank {rank} did not run (no {path})")
            envs.append(json.loads(path.read_text()))
        self.assertEqual(sorted(p.name for p in self.rec.glob("env.*.json")),
                         sorted(f"env.{r}.json" for r in range(count)))
        return envs

    # --- waiting ------------------------------------------------------------------------------

    def wait_until(self, predicate, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.05)

    def wait_ready(self, count, proc=None, timeout=60):
        """Waits until ranks 0..count-1 wrote their ready file (fails early if `proc` exits)."""
        def ready():
            if proc is not None and proc.poll() is not None:
                self.fail(f"launcher exited early:\n{self._result(proc, proc.returncode)!r}")
            return len(self.recorded_pids("ready")) >= count
        self.wait_until(ready, f"{count} ranks to be ready", timeout)

    def assert_all_gone(self, pids, timeout=GONE_TIMEOUT):
        """Every pid in `pids` must be gone within `timeout` seconds."""
        pids = list(pids)
        self.assertTrue(pids, "no pids recorded")
        deadline = time.monotonic() + timeout
        while True:
            alive = [p for p in pids if pid_alive(p)]
            if not alive:
                return
            if time.monotonic() > deadline:
                self.fail(f"processes still alive {timeout}s later: {alive}")
            time.sleep(0.05)

    def assert_nodes_ended_0(self, results):
        """Every node of `results` ({name: Result}) ended 0; a failure shows every node's output:
        a node's failure is often another's doing."""
        failed = [name for name, result in results.items() if result.code != 0]
        self.assertFalse(failed, f"node(s) {', '.join(failed)} did not end 0:\n" + "\n".join(
            f"node {name}: {result!r}" for name, result in results.items()))

    # --- assertions on output -----------------------------------------------------------------

    def assert_logged(self, stream, level, message):
        """`stream` has a launcher log line of `level` whose message is exactly `message`."""
        self.assertIn(message, log_messages(stream, level),
                      f"no {level} log line {message!r} in:\n{stream[-4000:]}")


def _kill_if_running(pid, marker):
    """SIGKILLs `pid` if it is alive and its command line contains `marker`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        if pid_alive(pid) and marker in cmdline:
            os.kill(pid, signal.SIGKILL)
    except (FileNotFoundError, ProcessLookupError):
        pass


def main():
    unittest.main(verbosity=2)


if __name__ == "__main__":
    sys.exit("harness.py is a library; run the test_*.py files")
