"""Issue #3: one command on every node forms one job, on real hosts (label netns).

Each test builds network namespaces joined by a bridge (netns.Lab: 10.211.X.0/24, one node also
with a docker-like 172.17.0.1) and runs one `launch` per namespace at the same time. The mesh
helper (tests/helpers/mesh.py) makes every rank listen on its endpoint and exchange rank ids
with every other rank, so a wrong rank, endpoint or node choice shows up as a failed exchange.
If the kernel refuses `ip netns`, every test is reported SKIPPED with the reason.
"""
import json
import re
import subprocess
import time

import harness
from harness import LaunchTestCase
from netns import DOCKER_ADDRESS, Lab

MESH_PY = harness.HELPERS / "mesh.py"
MESH_TIMEOUT = 30  # seconds a mesh rank waits for its peers
FAST = 10  # seconds within which a launcher that must refuse to start has exited


class NetnsTestCase(LaunchTestCase):
    """A fresh Lab per test method; launchers run inside its namespaces."""

    NODES = 2
    DOCKER_IN = 1  # node 1 also has docker0 = 172.17.0.1/16
    HOSTS = None

    def setUp(self):
        super().setUp()
        self.lab = Lab(self.NODES, docker_in=self.DOCKER_IN, hosts=self.HOSTS)
        self.lab.__enter__()  # raises SkipTest("SKIPPED: ip netns refused ...") when refused
        self.addCleanup(self.lab.cleanup)
        self.procs = []
        self.addCleanup(self._stop_procs)  # runs first: cleanups are last in, first out

    def run(self, result=None):
        # unittest runs no cleanups when KeyboardInterrupt escapes a test: do them here too.
        try:
            return super().run(result)
        finally:
            if getattr(self, "lab", None) is not None:
                self._stop_procs()
                self.lab.cleanup()

    def _stop_procs(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def ip(self, node):
        return self.lab.addresses[node]

    def start_on(self, node, args, env=None, name=None):
        """Starts `launch args` inside node `node`'s namespace, in the directory self.dir/NAME
        (NAME defaults to nodeN); output goes to self.dir/NAME.stdout and .stderr."""
        name = name or f"node{node}"
        cwd = self.dir / name
        cwd.mkdir(exist_ok=True)
        args = [str(a) for a in args]
        with open(self.dir / f"{name}.stdout", "wb") as out, \
                open(self.dir / f"{name}.stderr", "wb") as err:
            proc = subprocess.Popen(self.lab.command(node, [harness.BIN] + args), cwd=cwd,
                                    env=env or self.env(), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, start_new_session=True)
        proc.pdl_args, proc.pdl_name, proc.pdl_start = args, name, time.monotonic()
        self.procs.append(proc)
        return proc

    def run_nodes(self, per_node_args, envs=None, timeout=harness.RUN_TIMEOUT):
        """Starts one launcher per node at once (node i gets per_node_args[i]); waits for all."""
        envs = envs or [None] * len(per_node_args)
        procs = [self.start_on(node, args, env=envs[node])
                 for node, args in enumerate(per_node_args)]
        return [self.finish(proc, timeout) for proc in procs]

    def mesh_args(self):
        return [MESH_PY, "--out", self.rec, "--timeout", MESH_TIMEOUT]

    def assert_full_mesh(self, world_endpoints):
        """Every rank of `world_endpoints` reached every other one and was reached by it from
        its endpoint's address; returns {rank: what the rank recorded}."""
        world = len(world_endpoints)
        records = {}
        for rank in range(world):
            path = self.rec / f"mesh.{rank}.json"
            self.assertTrue(path.exists(), f"rank {rank} did not finish the exchange")
            records[rank] = json.loads(path.read_text())
        self.assertEqual(sorted(p.name for p in self.rec.glob("mesh.*.json")),
                         sorted(f"mesh.{rank}.json" for rank in range(world)))
        for rank, record in records.items():
            others = [peer for peer in range(world) if peer != rank]
            self.assertEqual(record["endpoint"], world_endpoints[rank])
            self.assertEqual(record["answered_by"],
                             {str(peer): f"rank {peer}" for peer in others})
            self.assertEqual(sorted(record["heard_from"]), sorted(str(p) for p in others))
            for peer in others:
                # The peer's connection came from the address of the peer's own endpoint.
                self.assertEqual(record["heard_from"][str(peer)],
                                 self.address_of(world_endpoints[peer]), f"rank {rank}")
        return records

    def address_of(self, endpoint):
        host = endpoint.rpartition(":")[0]
        return self.lab.addresses[self.HOSTS[host]] if self.HOSTS and host in self.HOSTS else host

    def assert_world_env(self, records, endpoints, master):
        for rank, record in records.items():
            env = record["env"]
            self.assertEqual(env["PADDLE_TRAINER_ID"], str(rank))
            self.assertEqual(env["PADDLE_TRAINERS_NUM"], str(len(endpoints)))
            self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], ",".join(endpoints))
            self.assertEqual(env["PADDLE_CURRENT_ENDPOINT"], endpoints[rank])
            self.assertEqual(env["MASTER_ADDR"] + ":" + env["MASTER_PORT"], master)
            self.assertEqual(env["PADDLE_MASTER"], master)
            self.assertEqual(env["WORLD_SIZE"], str(len(endpoints)))

    def assert_allreduce(self, results, nodes=2, per_node=2):
        """Every rank of examples/torch_allreduce.py logged the right sum of all ranks."""
        self.assert_ok(results)
        world = nodes * per_node
        total = world * (world + 1) // 2
        for node in range(nodes):
            for local in range(per_node):
                rank = node * per_node + local
                log = (self.dir / f"node{node}" / "log" / f"workerlog.{local}").read_text()
                self.assertIn(f"rank {rank}: allreduce sum = {total} (expected {total})",
                              log.splitlines(), f"node {node} workerlog.{local}:\n{log}")

    def assert_ok(self, results):
        for result in results:
            self.assertEqual(result.code, 0, result)

    def assert_node_found(self, result, ip, index, nodes, how):
        message = f"This node is {ip}, node {index} of {nodes} in --ips (found by {how})"
        self.assert_logged(result.stderr, "INFO", message)

    def assert_refused(self, result, pattern):
        """The launcher exited 1 within FAST seconds, its last stderr line is
        "launch: error: " + a full match of `pattern`, and no rank started. Returns the match."""
        self.assertEqual(result.code, 1, result)
        self.assertLess(result.elapsed, FAST, result)
        m = re.fullmatch("launch: error: " + pattern, result.stderr.splitlines()[-1])
        self.assertIsNotNone(m, f"no match for {pattern!r}:\n{result!r}")
        self.assertNotIn("launch proc_id:", result.stdout)
        self.assertEqual(list(self.rec.iterdir()), [])
        return m


