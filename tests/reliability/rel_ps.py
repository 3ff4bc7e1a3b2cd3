"""Reliability R24: a parameter-server job on one host (docs/reliability.md), with
examples/ps_demo.py, a real parameter server over TCP."""
import json

import harness
from relcase import RelTestCase
from test_ps import (COMPLETED, PS_DEMO, SERVERS_KILLED, WORKERS_DONE, PsRecords,
                     expected_parameters, ps_abort_line)

CONCURRENT = 3


class PsReliabilityTest(PsRecords, RelTestCase):
    """R24: `--server_num 2 --worker_num 4`: distinct endpoints, also across concurrent jobs;
    servers run until every worker exited 0, then are stopped; a worker's or a server's
    failure stops everything with that process's code (the R8 rule)."""

    def demo(self, *extra, rec=None):
        return [PS_DEMO, "--record", rec or self.rec] + [str(e) for e in extra]

    def test_servers_are_stopped_only_after_every_worker_succeeded(self):
        result = self.run_launch(["--server_num", 2, "--worker_num", 4] + self.demo())
        self.assertEqual(result.code, 0, result)
        self.assertIn(expected_parameters(4), result.stdout.splitlines(), result)
        envs = self.role_envs("server", 2) + self.role_envs("worker", 4)
        ports = [env["PADDLE_PORT"] for env in envs]
        ports.append(envs[0]["PADDLE_GLOO_HTTP_ENDPOINT"].rpartition(":")[2])
        self.assertEqual(len(set(ports)), 7, ports)
        for index in (0, 1):
            log = (self.dir / "log" / f"serverlog.{index}").read_text()
            self.assertEqual(log.splitlines()[-1],
                             f"server {index}: SIGTERM, exiting after 20 pushes")
        self.assert_order(result.stderr, WORKERS_DONE, SERVERS_KILLED, COMPLETED)
        self.assert_all_gone(self.ps_pids())

    def test_concurrent_jobs_get_distinct_endpoints(self):
        procs = []
        for job in range(CONCURRENT):
            job_dir = self.dir / f"job{job}"
            (job_dir / "rec").mkdir(parents=True)
            args = ["--server_num", 2, "--worker_num", 2] + self.demo(rec=job_dir / "rec")
            procs.append(self.start_launch(args, cwd=job_dir, name=f"job{job}"))
        results = [self.finish(proc) for proc in procs]
        for job, result in enumerate(results):
            self.assertEqual(result.code, 0, result)
            self.assertIn(expected_parameters(2), result.stdout.splitlines(), result)
        pids = [json.loads(p.read_text())["pid"] for p in self.dir.glob("job*/rec/*.json")]
        self.assertEqual(len(pids), CONCURRENT * 4)
        self.assert_all_gone(pids)

    def test_failing_worker_stops_every_process_with_its_code(self):
        result = self.run_launch(["--server_num", 2, "--worker_num", 4]
                                 + self.demo("--fail-worker", 1))
        self.assertEqual(result.code, 3, result)
        self.assert_logged(result.stderr, "ERROR", ps_abort_line("worker", 4, 1))
        self.assertEqual(sorted(self.records("server")), [0, 1])
        self.assert_all_gone(self.ps_pids())

    def test_crashing_server_stops_every_process_with_its_code(self):
        result = self.run_launch(["--server_num", 2, "--worker_num", 4]
                                 + self.demo("--fail-server", 1))
        self.assertEqual(result.code, 5, result)
        self.assert_logged(result.stderr, "ERROR", ps_abort_line("server", 2, 1))
        self.assertTrue(self.records("worker"), "no worker recorded its pid")
        self.assert_all_gone(self.ps_pids())


if __name__ == "__main__":
    harness.main()
