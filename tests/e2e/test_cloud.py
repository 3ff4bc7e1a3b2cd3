"""Issue #3: PaddleCloud / Kubernetes variables (docs/multi-node.md), on loopback.

Paddle's own shell tests run against the binary with their exact variables and strings:
test_fleet_launch_cloud.sh and test_fleet_launch_async.sh (docs/design.md, "Paddle's own launcher
tests").
Only node 0 of the two-node cloud job is started, as in Paddle's tests: 127.0.0.2 never runs.

The cloud ports are fixed (35789, 6170, 6070, ...), and 35789 lies in the kernel's ephemeral
range, where any connect() of a concurrent test may take it. So when it can (as root), each
launcher runs in a private network namespace with only its own loopback (`unshare --net`).
"""
import re
import subprocess
import time

import harness
from harness import LaunchTestCase

MULTI_PROCESS_PY = harness.HELPERS / "multi_process.py"
ENDPOINTS_D = "127.0.0.1:35789,127.0.0.1:35790,127.0.0.2:35789,127.0.0.2:35790"
ENDPOINTS_C = "127.0.0.1:6170,127.0.0.1:6171,127.0.0.2:6170,127.0.0.2:6171"
SLEEPER_BOUND = 10  # seconds: rank 1 of test_fleet_launch_async.sh sleeps 30 s; gone long before


PRIVATE_LOOPBACK = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$0" "$@"']


