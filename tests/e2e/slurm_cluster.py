"""A real Slurm cluster on one machine (label slurm): Debian's munged, slurmctld and one slurmd
per compute node, each node a network namespace of a netns.Lab with its own address and, through
`unshare --uts`, its own host name.

    lab = Lab(3, hosts={"ctl": 0, "snode1": 1, "snode2": 2})
    with SlurmCluster(lab, workdir, controller=0, computes={"snode1": 1, "snode2": 2}) as slurm:
        subprocess.run(slurm.srun(["-N2", "launch", ...]))      # srun inside the controller's node

Everything runs as root from files under `workdir` (slurm.conf, munge key and socket, state and
spool directories, every daemon's log); nothing of the machine's own Slurm or munge is read or
touched: the munge socket is ours (AuthInfo=socket=...; a file, so the other namespaces reach
it), and every daemon runs in a namespace, where its ports are, and where netns.Lab finds and
kills it should the test itself be SIGKILLed. A daemon that does not come up (missing package, a kernel that refuses) raises
unittest.SkipTest("SKIPPED: real Slurm did not start: ...") with the tail of its log, so the
gap is reported, never passed over. The daemons are stopped (SIGTERM, then SIGKILL) on exit.
"""
import os
import shutil
import signal
import subprocess
import time
import unittest
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
SRUN = "/usr/bin/srun"
START_TIMEOUT = 60  # seconds for munged, slurmctld and every slurmd to be up and the nodes idle


def _tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"({path}: {e})"


def _is_cgroup2(path):
    with open("/proc/self/mounts") as mounts:
        return any(line.split()[1:3] == [path, "cgroup2"] for line in mounts)


