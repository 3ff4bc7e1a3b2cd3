"""Issue #27: every device family end to end, with fake probes on PATH.

The ranks' variables are compared key by key with what Paddle's launchers give:
- legacy (python/paddle/distributed/fleet/launch_utils.py, start_local_trainers): PADDLE_TRAINER_ID,
  PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_RANK_IN_NODE,
  PADDLE_LOCAL_DEVICE_IDS, PADDLE_WORLD_DEVICE_IDS, FLAGS_selected_xpus (XPU mode),
  FLAGS_selected_accelerators; get_global_envs: PADDLE_DISTRI_BACKEND=<backend> (auto -> bkcl
  on XPU, infer_backend);
- today's (python/paddle/distributed/launch/controllers/collective.py, _build_pod_with_master,
  and context/device.py get_selected_device_key L69-80, get_custom_device_envs L92-96):
  FLAGS_selected_<type>s, PADDLE_DISTRI_BACKEND=xccl, PADDLE_XCCL_BACKEND=<type>.
"""
import stat
import time
from pathlib import Path

from etcd import PortReservation
from harness import LaunchTestCase

NPU_SMI_INFO = """\
+---------------------------+---------------+----------------------------------------------------+
| npu-smi 23.0.rc2                 Version: 23.0.rc2                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.6        36                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 89.2        35                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3162 / 65536         |
+===========================+===============+====================================================+
"""

NVIDIA_SMI_L = """\
GPU 0: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)
GPU 1: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-555555555555)
"""

DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "XPU_VISIBLE_DEVICES", "XPULINK_VISIBLE_DEVICES",
                    "PADDLE_XCCL_BACKEND", "NPU_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


