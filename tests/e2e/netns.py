"""Real hosts on one machine: network namespaces joined by a bridge (label netns).

    with Lab(nodes=2, docker_in=1) as lab:
        subprocess.run(lab.command(0, ["launch", ...]))   # runs inside node 0's namespace

Layout: a hub namespace holds the bridge br0; node namespace i has lo up and eth0, a veth whose
peer is a port of br0, with address 10.211.X.(i+1)/24 (X from our pid). That /24 exists only
inside these namespaces, so the tests never send a packet to a real network. Optionally one node
also has a docker-like interface docker0 (a bridge, as Docker's is) with 172.17.0.1/16, and
every node can get an /etc/hosts with names for the nodes (`ip netns exec` bind-mounts
/etc/netns/<ns>/hosts over /etc/hosts).

Everything is removed on exit, also after an exception, KeyboardInterrupt or SIGTERM: processes
left in the namespaces are killed, then the namespaces (with their links) and /etc/netns/<ns>
are deleted. A Lab entered without `with` (a test's setUp) is also removed at interpreter exit,
should its owner's clean-up never run (unittest skips cleanups on KeyboardInterrupt).
Namespaces left by a test process that was SIGKILLed are removed by the next Lab.
When the kernel (or a missing `ip`, or not being root) refuses the set-up, entering the Lab
raises unittest.SkipTest("SKIPPED: ip netns refused by the kernel: <stderr>").
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import unittest
from pathlib import Path

PREFIX = "pdlt"  # namespace names: pdlt<pid>-hub, pdlt<pid>-n0, ...
STALE = re.compile(rf"^{PREFIX}(\d+)-\S+")
ETC_NETNS = Path("/etc/netns")
DOCKER_ADDRESS = "172.17.0.1"


class SetupRefused(Exception):
    """An `ip` command of the set-up failed."""


def _ip(*args):
    """Runs `ip args`; raises SetupRefused with its stderr when it fails."""
    try:
        proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError as e:
        raise SetupRefused(f"`ip` not found: {e}") from None
    if proc.returncode != 0:
        raise SetupRefused(f"`ip {' '.join(args)}`: {proc.stderr.strip()}")
    return proc.stdout


def _namespaces():
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _kill_processes_in(namespace):
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True,
                         text=True).stdout
    for pid in out.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _delete_namespace(namespace):
    _kill_processes_in(namespace)
    subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)
    shutil.rmtree(ETC_NETNS / namespace, ignore_errors=True)


def remove_stale_namespaces():
    """Deletes namespaces of earlier Labs whose process is gone (a SIGKILLed test run)."""
    for namespace in _namespaces():
        m = STALE.match(namespace)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            _delete_namespace(namespace)


class Lab:
    """`nodes` network namespaces on one bridge; see the module docstring."""

    def __init__(self, nodes, docker_in=None, hosts=None):
        """docker_in: index of the node that also gets docker0 (172.17.0.1/16), or None.
        hosts: {name: node index} written to every node's /etc/hosts, or None."""
        pid = os.getpid()
        self.subnet = f"10.211.{pid % 200 + 20}"
        self.hub = f"{PREFIX}{pid}-hub"
        self.names = [f"{PREFIX}{pid}-n{i}" for i in range(nodes)]
        self.addresses = [f"{self.subnet}.{i + 1}" for i in range(nodes)]
        self.docker_in = docker_in
        self.hosts = hosts or {}
        self._created = []
        self._made_etc_netns = False
        self._old_sigterm = None

    # --- use ------------------------------------------------------------------------------------

    def command(self, node, argv):
        """`argv` run inside node `node`'s namespace."""
        return ["ip", "netns", "exec", self.names[node]] + [str(a) for a in argv]

    # --- set-up and clean-up --------------------------------------------------------------------

    def __enter__(self):
        if os.geteuid() != 0:
            raise unittest.SkipTest("SKIPPED: ip netns refused by the kernel: not running as root")
        self._trap_sigterm()
        atexit.register(self.cleanup)
        try:
            remove_stale_namespaces()
            self._create()
        except SetupRefused as e:
            self.cleanup()
            raise unittest.SkipTest(f"SKIPPED: ip netns refused by the kernel: {e}") from None
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def _trap_sigterm(self):
        # ctest's timeout and a plain `kill` send SIGTERM: unwind so that __exit__ cleans up.
        def on_sigterm(signum, _frame):
            raise SystemExit(128 + signum)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self._old_sigterm = signal.signal(signal.SIGTERM, on_sigterm)

    def _add_namespace(self, name):
        _ip("netns", "add", name)
        self._created.append(name)

    def _create(self):
        self._add_namespace(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, name in enumerate(self.names):
            self._add_namespace(name)
            port = f"n{i}"
            _ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                "netns", name)
            _ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "addr", "add", f"{self.addresses[i]}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
        if self.docker_in is not None:
            name = self.names[self.docker_in]
            _ip("-n", name, "link", "add", "docker0", "type", "bridge")
            _ip("-n", name, "addr", "add", f"{DOCKER_ADDRESS}/16", "dev", "docker0")
            _ip("-n", name, "link", "set", "docker0", "up")
        if self.hosts:
            self._write_hosts()

    def _write_hosts(self):
        if not ETC_NETNS.exists():
            ETC_NETNS.mkdir()
            self._made_etc_netns = True
        lines = ["127.0.0.1\tlocalhost"]
        lines += [f"{self.addresses[node]}\t{host}" for host, node in self.hosts.items()]
        for name in self.names:
            (ETC_NETNS / name).mkdir()
            (ETC_NETNS / name / "hosts").write_text("\n".join(lines) + "\n")

    def cleanup(self):
        """Removes everything this Lab created; safe to call more than once."""
        for name in reversed(self._created):
            _delete_namespace(name)
        self._created = []
        for name in self.names:
            shutil.rmtree(ETC_NETNS / name, ignore_errors=True)
        if self._made_etc_netns:
            try:
                ETC_NETNS.rmdir()
            except OSError:
                pass
            self._made_etc_netns = False
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None
        atexit.unregister(self.cleanup)
