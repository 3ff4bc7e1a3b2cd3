"""Issue #37: the forms and files of Paddle 3's launcher that users paste and grep for.

`run_check` runs against a stub `paddle` package written here (its plugins/test.py prints what
Paddle's prints); envlog.N, FLAGS_print_launcher_env and the proxy backups are compared with
Paddle 3's controller.py, container.py and args_envs.py.
"""
import stat

import harness
from harness import LaunchTestCase

STUB_TEST_PY = """\
import os
print(f"Prepare distributed training with {os.getenv('PADDLE_NNODES')} nodes "
      f"{os.getenv('PADDLE_LOCAL_SIZE')} cards")
print("Distributed training completed")
"""


class RunCheckTest(LaunchTestCase):
    """`launch run_check`: Paddle's own distributed check, and a barrier of at least two nodes."""

    def stub_paddle(self):
        plugins = self.dir / "site" / "paddle" / "distributed" / "launch" / "plugins"
        plugins.mkdir(parents=True)
        (self.dir / "site" / "paddle" / "__init__.py").write_text("raise SystemExit('imported')\n")
        (plugins / "test.py").write_text(STUB_TEST_PY)
        return self.env(PYTHONPATH=str(self.dir / "site"))

    def test_without_paddle_it_is_one_line_naming_the_interpreter(self):
        result = self.run_launch(["run_check"])
        self.assertEqual(result.code, 1, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         f"launch: error: run_check runs PaddlePaddle's own check, and "
                         f"{harness.SYSTEM_PYTHON} cannot import paddle (install paddlepaddle or "
                         "paddlepaddle-gpu there, or set PADDLE_LAUNCH_PYTHON to a Python that "
                         "has it)")
        self.assertNotIn("Run Pod", result.stderr)

    def test_two_nodes_meet_and_run_paddles_check(self):
        env = self.stub_paddle()
        port = harness.fixed_port_base()
        procs = [self.start_launch(["--master", f"127.0.0.1:{port}", "--log_dir", f"n{i}",
                                    "run_check"], env=env, name=f"n{i}") for i in (0, 1)]
        for proc in procs:
            result = self.finish(proc)
            self.assertEqual(result.code, 0, result)
            self.assertIn("Paddle Distributed Test begin...", result.stderr)
            # Paddle's rule: run_check makes --nnodes at least 2.
            self.assertIn("replicas 2[2:2]", result.stderr)
        for i in (0, 1):
            log = (self.dir / f"n{i}" / "workerlog.0").read_text()
            self.assertEqual(log.splitlines(), ["Prepare distributed training with 2 nodes 1 cards",
                                                "Distributed training completed"])


