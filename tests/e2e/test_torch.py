"""A real PyTorch gloo all-reduce over 4 ranks started by the launcher (label: torch).

torch is a dependency of the test suite (scripts/test.sh installs python3-torch): when it
cannot be imported, these tests fail rather than skip.
"""
import subprocess

import harness
from harness import LaunchTestCase

RANKS = 4
SUM = RANKS * (RANKS + 1) // 2


class TorchAllReduceTest(LaunchTestCase):

    def setUp(self):
        super().setUp()
        probe = subprocess.run([harness.SYSTEM_PYTHON, "-c", "import torch.distributed"],
                               capture_output=True, text=True)
        self.assertEqual(probe.returncode, 0,
                         f"{harness.SYSTEM_PYTHON} cannot import torch (apt-get install "
                         f"python3-torch):\n{probe.stderr}")

    def check_allreduce(self, *script_args):
        args = ["--nproc_per_node", RANKS, harness.EXAMPLES / "torch_allreduce.py", *script_args]
        result = self.run_launch(args, env=self.env(PADDLE_LAUNCH_PYTHON=harness.SYSTEM_PYTHON))
        self.assertEqual(result.code, 0, result)
        self.assertIn(f"rank 0: allreduce sum = {SUM} (expected {SUM})",
                      result.stdout.splitlines())
        for rank in range(RANKS):
            log = (self.dir / "log" / f"workerlog.{rank}").read_text()
            self.assertIn(f"rank {rank}: allreduce sum = {SUM} (expected {SUM})",
                          log.splitlines(), f"workerlog.{rank}:\n{log}")

    def test_env_init_with_torch_variables(self):
        self.check_allreduce()

    def test_tcp_init_with_paddle_variables(self):
        self.check_allreduce("--init", "tcp")


if __name__ == "__main__":
    harness.main()
