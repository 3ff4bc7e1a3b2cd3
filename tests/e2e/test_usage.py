"""Issue #2: bad command lines are refused before anything starts; --help and --version."""
import json
import os
import socket

import harness
from harness import LaunchTestCase


class UsageErrorTest(LaunchTestCase):
    """Exit 2 and one line on stderr naming the bad token, nothing on stdout (not even the
    configuration dump); no rank started, no log written."""

    def check_usage_error(self, args, token, env=None):
        result = self.run_launch(args, env=env)
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stdout, "", result)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result)
        self.assertIn(token, lines[0], result)
        self.check_nothing_started()
        return lines[0]

    def check_nothing_started(self):
        self.assertEqual(list(self.rec.iterdir()), [])
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())

    def test_unknown_flag(self):
        self.check_usage_error(["--no_such_flag", "1"] + self.rank_args(), "--no_such_flag")

    def test_bad_gpus_token(self):
        self.check_usage_error(["--gpus", "0,zz"] + self.rank_args(), "zz")

    def test_bad_nproc_per_node_value(self):
        self.check_usage_error(["--nproc_per_node", "two"] + self.rank_args(), "two")

    def test_zero_nproc_per_node(self):
        self.check_usage_error(["--nproc_per_node", "0"] + self.rank_args(), "nproc_per_node")

    def test_missing_training_script(self):
        self.check_usage_error(["--nproc_per_node", "2"], "training_script")

    def test_ambiguous_prefix(self):
        line = self.check_usage_error(["--n", "2"] + self.rank_args(), "--n")
        self.assertIn("--nproc_per_node", line)
        self.assertIn("--np", line)

    def test_incomplete_elastic_flags(self):
        line = self.check_usage_error(["--elastic_server", "127.0.0.1:2379"] + self.rank_args(),
                                      "--job_id")
        self.assertIn("elastic mode needs --elastic_server, --job_id and --np", line)

    def test_mixing_collective_and_parameter_server_flags(self):
        line = self.check_usage_error(["--ips", "127.0.0.1", "--server_num", "1"]
                                      + self.rank_args(), "--server_num")
        self.assertIn("--ips", line)

    def test_bad_flags_start_port(self):
        env = self.env(FLAGS_START_PORT="abc")
        self.check_usage_error(self.rank_args(), "FLAGS_START_PORT", env=env)

    def test_a_count_out_of_range_from_a_variable_names_the_variable(self):
        # They named the flag the variable stands for until 2026-11-25.
        self.check_usage_error(self.rank_args(),
                               "PADDLE_NPROC_PER_NODE: '0' must be at least 1",
                               env=self.env(PADDLE_NPROC_PER_NODE="0"))
        self.check_usage_error(["--worker_num", "1"] + self.rank_args(),
                               "PADDLE_SERVER_NUM: '0' must be at least 1",
                               env=self.env(PADDLE_SERVER_NUM="0"))

    def test_bad_start_port_variable_in_every_mode(self):
        # A --master node of today's parameter-server form printed the configuration dump
        # before this error until 2026-11-25; the legacy PS forms were already right.
        # Refused before anything binds, so the --master port need not be free.
        for args in (["--master", "127.0.0.1:29599", "--nnodes", "1", "--server_num", "1",
                      "--trainer_num", "1"],
                     ["--server_num", "1", "--worker_num", "1"],
                     ["--servers", "127.0.0.1:29601", "--workers", "127.0.0.1:29602"]):
            with self.subTest(args=args):
                self.check_usage_error(args + self.rank_args(), "PADDLE_START_PORT",
                                       env=self.env(PADDLE_START_PORT="70000"))

    # Checks made while planning the cluster or the parameter-server job, past the parser: they
    # came after the configuration dump until 2026-11-25.
    def test_duplicate_ips(self):
        self.check_usage_error(["--ips", "127.0.0.1,127.0.0.1"] + self.rank_args(),
                               "'127.0.0.1' is listed twice")

    def test_zero_parameter_servers(self):
        self.check_usage_error(["--server_num", "0", "--worker_num", "1"] + self.rank_args(),
                               "--server_num")

    def test_negative_trainer_count_of_todays_ps_form(self):
        self.check_usage_error(["--trainer_num=-1"] + self.rank_args(),
                               "--trainer_num: '-1' must be at least 0 (0 means 1)")

    def test_huge_trainer_count_of_todays_ps_form(self):
        self.check_usage_error(["--trainer_num=65536"] + self.rank_args(),
                               "--trainer_num: '65536' is more than 65535")

    def test_server_without_a_port(self):
        self.check_usage_error(["--servers", "10.0.0.1", "--workers", "127.0.0.1:6000"]
                               + self.rank_args(), "'10.0.0.1'")

    def test_bad_paddlecloud_trainer_id(self):
        env = self.env(POD_IP="127.0.0.1", PADDLE_TRAINERS="127.0.0.1,127.0.0.2",
                       PADDLE_TRAINER_ID="abc", PADDLE_TRAINERS_NUM="2", TRAINER_PORTS_NUM="1")
        self.check_usage_error(self.rank_args(), "PADDLE_TRAINER_ID", env=env)


