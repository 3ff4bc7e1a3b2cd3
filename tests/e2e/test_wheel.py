"""The pip wheel (issue #41 items 2 and 3; docs/install.md, "The wheel"): built offline by
scripts/wheel.sh from the launcher under test, installed with pip --no-index into a fresh venv.
`pdlaunch` and `python -m pdlaunch` are the launcher itself (no Python process left between the
user and it); with PDLAUNCH_TAKEOVER=1, `python -m paddle.distributed.launch` and `python -m
paddle.distributed.fleet.launch` run it before any of Paddle is imported, here a stub `paddle`
whose launcher modules leave a marker and exit 3."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest
from pathlib import Path

import harness
from harness import LaunchTestCase

STUB_MAIN = 'import sys\nopen("paddle_ran", "w").write(" ".join(sys.argv))\nsys.exit(3)\n'


def setUpModule():
    global VENV, WHEEL, _TMP
    if os.environ.get("PDLAUNCH_SANITIZE"):
        raise unittest.SkipTest("SKIPPED: the wheel is tested with the plain build's launcher")
    _TMP = tempfile.mkdtemp(prefix="pdlaunch-wheel-")
    out = subprocess.run(["bash", str(harness.REPO / "scripts" / "wheel.sh"), "--bin", harness.BIN,
                          "--out", f"{_TMP}/dist"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/wheel.sh failed:\n{out.stdout}\n{out.stderr}")
    WHEEL = Path(out.stdout.strip().splitlines()[-1])
    VENV = Path(_TMP) / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "--no-index", str(WHEEL)],
                   check=True)
    site = Path(subprocess.run([str(VENV / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The stub: Paddle's two launcher modules, as a toolkit would run them.
    for module in ("paddle/distributed/launch/__main__.py", "paddle/distributed/fleet/launch.py"):
        path = site / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STUB_MAIN)
        for parent in path.relative_to(site).parents:
            if str(parent) != ".":
                (site / parent / "__init__.py").touch()


def tearDownModule():
    if "_TMP" in globals():
        shutil.rmtree(_TMP, ignore_errors=True)


class WheelTestCase(LaunchTestCase):
    def start(self, argv, env=None):
        """Starts `argv`: an installed entry of the wheel, then the launcher's arguments."""
        return self.start_launch(argv[1:], env=env, launcher=argv[:1])

    def run_argv(self, argv, env=None, timeout=120):
        return self.finish(self.start(argv, env), timeout)


class WheelTest(WheelTestCase):
    def test_the_wheel_says_what_it_needs(self):
        self.assertRegex(WHEEL.name, r"^pdlaunch-[0-9.]+-py3-none-manylinux_2_(\d+)_[a-z0-9_]+\.whl$")
        floor = int(re.search(r"manylinux_2_(\d+)_", WHEEL.name).group(1))
        self.assertLessEqual(floor, 34)
        self.assertLess(WHEEL.stat().st_size, 8 << 20)

    def test_pdlaunch_is_the_launcher_itself(self):
        # Not a Python script that forwards: the ELF binary.
        self.assertEqual((VENV / "bin" / "pdlaunch").read_bytes()[:4], b"\x7fELF")
        for argv in ([VENV / "bin" / "pdlaunch"], [VENV / "bin" / "python", "-m", "pdlaunch"]):
            result = self.run_argv([*argv, "--version"])
            self.assertEqual(result.code, 0, result)
            self.assertTrue(result.stdout.startswith("launch (pdlaunch) "), result)

    def test_a_two_rank_job_through_both_entries(self):
        for argv in ([VENV / "bin" / "pdlaunch"], [VENV / "bin" / "python", "-m", "pdlaunch"]):
            shutil.rmtree(self.rec, ignore_errors=True)
            self.rec.mkdir()
            result = self.run_argv([*argv, "--nproc_per_node", 2, *self.rank_args()])
            self.assertEqual(result.code, 0, result)
            envs = self.recorded_envs(2)
            self.assertEqual([e["PADDLE_TRAINER_ID"] for e in envs], ["0", "1"])

    def test_a_failing_rank_s_code_is_the_exit_code(self):
        result = self.run_argv([VENV / "bin" / "python", "-m", "pdlaunch", "--nproc_per_node", 2,
                                "/bin/sh", "-c", "exit 7"])
        self.assertEqual(result.code, 7, result)

    def test_sigint_reaches_the_launcher(self):
        proc = self.start([VENV / "bin" / "python", "-m", "pdlaunch", "--nproc_per_node", 1,
                           *self.rank_args("--ready", self.rec, "--sleep", 60)])
        self.wait_ready(1, proc)
        # The process started as `python -m pdlaunch` is the launcher now: same pid, its binary.
        self.assertEqual(os.path.realpath(f"/proc/{proc.pid}/exe"),
                         os.path.realpath(VENV / "bin" / "pdlaunch"))
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc, 60)
        self.assertEqual(result.code, 130, result)


class TakeoverTest(WheelTestCase):
    def paddle(self, module, *args, takeover="1"):
        env = self.env() if takeover is None else self.env(PDLAUNCH_TAKEOVER=takeover)
        return self.run_argv([VENV / "bin" / "python", "-m", module, *args], env=env)

    def test_with_the_variable_paddle_s_module_runs_pdlaunch(self):
        for module in ("paddle.distributed.launch", "paddle.distributed.fleet.launch"):
            shutil.rmtree(self.rec, ignore_errors=True)
            self.rec.mkdir()
            result = self.paddle(module, "--nproc_per_node", 2, *self.rank_args())
            self.assertEqual(result.code, 0, result)
            self.assertEqual(len(self.recorded_envs(2)), 2)
            self.assertFalse((self.dir / "paddle_ran").exists(), module)
        result = self.paddle("paddle.distributed.launch", "--version")
        self.assertTrue(result.stdout.startswith("launch (pdlaunch) "), result)

    def test_without_it_paddle_runs(self):
        for takeover in (None, "0"):
            result = self.paddle("paddle.distributed.launch", "--nproc_per_node", 2, "x.py",
                                 takeover=takeover)
            self.assertEqual(result.code, 3, result)
            self.assertIn("--nproc_per_node 2 x.py", (self.dir / "paddle_ran").read_text())
            (self.dir / "paddle_ran").unlink()

    def test_other_python_programs_are_untouched(self):
        env = self.env(PDLAUNCH_TAKEOVER="1")
        out = subprocess.run([str(VENV / "bin" / "python"), "-c", "print('plain')"], env=env,
                             capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout), (0, "plain\n"), out)

    def test_a_paddleformers_command_line(self):
        # paddleformers/cli/cli.py: [python, -m, paddle.distributed.launch, --devices ...,
        # --master $MASTER_ADDR:$MASTER_PORT, --nnodes $NNODES, ...]; Python options before -m.
        from etcd import PortReservation
        reservation = PortReservation(1)
        self.addCleanup(reservation.close)
        env = self.env(PDLAUNCH_TAKEOVER="1", CUDA_VISIBLE_DEVICES="0,1")
        result = self.run_argv([VENV / "bin" / "python", "-u", "-X", "utf8", "-m",
                                "paddle.distributed.launch", "--devices", "0,1", "--master",
                                f"127.0.0.1:{reservation.ports[0]}", "--nnodes", 1,
                                *self.rank_args()], env=env)
        self.assertEqual(result.code, 0, result)
        self.assertEqual([e["FLAGS_selected_gpus"] for e in self.recorded_envs(2)], ["0", "1"])
        self.assertFalse((self.dir / "paddle_ran").exists())


if __name__ == "__main__":
    unittest.main()
