"""Issue #4: parameter-server jobs end to end.

Most tests run examples/ps_demo.py, a real parameter server over TCP: the servers hold the
parameters, the workers pull, push gradients and worker 0 prints the final parameters, which the
test computes itself. Each demo process records its pid and environment (--record), so the test
can check which process got which variables and that every one of them is gone afterwards.
The heter and log tests use ROLE_PY, a tiny script written into the test's directory.
"""
import json

import harness
from harness import LaunchTestCase
from test_multinode import NetnsTestCase

PS_DEMO = harness.EXAMPLES / "ps_demo.py"
# The launcher must be done well within this (default grace is 5 s; generous for a loaded host).
PROMPT = 60

# The demo's defaults (examples/ps_demo.py).
DIM, STEPS, LR, INIT = 8, 5, 0.1, 1.0

WORKERS_DONE = "all workers exit, going to finish parameter server and heter_worker."
SERVERS_KILLED = "all parameter server are killed"
HETERS_KILLED = "all heter_worker are killed"
COMPLETED = "Local processes completed."

# Prints "<role> <id> ran" and records its process as REC/<role>.<id>.json (role: server,
# worker, heter). A worker then waits until every server and heter worker has recorded (so none
# is stopped before it printed) and exits 0; servers and heter workers sleep until stopped.
ROLE_PY = r'''
import json, os, sys, time
ROLES = {"PSERVER": ("server", "PADDLE_PSERVERS_IP_PORT_LIST"),
         "TRAINER": ("worker", "PADDLE_TRAINER_ENDPOINTS"),
         "HETER_TRAINER": ("heter", "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST")}
def endpoints(name):
    return [e for e in os.environ.get(name, "").split(",") if e]
role, list_name = ROLES[os.environ["TRAINING_ROLE"]]
rec = sys.argv[1]
index = endpoints(list_name).index(os.environ["POD_IP"] + ":" + os.environ["PADDLE_PORT"])
print(f"{role} {index} ran", flush=True)
path = os.path.join(rec, f"{role}.{index}.json")
with open(path + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "role": role, "id": index, "env": dict(os.environ)}, f)
os.rename(path + ".tmp", path)
if role != "worker":
    time.sleep(600)
others = [f"server.{i}.json" for i in range(len(endpoints(ROLES["PSERVER"][1])))]
others += [f"heter.{i}.json" for i in range(len(endpoints(ROLES["HETER_TRAINER"][1])))]
deadline = time.monotonic() + 60
while not all(os.path.exists(os.path.join(rec, name)) for name in others):
    if time.monotonic() > deadline:
        sys.exit("role.py: servers or heter workers did not start within 60 s")
    time.sleep(0.02)
'''


def expected_parameters(workers, steps=STEPS):
    """The demo's result: INIT - LR * sum over workers w and steps s of 0.01 (j+1)(w+1)(s+1)."""
    total = workers * (workers + 1) // 2 * steps * (steps + 1) // 2
    values = [INIT - LR * 0.01 * (j + 1) * total for j in range(DIM)]
    return "final parameters: [" + ", ".join(f"{round(v, 4) + 0.0:.4f}" for v in values) + "]"


def ps_abort_line(role, count, rank):
    return (f"ABORT!!! Out of all {count} {role}s, the {role} process with rank=[{rank}] was "
            f"aborted. Please check its log.")


class PsRecords:
    """What the PS processes of a test recorded in `self.rec`; mixed into the test classes."""

    def records(self, role):
        """{id: record} of REC/<role>.<id>.json (role: server, worker, heter)."""
        found = {}
        for path in self.rec.glob(f"{role}.*.json"):
            found[int(path.name.split(".")[1])] = json.loads(path.read_text())
        return found

    def role_envs(self, role, count):
        """The environments of ids 0..count-1 of `role`; fails unless exactly those recorded."""
        records = self.records(role)
        self.assertEqual(sorted(records), list(range(count)), f"{role} records")
        return [records[i]["env"] for i in range(count)]

    def ps_pids(self):
        return [r["pid"] for role in ("server", "worker", "heter")
                for r in self.records(role).values()]

    def kill_ps_leftovers(self):
        for pid in self.ps_pids():
            harness._kill_if_running(pid, "python")

    def assert_order(self, stream, *messages):
        """The launcher logged `messages`, each once, in this order."""
        logged = harness.log_messages(stream)
        for message in messages:
            self.assertEqual(logged.count(message), 1, f"{message!r} in:\n{stream[-4000:]}")
        positions = [logged.index(m) for m in messages]
        self.assertEqual(positions, sorted(positions), stream[-4000:])


