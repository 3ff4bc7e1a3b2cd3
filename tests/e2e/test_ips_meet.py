"""Issue #37: the nodes of a multi-node --ips meet at a master before any rank starts and fail
as one, in both interfaces (label netns; docs/multi-node.md, "The nodes meet").

Real hosts: one network namespace per node (netns.Lab), one launcher in each. Paddle 3's side of
the handshake is tests/helpers/paddle_kv.py, written from the facts of Paddle's update_by_ips.
"""
import re
import subprocess
import time

import harness
from test_multinode import NetnsTestCase

PADDLE_KV = harness.HELPERS / "paddle_kv.py"
HEARTBEAT = 3  # --heartbeat_timeout of these tests, seconds
GRACE = 2  # --grace of these tests, seconds


class LegacyIpsMeetTest(NetnsTestCase):
    """The legacy interface (`launch --nproc_per_node 2 --ips a,b train.py`): the ranks see
    exactly the legacy variables, and the nodes meet, check each other and fail as one."""

    DOCKER_IN = None

    def ips(self):
        return f"{self.ip(0)},{self.ip(1)}"

    def args(self, *extra):
        return ["--ips", self.ips(), "--nproc_per_node", 2, "--heartbeat_timeout", HEARTBEAT,
                "--grace", GRACE] + self.rank_args(*extra)

    def test_nodes_meet_and_the_ranks_see_the_legacy_world(self):
        results = self.run_nodes([self.args(), self.args()])
        for result in results:
            self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(4)
        endpoints = [f"{self.ip(n)}:{port}" for n in (0, 1) for port in (6070, 6071)]
        for rank, env in enumerate(envs):
            self.assertEqual(env["PADDLE_TRAINER_ID"], str(rank))
            self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], ",".join(endpoints))
            self.assertEqual(env["PADDLE_CURRENT_ENDPOINT"], endpoints[rank])
            self.assertEqual(env["MASTER_ADDR"] + ":" + env["MASTER_PORT"], f"{self.ip(0)}:6072")
        self.assert_logged(results[0].stderr, "INFO",
                           f"this node ({self.ip(0)}, node 0 of 2 in --ips) hosts the master at "
                           f"{self.ip(0)}:6768 for job default; the other nodes find its port by "
                           "Paddle's handshake")
        self.assert_logged(results[1].stderr, "INFO",
                           f"Success found the master and port: {self.ip(0)}, 6768")
        for node in (0, 1):
            log = (self.dir / f"node{node}" / "log" / "endpoints.log").read_text()
            self.assertEqual(log, "PADDLE_TRAINER_ENDPOINTS: \n" + "\n".join(endpoints))
            self.assertEqual(sorted(p.name for p in (self.dir / f"node{node}" / "log").iterdir()),
                             ["endpoints.log", "workerlog.0", "workerlog.1"])

    def test_a_rank_that_fails_on_one_node_stops_every_node(self):
        # Rank 3 (node 1) exits 7 after 2 s; the others would sleep 120 s.
        procs = [self.start_on(n, self.args("--exit", "3:7", "--delay", 2, "--sleep", 120))
                 for n in (0, 1)]
        results = [self.finish(p, timeout=60) for p in procs]
        for result in results:
            self.assertEqual(result.code, 7, result)
            # Heartbeat and grace bound the stop; the ranks slept 120 s.
            self.assertLess(result.elapsed, 2 + HEARTBEAT + GRACE + 20, result)
        self.assert_logged(results[0].stderr, "ERROR",
                           f"ABORT!!! rank 3 on node {self.ip(1)} exited with code 7; stopping "
                           "this node's processes")
        self.assertIn("ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was "
                      "aborted", results[1].stderr)

    def test_different_process_counts_stop_both_before_any_rank(self):
        other = ["--ips", self.ips(), "--nproc_per_node", 1] + self.rank_args()
        results = self.run_nodes([self.args(), other])
        line = (f"launch: error: node {re.escape(self.ip(1))} \\(\\w+\\) runs 1 process and node "
                f"{re.escape(self.ip(0))} "
                r"\(\w+\) runs 2 processes: every node of an --ips job runs the same number "
                r"\(give each the same --gpus, --xpus or --nproc_per_node\)")
        for result in results:
            self.assertEqual(result.code, 1, result)
            self.assertRegex(result.stderr.splitlines()[-1], line)
            self.assertNotIn("launch proc_id:", result.stdout)
        self.assertEqual(list(self.rec.glob("env.*")), [])

    def test_a_node_started_20_s_later_still_forms_the_job(self):
        first = self.start_on(0, self.args())
        deadline = time.monotonic() + 20
        log = self.dir / "node0.stderr"
        waiting = f"waiting for 1 more node(s) of 2 at master {self.ip(0)}:6768: {self.ip(1)} (node 1)"
        while time.monotonic() < deadline:
            self.assertIsNone(first.poll(), "node 0 exited while waiting for node 1")
            time.sleep(0.5)
        self.assertIn(waiting, log.read_text())
        second = self.start_on(1, self.args())
        for result in (self.finish(first), self.finish(second)):
            self.assertEqual(result.code, 0, result)
        self.assertEqual(len(self.recorded_envs(4)), 4)

    def test_nodes_meet_false_runs_as_paddle_2(self):
        # One node alone, its peer never started: with the switch it runs and ends at once.
        result = self.finish(self.start_on(1, ["--nodes_meet", "false"] + self.args()))
        self.assertEqual(result.code, 0, result)
        self.assertNotIn("Waiting peer start", result.stderr)
        self.assertEqual(sorted(self.recorded_pids("pid")), [2, 3])


