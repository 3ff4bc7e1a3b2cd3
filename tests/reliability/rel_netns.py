"""Reliability R12 and R13: multi-node address selection and operation without DNS, on network
namespaces (netns.Lab; label netns). Reported SKIPPED when the kernel refuses `ip netns`."""
import re
import socket
import subprocess

import harness
from netns import DOCKER_ADDRESS, ETC_NETNS
from relcase import DNS_TRAP, AuditMixin
from test_multinode import NetnsTestCase

LINK_LOCAL = "169.254.7.1"
REFUSAL_BOUND = 1.0  # seconds; "exits at once"


class RelNetnsTestCase(AuditMixin, NetnsTestCase):
    # A name for the Lab to write, so that it creates (and removes) /etc/netns/<namespace>/;
    # the tests then replace the files there.
    HOSTS = {"rel-unused-name": 0}

    def write_etc(self, name, text):
        """Puts `text` in /etc/NAME of every node (bind-mounted by `ip netns exec`)."""
        for namespace in self.lab.names:
            (ETC_NETNS / namespace / name).write_text(text)

    def in_node(self, node, argv):
        return subprocess.run(self.lab.command(node, argv), capture_output=True, text=True,
                              timeout=30)

    def world(self, nproc=2):
        return [f"{self.ip(n)}:{6070 + i}" for n in (0, 1) for i in range(nproc)]

    def run_mesh(self):
        ips = f"{self.ip(0)},{self.ip(1)}"
        args = ["--ips", ips, "--nproc_per_node", 2] + self.mesh_args()
        results = self.run_nodes([args, args])
        self.assert_ok(results)
        records = self.assert_full_mesh(self.world())
        self.assert_world_env(records, self.world(), f"{self.ip(0)}:6072")
        return results, records


class IpSelectionTest(RelNetnsTestCase):
    """R12: node 1 has lo, docker0 (172.17.0.1), a link-local address and its real NIC, and its
    /etc/hosts maps the machine's host name to 127.0.1.1."""

    DOCKER_IN = 1

    def setUp(self):
        super().setUp()
        hostname = socket.gethostname()
        self.write_etc("hosts", f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n")
        subprocess.run(["ip", "-n", self.lab.names[1], "addr", "add", f"{LINK_LOCAL}/16", "dev",
                        "eth0"], check=True, capture_output=True)
        # The traps are set: the host name gives 127.0.1.1, the extra addresses are there.
        self.assertEqual(self.in_node(1, ["getent", "hosts", hostname]).stdout.split()[0],
                         "127.0.1.1")
        self.assertTrue({LINK_LOCAL, DOCKER_ADDRESS} <= set(self.local_addresses(1)))

    def local_addresses(self, node):
        out = self.in_node(node, ["ip", "-o", "addr", "show"]).stdout
        return [m.group(1) for m in re.finditer(r"inet6? ([0-9a-f.:]+)/", out)]

    def test_the_address_listed_in_ips_is_advertised(self):
        results, records = self.run_mesh()
        self.assert_node_found(results[1], self.ip(1), 1, 2, "local interface")
        for rank, record in records.items():
            env = record["env"]
            advertised = [env["PADDLE_CURRENT_ENDPOINT"], env["PADDLE_MASTER"],
                          env["MASTER_ADDR"], *env["PADDLE_TRAINER_ENDPOINTS"].split(",")]
            for value in advertised:
                self.assertFalse(value.startswith(("127.", "172.17.", "169.254.")),
                                 f"rank {rank} advertises {value}")

    def test_no_local_address_in_ips_fails_at_once_listing_the_local_addresses(self):
        ips = f"{self.ip(0)},10.211.254.99"
        proc = self.watch(self.start_on(1, ["--ips", ips] + self.mesh_args()))
        seconds = self.exit_time(proc) - proc.pdl_start
        result = self.finish(proc)
        m = self.assert_refused(result, rf"this node is not in --ips={re.escape(ips)}: local "
                                r"addresses are \[(.*)\]; pass --host or set POD_IP")
        self.assertEqual(sorted(m.group(1).split(", ")), sorted(self.local_addresses(1)))
        self.measure("R12", "refusal when no local address is in --ips (ip netns exec "
                     "included)", seconds * 1000, "ms", f"< {REFUSAL_BOUND * 1000:.0f} ms")
        self.assertLess(seconds, REFUSAL_BOUND)


class NoDnsTest(RelNetnsTestCase):
    """R13: both nodes have an empty /etc/hosts and a resolver whose only server is a trap that
    records every question (tests/helpers/dns_trap.py). A job given IP addresses only starts,
    asks no name question at all, and keeps the addresses as given."""

    DOCKER_IN = None

    def setUp(self):
        super().setUp()
        self.write_etc("hosts", "")
        self.write_etc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        self.trap_logs = [self.dir / f"dns.node{n}.log" for n in (0, 1)]
        for node in (0, 1):
            ready = self.dir / f"dns.node{node}.ready"
            trap = subprocess.Popen(self.lab.command(node, [
                harness.SYSTEM_PYTHON, DNS_TRAP, "--log", self.trap_logs[node], "--ready",
                ready]), stdin=subprocess.DEVNULL)
            self.addCleanup(trap.wait)
            self.addCleanup(trap.kill)
            self.wait_until(ready.exists, f"the DNS trap of node {node}", 30)

    def test_ips_only_job_starts_without_any_name_lookup(self):
        for node in (0, 1):  # The trap works: a lookup there reaches it, and fails at once.
            probe = self.in_node(node, ["getent", "hosts", f"probe{node}.invalid"])
            self.assertEqual(probe.returncode, 2, probe)
            self.assertIn(f"probe{node}.invalid ", self.trap_logs[node].read_text())
            self.trap_logs[node].write_text("")
        _, records = self.run_mesh()
        questions = [log.read_text() for log in self.trap_logs]
        self.assertEqual(questions, ["", ""])
        self.assertEqual(records[3]["env"]["PADDLE_TRAINER_ENDPOINTS"], ",".join(self.world()))
        self.measure("R13", "DNS questions during a 2-node job given IPs only",
                     sum(len(q.splitlines()) for q in questions), "questions", "== 0")

    def test_malformed_addresses_are_refused_without_a_name_lookup(self):
        # R27: each looks like an address and is not one; the resolver would have been asked
        # (getaddrinfo even reads 1.2.3 as 1.2.0.3). Refused before anything, no DNS question.
        cases = {
            ("--ips", f"{self.ip(0)},10.0.0.300"): "--ips: '10.0.0.300' is not an IPv4 address",
            ("--ips", f"{self.ip(0)},1.2.3"): "--ips: '1.2.3' is not an IPv4 address",
            ("--ips", f"{self.ip(0)},10.0.0.1:80"): "--ips: '10.0.0.1:80' is not a host",
            ("--ips", f"{self.ip(0)},::gg"): "--ips: '::gg' is not an IPv6 address",
            ("--master", "host:port:port"): "--master: 'host:port:port' is not host:port",
            ("--servers", "10.0.0.300:6000"): "--servers: '10.0.0.300' is not an IPv4 address",
        }
        for (flag, value), message in cases.items():
            args = [flag, value] + (["--nnodes", 2] if flag == "--master" else []) + \
                self.rank_args()
            result = self.finish(self.start_on(0, args))
            self.assertEqual(result.code, 2, result)
            self.assertEqual(len(result.stderr.splitlines()), 1, result)
            self.assertIn(message, result.stderr)
        self.assertEqual(self.trap_logs[0].read_text(), "")
        self.assertEqual(list(self.rec.iterdir()), [])


if __name__ == "__main__":
    harness.main()