class PsTestCase(PsRecords, LaunchTestCase):
    """A LaunchTestCase that also kills recorded PS processes left by a failed test."""

    def setUp(self):
        super().setUp()
        self.addCleanup(self.kill_ps_leftovers)

    def demo_args(self, *extra):
        return [PS_DEMO, "--record", self.rec] + [str(e) for e in extra]

    def role_script(self):
        script = self.dir / "role.py"
        script.write_text(ROLE_PY)
        return [script, self.rec]

    def clear_records(self):
        for path in self.rec.iterdir():
            path.unlink()

    def log_names(self):
        return sorted(p.name for p in (self.dir / "log").iterdir())

    def log(self, name):
        return (self.dir / "log" / name).read_text()

    def run_ps(self, args):
        result = self.run_launch(args)
        self.assertLess(result.elapsed, PROMPT, result)
        return result


class PsTest(PsTestCase):
    """Servers, workers and heter workers on one node: results, environment, logs, teardown."""

    def test_two_servers_four_workers_train_then_servers_are_stopped(self):
        result = self.run_ps(["--server_num", 2, "--worker_num", 4] + self.demo_args())
        self.assertEqual(result.code, 0, result)
        final = expected_parameters(4)
        self.assertEqual(final, "final parameters: [0.8500, 0.7000, 0.5500, 0.4000, 0.2500, "
                                "0.1000, -0.0500, -0.2000]")
        # Worker 0's output is echoed on the console and is in its log.
        self.assertIn(final, result.stdout.splitlines(), result)
        self.assertIn(final, self.log("workerlog.0").splitlines())
        self.assertEqual(self.log_names(), ["serverlog.0", "serverlog.1", "workerlog.0",
                                            "workerlog.1", "workerlog.2", "workerlog.3"])
        # Each server saw 4 workers x 5 steps pushes and was stopped by SIGTERM, not killed.
        for index in (0, 1):
            self.assertEqual(self.log(f"serverlog.{index}").splitlines()[-1],
                             f"server {index}: SIGTERM, exiting after 20 pushes")
        self.assert_order(result.stderr, WORKERS_DONE, SERVERS_KILLED, COMPLETED)
        self.assertIn("server are killed", result.stderr)  # Paddle's test_fleet_launch_ps.sh
        self.assertNotIn(HETERS_KILLED, result.stderr)
        self.assertNotIn("ABORT", result.stdout + result.stderr)
        self.assert_all_gone(self.ps_pids())

    def test_role_environment(self):
        result = self.run_ps(["--server_num", 2, "--worker_num", 2] + self.demo_args())
        self.assertEqual(result.code, 0, result)
        servers = self.role_envs("server", 2)
        workers = self.role_envs("worker", 2)
        server_list = servers[0]["PADDLE_PSERVERS_IP_PORT_LIST"]
        worker_list = servers[0]["PADDLE_TRAINER_ENDPOINTS"]
        for index, env in enumerate(servers):
            self.assertEqual(env["TRAINING_ROLE"], "PSERVER")
            self.assertEqual(env["POD_IP"], "127.0.0.1")
            self.assertEqual(f"127.0.0.1:{env['PADDLE_PORT']}", server_list.split(",")[index])
            self.assertEqual(env["PADDLE_TRAINERS_NUM"], "2")
        for index, env in enumerate(workers):
            self.assertEqual(env["TRAINING_ROLE"], "TRAINER")
            self.assertEqual(env["PADDLE_TRAINER_ID"], str(index))
            self.assertEqual(env["PADDLE_TRAINERS_NUM"], "2")
            self.assertEqual(env["PADDLE_PSERVERS_IP_PORT_LIST"], server_list)
            self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], worker_list)
            self.assertEqual(f"127.0.0.1:{env['PADDLE_PORT']}", worker_list.split(",")[index])
        ports = [e.rpartition(":")[2] for e in (server_list + "," + worker_list).split(",")]
        self.assertEqual(len(set(ports)), 4, ports)

    def test_explicit_endpoints_give_exactly_those_ports(self):
        base = harness.fixed_port_base()
        servers = f"127.0.0.1:{base},127.0.0.1:{base + 1}"
        workers = f"127.0.0.1:{base + 2},127.0.0.1:{base + 3}"
        result = self.run_ps(["--servers=" + servers, "--workers=" + workers]
                             + self.demo_args())
        self.assertEqual(result.code, 0, result)
        self.assertIn(expected_parameters(2), result.stdout.splitlines(), result)
        self.assertIn("server are killed", result.stderr)
        envs = self.role_envs("server", 2) + self.role_envs("worker", 2)
        self.assertEqual([env["PADDLE_PORT"] for env in envs],
                         [str(base + i) for i in range(4)])
        for env in envs:
            self.assertEqual(env["PADDLE_PSERVERS_IP_PORT_LIST"], servers)
            self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], workers)
        self.assert_all_gone(self.ps_pids())

    def test_paddlecloud_runs_the_script_once_as_it_is(self):
        """Under PaddleCloud (docs/ps.md, "PaddleCloud") the platform starts each role; the
        launcher runs the script once with the environment unchanged and no log redirection.
        Paddle exits 0 whatever the script returned; pdlaunch passes the code through."""
        cloud = {"PADDLE_TRAINERS": "10.0.0.1", "POD_IP": "10.0.0.1", "PADDLE_TRAINER_ID": "0",
                 "TRAINER_PORTS_NUM": "1", "TRAINING_ROLE": "PSERVER", "PADDLE_PORT": "6170"}
        r = self.run_launch(["--server_num", "2", "--worker_num", "2",
                             *self.rank_args("--say", "direct", "--exit", "0:4")],
                            env=self.env(**cloud))
        self.assertEqual(r.code, 4, repr(r))
        self.assertIn("rank 0: direct", r.stdout)  # Straight to the console.
        env = self.recorded_envs(1)[0]              # Once, and only once.
        for name, value in cloud.items():
            self.assertEqual(env[name], value, name)
        self.assertNotIn("PADDLE_PSERVERS_IP_PORT_LIST", env)
        self.assertFalse((self.dir / "log" / "serverlog.0").exists())
        self.assertFalse((self.dir / "log" / "workerlog.0").exists())

    def test_failing_worker_stops_the_job_with_its_exit_code(self):
        result = self.run_ps(["--server_num", 2, "--worker_num", 4]
                             + self.demo_args("--fail-worker", 1))
        self.assertEqual(result.code, 3, result)
        self.assert_logged(result.stderr, "ERROR", ps_abort_line("worker", 4, 1))
        # The tail of the failed worker's log is shown (its output reaches no other place).
        self.assertIn("worker 1: failing on purpose after step 0 (--fail-worker)",
                      result.stdout + result.stderr)
        self.assertNotIn(COMPLETED, harness.log_messages(result.stderr))
        self.assertNotIn(WORKERS_DONE, harness.log_messages(result.stderr))
        self.assertEqual(sorted(self.records("server")), [0, 1])
        self.assert_all_gone(self.ps_pids())

    def test_crashing_server_stops_the_workers(self):
        result = self.run_ps(["--server_num", 2, "--worker_num", 4]
                             + self.demo_args("--fail-server", 1))
        self.assertEqual(result.code, 5, result)
        self.assert_logged(result.stderr, "ERROR", ps_abort_line("server", 2, 1))
        self.assertIn("server 1: crashing on purpose (--fail-server)",
                      result.stdout + result.stderr)
        self.assertNotIn(COMPLETED, harness.log_messages(result.stderr))
        # Workers retry a lost server for 120 s: only the launcher can have stopped them.
        self.assertTrue(self.records("worker"), "no worker recorded its pid")
        self.assert_all_gone(self.ps_pids())

    def test_heter_job_stops_the_heter_worker_then_the_server(self):
        result = self.run_ps(["--server_num", 1, "--worker_num", 1, "--heter_worker_num", 1,
                              "--heter_devices", "cpu"] + self.role_script())
        self.assertEqual(result.code, 0, result)
        self.assert_order(result.stderr, WORKERS_DONE, HETERS_KILLED, SERVERS_KILLED, COMPLETED)
        self.assertEqual(self.log_names(), ["heterlog.0", "serverlog.0", "workerlog.0"])
        self.assertEqual(self.log("heterlog.0"), "heter 0 ran\n")
        [server] = self.role_envs("server", 1)
        [worker] = self.role_envs("worker", 1)
        [heter] = self.role_envs("heter", 1)
        self.assertEqual(heter["TRAINING_ROLE"], "HETER_TRAINER")
        self.assertEqual(heter["STAGE_ID"], "2")
        self.assertEqual(heter["STAGE_NUM"], "2")
        self.assertEqual(heter["HETER_DEVICE_TYPE"], "cpu")
        self.assertEqual(heter["PADDLE_STAGE_TRAINERS_NUM"], "[1, 1]")
        heter_list = f"127.0.0.1:{heter['PADDLE_PORT']}"
        self.assertEqual(heter["PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"],
                         worker["PADDLE_TRAINER_ENDPOINTS"])
        self.assertEqual(heter["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"], "")
        self.assertEqual(worker["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"], heter_list)
        self.assertEqual(worker["STAGE_ID"], "1")
        self.assertEqual(server["PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"], heter_list)
        self.assert_all_gone(self.ps_pids())

    def test_demo_runs_in_heter_mode(self):
        result = self.run_ps(["--server_num", 1, "--worker_num", 2, "--heter_worker_num", 1,
                              "--heter_devices", "cpu"] + self.demo_args())
        self.assertEqual(result.code, 0, result)
        self.assertIn(expected_parameters(2), result.stdout.splitlines(), result)
        # The demo's workers do not wait for the heter worker: it may be stopped at any point.
        self.assertEqual(self.log_names(), ["heterlog.0", "serverlog.0", "workerlog.0",
                                            "workerlog.1"])
        self.assert_order(result.stderr, WORKERS_DONE, HETERS_KILLED, SERVERS_KILLED, COMPLETED)
        self.assert_all_gone(self.ps_pids())

    def test_console_shows_only_the_first_local_worker(self):
        result = self.run_ps(["--server_num", 2, "--worker_num", 2] + self.role_script())
        self.assertEqual(result.code, 0, result)
        self.assertIn("worker 0 ran", result.stdout.splitlines())
        for other in ("worker 1 ran", "server 0 ran", "server 1 ran"):
            self.assertNotIn(other, result.stdout + result.stderr)
        self.assertEqual(self.log("workerlog.1"), "worker 1 ran\n")
        self.assertEqual(self.log("serverlog.1"), "server 1 ran\n")

    def test_logs_append_across_runs_and_log_overwrite_truncates(self):
        args = ["--server_num", 1, "--worker_num", 2] + self.role_script()
        for _ in range(2):
            self.clear_records()
            self.assertEqual(self.run_ps(args).code, 0)
        # The second run's output after a line naming it (docs/cli.md, "Runs that share a log
        # directory").
        run = r"===== pdlaunch: job default, run of [0-9: -]+ \(launcher pid \d+\) =====\n"
        self.assertRegex(self.log("workerlog.1"), rf"^worker 1 ran\n{run}worker 1 ran\n$")
        self.assertRegex(self.log("serverlog.0"), rf"^server 0 ran\n{run}server 0 ran\n$")
        self.clear_records()
        self.assertEqual(self.run_ps(["--log_overwrite"] + args).code, 0)
        self.assertEqual(self.log("workerlog.1"), "worker 1 ran\n")
        self.assertEqual(self.log("serverlog.0"), "server 0 ran\n")


