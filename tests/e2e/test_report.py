"""--report FILE (issue #11, item 3): one JSON file when the launcher exits, whatever the
outcome, valid against docs/report.schema.json (python3-jsonschema)."""
import json
import os
import signal
import stat
import threading

import jsonschema

import harness
from harness import LaunchTestCase
from test_multinode import NetnsTestCase

SCHEMA = json.loads((harness.REPO / "docs" / "report.schema.json").read_text())


class ReportCase:
    def read_report(self, path):
        report = json.loads(path.read_text())
        jsonschema.validate(report, SCHEMA, cls=jsonschema.Draft202012Validator)
        leftovers = [p.name for p in path.parent.iterdir() if ".tmp." in p.name]
        self.assertEqual(leftovers, [], "a temporary file of the atomic write is left")
        return report


class ReportTest(ReportCase, LaunchTestCase):
    def test_success(self):
        result = self.run_launch(["--report", "run.json", "--nproc_per_node", 2]
                                 + self.rank_args())
        self.assertEqual(result.code, 0, result)
        report = self.read_report(self.dir / "run.json")
        self.assertEqual((report["exit_code"], report["reason"], report["signal"]),
                         (0, "success", None))
        self.assertEqual((report["mode"], report["launch_path"], report["node_rank"],
                          report["nodes"]), ("collective", "local", 0, 1))
        self.assertEqual(report["command_line"][0], harness.BIN)
        self.assertIsNone(report["root_cause"])
        pids = self.recorded_pids("pid")
        self.assertEqual([(p["rank"], p["local_rank"], p["pid"], p["status"]["exit_code"])
                          for p in report["processes"]],
                         [(r, r, pids[r], 0) for r in range(2)])
        for p in report["processes"]:
            self.assertTrue(p["log_path"].endswith(f"log/workerlog.{p['rank']}"))
            self.assertRegex(p["endpoint"], r"^127\.0\.0\.1:\d+$")
        self.assertNotIn("run.json", [p.name for p in (self.dir / "log").iterdir()])

    # Issue #29 item 1: as root, --report /dev/stdout replaced the machine's /dev/stdout symlink
    # with a regular file (the atomic rename) and printed nothing.
    def test_dev_stdout_gets_the_report_and_stays_a_link(self):
        before = os.readlink("/dev/stdout")
        result = self.run_launch(["--report", "/dev/stdout", "/bin/true"])
        self.assertEqual(result.code, 0, result)
        self.assertEqual(os.readlink("/dev/stdout"), before)
        start = result.stdout.index("{\n  \"report_version\"")
        report = json.loads(result.stdout[start:])
        self.assertEqual(report["reason"], "success")

    def test_dash_is_stdout_and_a_symlink_is_written_through(self):
        result = self.run_launch(["--report", "-", "/bin/true"])
        self.assertEqual(result.code, 0, result)
        self.assertIn('"report_version"', result.stdout)
        self.assertFalse((self.dir / "-").exists())
        (self.dir / "link.json").symlink_to("real.json")
        result = self.run_launch(["--report", "link.json", "/bin/true"])
        self.assertEqual(result.code, 0, result)
        self.assertTrue((self.dir / "link.json").is_symlink())
        self.assertEqual(self.read_report(self.dir / "real.json")["reason"], "success")

    def test_a_fifo_is_written_straight(self):
        fifo = self.dir / "report.fifo"
        os.mkfifo(fifo)
        got = []
        reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
        reader.start()
        result = self.run_launch(["--report", fifo, "/bin/true"])
        reader.join(30)
        self.assertEqual(result.code, 0, result)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(json.loads(got[0])["reason"], "success")

    def test_rank_failure_names_the_root_cause(self):
        result = self.run_launch(["--report", "run.json", "--nproc_per_node", 3]
                                 + self.rank_args("--exit", "2:7", "--sleep", 30))
        self.assertEqual(result.code, 7, result)
        report = self.read_report(self.dir / "run.json")
        self.assertEqual((report["exit_code"], report["reason"]), (7, "process failure"))
        cause = report["root_cause"]
        self.assertEqual((cause["role"], cause["rank"], cause["status"]["exit_code"]),
                         ("trainer", 2, 7))
        self.assertEqual(cause["pid"], self.recorded_pids("pid")[2])
        others = [p["status"]["signal"] for p in report["processes"] if p["rank"] != 2]
        self.assertEqual(others, ["SIGTERM", "SIGTERM"])

    def test_interrupt(self):
        proc = self.start_launch(["--report", "run.json", "--nproc_per_node", 2]
                                 + self.rank_args("--ready", self.rec, "--sleep", 60))
        self.wait_ready(2, proc)
        proc.send_signal(signal.SIGINT)
        result = self.finish(proc)
        self.assertEqual(result.code, 130, result)
        report = self.read_report(self.dir / "run.json")
        self.assertEqual((report["exit_code"], report["reason"], report["signal"]),
                         (130, "signal SIGINT", "SIGINT"))

    def test_setup_error_is_reported_and_usage_error_is_not(self):
        result = self.run_launch(["--report", "setup.json", "missing.py"])
        self.assertEqual(result.code, 1, result)
        report = self.read_report(self.dir / "setup.json")
        self.assertEqual(report["exit_code"], 1)
        self.assertEqual(report["reason"], "training script not found: 'missing.py'")
        self.assertEqual(report["processes"], [])
        result = self.run_launch(["--report", "usage.json", "--gpus", "x", "missing.py"])
        self.assertEqual(result.code, 2, result)
        self.assertFalse((self.dir / "usage.json").exists())

    def test_a_report_that_cannot_be_written_is_refused_before_anything_starts(self):
        (self.dir / "afile").write_text("")
        for path, why in [("no/such/dir/run.json", "directory 'no/such/dir': No such file or directory"),
                          (".", "'.' is a directory"),
                          ("afile/run.json", "'afile' is not a directory")]:
            with self.subTest(path=path):
                result = self.run_launch(["--report", path, "--nproc_per_node", 1]
                                         + self.rank_args())
                self.assertEqual(result.code, 1, result)
                self.assertEqual(result.stderr.strip(),
                                 f"launch: error: cannot write --report file '{path}': {why}")
                self.assertEqual(result.stdout, "", "nothing, not even the dump")
                self.assertFalse((self.dir / "log").exists(), "no log directory made")
                self.assertEqual(self.recorded_pids("pid"), {}, "no rank started")

    def test_an_argument_that_is_not_utf8_is_recorded_byte_for_byte(self):
        # Issue #29 item 6: it reached the rank as it was but became U+FFFD in the report and
        # the dry run. Now it is \udcXX (Python's surrogateescape): os.fsencode gives it back.
        raw = b"caf\xe9-\xff"
        arg = os.fsdecode(raw)
        result = self.run_launch(["--report", self.dir / "r.json"] + self.rank_args(arg))
        self.assertEqual(result.code, 0, result)
        self.assertIn("\\udce9", (self.dir / "r.json").read_text())
        report = self.read_report(self.dir / "r.json")
        self.assertEqual(os.fsencode(report["command_line"][-1]), raw)
        env = json.loads((self.rec / "env.0.json").read_text())
        self.assertEqual(os.fsencode(env["argv"][-1]), raw)  # What the rank got.
        dry = self.run_launch(["--dry_run"] + self.rank_args(arg))
        self.assertEqual(os.fsencode(json.loads(dry.stdout)["command"][-1]), raw)

    def test_environment_twin(self):
        result = self.run_launch(["--nproc_per_node", 1] + self.rank_args(),
                                 env=self.env(PADDLE_REPORT=str(self.dir / "env.json")))
        self.assertEqual(result.code, 0, result)
        self.assertEqual(self.read_report(self.dir / "env.json")["reason"], "success")


class ReportMultiNodeTest(ReportCase, NetnsTestCase):
    DOCKER_IN = None

    def test_each_node_reports_its_rank_and_the_node_count(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--report", "run.json", "--nproc_per_node", 2] + self.rank_args()
        self.assert_ok(self.run_nodes([args, args]))
        for node in (0, 1):
            report = self.read_report(self.dir / f"node{node}" / "run.json")
            self.assertEqual((report["launch_path"], report["node_rank"], report["nodes"]),
                             ("ips", node, 2))
            self.assertEqual([p["rank"] for p in report["processes"]], [2 * node, 2 * node + 1])
            self.assertEqual([p["endpoint"] for p in report["processes"]],
                             [f"{self.ip(node)}:{6070 + i}" for i in range(2)])


if __name__ == "__main__":
    harness.main()
