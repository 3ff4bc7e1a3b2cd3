"""--dry_run (issue #11, item 4): the plan of a real run as JSON on stdout; nothing started,
no file written; the same errors as a real run."""
import json
import shutil

import harness
from harness import LaunchTestCase


class DryRunTest(LaunchTestCase):
    def dry_run(self, args, **kwargs):
        result = self.run_launch(["--dry_run"] + args, **kwargs)
        written = sorted(p.name for p in self.dir.iterdir()
                         if p.name not in ("rec", "launcher.stdout", "launcher.stderr"))
        self.assertEqual(written, [], "a dry run wrote a file")
        self.assertEqual(list(self.rec.iterdir()), [], "a dry run started a process")
        return result

    def test_one_node(self):
        result = self.dry_run(["--nproc_per_node", 2] + self.rank_args("--lr", "0.1"))
        self.assertEqual(result.code, 0, result)
        plan = json.loads(result.stdout)
        self.assertEqual((plan["dry_run"], plan["mode"], plan["launch_path"],
                          plan["device_mode"]), (True, "collective", "local", "cpu"))
        self.assertEqual(plan["command"][-5:],
                         [str(harness.RANK_PY), "--record", str(self.rec), "--lr", "0.1"])
        cluster = plan["cluster"]
        self.assertEqual((cluster["nodes"], cluster["node_rank"], cluster["world_size"]),
                         (1, 0, 2))
        endpoints = [t["endpoint"] for t in cluster["pods"][0]["trainers"]]
        self.assertEqual([p["env"]["PADDLE_TRAINER_ID"] for p in plan["processes"]], ["0", "1"])
        self.assertEqual([p["env"]["PADDLE_CURRENT_ENDPOINT"] for p in plan["processes"]],
                         endpoints)
        self.assertEqual(plan["processes"][1]["env"]["PADDLE_TRAINER_ENDPOINTS"],
                         ",".join(endpoints))

    def test_a_node_of_an_ips_job(self):
        result = self.dry_run(["--ips", "10.0.0.1,10.0.0.2", "--host", "10.0.0.2",
                               "--nproc_per_node", 2] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        plan = json.loads(result.stdout)
        self.assertEqual(plan["launch_path"], "ips")
        cluster = plan["cluster"]
        self.assertEqual((cluster["nodes"], cluster["node_rank"], cluster["world_size"],
                          cluster["master"]), (2, 1, 4, "10.0.0.1:6072"))
        self.assertEqual([(p["rank"], p["env"]["PADDLE_CURRENT_ENDPOINT"])
                          for p in plan["processes"]],
                         [(2, "10.0.0.2:6070"), (3, "10.0.0.2:6071")])

    def test_a_master_beside_a_multi_node_ips_is_where_the_nodes_meet(self):
        # Paddle 3's update_by_ips: an address of the list keeps its master.
        result = self.dry_run(["--ips", "10.0.0.1,10.0.0.2", "--host", "10.0.0.2",
                               "--master", "10.0.0.1:8090"] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        plan = json.loads(result.stdout)
        self.assertEqual(plan["launch_path"], "master")
        self.assertIn("the nodes of --ips meet at the master on node 0 (10.0.0.1), port 8090",
                      " ".join(plan["notes"]))
        # Nodes that do not meet (as Paddle 2's) do not use it, and are told so.
        result = self.dry_run(["--ips", "10.0.0.1,10.0.0.2", "--host", "10.0.0.2",
                               "--master", "10.0.0.1:8090", "--nodes_meet", "false"]
                              + self.rank_args())
        plan = json.loads(result.stdout)
        self.assertEqual(plan["launch_path"], "ips")
        self.assertEqual(plan["warnings"], [
            "--master 10.0.0.1:8090 is not used: --ips lists the nodes, and the job forms from "
            "that list without a master (give one of the two)"])

    def test_a_legacy_ips_job_says_where_its_nodes_meet(self):
        result = self.dry_run(["--ips", "10.0.0.1,10.0.0.2", "--host", "10.0.0.2"]
                              + self.rank_args())
        plan = json.loads(result.stdout)
        self.assertIn("the nodes of --ips meet at the master on node 0 (10.0.0.1), port found "
                      "by Paddle's handshake (6768-6778), before any rank starts", plan["notes"])

    def test_master_says_what_is_decided_later(self):
        result = self.dry_run(["--master", "127.0.0.1:1", "--nnodes", 2] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        plan = json.loads(result.stdout)
        self.assertIsNone(plan["cluster"])
        self.assertIsNone(plan["processes"])
        self.assertIn("decided at the rendezvous", " ".join(plan["notes"]))

    def test_a_ps_job_is_planned_as_the_real_run_starts_it(self):
        base = harness.fixed_port_base()
        # The workers wait for the server's record: the server is stopped once they are done.
        args = (["--server_num", 1, "--worker_num", 2, "--start_port", base]
                + self.rank_args("--await", self.rec / "env.-1.json"))
        result = self.dry_run(args)
        self.assertEqual(result.code, 0, result)
        plan = json.loads(result.stdout)
        self.assertEqual((plan["mode"], plan["cluster"]), ("ps", None))
        ps = plan["ps"]
        self.assertEqual((ps["servers"], ps["workers"], ps["gloo_http"]),
                         ([f"127.0.0.1:{base}"], [f"127.0.0.1:{base + 1}", f"127.0.0.1:{base + 2}"],
                          f"127.0.0.1:{base + 3}"))
        self.assertEqual([(p["role"], p["rank"], p["log"]) for p in plan["processes"]],
                         [("server", 0, "serverlog.0"), ("worker", 0, "workerlog.0"),
                          ("worker", 1, "workerlog.1")])
        # The real run: each process gets every variable the plan shows (the gloo directory is
        # made by the run), and the log files are the plan's. rank.py records by
        # PADDLE_TRAINER_ID: the server, which has none, as -1.
        real = self.run_launch(args)
        self.assertEqual(real.code, 0, real)
        envs = [json.loads((self.rec / f"env.{rank}.json").read_text()) for rank in (-1, 0, 1)]
        for process, env in zip(plan["processes"], envs):
            for name, value in process["env"].items():
                if name != "PADDLE_GLOO_FS_PATH":
                    self.assertEqual(env.get(name), value, name)
        self.assertEqual(sorted(p.name for p in (self.dir / "log").iterdir()
                                if p.name.endswith(("log.0", "log.1"))),
                         ["serverlog.0", "workerlog.0", "workerlog.1"])

    def test_warnings_and_notes_are_the_real_runs(self):
        # Issue #29 item 4: the same code says them, in the same words.
        for args in (["--gpus", "0", "--nproc_per_node", 1], ["--echo", "5", "--nproc_per_node", 2],
                     ["--backend", "gloo", "--gpus", "0"], ["--max_restart", 3],
                     ["--log_level", "INFO", "--gpus", "0", "--echo", "3"]):
            with self.subTest(args=args):
                shutil.rmtree(self.dir / "log", ignore_errors=True)
                plan = json.loads(self.dry_run(args + self.rank_args()).stdout)
                self.assertNotEqual(plan["warnings"], [])
                real = self.run_launch(args + self.rank_args())
                self.assertEqual(real.code, 0, real)
                self.assertEqual(harness.log_messages(real.stderr, "WARNING"), plan["warnings"])
                for note in plan["notes"]:
                    self.assertIn(note, harness.log_messages(real.stderr, "INFO"))
                for path in self.rec.iterdir():
                    path.unlink()

    def test_a_ps_processs_local_rank_is_the_reports(self):
        # Issue #29 item 4: the report said 1 and 2 for the workers, the dry run 0 and 1; both
        # now say the index among this node's processes of the role (docs/report.md).
        base = harness.fixed_port_base()
        args = (["--server_num", 1, "--worker_num", 2, "--start_port", base]
                + self.rank_args("--await", self.rec / "env.-1.json"))
        plan = json.loads(self.dry_run(args).stdout)
        real = self.run_launch(["--report", self.dir / "report.json"] + args)
        self.assertEqual(real.code, 0, real)
        report = json.loads((self.dir / "report.json").read_text())
        self.assertEqual([(p["role"], p["rank"], p["local_rank"]) for p in report["processes"]],
                         [(p["role"], p["rank"], p["local_rank"]) for p in plan["processes"]])
        self.assertEqual([p["local_rank"] for p in report["processes"]], [0, 0, 1])

    def test_errors_are_the_real_runs(self):
        for args, code, line in [
                (["missing.py"], 1, "launch: error: training script not found: 'missing.py'"),
                (["--gpus", "x", "missing.py"], 2, "launch: error: --gpus: 'x' is not a device id")]:
            real = self.run_launch(args)
            dry = self.dry_run(args)
            self.assertEqual((dry.code, dry.stderr.splitlines()[-1]), (code, line))
            self.assertEqual((real.code, real.stderr.splitlines()[-1]), (code, line))
            self.assertEqual(dry.stdout, "")


if __name__ == "__main__":
    harness.main()
