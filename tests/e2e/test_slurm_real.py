"""Issue #10: `launch` under a real Slurm (labels slurm, netns, torch): Debian's munged,
slurmctld and two slurmd, each slurmd in a network namespace of its own with its own address
and host name (tests/e2e/slurm_cluster.py). srun runs on the controller's node and starts one
launcher per compute node; nothing tells the launchers about each other but Slurm.

Each launcher writes its own stderr to a file (srun's relay of a cancelled step may end before
the launcher's last line) and logs into log.<node>: both nodes share this directory, as nodes
on a shared file system do (docs/slurm.md)."""
import os
import shlex
import signal
import subprocess

import harness
from harness import LaunchTestCase
from netns import Lab
from slurm_cluster import SlurmCluster

HOSTS = {"ctl": 0, "snode1": 1, "snode2": 2}
COMPUTES = {"snode1": 1, "snode2": 2}


class RealSlurmTest(LaunchTestCase):
    @classmethod
    def setUpClass(cls):
        cls.lab = Lab(3, hosts=HOSTS)
        cls.lab.__enter__()  # raises SkipTest("SKIPPED: ip netns refused ...") when refused
        try:
            cls.slurm = SlurmCluster(cls.lab, harness.WORKDIR / cls.__name__ / "cluster",
                                     controller=0, computes=COMPUTES)
            cls.slurm.__enter__()  # raises SkipTest("SKIPPED: real Slurm did not start: ...")
        except BaseException:
            cls.lab.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.slurm.stop()
        cls.lab.cleanup()

    def setUp(self):
        super().setUp()
        self.job_name = f"pdl-{self._testMethodName[-20:]}"

    def start_srun(self, launch_args, env=None, srun_args=("-N2", "--ntasks-per-node=1")):
        """srun ... sh -c 'exec launch --log_dir log.$SLURMD_NODENAME ARGS 2>launcher.$NODE.err'
        on the controller's node, in self.dir; srun's own output goes to self.dir/srun.out."""
        launch = " ".join(shlex.quote(str(a)) for a in launch_args)
        shell = (f'N=$SLURMD_NODENAME; exec {shlex.quote(harness.BIN)} --log_dir "log.$N" '
                 f'{launch} 2>"launcher.$N.err"')
        env = self.slurm.env(env or self.env())
        with open(self.dir / "srun.out", "wb") as out:
            proc = subprocess.Popen(
                self.slurm.srun([*srun_args, f"--job-name={self.job_name}", "/bin/sh", "-c",
                                 shell]),
                cwd=self.dir, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(lambda: proc.poll() is None and os.killpg(proc.pid, signal.SIGKILL))
        return proc

    def finish_srun(self, proc, timeout=harness.RUN_TIMEOUT):
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.slurm.client(["scancel", f"--name={self.job_name}"], self.env())
            self.fail(f"srun did not end within {timeout} s:\n{self.srun_output()}")
        return proc.returncode

    def srun_output(self):
        text = (self.dir / "srun.out").read_text(errors="replace")
        for node in COMPUTES:
            path = self.dir / f"launcher.{node}.err"
            if path.exists():
                text += f"\n--- launcher on {node} ---\n{path.read_text(errors='replace')}"
        return text + "\n" + self.slurm.logs()

    def launcher_err(self, node):
        return (self.dir / f"launcher.{node}.err").read_text(errors="replace")

    def job_id(self):
        proc = self.slurm.client(["squeue", "-h", f"--name={self.job_name}", "-o", "%i"],
                                 self.env())
        ids = proc.stdout.split()
        self.assertEqual(len(ids), 1, f"squeue: {proc.stdout!r} {proc.stderr!r}")
        return ids[0]

    def test_srun_two_nodes_forms_one_world_and_torch_sums_across_them(self):
        env = self.env(GLOO_SOCKET_IFNAME="eth0")
        proc = self.start_srun(["--nproc_per_node", 2, harness.EXAMPLES / "torch_allreduce.py",
                                "--timeout", 60], env=env)
        self.assertEqual(self.finish_srun(proc), 0, self.srun_output())
        for node_rank, (node, ns) in enumerate(COMPUTES.items()):
            address = self.lab.addresses[ns]
            self.assertIn(f"Slurm step of 2 nodes [snode1, snode2] (SLURM_STEP_NODELIST); this "
                          f"node is {node} ({address}), SLURM_NODEID {node_rank}",
                          self.launcher_err(node))
            for local in range(2):
                rank = node_rank * 2 + local
                log = (self.dir / f"log.{node}" / f"workerlog.{local}").read_text()
                self.assertIn(f"rank {rank}: allreduce sum = 10 (expected 10)", log.splitlines(),
                              f"{node} workerlog.{local}:\n{log}")

    def test_scancel_stops_every_rank_and_the_launchers_exit_143(self):
        proc = self.start_srun(["--nproc_per_node", 2, harness.RANK_PY, "--record", self.rec,
                                "--ready", self.rec, "--sleep", 600])
        self.wait_until(lambda: len(list(self.rec.glob("ready.*"))) == 4, "4 ranks ready",
                        timeout=120)
        pids = self.recorded_pids("pid")
        self.assertEqual(len(pids), 4)
        job = self.job_id()
        cancelled = self.slurm.client(["scancel", job], self.env())
        self.assertEqual(cancelled.returncode, 0, cancelled.stderr)
        self.finish_srun(proc)
        self.assert_all_gone(pids.values())
        for node in COMPUTES:
            self.assertRegex(self.launcher_err(node).splitlines()[-1],
                             r"stopped by SIGTERM: all 2 processes ended; exit code 143$",
                             self.srun_output())

    def test_scancel_signal_usr1_reaches_every_rank(self):
        proc = self.start_srun(["--nproc_per_node", 2, harness.RANK_PY, "--trap", self.rec,
                                "--ready", self.rec, "--sleep", 600])
        self.wait_until(lambda: len(list(self.rec.glob("ready.*"))) == 4, "4 ranks ready",
                        timeout=120)
        signalled = self.slurm.client(["scancel", "--signal=USR1", self.job_id()], self.env())
        self.assertEqual(signalled.returncode, 0, signalled.stderr)
        # Each rank writes got.SIGUSR1.<rank> and exits 0: the job completes.
        self.assertEqual(self.finish_srun(proc), 0, self.srun_output())
        self.assertEqual(sorted(p.name for p in self.rec.glob("got.*")),
                         [f"got.SIGUSR1.{r}" for r in range(4)])

    def test_kill_on_bad_exit_stops_the_other_node(self):
        # No cross-node fail-fast of our own under Slurm (docs/slurm.md): srun -K gives it.
        proc = self.start_srun(["--nproc_per_node", 2, harness.RANK_PY, "--record", self.rec,
                                "--ready", self.rec, "--exit", "3:7", "--delay", 1,
                                "--sleep", 600],
                               srun_args=("-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1"))
        # srun exits with the largest of its tasks' codes: 143 here, 7 on snode2.
        self.assertEqual(self.finish_srun(proc), 143, self.srun_output())
        self.assert_all_gone(self.recorded_pids("pid").values())
        self.assertIn("srun: error: snode2: task 1: Exited with exit code 7",
                      (self.dir / "srun.out").read_text())
        self.assertIn("ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was "
                      "aborted.", self.launcher_err("snode2"))
        self.assertRegex(self.launcher_err("snode1").splitlines()[-1],
                         r"stopped by SIGTERM: all 2 processes ended; exit code 143$",
                         self.srun_output())

    def test_several_tasks_per_node_are_refused_by_name(self):
        proc = self.start_srun(["--nproc_per_node", 1, harness.RANK_PY, "--record", self.rec],
                               srun_args=("-N2", "--ntasks-per-node=2"))
        self.assertNotEqual(self.finish_srun(proc), 0, self.srun_output())
        self.assertEqual(list(self.rec.glob("pid.*")), [])
        self.assertIn("--ntasks-per-node=1", self.srun_output())


if __name__ == "__main__":
    harness.main()