class PsUsageTest(PsTestCase):
    """Bad PS command lines: exit 2 and one stderr line naming the problem; nothing started."""

    def check_usage_error(self, flags, message):
        result = self.run_ps(flags + self.demo_args())
        self.assertEqual(result.code, 2, result)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result)
        self.assertTrue(lines[0].endswith(message), f"{message!r} not at the end of {lines[0]!r}")
        self.assertEqual(list(self.rec.iterdir()), [])
        self.assertFalse((self.dir / "log").exists())

    def test_server_count_mismatch(self):
        self.check_usage_error(
            ["--server_num", 2, "--servers", "a:1", "--worker_num", 1],
            "The server_num and servers doesn't match. Expect servers endpoints num epual to "
            "server_num, but received servers enpoint num: 1 and server_num 2")

    def test_worker_count_mismatch(self):
        self.check_usage_error(
            ["--server_num", 1, "--worker_num", 3, "--workers", "a:1,a:2"],
            "The worker_num and workers doesn't match. Expect workers endpoints num epual to "
            "worker_num, but received workers enpoint num: 2 and worker_num 3")

    def test_malformed_port(self):
        self.check_usage_error(["--servers", "127.0.0.1:xx", "--worker_num", 1],
                               "--servers: port of endpoint '127.0.0.1:xx': 'xx' is not an "
                               "integer")

    def test_endpoint_without_port(self):
        self.check_usage_error(["--servers", "127.0.0.1", "--worker_num", 1],
                               "--servers: '127.0.0.1' is not an endpoint (expected host:port)")

    def test_empty_endpoint(self):
        self.check_usage_error(["--server_num", 1, "--workers", "a:1,,a:2"],
                               "--workers: empty endpoint in 'a:1,,a:2'")

    def test_missing_workers(self):
        self.check_usage_error(["--server_num", 1],
                               "The setting of Parameter-Server must has worker_num or workers.")

    def test_heter_without_devices(self):
        self.check_usage_error(["--server_num", 1, "--worker_num", 1, "--heter_worker_num", 1],
                               "The setting of Parameter-Server heter mode must has "
                               "heter_devices.")

    def test_mixed_modes(self):
        self.check_usage_error(["--nproc_per_node", 2, "--server_num", 1, "--worker_num", 1],
                               "Only one mode(Collective or Parameter-Server) can be selected "
                               "at the same time, but more than one configuration was "
                               "received: --nproc_per_node and --worker_num")


