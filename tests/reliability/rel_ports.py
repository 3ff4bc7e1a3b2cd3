"""Reliability R10 and R11: ports (docs/reliability.md)."""
import json
import subprocess
import time

import harness
from relcase import RelTestCase

JOBS = 32
NPROC = 2
# R11: a busy fixed port stops the launcher within this (target 0.1 s; measured 15-140 ms). A
# generous bound: under ASan on 2 busy cores the refusal (which scans /proc for the owner) once
# took 1.02 s.
START_BOUND = 5.0


class PortRaceTest(RelTestCase):
    """R10: 32 single-node jobs start at once with default ports. Every rank binds its
    endpoint (rank 0 also MASTER_PORT) and holds it until all 64 ranks hold theirs: any
    EADDRINUSE fails a rank (exit 98), and all 96 ports must be distinct."""

    def test_thirty_two_concurrent_jobs_get_distinct_ports(self):
        go = self.dir / "go"
        procs = []
        started_at = time.monotonic()
        for job in range(JOBS):
            job_dir = self.dir / f"job{job}"
            (job_dir / "rec").mkdir(parents=True)
            args = ["--nproc_per_node", NPROC] + self.rel_args(
                "--bind", "--ready", "--hold", go, rec=job_dir / "rec")
            procs.append(self.start_launch(args, cwd=job_dir, name=f"job{job}"))
        self.wait_until(lambda: self.all_ready(procs), f"{JOBS * NPROC} ranks bound", 120)
        all_bound = time.monotonic() - started_at
        go.touch()
        results = [self.finish(proc) for proc in procs]
        self.assertEqual([j for j, r in enumerate(results) if r.code != 0], [],
                         "\n".join(repr(r) for r in results if r.code != 0))
        ports = []
        for job in range(JOBS):
            envs = [self.env_of(job, rank) for rank in range(NPROC)]
            ports += [int(env["PADDLE_CURRENT_ENDPOINT"].rpartition(":")[2]) for env in envs]
            ports.append(int(envs[0]["MASTER_PORT"]))
            for rank in range(NPROC):
                log = self.dir / f"job{job}" / "log" / f"workerlog.{rank}"
                self.assertEqual(log.read_text(), "", f"job {job} rank {rank}")
        self.assertEqual(len(ports), JOBS * (NPROC + 1))
        self.assertEqual(len(set(ports)), len(ports), sorted(ports))
        self.measure("R10", f"{JOBS} jobs x {NPROC} ranks started and bound", all_bound * 1000,
                     "ms", "0 EADDRINUSE, all ports distinct")

    def all_ready(self, procs):
        for proc in procs:
            if proc.poll() is not None:
                self.fail(f"a launcher exited early:\n{self._result(proc, proc.returncode)!r}")
        return len(list(self.dir.glob("job*/rec/ready.*"))) >= JOBS * NPROC

    def env_of(self, job, rank):
        return json.loads((self.dir / f"job{job}" / "rec" / f"env.{rank}.json").read_text())


class BusyFixedPortTest(RelTestCase):
    """R11: a fixed port held by another process stops the launcher before any rank starts,
    fast, naming the port and the owner's pid."""

    def hold(self, port):
        code = ("import socket,sys,time; s=socket.socket(); "
                f"s.bind(('127.0.0.1', {port})); s.listen(); print('ready', flush=True); "
                "time.sleep(120)")
        holder = subprocess.Popen([harness.SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE,
                                  text=True)
        self.addCleanup(holder.stdout.close)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)
        self.assertEqual(holder.stdout.readline().strip(), "ready")
        return holder

    def check_refused(self, busy_offset):
        base = harness.fixed_port_base()
        holder = self.hold(base + busy_offset)
        result, seconds = self.run_timed(["--nproc_per_node", 2, "--start_port", base]
                                         + self.rel_args("--ready"))
        self.assertEqual(result.code, 1, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         f"launch: error: port {base + busy_offset} is already in use "
                         f"(by pid {holder.pid}, python3)")
        self.assertEqual(list(self.rec.iterdir()), [])
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())
        self.measure("R11", f"refusal with port start+{busy_offset} busy",
                     seconds * 1000, "ms", f"< {START_BOUND * 1000:.0f} ms")
        self.assertLess(seconds, START_BOUND)

    def test_busy_trainer_port(self):
        self.check_refused(1)

    def test_busy_master_port(self):
        self.check_refused(2)  # MASTER_PORT = start + 2 with two trainers


if __name__ == "__main__":
    harness.main()
