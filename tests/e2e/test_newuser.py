"""Issue #13: what a new user hit. Each test fails on the code before the fix."""
import re
import signal
import subprocess

import harness
from harness import LaunchTestCase

SAVE_ON_INT = """import os, signal, sys, time
rank = os.environ['PADDLE_TRAINER_ID']
def on_int(*_):
    time.sleep(1)  # a checkpoint that takes a second
    open(os.path.join(sys.argv[1], 'saved.' + rank), 'w').write('ok')
    sys.exit(0)
signal.signal(signal.SIGINT, on_int)
open(os.path.join(sys.argv[1], 'ready.' + rank), 'w').write('ok')
time.sleep(120)
"""

# A wrapper in the terminal's foreground group with the launcher: it relays SIGINT 0.1 s late.
RELAY_LATER = """import os, signal, subprocess, sys, time
child = subprocess.Popen(sys.argv[1:])
def relay(*_):
    time.sleep(0.1)
    child.send_signal(signal.SIGINT)
signal.signal(signal.SIGINT, relay)
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
"""


class NewUserTest(LaunchTestCase):
    def test_force_takes_a_bool_word_not_the_script(self):
        # Once ran /usr/bin/yes as the training program.
        result = self.run_launch(["--force", "yes"] + self.rank_args("--say", "hi"))
        self.assertEqual(result.code, 0, result)
        self.assertIn("rank 0: hi", result.stdout)
        self.assert_logged(result.stderr, "WARNING",
                           "--force has no effect here: it applies to elastic jobs "
                           "(--elastic_server, --job_id and --np, or --master etcd://host:port); "
                           "this job runs once and is not restarted (docs/elastic.md)")

    def test_elastic_level_outside_an_elastic_job_says_it_does_nothing(self):
        # Issue #42 item 6: as --max_restart does.
        result = self.run_launch(["--elastic_level", 1] + self.rank_args())
        self.assertEqual(result.code, 0, result)
        self.assert_logged(result.stderr, "WARNING",
                           "--elastic_level has no effect here: it applies to elastic jobs "
                           "(--elastic_server, --job_id and --np, or --master etcd://host:port); "
                           "this job runs once and is not restarted (docs/elastic.md)")

    def run_in_terminal(self, argv):
        """Runs `argv` as the foreground job of a terminal of its own, presses Ctrl-C once both
        ranks are ready and returns (exit code, terminal output)."""
        term = self.terminal(argv)
        self.wait_until(lambda: len(list(self.rec.glob("ready.*"))) == 2, "both ranks ready")
        term.press(b"\x03")  # the Ctrl-C key: SIGINT to the terminal's foreground group
        return term.wait(), term.output()

    def test_one_ctrl_c_under_timeout_is_one_request(self):
        # timeout(1) relays the SIGINT the launcher also got from the terminal. The two may
        # arrive as one pending signal or as two; either way it is one graceful stop.
        script = self.dir / "save.py"
        script.write_text(SAVE_ON_INT)
        code, text = self.run_in_terminal(["timeout", 3600, harness.BIN, "--nproc_per_node", 2,
                                           script, self.rec])
        self.assertEqual(code, 130, text)
        self.assertEqual(sorted(p.name for p in self.rec.glob("saved.*")), ["saved.0", "saved.1"],
                         text)
        self.assertNotIn("killing all processes now", text)

    def test_a_relayed_ctrl_c_is_the_same_request(self):
        # A wrapper that relays a moment later (as srun and mpirun do) makes the two deliveries
        # certain to be separate: the second is recognised, not taken as "kill now".
        script = self.dir / "save.py"
        script.write_text(SAVE_ON_INT)
        code, text = self.run_in_terminal([harness.SYSTEM_PYTHON, "-c", RELAY_LATER, harness.BIN,
                                           "--nproc_per_node", 2, script, self.rec])
        self.assertEqual(code, 130, text)
        self.assertEqual(sorted(p.name for p in self.rec.glob("saved.*")), ["saved.0", "saved.1"],
                         text)
        self.assertIn("received SIGINT again within 0.5 s: the same request", text)
        self.assertNotIn("killing all processes now", text)

    def test_usage_error_is_one_line_before_anything_else(self):
        # A missing script (exit 1) must not hide a bad --gpus (exit 2), and no dump comes first.
        result = self.run_launch(["--gpus", "x", "--log_dir", "newlog", "missing.py"])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stdout, "")
        self.assertEqual(result.stderr, "launch: error: --gpus: 'x' is not a device id\n")
        self.assertFalse((self.dir / "newlog").exists())

    def test_bare_launch_prints_the_usage_and_points_to_help(self):
        result = self.run_launch([])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.splitlines(), [
            "usage: launch [options] training_script [training_script_args ...]",
            "launch: error: the following arguments are required: training_script "
            "(see launch --help)"])

    def test_torchrun_spelling_gets_a_hint(self):
        result = self.run_launch(["--nproc-per-node", "2", "x.py"])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr, "launch: error: unrecognized arguments: --nproc-per-node "
                                        "(did you mean --nproc_per_node?)\n")

    def test_refused_launches_leave_no_empty_log_dir(self):
        cases = {
            "missing script": ["--log_dir", "l1", "missing.py"],
            "PS duplicate endpoint": ["--log_dir", "l2", "--servers", "127.0.0.1:6000",
                                      "--workers", "127.0.0.1:6000", harness.RANK_PY],
            "PS host not found": ["--log_dir", "l3", "--servers", "10.255.255.1:6000",
                                  "--workers", "10.255.255.2:6001", harness.RANK_PY],
        }
        for name, args in cases.items():
            result = self.run_launch(args)
            self.assertIn(result.code, (1, 2), f"{name}: {result!r}")
            self.assertFalse((self.dir / args[1]).exists(), f"{name} left {args[1]}/")

    def test_missing_shebang_interpreter_is_named(self):
        script = self.dir / "run.sh"
        script.write_text("#!/no/such/interpreter -x\necho hi\n")
        script.chmod(0o755)
        result = self.run_launch(["--log_dir", "l", script])
        self.assertEqual(result.code, 1, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         f"launch: error: cannot execute '{script}': its interpreter "
                         "'/no/such/interpreter' (the #! line) does not exist")
        self.assertFalse((self.dir / "l").exists())

    def test_the_exit_codes_doc_quotes_what_an_unrunnable_program_gives(self):
        # docs/exit-codes.md, "a trainer program that cannot be executed" (issue #29 item 10).
        no_bit = self.dir / "noexec.sh"
        no_bit.write_text("#!/bin/sh\necho hi\n")
        no_shebang = self.dir / "nosh.sh"
        no_shebang.write_text("echo hi\n")
        no_shebang.chmod(0o755)
        for script, line in ((no_bit, "training program is not executable: './noexec.sh'"),
                             (no_shebang, "cannot execute './nosh.sh': Exec format error")):
            with self.subTest(script=script.name):
                result = self.run_launch(["--log_dir", "l", f"./{script.name}"])
                self.assertEqual(result.code, 1, result)
                self.assertEqual(result.stderr.splitlines()[-1], f"launch: error: {line}")

    def test_start_port_past_65535_names_the_flag(self):
        result = self.run_launch(["--start_port", "65535", "--nproc_per_node", "2",
                                  harness.RANK_PY])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr, "launch: error: --start_port 65535: 2 processes and "
                                        "MASTER_PORT need ports 65535..65537, past 65535\n")
        # One process by default: its MASTER_PORT is past 65535 too (exit 1, unnamed, before).
        result = self.run_launch(["--start_port", "65535", harness.RANK_PY])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr, "launch: error: --start_port 65535: 1 process and "
                                        "MASTER_PORT need ports 65535..65536, past 65535\n")

    def test_a_device_listed_twice_is_warned_about(self):
        result = self.run_launch(["--gpus", "0,0"] + self.rank_args(),
                                 env=self.env(CUDA_VISIBLE_DEVICES="0,1"))
        self.assertEqual(result.code, 0, result)
        self.assert_logged(result.stderr, "WARNING",
                           "--gpus=0,0 lists device 0 more than once: its processes share that "
                           "device")

    def test_ctrl_c_ends_with_a_closing_line(self):
        proc = self.start_launch(["--nproc_per_node", 2]
                                 + self.rank_args("--ready", self.rec, "--sleep", 60))
        self.wait_ready(2, proc)
        proc.send_signal(signal.SIGINT)
        result = self.finish(proc)
        self.assertEqual(result.code, 130, result)
        self.assertRegex(result.stderr.splitlines()[-1],
                         r"^WARNING .* stopped by SIGINT: all 2 processes ended; exit code 130$")

    def test_first_ctrl_c_after_a_failure_does_not_say_again(self):
        proc = self.start_launch(["--nproc_per_node", 2, "--grace", 30]
                                 + self.rank_args("--ignore", "TERM", "--exit", "1:3",
                                                  "--delay", 1, "--sleep", 60))
        self.wait_until(lambda: "ABORT!!!" in (self.dir / "launcher.stderr").read_text(),
                        "the ABORT line")
        proc.send_signal(signal.SIGINT)
        result = self.finish(proc)
        self.assertEqual(result.code, 3, result)
        self.assertIn("received SIGINT while stopping, killing all processes now", result.stderr)
        self.assertNotIn("received SIGINT again", result.stderr)


class HelpTruthTest(LaunchTestCase):
    """--help and docs/cli.md list every flag the parser knows."""

    def test_every_flag_is_in_help_and_in_cli_md(self):
        help_text = subprocess.run([harness.BIN, "--help"], capture_output=True, text=True,
                                   check=True).stdout
        usage = help_text[:help_text.index("\n\n")]
        flags = sorted(set(re.findall(r"\[(--[a-z_]+)", usage)))
        self.assertGreater(len(flags), 40, usage)
        body = help_text[len(usage):]
        cli_md = (harness.REPO / "docs" / "cli.md").read_text()
        missing_help = [f for f in flags if f"  {f}" not in body]
        missing_doc = [f for f in flags if f"`{f}" not in cli_md]
        self.assertEqual(missing_help, [], "flags missing from --help")
        self.assertEqual(missing_doc, [], "flags missing from docs/cli.md")
        self.assertNotIn("1.6", help_text)
        for word in ("Specifize", "perfers"):
            self.assertNotIn(word, help_text)


if __name__ == "__main__":
    harness.main()