def _private_loopback_works():
    try:
        return subprocess.run(PRIVATE_LOOPBACK + ["true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


PRIVATE = _private_loopback_works()


class CloudTest(LaunchTestCase):

    def start_launch(self, args, env=None, cwd=None, name="launcher"):
        """As LaunchTestCase.start_launch, inside a private network namespace when possible."""
        if not PRIVATE:
            return super().start_launch(args, env=env, cwd=cwd, name=name)
        args = [str(a) for a in args]
        with open(self.dir / f"{name}.stdout", "wb") as out, \
                open(self.dir / f"{name}.stderr", "wb") as err:
            proc = subprocess.Popen(PRIVATE_LOOPBACK + [harness.BIN] + args, cwd=cwd or self.dir,
                                    env=env or self.env(), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, start_new_session=True)
        proc.pdl_args, proc.pdl_name, proc.pdl_start = args, name, time.monotonic()
        self._started.append(proc)
        return proc

    def cloud_env(self, **extra):
        """The variables of test_fleet_launch_cloud.sh, plus CUDA_VISIBLE_DEVICES=0,1."""
        cloud = dict(PADDLE_TRAINERS_NUM="2", POD_IP="127.0.0.1",
                     PADDLE_TRAINERS="127.0.0.1,127.0.0.2", PADDLE_TRAINER_ID="0",
                     PADDLE_PORT="35789", TRAINER_PORTS_NUM="2", CUDA_VISIBLE_DEVICES="0,1")
        cloud.update(extra)
        return self.env(**cloud)

    def check_file(self, prefix, rank):
        return self.dir / f"multi_process_{prefix}.check_{rank}.log"

    def test_paddle_cloud_test_strings(self):
        args = ["--ips=127.0.0.1,127.0.0.2", "--gpus=0,1", "--log_dir=testlog", MULTI_PROCESS_PY,
                "fleetlaunchcloud"]
        result = self.run_launch(args, env=self.cloud_env())
        self.assertEqual(result.code, 0, result)
        self.assertEqual(
            self.check_file("fleetlaunchcloud", 0).read_text(),
            f"selected_gpus:0 worker_endpoints:{ENDPOINTS_D} trainers_num:4 "
            "current_endpoint:127.0.0.1:35789 trainer_id:0")
        self.assertEqual(
            self.check_file("fleetlaunchcloud", 1).read_text(),
            f"selected_gpus:1 worker_endpoints:{ENDPOINTS_D} trainers_num:4 "
            "current_endpoint:127.0.0.1:35790 trainer_id:1")
        self.assertEqual(harness.log_messages(result.stderr, "WARNING"),
                         ["Use Cloud specified port:35789."])
        self.assertIn("launch train in GPU mode!", result.stdout.splitlines())
        self.assertEqual((self.dir / "testlog" / "endpoints.log").read_text(),
                         "PADDLE_TRAINER_ENDPOINTS: \n" + ENDPOINTS_D.replace(",", "\n"))

    def test_paddle_abort_test_kills_the_sleeping_rank(self):
        env = self.cloud_env(DISTRIBUTED_TRAINER_ENDPOINTS=ENDPOINTS_C,
                             cluster_node_ips="127.0.0.1,127.0.0.2")
        del env["PADDLE_PORT"]
        args = ["--ips=127.0.0.1,127.0.0.2", "--gpus=0,1", "--log_dir=testlog", MULTI_PROCESS_PY,
                "fullpath_launch", "abort"]
        result = self.run_launch(args, env=env)
        self.assertEqual(result.code, 1, result)
        self.assertLess(result.elapsed, SLEEPER_BOUND, result)
        self.assertEqual(
            self.check_file("fullpath_launch", 0).read_text(),
            f"abort>>> selected_gpus:0 worker_endpoints:{ENDPOINTS_C} trainers_num:4 "
            "current_endpoint:127.0.0.1:6170 trainer_id:0")
        self.assertFalse(self.check_file("fullpath_launch", 1).exists())
        pids = re.findall(r"^launch proc_id:(\d+) idx:1$", result.stdout, re.MULTILINE)
        self.assertEqual(len(pids), 1, result)
        self.assert_all_gone([int(pids[0])], timeout=1)
        self.assert_logged(result.stderr, "ERROR", harness.abort_line(4, [0]))

    def test_other_ips_give_the_paddlecloud_note(self):
        args = ["--ips=10.0.0.1,10.0.0.2", "--gpus=0,1", MULTI_PROCESS_PY, "note"]
        result = self.run_launch(args, env=self.cloud_env())
        self.assertEqual(result.code, 0, result)
        self.assertEqual(harness.log_messages(result.stderr, "WARNING"), [
            "Please NOTE: When using paddlecloud, cluster_node_ips is automatically got from "
            "PADDLE_TRAINERS(multi nodes) or POD_IP(single node).Your input cluster_node_ips: "
            "10.0.0.1,10.0.0.2 doesn't equals to IPs: ['127.0.0.1', '127.0.0.2'] from "
            "paddlecloud environment.",
            "Use Cloud specified port:35789."])
        self.assertIn(f"worker_endpoints:{ENDPOINTS_D} ",
                      self.check_file("note", 0).read_text())

    def test_pod_ip_not_in_paddle_trainers_starts_nothing(self):
        args = ["--gpus=0,1", MULTI_PROCESS_PY, "never"]
        result = self.run_launch(args, env=self.cloud_env(POD_IP="10.0.0.9"))
        self.assertEqual(result.code, 1, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         "launch: error: POD_IP=10.0.0.9 is not in "
                         "PADDLE_TRAINERS=127.0.0.1,127.0.0.2")
        self.assertNotIn("launch proc_id:", result.stdout)
        self.assertEqual(list(self.dir.glob("multi_process_*")), [])

    def test_one_cloud_node_uses_the_arguments_with_fixed_ports(self):
        # PADDLE_TRAINERS_NUM unset (1): the cluster comes from --ips, but the ports are fixed
        # (6070, 6071, no free-port search), as in Paddle.
        env = self.cloud_env()
        del env["PADDLE_TRAINERS_NUM"]
        result = self.run_launch(["--nproc_per_node", 2, "--backend", "gloo"] + self.rank_args(),
                                 env=env)
        self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(2)
        for rank, rank_env in enumerate(envs):
            self.assertEqual(rank_env["PADDLE_TRAINER_ENDPOINTS"], "127.0.0.1:6070,127.0.0.1:6071")
            self.assertEqual(rank_env["PADDLE_CURRENT_ENDPOINT"], f"127.0.0.1:{6070 + rank}")
            self.assertEqual(rank_env["MASTER_PORT"], "6072")


if __name__ == "__main__":
    harness.main()
