"""Issue #2: every rank starts with the right environment, command line and endpoints."""
import os
import resource
import stat
import subprocess

import harness
from harness import LaunchTestCase

HOST = "127.0.0.1"


def ephemeral_range():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = f.read().split()
    return int(low), int(high)


class WorldEnvTest(LaunchTestCase):
    """N CPU ranks on one node: ranks 0..N-1, one shared endpoint list, torch's names too."""

    def check_world(self, n):
        result = self.run_launch(["--nproc_per_node", n] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(n)
        endpoints = envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
        self.assertEqual(len(endpoints), n)
        self.assertEqual(len(set(endpoints)), n, f"endpoints not distinct: {endpoints}")
        ports = [int(e.rpartition(":")[2]) for e in endpoints]
        for rank, env in enumerate(envs):
            with self.subTest(rank=rank):
                self.check_rank(env, rank, n, endpoints)
        self.assertEqual(len({env["MASTER_PORT"] for env in envs}), 1)
        self.assertNotIn(int(envs[0]["MASTER_PORT"]), ports)
        self.assertEqual(len({env["PADDLE_GLOO_FS_PATH"] for env in envs}), 1)
        self.assertEqual((self.dir / "log" / "endpoints.log").read_text(),
                         "PADDLE_TRAINER_ENDPOINTS: \n" + "\n".join(endpoints))
        for rank in range(n):
            self.assertTrue((self.dir / "log" / f"workerlog.{rank}").is_file())
        return envs

    def check_rank(self, env, rank, n, endpoints):
        expected = {
            "PADDLE_TRAINER_ID": str(rank),
            "PADDLE_CURRENT_ENDPOINT": endpoints[rank],
            "PADDLE_TRAINERS_NUM": str(n),
            "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
            "PADDLE_RANK_IN_NODE": str(rank),
            "PADDLE_LOCAL_DEVICE_IDS": "",
            "PADDLE_WORLD_DEVICE_IDS": "," * (n - 1),
            "PADDLE_WITH_GLOO": "0",
            "PADDLE_GLOO_RENDEZVOUS": "3",
            "PADDLE_DISTRI_BACKEND": "gloo",
            "PADDLE_GLOBAL_RANK": str(rank),
            "PADDLE_LOCAL_RANK": str(rank),
            "PADDLE_GLOBAL_SIZE": str(n),
            "PADDLE_LOCAL_SIZE": str(n),
            "PADDLE_NNODES": "1",
            "PADDLE_MASTER": f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}",
            "PADDLE_LOG_DIR": str(self.dir / "log"),
            "RANK": str(rank),
            "WORLD_SIZE": str(n),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(n),
            "MASTER_ADDR": HOST,
            "PYTHONUNBUFFERED": "1",
        }
        self.assertEqual({k: env.get(k) for k in expected}, expected)
        self.assertTrue(endpoints[rank].startswith(HOST + ":"), endpoints[rank])
        self.assertNotIn("FLAGS_selected_gpus", env)
        self.assertNotIn("FLAGS_selected_accelerators", env)
        self.assertTrue(env["PADDLE_GLOO_FS_PATH"], "PADDLE_GLOO_FS_PATH is empty")

    def test_two_ranks(self):
        self.check_world(2)

    def test_four_ranks(self):
        self.check_world(4)

    def test_eight_ranks(self):
        self.check_world(8)

    def test_default_is_one_cpu_rank(self):
        result = self.run_launch(self.rank_args())
        self.assertEqual(result.code, 0, result)
        env = self.recorded_envs(1)[0]
        self.assertEqual(env["PADDLE_TRAINERS_NUM"], "1")
        self.assertEqual(env["PADDLE_WORLD_DEVICE_IDS"], "")
        self.assertEqual((self.dir / "log" / "endpoints.log").read_text(),
                         "PADDLE_TRAINER_ENDPOINTS: \n" + env["PADDLE_CURRENT_ENDPOINT"])

    def test_free_ports_are_outside_the_ephemeral_range(self):
        envs = self.check_world(4)
        low, high = ephemeral_range()
        ports = [int(e.rpartition(":")[2]) for e in envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")]
        ports.append(int(envs[0]["MASTER_PORT"]))
        for port in ports:
            self.assertFalse(low <= port <= high, f"port {port} is in ephemeral {low}-{high}")

    def test_start_port_gives_consecutive_ports(self):
        port = harness.fixed_port_base()
        result = self.run_launch(["--nproc_per_node", 3, "--start_port", port] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(3)
        self.assertEqual(envs[0]["PADDLE_TRAINER_ENDPOINTS"],
                         f"{HOST}:{port},{HOST}:{port + 1},{HOST}:{port + 2}")

    def test_log_dir_flag_moves_the_logs(self):
        result = self.run_launch(["--nproc_per_node", 2, "--log_dir", "my logs"] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(2)
        self.assertEqual(envs[1]["PADDLE_LOG_DIR"], str(self.dir / "my logs"))
        self.assertEqual(sorted(p.name for p in (self.dir / "my logs").iterdir()),
                         ["endpoints.log", "workerlog.0", "workerlog.1"])
        self.assertFalse((self.dir / "log").exists())


class DeviceEnvTest(LaunchTestCase):
    """--gpus on a machine without GPUs: runs as asked, with a warning."""

    def test_gpus_flag_without_gpus_starts_one_rank_per_listed_gpu(self):
        result = self.run_launch(["--gpus", "0,1"] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assertTrue(harness.log_messages(result.stderr, "WARNING"),
                        f"no WARNING line on stderr:\n{result.stderr}")
        envs = self.recorded_envs(2)
        for rank, env in enumerate(envs):
            self.assertEqual(env["FLAGS_selected_gpus"], str(rank))
            self.assertEqual(env["FLAGS_selected_accelerators"], str(rank))
            self.assertEqual(env["PADDLE_LOCAL_DEVICE_IDS"], str(rank))
            self.assertEqual(env["PADDLE_WORLD_DEVICE_IDS"], "0,1")
            self.assertEqual(env["PADDLE_TRAINERS_NUM"], "2")

    def test_cuda_visible_devices_maps_gpus_to_logical_ids(self):
        env = self.env(CUDA_VISIBLE_DEVICES="4,5,6,7")
        result = self.run_launch(["--gpus", "5,7"] + self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(2)
        self.assertEqual([e["FLAGS_selected_gpus"] for e in envs], ["1", "3"])
        self.assertEqual([e["CUDA_VISIBLE_DEVICES"] for e in envs], ["4,5,6,7", "4,5,6,7"])


class CommandLineTest(LaunchTestCase):
    """How each rank's program is started and what it inherits."""

    def test_open_file_limit_does_not_cap_the_job_and_ranks_keep_theirs(self):
        # About four descriptors per rank: 120 ranks under a soft limit of 256 need the raise.
        def low_limit():
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        proc = subprocess.Popen([harness.BIN, "--nproc_per_node", "120", "/bin/sh", "-c",
                                 "ulimit -n"], cwd=self.dir, env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=low_limit)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
        for n in (0, 119):
            self.assertEqual((self.dir / "log" / f"workerlog.{n}").read_text(), "256\n")

    def test_script_arguments_pass_through_verbatim(self):
        extra = ["--nproc_per_node", "3", "--lr=0.1", "-x", "", "two words"]
        result = self.run_launch(self.rank_args(*extra))
        self.assertEqual(result.code, 0, result)
        env = self.recorded_envs(1)[0]
        self.assertEqual(env["argv"], [str(harness.RANK_PY), "--record", str(self.rec)] + extra)

    def test_python_script_runs_as_python3_u_from_path(self):
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        fake = bin_dir / "python3"
        fake.write_text('#!/bin/sh\nprintf "%s\\n" "$0" "$@" > "$FAKE_LOG.$PADDLE_TRAINER_ID"\n'
                        f'exec {harness.SYSTEM_PYTHON} "$@"\n')
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        env = self.env(PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_LOG=str(self.dir / "argv"))
        del env["PADDLE_LAUNCH_PYTHON"]
        result = self.run_launch(["--nproc_per_node", 2] + self.rank_args("--say", "hi"), env=env)
        self.assertEqual(result.code, 0, result)
        for rank in range(2):
            self.assertEqual((self.dir / f"argv.{rank}").read_text().splitlines(),
                             [str(fake), "-u", str(harness.RANK_PY), "--record", str(self.rec),
                              "--say", "hi"])

    def test_other_programs_run_directly(self):
        script = 'echo "rank $PADDLE_TRAINER_ID of $PADDLE_TRAINERS_NUM" > "out.$PADDLE_TRAINER_ID"'
        result = self.run_launch(["--nproc_per_node", 2, "/bin/sh", "-c", script])
        self.assertEqual(result.code, 0, result)
        self.assertEqual((self.dir / "out.0").read_text(), "rank 0 of 2\n")
        self.assertEqual((self.dir / "out.1").read_text(), "rank 1 of 2\n")

    def test_launcher_environment_is_inherited(self):
        env = self.env(PDLAUNCH_E2E_MARKER="kept value")
        result = self.run_launch(self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        rank_env = self.recorded_envs(1)[0]
        self.assertEqual(rank_env["PDLAUNCH_E2E_MARKER"], "kept value")

    def test_stdin_is_dev_null(self):
        result = self.run_launch(["/bin/sh", "-c", "readlink /proc/self/fd/0 > stdin.txt"])
        self.assertEqual(result.code, 0, result)
        self.assertEqual((self.dir / "stdin.txt").read_text(), "/dev/null\n")


if __name__ == "__main__":
    harness.main()
