"""Shared support of the reliability suite (docs/reliability.md): the R26 leak audit, timing,
measurements, and the rel_rank.py helper.

Every launcher a test starts gets two extra environment variables, which its ranks and their
descendants inherit:
  PDLAUNCH_REL_TAG  <Class>.<method>.<test pid>: marks every process of the test's jobs, even
                    one that left the launcher's session
  TMPDIR            <test dir>/tmp, fresh per test method: where the launcher makes its gloo dir
After each test method (and again after the class) the audit (R26) fails the test if:
  - a process of the test's launcher sessions, or one carrying its tag, is still alive
    (zombies excepted) LEAK_WAIT seconds after the launchers exited; it is killed then;
  - TMPDIR is not empty;
  - a listening TCP socket remains on a port the launcher handed out (read from the
    environments the ranks recorded) and is held by one of those processes, or by nobody visible.
Measured figures are printed on stderr ("R1 measured: ...") and appended as JSON lines to
<work dir>/measurements.jsonl, from which docs/reliability.md is filled in.
"""
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

import harness

REL_RANK = harness.HELPERS / "rel_rank.py"
DNS_TRAP = harness.HELPERS / "dns_trap.py"
TAG = "PDLAUNCH_REL_TAG"
LEAK_WAIT = 10
MEASUREMENTS = harness.WORKDIR / "measurements.jsonl"
# Environment variables whose values hold the ports a launcher handed out.
_PORT_VARS = ("PADDLE_CURRENT_ENDPOINT", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_MASTER",
              "MASTER_PORT", "PADDLE_PORT", "PADDLE_PSERVERS_IP_PORT_LIST",
              "PADDLE_GLOO_HTTP_ENDPOINT")

sys.path.insert(0, str(harness.HELPERS))
import rel_rank  # noqa: E402  (its expected output patterns, for the test modules)

__all__ = ["AuditMixin", "RelTestCase", "DNS_TRAP", "REL_RANK", "rel_rank"]


# --- /proc ------------------------------------------------------------------------------------

def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name, or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _cmdline(pid):
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def _has_tag(pid, prefix):
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    needle = f"{TAG}={prefix}".encode()
    return any(var.startswith(needle) for var in environ.split(b"\0"))


def job_processes(tag_prefix, sessions=()):
    """{pid: command line} of live processes (not zombies) carrying a tag that starts with
    `tag_prefix`, or in one of `sessions`."""
    sessions = set(sessions)
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        fields = _stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            continue
        if int(fields[3]) in sessions or _has_tag(pid, tag_prefix):
            found[pid] = _cmdline(pid)
    return found


def _listening_inodes(ports):
    """{socket inode: port} of TCP sockets listening on one of `ports` (this namespace)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            port = int(fields[1].rsplit(":", 1)[1], 16)
            if fields[3] == "0A" and port in ports:
                found[fields[9]] = port
    return found


def _socket_owners(inodes):
    """{inode: [pid, ...]} of the processes holding these socket inodes."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    owners = {inode: [] for inode in inodes}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry.name}/fd/{fd}")
            except OSError:
                continue
            if target in wanted:
                owners[wanted[target]].append(int(entry.name))
    return owners


def leaked_listeners(ports, tag_prefix):
    """["port P held by ..."] for listening sockets on `ports` held by a tagged process or by no
    visible process (a socket seen twice, so not one being closed right now)."""
    inodes = _listening_inodes(ports)
    owners = _socket_owners(inodes)
    still = _listening_inodes(ports)
    leaks = []
    for inode, port in sorted(inodes.items(), key=lambda item: item[1]):
        pids = owners[inode]
        ours = [pid for pid in pids if _has_tag(pid, tag_prefix)]
        if ours or (not pids and inode in still):
            leaks.append(f"port {port} held by {ours or 'no visible process'}")
    return leaks


def ports_in_records(directory):
    """Every port named in the environments recorded (as JSON) anywhere under `directory`."""
    ports = set()
    for path in Path(directory).rglob("*.json"):
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        env = data.get("env", data) if isinstance(data, dict) else {}
        for name in _PORT_VARS:
            for item in str(env.get(name, "")).split(","):
                port = item.rpartition(":")[2]
                if port.isdigit():
                    ports.add(int(port))
    return ports


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- the test case ----------------------------------------------------------------------------