class SlurmCluster:
    """See the module docstring."""

    def __init__(self, lab, workdir, controller, computes, cpus=2):
        """lab: an entered netns.Lab whose /etc/hosts name every node; controller: the index of
        the node of slurmctld (and of srun); computes: {node name: node index} of the slurmds."""
        self.lab = lab
        self.dir = Path(workdir)
        self.controller = controller
        self.computes = computes
        self.cpus = cpus
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.procs = {}  # name -> Popen

    # --- use ------------------------------------------------------------------------------------

    def env(self, base):
        """`base` plus what Slurm's commands need to find this cluster."""
        env = dict(base)
        env["SLURM_CONF"] = str(self.conf)
        return env

    def command(self, argv):
        """`argv` (a Slurm client command) run inside the controller's node."""
        return self.lab.command(self.controller, argv)

    def srun(self, args):
        return self.command([SRUN] + [str(a) for a in args])

    def client(self, argv, base_env, timeout=30):
        """Runs a Slurm client command (squeue, scancel, sinfo) to completion."""
        return subprocess.run(self.command(argv), env=self.env(base_env), capture_output=True,
                              text=True, timeout=timeout)

    def logs(self):
        """The tail of every daemon's log, for a failure message."""
        parts = []
        for log in sorted(self.dir.glob("*.log")):
            parts.append(f"--- {log.name} ---\n{_tail(log)}")
        return "\n".join(parts)

    # --- set-up and clean-up --------------------------------------------------------------------

    def __enter__(self):
        missing = [p for p in (MUNGED, SLURMCTLD, SLURMD, SRUN) if not os.access(p, os.X_OK)]
        if missing:
            raise unittest.SkipTest(f"SKIPPED: real Slurm did not start: {', '.join(missing)} "
                                    "not installed (scripts/test.sh installs slurmctld, slurmd, "
                                    "slurm-client and munge)")
        try:
            self._write_files()
            self._start_munge()
            self._start_slurmctld()
            for name, node in self.computes.items():
                self._start_slurmd(name, node)
            self._wait_idle()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _write_files(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        for sub in ["munge", "state"] + [f"spool/{name}" for name in self.computes]:
            (self.dir / sub).mkdir(parents=True, mode=0o700)
        # slurmd loads a cgroup plugin even when nothing uses it (proctrack/linuxproc,
        # task/none): name the hierarchy this machine has; on a pure v2 one there is no systemd
        # to ask for a scope in a test, so it prepares its cgroups itself.
        if _is_cgroup2("/sys/fs/cgroup"):
            cgroup = "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n"
        else:
            cgroup = "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n"
        (self.dir / "cgroup.conf").write_text(cgroup)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ctl_name = next(h for h, n in self.lab.hosts.items() if n == self.controller)
        nodes = "\n".join(
            f"NodeName={name} NodeAddr={self.lab.addresses[node]} CPUs={self.cpus} "
            f"State=UNKNOWN" for name, node in self.computes.items())
        d = self.dir
        self.conf.write_text(f"""# Written by tests/e2e/slurm_cluster.py
ClusterName=pdlaunch
SlurmctldHost={ctl_name}({self.lab.addresses[self.controller]})
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
MinJobAge=10
{nodes}
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")

    def _spawn(self, name, argv, node=None):
        """Starts a daemon in the foreground (-D), in node `node`'s namespace when given."""
        if node is not None:
            argv = self.lab.command(node, argv)
        with open(self.dir / f"{name}.out", "wb") as out:
            self.procs[name] = subprocess.Popen(
                [str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=self.env(os.environ), start_new_session=True)

    def _refuse(self, what, log):
        raise unittest.SkipTest(f"SKIPPED: real Slurm did not start: {what}\n"
                                f"{_tail(log)}\n{self.logs()}")

    def _wait(self, name, predicate, what, log):
        deadline = time.monotonic() + START_TIMEOUT
        while not predicate():
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                self._refuse(f"{name} exited with {proc.returncode} before {what}", log)
            if time.monotonic() > deadline:
                self._refuse(f"{what} not within {START_TIMEOUT} s", log)
            time.sleep(0.1)

    def _start_munge(self):
        m = self.dir / "munge"
        self._spawn("munged", [MUNGED, "-F", "--force", f"--key-file={m}/munge.key",
                               f"--socket={self.munge_socket}", f"--pid-file={m}/munged.pid",
                               f"--log-file={self.dir}/munged.log", f"--seed-file={m}/seed"],
                    node=self.controller)  # in a namespace: a SIGKILLed test's next Lab kills it
        self._wait("munged", self.munge_socket.exists, "munged's socket exists",
                   self.dir / "munged.out")

    def _start_slurmctld(self):
        ctl_name = next(h for h, n in self.lab.hosts.items() if n == self.controller)
        self._spawn("slurmctld", self._named(ctl_name, [SLURMCTLD, "-D", "-i", "-f", self.conf]),
                    node=self.controller)
        self._wait("slurmctld", lambda: self._sinfo() is not None, "slurmctld answers",
                   self.dir / "slurmctld.log")

    def _start_slurmd(self, name, node):
        self._spawn(f"slurmd.{name}", self._named(name, [SLURMD, "-D", "-N", name, "-f",
                                                          self.conf]), node=node)

    @staticmethod
    def _named(host, argv):
        """`argv` in a UTS namespace of its own whose host name is `host`."""
        quoted = " ".join(f"'{a}'" for a in argv)
        return ["unshare", "--uts", "sh", "-c", f"hostname {host} && exec {quoted}"]

    def _sinfo(self):
        """{node: state} as slurmctld sees it, or None while it does not answer."""
        try:
            proc = subprocess.run(self.command(["sinfo", "-h", "-N", "-o", "%N %T"]),
                                  env=self.env(os.environ), capture_output=True, text=True,
                                  timeout=10)
        except subprocess.TimeoutExpired:
            return None
        if proc.returncode != 0:
            return None
        return dict(line.split() for line in proc.stdout.splitlines() if line.strip())

    def _wait_idle(self):
        def idle():
            states = self._sinfo() or {}
            return all(states.get(name, "").startswith("idle") for name in self.computes)
        self._wait("slurmctld", idle, f"nodes {', '.join(self.computes)} idle",
                   self.dir / "slurmctld.log")

    def stop(self):
        """Stops every daemon (SIGTERM, then SIGKILL after 10 s); safe to call more than once."""
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs = {}