class LegacyIpsMismatchTest(NetnsTestCase):
    """Three legacy nodes given lists that differ: every node stops before any rank, with the
    line that names the difference."""

    DOCKER_IN = None
    NODES = 3

    def test_a_different_list_stops_every_node_before_any_rank(self):
        same = f"{self.ip(0)},{self.ip(1)},{self.ip(2)}"
        swapped = f"{self.ip(0)},{self.ip(2)},{self.ip(1)}"
        hostfile = self.dir / "hosts"
        hostfile.write_text(same.replace(",", "\n") + "\n")  # A hostfile, as the legacy flag.
        args = [["--ips", hostfile], ["--ips", same], ["--ips", swapped]]
        results = self.run_nodes([a + ["--nproc_per_node", 1] + self.rank_args() for a in args])
        for result in results:
            self.assertEqual(result.code, 1, result)
            self.assertIn("launch: error: the nodes were given different --ips lists: entry 1 is",
                          result.stderr.splitlines()[-1])
            self.assertNotIn("launch proc_id:", result.stdout)
        self.assertEqual(list(self.rec.glob("env.*")), [])

    def test_a_list_of_another_length_stops_every_node(self):
        two = f"{self.ip(0)},{self.ip(1)}"
        three = f"{two},{self.ip(2)}"
        procs = [self.start_on(0, ["--ips", three] + self.rank_args()),
                 self.start_on(1, ["--ips", two] + self.rank_args())]
        results = [self.finish(p) for p in procs]
        for result in results:
            self.assertEqual(result.code, 1, result)
            self.assertIn("an --ips node counts its list: give every node the same --ips",
                          result.stderr.splitlines()[-1])
        self.assertEqual(list(self.rec.glob("env.*")), [])


