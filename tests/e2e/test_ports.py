"""Issue #2: concurrent launchers on one host never hand out the same port."""

import harness
from harness import LaunchTestCase

JOBS = 16
HOLD = 3  # seconds each rank keeps its ports open, so that the jobs overlap


class ConcurrentLaunchTest(LaunchTestCase):
    """16 launchers of 2 ranks each start at once; every rank listens on its
    PADDLE_CURRENT_ENDPOINT and rank 0 also on MASTER_PORT: no EADDRINUSE anywhere."""

    def test_sixteen_concurrent_launchers_get_distinct_ports(self):
        procs = []
        for job in range(JOBS):
            job_dir = self.dir / f"job{job}"
            (job_dir / "rec").mkdir(parents=True)
            args = ["--nproc_per_node", 2, harness.RANK_PY, "--record", job_dir / "rec",
                    "--bind", "--sleep", HOLD]
            procs.append(self.start_launch(args, cwd=job_dir, name=f"job{job}"))
        results = [self.finish(proc) for proc in procs]
        failed = [job for job, r in enumerate(results) if r.code != 0]
        self.assertEqual(failed, [], "\n".join(self.describe(j, results[j]) for j in failed))
        for job in range(JOBS):
            for rank in range(2):
                self.assertEqual(self.worker_log(job, rank), "", f"job {job} rank {rank}")

    def worker_log(self, job, rank):
        path = self.dir / f"job{job}" / "log" / f"workerlog.{rank}"
        return path.read_text() if path.exists() else f"<no {path}>"

    def describe(self, job, result):
        return (f"job {job}: {result!r}\nworkerlog.0: {self.worker_log(job, 0)}"
                f"\nworkerlog.1: {self.worker_log(job, 1)}")


if __name__ == "__main__":
    harness.main()