class AuditMixin:
    """Mixed in before a LaunchTestCase (or NetnsTestCase): tags, TMPDIR, the R26 audit,
    launcher exit times and measurements."""

    def setUp(self):
        super().setUp()
        self.tag = f"{type(self).__name__}.{self._testMethodName}.{os.getpid()}"
        self.tmpdir = self.dir / "tmp"
        self.tmpdir.mkdir()
        self.check_ports = True
        # Registered last, so it runs first: before the harness kills what a test left behind.
        self.addCleanup(self.audit_leaks)

    @classmethod
    def tearDownClass(cls):
        prefix = f"{cls.__name__}."
        left = job_processes(prefix)
        kill_all(left)
        super().tearDownClass()
        if left:
            raise AssertionError(f"R26: processes of {cls.__name__} still alive after the "
                                 f"class: {left}")

    def env(self, **extra):
        env = super().env(**extra)
        env[TAG] = self.tag
        env["TMPDIR"] = str(self.tmpdir)
        return env

    def launchers(self):
        return list(getattr(self, "_started", [])) + list(getattr(self, "procs", []))

    def audit_leaks(self):
        """R26 after one test method (see the module docstring)."""
        launchers = self.launchers()
        if any(proc.poll() is None for proc in launchers):
            return  # The test failed with a launcher still running; that is reported already.
        sessions = [proc.pid for proc in launchers]
        deadline = time.monotonic() + LEAK_WAIT
        left = job_processes(self.tag, sessions)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = job_processes(self.tag, sessions)
        problems = []
        if self.check_ports:  # Before the kill below, which would close the sockets.
            problems += leaked_listeners(ports_in_records(self.dir), self.tag)
        kill_all(left)
        if left:
            problems.append(f"processes alive {LEAK_WAIT}s after the launchers exited: {left}")
        temp = sorted(p.name for p in self.tmpdir.iterdir())
        if temp:
            problems.append(f"left in TMPDIR={self.tmpdir}: {temp}")
        if problems:
            self.fail("R26 leak audit: " + "; ".join(problems))

    # --- running and timing ---------------------------------------------------------------------

    def rel_args(self, *extra, rec=None):
        """Launcher arguments that end with rel_rank.py recording into `rec` (self.rec)."""
        return [REL_RANK, "--rec", rec or self.rec] + [str(e) for e in extra]

    def watch(self, proc):
        """Opens a pidfd on a launcher just started (not reaped yet), for exit_time."""
        proc.pdl_pidfd = os.pidfd_open(proc.pid)
        self.addCleanup(os.close, proc.pdl_pidfd)
        return proc

    def start_timed(self, args, **kwargs):
        """start_launch, watched: exit_time can tell when it exits."""
        return self.watch(self.start_launch(args, **kwargs))

    def run_timed(self, args, **kwargs):
        """(Result, seconds from start to exit) of `launch args`; the time comes from the
        pidfd, not from Result.elapsed, which polls."""
        proc = self.start_timed(args, **kwargs)
        seconds = self.exit_time(proc) - proc.pdl_start
        return self.finish(proc), seconds

    def exit_time(self, proc, timeout=harness.RUN_TIMEOUT):
        """time.monotonic() when a watched launcher exited."""
        ready, _, _ = select.select([proc.pdl_pidfd], [], [], timeout)
        now = time.monotonic()
        if not ready:
            self.finish(proc, 0)  # kills it and fails with its output
        return now

    def wait_ready_files(self, count, procs=(), rec=None, timeout=60):
        """Waits until `count` ready.* files exist in `rec` (default self.rec); fails early when
        one of `procs` exits."""
        rec = rec or self.rec

        def ready():
            for proc in procs:
                if proc.poll() is not None:
                    self.fail(f"launcher exited early:\n{self._result(proc, proc.returncode)!r}")
            return len(list(rec.glob("ready.*"))) >= count
        self.wait_until(ready, f"{count} ready files in {rec}", timeout)

    def stamps(self, rank, rec=None):
        """[(signal name, monotonic time)] rank `rank` recorded, in arrival order."""
        path = (rec or self.rec) / f"sig.{rank}"
        if not path.exists():
            return []
        return [(name, float(t)) for name, t in
                (line.split() for line in path.read_text().splitlines())]

    def stamp_names(self, ranks, rec=None):
        return {rank: [name for name, _ in self.stamps(rank, rec)] for rank in ranks}

    def tree_pids(self):
        """[(rank, kind, pid)] of the descendants the ranks started (--tree)."""
        found = []
        for path in sorted(self.rec.glob("tree.*")):
            rank = int(path.name.split(".")[1])
            for line in path.read_text().splitlines():
                kind, pid = line.split()
                found.append((rank, kind, int(pid)))
        return found

    def measure(self, rnum, what, value, unit, bound):
        """Prints a measured figure and appends it to MEASUREMENTS."""
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(f"{rnum} measured: {what} = {shown} {unit} (asserted {bound})",
              file=sys.stderr, flush=True)
        with open(MEASUREMENTS, "a", encoding="utf-8") as f:
            f.write(json.dumps({"r": rnum, "test": self.id(), "what": what,
                                "value": round(value, 2), "unit": unit, "bound": bound}) + "\n")


class RelTestCase(AuditMixin, harness.LaunchTestCase):
    """A LaunchTestCase with the R26 audit."""