class TodaysIpsMeetTest(NetnsTestCase):
    """Today's interface with --ips: Paddle 3's update_by_ips, then the master rendezvous."""

    DOCKER_IN = None
    NODES = 3

    def test_a_hostfile_is_cut_to_nnodes_and_the_nodes_meet_by_the_handshake(self):
        hostfile = self.dir / "hostfile"
        hostfile.write_text("".join(f"{self.ip(n)} slots=8\n" for n in range(3)))
        args = ["--ips", hostfile, "--nnodes", 2, "--nproc_per_node", 1] + self.rank_args()
        results = [self.finish(p) for p in [self.start_on(n, args) for n in (0, 1)]]
        for result in results:
            self.assertEqual(result.code, 0, result)
            self.assertIn("only the first 2 nnodes in ip_list will be retained when nnodes 2 < "
                          "len(ip_list)", result.stderr)
        envs = self.recorded_envs(2)
        self.assertEqual(envs[0]["PADDLE_NNODES"], "2")
        self.assertEqual([e["PADDLE_CURRENT_ENDPOINT"].rpartition(":")[0] for e in envs],
                         [self.ip(0), self.ip(1)])
        # Node 2 is cut from the list: it is not a node of this job.
        refused = self.finish(self.start_on(2, args))
        self.assertEqual(refused.code, 1, refused)
        self.assertIn(f"this node is not in --ips={self.ip(0)},{self.ip(1)}", refused.stderr)

    def test_paddle_port_puts_the_master_on_the_first_node(self):
        env = self.env(PADDLE_PORT="36123")
        args = ["--ips", f"{self.ip(0)},{self.ip(1)}", "--nnodes", 2] + self.rank_args()
        results = self.run_nodes([args, args], envs=[env, env])
        for result in results:
            self.assertEqual(result.code, 0, result)
        self.assertIn(f"hosts the master at {self.ip(0)}:36123", results[0].stderr)
        self.assertIn(f"master {self.ip(0)}:36123 for job default", results[1].stderr)

    def test_nnodes_larger_than_the_list_is_paddles_error(self):
        result = self.finish(self.start_on(0, ["--ips", f"{self.ip(0)},{self.ip(1)}", "--nnodes",
                                               3] + self.rank_args()))
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         "launch: error: LAUNCH ERROR the nnodes 3 > len(ip_list) (--ips lists 2)")


class PaddleHandshakeTest(NetnsTestCase):
    """pdlaunch and a node that speaks Paddle 3's handshake find each other, either way round."""

    DOCKER_IN = None

    def paddle(self, node, *args):
        proc = subprocess.Popen(self.lab.command(node, [harness.SYSTEM_PYTHON, PADDLE_KV]
                                                 + [str(a) for a in args]),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        return proc

    def paddle_join(self, node, rank):
        """Paddle's sync_peers from namespace `node` at the master the handshake found."""
        peer = subprocess.run(self.lab.command(node, [harness.SYSTEM_PYTHON, PADDLE_KV, "join",
                                                      f"{self.ip(0)}:6768", "default", "2",
                                                      self.ip(node), "1", str(rank)]),
                              capture_output=True, text=True, timeout=90)
        self.assertEqual(peer.returncode, 0, peer.stderr)

    def test_a_paddle_node_finds_a_pdlaunch_host(self):
        args = ["--ips", f"{self.ip(0)},{self.ip(1)}", "--nnodes", 2] + self.rank_args()
        host = self.start_on(0, args)
        joiner = self.paddle(1, "handshake-join", self.ip(0))
        out, err = joiner.communicate(timeout=60)
        self.assertEqual((joiner.returncode, out.strip()), (0, "port 6768"), err)
        self.paddle_join(1, rank=1)  # Then Paddle's sync_peers there: the job forms.
        result = self.finish(host)
        self.assertEqual(result.code, 0, result)
        self.assertEqual(self.recorded_envs(1)[0]["PADDLE_TRAINERS_NUM"], "2")

    def test_a_pdlaunch_node_finds_a_paddle_host(self):
        host = self.paddle(0, "handshake-host", self.ip(0), 1)
        args = ["--ips", f"{self.ip(0)},{self.ip(1)}", "--nnodes", 2] + self.rank_args()
        ours = self.start_on(1, args)
        self.assertEqual(host.stdout.readline().strip(), "port 6768")
        # Paddle's host then serves its KV store there: a Paddle node registers beside ours.
        self.paddle_join(0, rank=0)
        result = self.finish(ours)
        self.assertEqual(result.code, 0, result)
        self.assertIn(f"Success found the master and port: {self.ip(0)}, 6768", result.stderr)
        self.assertIn("is not pdlaunch's", result.stderr)
        env = next(iter(self.rec.glob("env.*.json"))).read_text()
        self.assertTrue(re.search(r'"PADDLE_TRAINERS_NUM": "2"', env), env)


if __name__ == "__main__":
    harness.main()