class PsNetnsTest(PsRecords, NetnsTestCase):
    """Servers on one host, workers on another (label netns), one launcher on each."""

    DOCKER_IN = None

    def setUp(self):
        super().setUp()
        self.addCleanup(self.kill_ps_leftovers)

    def test_servers_on_one_node_workers_on_the_other(self):
        servers = f"{self.ip(0)}:6170,{self.ip(0)}:6171"
        workers = f"{self.ip(1)}:6172,{self.ip(1)}:6173"
        args = ["--servers", servers, "--workers", workers, PS_DEMO, "--record", self.rec,
                "--stop-servers"]
        envs = [self.env(POD_IP=self.ip(node)) for node in (0, 1)]
        results = self.run_nodes([args, args], envs=envs)
        self.assert_ok(results)
        servers_node, workers_node = results
        self.assertIn(expected_parameters(2), workers_node.stdout.splitlines(), workers_node)
        for node, result in enumerate(results):
            self.assert_logged(result.stderr, "INFO",
                               f"This node is {self.ip(node)}, node {node} of 2 of the "
                               f"parameter-server hosts (found by POD_IP)")
        # Servers only: their own clean exit (worker 0 stops them) completes that node's job.
        self.assert_order(servers_node.stderr, COMPLETED)
        self.assertNotIn(WORKERS_DONE, servers_node.stderr)
        self.assert_order(workers_node.stderr, WORKERS_DONE, COMPLETED)
        self.assertNotIn(SERVERS_KILLED, workers_node.stderr)
        for index, env in enumerate(self.role_envs("server", 2)):
            self.assertEqual(env["POD_IP"], self.ip(0))
            self.assertEqual(env["PADDLE_PORT"], str(6170 + index))
            self.assertEqual(env["PADDLE_GLOO_HTTP_ENDPOINT"], f"{self.ip(0)}:6174")
            log = (self.dir / "node0" / "log" / f"serverlog.{index}").read_text()
            self.assertEqual(log.splitlines()[-1], f"server {index}: stopped after 10 pushes")
        for index, env in enumerate(self.role_envs("worker", 2)):
            self.assertEqual(env["POD_IP"], self.ip(1))
            self.assertEqual(env["PADDLE_TRAINER_ID"], str(index))
            self.assertEqual(env["PADDLE_PSERVERS_IP_PORT_LIST"], servers)
            self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], workers)
        self.assertEqual(sorted(p.name for p in (self.dir / "node0" / "log").iterdir()),
                         ["serverlog.0", "serverlog.1"])
        self.assertEqual(sorted(p.name for p in (self.dir / "node1" / "log").iterdir()),
                         ["workerlog.0", "workerlog.1"])
        self.assert_all_gone(self.ps_pids())


if __name__ == "__main__":
    harness.main()