class MultiNodeTest(NetnsTestCase):
    """2 nodes × 2 ranks and 3 nodes × 1 rank: one world, every rank talks to every other."""

    def test_two_nodes_two_ranks_full_mesh(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--nproc_per_node", 2] + self.mesh_args()
        results = self.run_nodes([args, args])
        self.assert_ok(results)
        endpoints = [f"{self.ip(n)}:{port}" for n in (0, 1) for port in (6070, 6071)]
        records = self.assert_full_mesh(endpoints)
        self.assert_world_env(records, endpoints, f"{self.ip(0)}:6072")
        for rank, record in records.items():
            self.assertEqual(record["env"]["PADDLE_RANK_IN_NODE"], str(rank % 2))
            self.assertEqual(record["env"]["PADDLE_NNODES"], "2")
        # Node 1 also has 172.17.0.1 (docker0); only its --ips address counts.
        for node, result in enumerate(results):
            self.assert_node_found(result, self.ip(node), node, 2, "local interface")
            log = (self.dir / f"node{node}" / "log" / "endpoints.log").read_text()
            self.assertEqual(log, "PADDLE_TRAINER_ENDPOINTS: \n" + "\n".join(endpoints))

    def test_node_order_in_ips_decides_ranks(self):
        lab_nodes = (1, 0)  # --ips lists node 1 first: its ranks are 0 and 1
        ips = ",".join(self.ip(n) for n in lab_nodes)
        args = ["--ips", ips, "--nproc_per_node", 2] + self.mesh_args()
        self.assert_ok(self.run_nodes([args, args]))
        endpoints = [f"{self.ip(n)}:{port}" for n in lab_nodes for port in (6070, 6071)]
        records = self.assert_full_mesh(endpoints)
        self.assert_world_env(records, endpoints, f"{self.ip(1)}:6072")

    def test_flags_start_port_moves_every_port(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--nproc_per_node", 2] + self.mesh_args()
        env = self.env(FLAGS_START_PORT="7100")
        self.assert_ok(self.run_nodes([args, args], envs=[env, env]))
        endpoints = [f"{self.ip(n)}:{port}" for n in (0, 1) for port in (7100, 7101)]
        records = self.assert_full_mesh(endpoints)
        self.assert_world_env(records, endpoints, f"{self.ip(0)}:7102")

    def test_host_and_pod_ip_choose_the_node(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--nproc_per_node", 2] + self.mesh_args()
        results = self.run_nodes([["--host", self.ip(0)] + args, args],
                                 envs=[None, self.env(POD_IP=self.ip(1))])
        self.assert_ok(results)
        endpoints = [f"{self.ip(n)}:{port}" for n in (0, 1) for port in (6070, 6071)]
        self.assert_full_mesh(endpoints)
        self.assert_node_found(results[0], self.ip(0), 0, 2, "--host")
        self.assert_node_found(results[1], self.ip(1), 1, 2, "POD_IP")


class ThreeNodeTest(NetnsTestCase):
    """3 nodes × 1 rank, listed out of namespace order."""

    NODES = 3

    def test_three_nodes_ranks_follow_ips(self):
        lab_nodes = (2, 0, 1)
        ips = ",".join(self.ip(n) for n in lab_nodes)
        args = ["--ips", ips] + self.mesh_args()
        results = self.run_nodes([args, args, args])
        self.assert_ok(results)
        endpoints = [f"{self.ip(n)}:6070" for n in lab_nodes]
        records = self.assert_full_mesh(endpoints)
        self.assert_world_env(records, endpoints, f"{self.ip(2)}:6071")
        for rank, record in records.items():
            self.assertEqual(record["env"]["PADDLE_NNODES"], "3")
            self.assertEqual(record["env"]["PADDLE_RANK_IN_NODE"], "0")


class HostNameTest(NetnsTestCase):
    """Host names in --ips are resolved (forward, /etc/hosts of the namespace) to find this node,
    and kept as given in every endpoint."""

    HOSTS = {"node-a": 0, "node-b": 1}

    def test_host_names_find_the_node_and_stay_in_endpoints(self):
        args = ["--ips", "node-a,node-b", "--nproc_per_node", 2] + self.mesh_args()
        results = self.run_nodes([args, args])
        self.assert_ok(results)
        endpoints = [f"{host}:{port}" for host in ("node-a", "node-b") for port in (6070, 6071)]
        records = self.assert_full_mesh(endpoints)
        self.assert_world_env(records, endpoints, "node-a:6072")
        self.assert_node_found(results[0], "node-a", 0, 2, "local interface")
        self.assert_node_found(results[1], "node-b", 1, 2, "local interface")

    def test_unresolvable_host_name_fails_fast(self):
        result = self.finish(self.start_on(0, ["--ips", "node-a,node-zz"] + self.mesh_args()))
        self.assert_refused(result, r"cannot resolve host name 'node-zz' of --ips: .+")


class NodeChoiceTest(NetnsTestCase):
    """Wrong or ambiguous node identity stops the launcher before anything starts."""

    def local_addresses(self, node):
        out = subprocess.run(self.lab.command(node, ["ip", "-o", "addr", "show"]),
                             capture_output=True, text=True, check=True).stdout
        return [m.group(1) for m in re.finditer(r"inet6? ([0-9a-f.:]+)/", out)]

    def test_node_not_in_ips_fails_fast(self):
        ips = f"{self.ip(0)},10.211.254.99"
        result = self.finish(self.start_on(1, ["--ips", ips] + self.mesh_args()))
        m = self.assert_refused(result, rf"this node is not in --ips={re.escape(ips)}: local "
                                r"addresses are \[(.*)\]; pass --host or set POD_IP")
        listed = m.group(1).split(", ")
        self.assertEqual(sorted(listed), sorted(self.local_addresses(1)))
        self.assertIn(self.ip(1), listed)
        self.assertIn(DOCKER_ADDRESS, listed)

    def test_docker_address_in_ips_is_ambiguous_until_host_is_given(self):
        ips = f"{DOCKER_ADDRESS},{self.ip(1)}"
        result = self.finish(self.start_on(1, ["--ips", ips] + self.mesh_args()))
        self.assert_refused(
            result, rf"several entries of --ips={re.escape(ips)} are addresses of this node: "
            rf"\[{re.escape(DOCKER_ADDRESS)}, {re.escape(self.ip(1))}\] \(local addresses are "
            r"\[.*\]\); pass --host or set POD_IP")
        # Node 0 (172.17.0.1) never runs: the rank of node 1 only records its environment.
        chosen = self.finish(self.start_on(1, ["--ips", ips, "--host", self.ip(1),
                                               "--nodes_meet", "false"]
                                           + self.rank_args(), name="with_host"))
        self.assertEqual(chosen.code, 0, chosen)
        env = json.loads((self.rec / "env.1.json").read_text())
        self.assertEqual(env["PADDLE_CURRENT_ENDPOINT"], f"{self.ip(1)}:6070")
        self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"],
                         f"{DOCKER_ADDRESS}:6070,{self.ip(1)}:6070")

    def test_host_not_in_ips_fails_fast(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        result = self.finish(self.start_on(0, ["--ips", ips, "--host", "10.211.254.98"]
                                           + self.mesh_args()))
        self.assert_refused(result, rf"--host 10\.211\.254\.98 is not in --ips={re.escape(ips)}: "
                            r"local addresses are \[.*\]")


class BusyPortTest(NetnsTestCase):
    """A fixed port that is busy on a node stops that node's launcher with the owner's pid."""

    def test_busy_fixed_port_fails_fast_naming_the_owner(self):
        code = ("import socket,sys,time; s=socket.socket(); "
                f"s.bind(('{self.ip(1)}', 6071)); s.listen(); print('ready', flush=True); "
                "time.sleep(120)")
        holder = subprocess.Popen(self.lab.command(1, [harness.SYSTEM_PYTHON, "-c", code]),
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.stdout.close)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)
        self.assertEqual(holder.stdout.readline().strip(), "ready")
        ips = f"{self.ip(0)},{self.ip(1)}"
        result = self.finish(self.start_on(1, ["--ips", ips, "--nproc_per_node", 2]
                                           + self.mesh_args()))
        self.assert_refused(result, re.escape(f"port 6071 is already in use (by pid {holder.pid}, "
                                              "python3)"))


class Ipv6Test(NetnsTestCase):
    """--ips with IPv6 addresses (issue #13): endpoints are bracketed, [fd00::2]:6070, so every
    consumer can split them at the last colon; MASTER_ADDR is the bare address."""

    DOCKER_IN = None

    def setUp(self):
        super().setUp()
        self.v6 = [f"fd00:211::{i + 1}" for i in range(self.NODES)]
        for node, address in enumerate(self.v6):
            proc = subprocess.run(["ip", "-n", self.lab.names[node], "-6", "addr", "add",
                                   f"{address}/64", "dev", "eth0", "nodad"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                self.skipTest(f"SKIPPED: ip netns refused by the kernel: IPv6: {proc.stderr}")

    def address_of(self, endpoint):
        return endpoint.rpartition(":")[0].strip("[]")

    def test_ipv6_ips_form_one_world_with_bracketed_endpoints(self):
        args = ["--ips", ",".join(self.v6), "--nproc_per_node", 2] + self.mesh_args()
        self.assert_ok(self.run_nodes([args, args]))
        endpoints = [f"[{self.v6[n]}]:{6070 + i}" for n in range(2) for i in range(2)]
        records = self.assert_full_mesh(endpoints)
        env = records[0]["env"]
        self.assertEqual(env["PADDLE_TRAINER_ENDPOINTS"], ",".join(endpoints))
        self.assertEqual(env["MASTER_ADDR"], self.v6[0])
        self.assertEqual(env["PADDLE_MASTER"], f"[{self.v6[0]}]:6072")


class EchoMultiNodeTest(NetnsTestCase):
    """--echo in a job of two nodes: each line carries the node's address and the global rank."""

    DOCKER_IN = None

    def test_prefix_has_the_node_and_the_global_rank(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--echo", "all", "--nproc_per_node", 2] + self.rank_args(
            "--say", "hi")
        results = self.run_nodes([args, args])
        self.assert_ok(results)
        for node in (0, 1):
            echoed = sorted(line for line in results[node].stdout.splitlines()
                            if line.endswith(": hi"))
            self.assertEqual(echoed, [f"[{self.ip(node)} rank {r}]: rank {r}: hi"
                                      for r in (2 * node, 2 * node + 1)])


class TorchMultiNodeTest(NetnsTestCase):
    """A real PyTorch gloo all-reduce across 2 namespaces × 2 ranks (labels netns, torch)."""

    def test_gloo_allreduce_across_two_nodes(self):
        probe = subprocess.run([harness.SYSTEM_PYTHON, "-c", "import torch.distributed"],
                               capture_output=True, text=True)
        self.assertEqual(probe.returncode, 0, f"{harness.SYSTEM_PYTHON} cannot import torch:\n"
                                              f"{probe.stderr}")
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--nproc_per_node", 2, harness.EXAMPLES / "torch_allreduce.py",
                "--timeout", 60]
        # gloo binds the address of the interface it is told; without it, it resolves the
        # machine's host name, which names no address of these namespaces.
        env = self.env(PADDLE_LAUNCH_PYTHON=harness.SYSTEM_PYTHON, GLOO_SOCKET_IFNAME="eth0")
        self.assert_allreduce(self.run_nodes([args, args], envs=[env, env]))


if __name__ == "__main__":
    harness.main()