class Paddle3FilesTest(LaunchTestCase):
    """envlog.N, FLAGS_print_launcher_env and the proxy backups of today's interface."""

    def test_envlog_holds_each_process_environment_sorted_and_private(self):
        env = self.env(http_proxy="http://proxy:3128", ZZ_LAST="z")
        result = self.run_launch(["--nproc_per_node", 2, "--job_id", "j"] + self.rank_args(),
                                 env=env)
        self.assertEqual(result.code, 0, result)
        self.assertIn("http_proxy removed from the processes' environment (kept as "
                      "http_proxy_original)", result.stderr)
        for rank in (0, 1):
            path = self.dir / "log" / f"envlog.{rank}"
            self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
            lines = path.read_text().splitlines()
            self.assertEqual(lines, sorted(lines))
            self.assertIn(f"PADDLE_TRAINER_ID={rank}", lines)
            self.assertIn("ZZ_LAST=z", lines)
            self.assertIn("http_proxy_original=http://proxy:3128", lines)
            self.assertFalse(any(line.startswith("http_proxy=") for line in lines))
        recorded = self.recorded_envs(2)
        self.assertEqual(recorded[0]["http_proxy_original"], "http://proxy:3128")
        self.assertNotIn("http_proxy", recorded[0])
        # A second run appends, as Paddle's log mode 'a'; --log_overwrite True rewrites.
        self.run_launch(["--nproc_per_node", 2, "--job_id", "j"] + self.rank_args(), env=env)
        twice = (self.dir / "log" / "envlog.0").read_text().splitlines()
        self.assertEqual(twice.count("PADDLE_TRAINER_ID=0"), 2)
        self.run_launch(["--nproc_per_node", 2, "--job_id", "j", "--log_overwrite", "True"]
                        + self.rank_args(), env=env)
        once = (self.dir / "log" / "envlog.0").read_text().splitlines()
        self.assertEqual(once.count("PADDLE_TRAINER_ID=0"), 1)

    def test_the_legacy_interface_writes_no_envlog(self):
        result = self.run_launch(["--nproc_per_node", 1] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assertEqual(list((self.dir / "log").glob("envlog.*")), [])

    def test_print_launcher_env_adds_the_environment_to_container_failed(self):
        for value, shown in (("1", True), ("True", True), ("0", False)):
            env = self.env(FLAGS_print_launcher_env=value, MARKER_VAR="seen")
            result = self.run_launch(["--nproc_per_node", 2, "--job_id", "j"]
                                     + self.rank_args("--exit", "1:3"), env=env)
            self.assertEqual(result.code, 3, result)
            line = next(l for l in result.stderr.splitlines() if l.startswith("Container rank 1"))
            self.assertEqual(line.endswith(" "), shown, line)
            self.assertEqual("'MARKER_VAR': 'seen'" in result.stderr, shown, result.stderr)
            if shown:
                self.assertIn("'PADDLE_TRAINER_ID': '1'", result.stderr)


AP_SCRIPT = """\
import os, sys, time
stage = os.environ.get("PADDLE_AUTO_PARALLEL_STAGE")
print("stage", stage, os.environ["PADDLE_TRAINER_ID"], os.environ.get("PADDLE_GLOBAL_SIZE"),
      os.environ.get("PADDLE_LOCAL_SIZE"), os.environ.get("PADDLE_AUTO_PARALLEL_CONFIG"),
      flush=True)
if stage == "tuner":
    open("tuner.pid", "w").write(str(os.getpid()))
    time.sleep(float(os.environ.get("AP_SLEEP", "0")))
    sys.exit(int(os.environ.get("AP_FAIL", "0")))
"""


class AutoParallelConfigTest(LaunchTestCase):
    """--auto_parallel_config: Paddle 3's tuner stage (one process, tuner.log), then the ranks."""

    def run_stages(self, mode, **env):
        (self.dir / "ap.py").write_text(AP_SCRIPT)
        (self.dir / "ap.json").write_text('{"tuner_run_mode": "%s"}' % mode)
        return self.run_launch(["--nproc_per_node", 2, "--auto_parallel_config", "ap.json",
                                "ap.py"], env=self.env(**env))

    def test_tuner_and_run_runs_the_stage_once_then_the_ranks(self):
        result = self.run_stages("tuner_and_run")
        self.assertEqual(result.code, 0, result)
        self.assertEqual((self.dir / "log" / "tuner.log").read_text(),
                         "stage tuner 0 2 2 ap.json\n")
        self.assertEqual((self.dir / "log" / "workerlog.1").read_text(),
                         "stage run 1 2 2 ap.json\n")
        self.assertIn("auto-parallel tuner stage completed", result.stderr)
        self.assertEqual(result.stderr.count("Pod completed"), 1)  # The ranks' only.

    def test_tuner_only_starts_no_rank_and_run_only_no_stage(self):
        result = self.run_stages("tuner_only")
        self.assertEqual(result.code, 0, result)
        self.assertTrue((self.dir / "log" / "tuner.log").exists())
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())
        (self.dir / "log" / "tuner.log").unlink()
        result = self.run_stages("run_only")
        self.assertEqual(result.code, 0, result)
        self.assertFalse((self.dir / "log" / "tuner.log").exists())
        self.assertIn("stage run 0", (self.dir / "log" / "workerlog.0").read_text())

    def test_a_failed_stage_is_reported_and_starts_no_rank(self):
        result = self.run_stages("tuner_and_run", AP_FAIL="5")
        self.assertEqual(result.code, 5, result)
        self.assertIn("auto-parallel tuner stage failed with exit code 5 (see log/tuner.log); the "
                      "ranks are not started", result.stderr)
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())

    def test_sigterm_during_the_stage_stops_it(self):
        (self.dir / "ap.py").write_text(AP_SCRIPT)
        (self.dir / "ap.json").write_text("{}")
        proc = self.start_launch(["--auto_parallel_config", "ap.json", "ap.py"],
                                 env=self.env(AP_SLEEP="120"))
        self.wait_until(lambda: (self.dir / "tuner.pid").exists(), "the tuner stage to start")
        pid = int((self.dir / "tuner.pid").read_text())
        proc.send_signal(15)
        result = self.finish(proc, timeout=30)
        self.assertEqual(result.code, 143, result)
        self.assert_all_gone([pid])

    def test_a_bad_file_is_a_usage_error(self):
        (self.dir / "bad.json").write_text('{"tuner_run_mode": "sometimes"}')
        result = self.run_launch(["--auto_parallel_config", "bad.json"] + self.rank_args())
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.splitlines(), [
            "launch: error: --auto_parallel_config bad.json: tuner_run_mode \"sometimes\" is not "
            "tuner_and_run, tuner_only or run_only"])


class EntryPointTest(LaunchTestCase):
    """`launch -m module` and `.pyxes` scripts, as Paddle 3's controller runs its entrypoint."""

    def test_a_module_runs_as_python_dash_m(self):
        (self.dir / "pkg").mkdir()
        (self.dir / "pkg" / "__init__.py").write_text("")
        (self.dir / "pkg" / "train.py").write_text(
            "import os, sys\nprint('module', os.environ['PADDLE_TRAINER_ID'], sys.argv[1:])\n")
        result = self.run_launch(["--nproc_per_node", 2, "-m", "pkg.train", "--lr", "1"])
        self.assertEqual(result.code, 0, result)
        self.assertIn("module 0 ['--lr', '1']", result.stdout)
        self.assertEqual((self.dir / "log" / "workerlog.1").read_text(),
                         "module 1 ['--lr', '1']\n")

    def test_a_pyxes_script_runs_under_python_without_dash_u(self):
        script = self.dir / "train.pyxes"
        script.write_text("argv = open('/proc/self/cmdline').read().split(chr(0))\n"
                          "print('buffered' if '-u' not in argv else 'unbuffered')\n")
        result = self.run_launch([script])
        self.assertEqual(result.code, 0, result)
        self.assertEqual((self.dir / "log" / "workerlog.0").read_text(), "buffered\n")

    def test_log_overwrite_takes_a_value_before_the_script(self):
        result = self.run_launch(["--log_overwrite", "True"] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assertIn("log_overwrite: True", result.stdout)
        self.assertEqual(len(self.recorded_envs(1)), 1)


if __name__ == "__main__":
    harness.main()