class DeviceFamilyTest(LaunchTestCase):

    def setUp(self):
        super().setUp()
        self.bin = self.dir / "fakebin"
        self.bin.mkdir()

    def fake(self, name, script):
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def device_env(self, **extra):
        env = self.env()
        for name in DEVICE_VARIABLES:
            env.pop(name, None)
        env["PATH"] = f"{self.bin}:{env['PATH']}"
        env.update(extra)
        return env

    def check_ranks(self, envs, expected):
        for rank, env in enumerate(envs):
            for key, value in expected(rank).items():
                with self.subTest(rank=rank, key=key):
                    if value is None:
                        self.assertNotIn(key, env)
                    else:
                        self.assertEqual(env.get(key), value)

    def test_xpus_legacy_flag_gives_paddles_xpu_variables(self):
        env = self.device_env(XPU_VISIBLE_DEVICES="4,5,6,7")
        result = self.run_launch(["--xpus", "5,7"] + self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        self.assertIn("Change selected_xpus into reletive values", result.stderr)
        self.check_ranks(self.recorded_envs(2), lambda rank: {
            "FLAGS_selected_xpus": ["1", "3"][rank],
            "FLAGS_selected_accelerators": ["1", "3"][rank],
            "PADDLE_LOCAL_DEVICE_IDS": ["1", "3"][rank],
            "PADDLE_WORLD_DEVICE_IDS": "1,3",
            "PADDLE_DISTRI_BACKEND": "bkcl",
            "XPU_VISIBLE_DEVICES": "4,5,6,7",
            "PADDLE_TRAINERS_NUM": "2",
            "FLAGS_selected_gpus": None,
            "PADDLE_XCCL_BACKEND": None,
        })

    def test_xpu_visible_devices_alone_picks_the_xpus(self):
        env = self.device_env(XPU_VISIBLE_DEVICES="0,1,2,3")
        result = self.run_launch(["--nproc_per_node", "2"] + self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        self.check_ranks(self.recorded_envs(2), lambda rank: {
            "FLAGS_selected_xpus": ["0,1", "2,3"][rank],
            "PADDLE_DISTRI_BACKEND": "bkcl",
        })

    def test_custom_device_through_the_master_gets_xccl_and_its_key(self):
        # Today's launcher path (--master): collective.py's variables, one process per label.
        env = self.device_env(PADDLE_XCCL_BACKEND="npu", NPU_VISIBLE_DEVICES="0,1,2,3")
        reservation = PortReservation(1)
        self.addCleanup(reservation.close)
        args = ["--devices", "2,3", "--master", f"127.0.0.1:{reservation.ports[0]}", "--nnodes", "1"]
        result = self.run_launch(args + self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        self.check_ranks(self.recorded_envs(2), lambda rank: {
            "FLAGS_selected_npus": ["2", "3"][rank],
            "PADDLE_DISTRI_BACKEND": "xccl",
            "PADDLE_XCCL_BACKEND": "npu",
            "NPU_VISIBLE_DEVICES": "0,1,2,3",
            "FLAGS_selected_gpus": None,
        })

    def test_npu_smi_on_path_counts_the_npus_when_no_variable_says(self):
        self.fake("npu-smi", f'[ "$1" = info ] || exit 3\ncat <<"EOF"\n{NPU_SMI_INFO}EOF\n')
        env = self.device_env(PADDLE_XCCL_BACKEND="npu")
        result = self.run_launch(self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        self.check_ranks(self.recorded_envs(2), lambda rank: {
            "FLAGS_selected_npus": str(rank),
            "PADDLE_XCCL_BACKEND": "npu",
            "PADDLE_DISTRI_BACKEND": "xccl",
        })

    def test_nvidia_smi_on_path_counts_the_gpus(self):
        self.fake("nvidia-smi", f'[ "$1" = -L ] || exit 3\ncat <<"EOF"\n{NVIDIA_SMI_L}EOF\n')
        result = self.run_launch(self.rank_args(), env=self.device_env())
        self.assertEqual(result.code, 0, result)
        self.check_ranks(self.recorded_envs(2), lambda rank: {
            "FLAGS_selected_gpus": str(rank),
            "PADDLE_DISTRI_BACKEND": "nccl",
        })

    def test_a_hung_probe_is_abandoned_at_its_deadline(self):
        self.fake("npu-smi", "exec sleep 987\n")
        env = self.device_env(PADDLE_XCCL_BACKEND="npu")
        start = time.monotonic()
        result = self.run_launch(self.rank_args(), env=env, timeout=60)
        self.assertEqual(result.code, 1, result)
        self.assertLess(time.monotonic() - start, 30)
        self.assertIn("PADDLE_XCCL_BACKEND=npu: no npu device found (NPU_VISIBLE_DEVICES is not set "
                      "and the probe found none); set NPU_VISIBLE_DEVICES or pass --devices",
                      result.stderr)
        self.assertEqual(list(self.rec.glob("env.*.json")), [])
        # The probe's process group was killed: no "sleep 987" is left.
        left = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if cmdline.read_bytes() == b"sleep\x00987\x00":
                    left.append(cmdline.parent.name)
            except OSError:
                pass
        self.assertEqual(left, [])

    def test_a_label_that_is_not_visible_is_a_usage_error(self):
        env = self.device_env(XPU_VISIBLE_DEVICES="0,1")
        result = self.run_launch(["--xpus", "3"] + self.rank_args(), env=env)
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.strip().splitlines()[-1],
                         "launch: error: Can't find your xpus 3 in XPU_VISIBLE_DEVICES[0,1].")
        self.assertEqual(list(self.rec.glob("env.*.json")), [])

    def test_gpus_and_xpus_together_are_a_usage_error(self):
        result = self.run_launch(["--gpus", "0", "--xpus", "0"] + self.rank_args(),
                                 env=self.device_env())
        self.assertEqual(result.code, 2, result)
        self.assertIn("--gpus and --xpus both list devices: give one of them", result.stderr)

    def test_dry_run_names_the_family(self):
        env = self.device_env(PADDLE_XCCL_BACKEND="mlu", MLU_VISIBLE_DEVICES="0,1")
        result = self.run_launch(["--dry_run"] + self.rank_args(), env=env)
        self.assertEqual(result.code, 0, result)
        self.assertIn('"FLAGS_selected_mlus"', result.stdout)
        self.assertIn('"PADDLE_XCCL_BACKEND"', result.stdout)


if __name__ == "__main__":
    import unittest
    unittest.main()
