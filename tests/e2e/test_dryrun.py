"""--dry_run (issue #11, item 4): the plan of a real run as JSON on stdout; nothing started,
no file written; the same errors as a real run."""
import json

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

    def test_master_and_ps_say_what_is_decided_later(self):
        for args, needle in [
                (["--master", "127.0.0.1:1", "--nnodes", 2], "decided at the rendezvous"),
                (["--server_num", 1, "--worker_num", 1], "parameter-server")]:
            result = self.dry_run(args + self.rank_args())
            self.assertEqual(result.code, 0, result)
            plan = json.loads(result.stdout)
            self.assertIsNone(plan["cluster"])
            self.assertIn(needle, " ".join(plan["notes"]))

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