class SetupErrorTest(LaunchTestCase):
    """Problems found before starting (exit 1): the message names the offending thing."""

    def check_setup_error(self, args, token, env=None):
        result = self.run_launch(args, env=env)
        self.assertEqual(result.code, 1, result)
        self.assertIn(token, result.stderr, result)
        self.assertEqual(list(self.rec.iterdir()), [])
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())
        return result

    def test_missing_script_file(self):
        self.check_setup_error(["no_such_script.py", "--record", self.rec], "no_such_script.py")

    def test_a_world_past_the_kernels_bound_on_one_variable_starts_nothing(self):
        # 1 200 nodes of 8 ranks: PADDLE_TRAINER_ENDPOINTS would pass MAX_ARG_STRLEN, and every
        # rank failed with "cannot execute '/bin/sh': Argument list too long".
        ips = ["127.0.0.1"] + [f"10.{i // 250}.{i % 250}.1" for i in range(1199)]
        result = self.check_setup_error(["--ips", ",".join(ips), "--nproc_per_node", 8]
                                        + self.rank_args(),
                                        "launch: error: PADDLE_TRAINER_ENDPOINTS would be ")
        self.assertRegex(result.stderr, r"for a list of 9600 entries, which passes the bound at "
                         r"about \d+; Linux takes at most 131071 bytes for one environment variable")
        # Issue #42 item 8: --dry_run refuses it with the same line (it exited 0 before).
        dry = self.run_launch(["--dry_run", "--ips", ",".join(ips), "--nproc_per_node", 8]
                              + self.rank_args())
        self.assertEqual(dry.code, 1, dry)
        self.assertEqual(dry.stderr.splitlines()[-1], result.stderr.splitlines()[-1])

    def test_missing_python_interpreter(self):
        env = self.env(PADDLE_LAUNCH_PYTHON="/nonexistent/python9")
        self.check_setup_error(self.rank_args(), "/nonexistent/python9", env=env)

    def test_script_not_executable(self):
        script = self.dir / "train.sh"
        script.write_text("#!/bin/sh\ntouch rec/ran\n")
        script.chmod(0o644)
        self.check_setup_error([script], "train.sh")

    def test_busy_start_port(self):
        with socket.socket() as busy:
            busy.bind(("0.0.0.0", 0))
            busy.listen()
            port = busy.getsockname()[1]
            result = self.check_setup_error(["--nproc_per_node", 2, "--start_port", port]
                                            + self.rank_args(), str(port))
        self.assertIn(f"port {port}", result.stderr)


class ArgumentSyntaxTest(LaunchTestCase):
    """argparse conventions: --opt=value, unique prefixes, the --selected_gpus alias."""

    def ranks_started(self, args):
        result = self.run_launch(args + self.rank_args())
        self.assertEqual(result.code, 0, result)
        env = json.loads((self.rec / "env.0.json").read_text())
        self.assertEqual(len(self.recorded_pids("pid")), int(env["PADDLE_TRAINERS_NUM"]))
        return int(env["PADDLE_TRAINERS_NUM"])

    def test_equals_form(self):
        self.assertEqual(self.ranks_started(["--nproc_per_node=3"]), 3)

    def test_unique_prefix(self):
        self.assertEqual(self.ranks_started(["--nproc", "2"]), 2)

    def test_prefix_paddle_finds_ambiguous_is_refused_as_paddle_refuses_it(self):
        # Issue #29 item 3: `--ma` silently meant --max_restart; Paddle's argparse says this.
        for args, line in (
                (["--ma", "127.0.0.1:5"], "ambiguous option: --ma could match --master, --max_restart"),
                (["--log", "mylogs"],
                 "ambiguous option: --log could match --log_level, --log_overwrite, --log_dir")):
            with self.subTest(args=args):
                result = self.run_launch(args + self.rank_args())
                self.assertEqual((result.code, result.stderr), (2, f"launch: error: {line}\n"))
                self.assertEqual(list(self.rec.iterdir()), [])

    def test_selected_gpus_alias(self):
        self.assertEqual(self.ranks_started(["--selected_gpus", "0,1,2"]), 3)


class HelpTest(LaunchTestCase):
    """--help and --version print to stdout and exit 0 without running anything."""

    def test_help(self):
        result = self.run_launch(["--help"])
        self.assertEqual(result.code, 0, result)
        for flag in ("--nproc_per_node", "--gpus", "--log_dir", "--ips", "--log_overwrite",
                     "--grace", "--start_port"):
            self.assertIn(flag, result.stdout)
        self.assertFalse((self.dir / "log").exists())

    def test_version(self):
        result = self.run_launch(["--version"])
        self.assertEqual(result.code, 0, result)
        self.assertIn(os.environ.get("PDLAUNCH_VERSION", "0.1.0"), result.stdout)


if __name__ == "__main__":
    harness.main()
