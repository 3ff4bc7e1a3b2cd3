"""Hostile clients against the HTTP master while it hosts a running 2-node job, and a hostile
master against a participant (issue #25; docs/master.md, "Exposure").

Every attack of the master runs against `launch --master 127.0.0.1:P --nnodes 2` with both nodes
on 127.0.0.1 and ranks that sleep; the attacker connects from its own loopback address
(ATTACKER), as a stranger on the network would. Each test asserts that
  - the job finishes with exit 0 on both nodes (unless the attack is a failure record, which any
    client may write: then that the console shows it escaped),
  - /healthy, asked from 127.0.0.1 every 20 ms during the attack, answers within HEALTHY_P99,
  - the hosting launcher's peak resident memory (VmHWM) stays under HWM_LIMIT (64 MiB).
The figures are printed on stderr ("hostile measured: ...") for docs/master.md.
"""
import json
import os
import re
import resource
import socket
import sys
import threading
import time

from etcd import EtcdServer
import harness
from test_master import free_port

ATTACKER = "127.0.0.9"
SANITIZED = bool(os.environ.get("PDLAUNCH_SANITIZE"))
# Seconds. Under ASan + UBSan encoding 4 MiB takes long enough to cross 100 ms once.
HEALTHY_P99 = 0.5 if SANITIZED else 0.1
# Bytes: the store's 32 MiB, a request's 4 MiB body, answers of 4 MiB (48 MiB measured at most).
# A sanitized launcher keeps freed memory in quarantine and shadow: its peak is not the design's.
HWM_LIMIT = (1 << 30) if SANITIZED else 64 << 20
RANK_SECONDS = 6  # how long the job's ranks run: the attack happens meanwhile
HEARTBEAT = 5  # --heartbeat_timeout


def vm_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0


def tcp_memory_bytes():
    """The kernel's TCP buffer memory now, all sockets (/proc/net/sockstat, in pages)."""
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                fields = line.split()
                return int(fields[fields.index("mem") + 1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def attacker_socket(port, timeout=10, source=ATTACKER):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0))


def send_raw(port, data, timeout=10):
    """Sends `data` from the attacker's address; returns what came back before the close."""
    with attacker_socket(port, timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        return got


def request(port, method, path, body=None, timeout=10, source=ATTACKER):
    conn = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0))
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Length: {len(body)}\r\n"
    conn.sendall(head.encode() + b"\r\n" + (body or b""))
    data = b""
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    conn.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data.partition(b"\r\n\r\n")[2]


class Prober(threading.Thread):
    """Asks /healthy every 20 ms from 127.0.0.1 and samples the host's VmHWM."""

    def __init__(self, port, host_pid):
        super().__init__(daemon=True)
        self.port, self.host_pid = port, host_pid
        self.latencies, self.failures, self.hwm = [], [], 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                status, body = request(self.port, "GET", "/healthy", timeout=5, source="127.0.0.1")
                if status != 200 or json.loads(body) != {"/healthy": "ok"}:
                    self.failures.append(f"status {status}")
            except (OSError, ValueError) as e:
                self.failures.append(repr(e))
            self.latencies.append(time.monotonic() - start)
            self.hwm = max(self.hwm, vm_hwm(self.host_pid))
            self.stop.wait(0.02)

    def p99(self):
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else None


class HostileMasterTest(harness.LaunchTestCase):
    """Attacks on the master of a running job."""

    def setUp(self):
        super().setUp()
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit[1], limit[1]))

    def start_job(self, seconds=RANK_SECONDS, wrapper=(), until=None):
        """A job of two nodes whose ranks run `seconds`, or until the file `until` exists."""
        port = free_port(self)
        ranks = ("--sleep", seconds) if until is None else ("--await", until, "--await_timeout", 600)
        args = ["--master", f"127.0.0.1:{port}", "--nnodes", 2, "--heartbeat_timeout", HEARTBEAT,
                "--rendezvous_timeout", 60] + self.rank_args(*ranks)
        host = self.start_launch(args, name="host", wrapper=wrapper)

        def serving():
            try:
                return request(port, "GET", "/healthy", timeout=2, source="127.0.0.1")[0] == 200
            except OSError:
                return False
        self.wait_until(serving, "the master to serve", timeout=20)
        node = self.start_launch(args, name="node")
        self.wait_until(lambda: len(list(self.rec.glob("env.*.json"))) == 2,
                        "both ranks to start", timeout=30)
        return port, host, node

    def attack(self, port, host, body, p99_limit=HEALTHY_P99):
        prober = Prober(port, host.pid)
        prober.start()
        try:
            body()
        finally:
            time.sleep(0.2)
            prober.stop.set()
            prober.join(10)
        print(f"hostile measured: {self._testMethodName}: /healthy p99 "
              f"{prober.p99() * 1000:.1f} ms over {len(prober.latencies)} probes, "
              f"host VmHWM {prober.hwm / 1048576:.1f} MiB", file=sys.stderr)
        self.assertEqual(prober.failures, [])
        self.assertLess(prober.p99(), p99_limit)
        self.assertLess(prober.hwm, HWM_LIMIT)
        return prober

    def hold_connections(self, port, sockets, count, sources=(ATTACKER,), send=b"",
                         receive_buffer=None):
        """Adds to `sockets` `count` connections from `sources` in turn, each sending `send`
        and never reading (a small `receive_buffer` keeps answers in the server's kernel
        buffers); those refused are skipped, as a flooder would."""
        for i in range(count):
            try:
                s = attacker_socket(port, timeout=2, source=sources[i % len(sources)])
                if receive_buffer:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
                if send:
                    s.sendall(send)
                sockets.append(s)
            except OSError:
                pass

    def attack_holding(self, port, host, sockets, body, **limits):
        """attack() with `body`, then every socket in `sockets` closed."""
        try:
            return self.attack(port, host, body, **limits)
        finally:
            for s in sockets:
                s.close()

    def assert_job_succeeds(self, host, node):
        for proc in (host, node):
            result = self.finish(proc, timeout=60)
            self.assertEqual(result.code, 0, result)
            self.assertNotIn("field value too large", result.stderr)

    def test_chunked_requests_and_their_trailers_are_refused_before_they_are_read(self):
        port, host, node = self.start_job()

        def body():
            # One trailer field of 65 534 bytes made Beast 1.81 throw out of the loop: the
            # launcher, and with it every rank of the job, died within milliseconds.
            head = b"PUT /k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            answer = send_raw(port, head + b"0\r\nX: " + b"a" * 65534 + b"\r\n\r\n")
            self.assertTrue(answer.startswith(b"HTTP/1.1 411"), answer[:80])
            # Trailer lines without end: refused at the header, nothing of them is kept.
            with attacker_socket(port) as s:
                s.sendall(head + b"1\r\nx\r\n0\r\n")
                try:
                    for _ in range(2000):
                        s.sendall(b"X-T: " + b"b" * 4000 + b"\r\n")
                except OSError:
                    pass  # Closed on us: what we want.
        self.attack(port, host, body)
        self.assert_job_succeeds(host, node)

    def test_large_values_and_prefix_gets_are_bounded_and_encoded_once(self):
        port, host, node = self.start_job(seconds=8)

        def body():
            statuses = [request(port, "PUT", f"/fill/{i}", b"\x01" * (4 << 20))[0]
                        for i in range(16)]
            self.assertIn(200, statuses)
            self.assertIn(413, statuses)  # The store's 32 MiB are full before 16 x 4 MiB.
            start = time.monotonic()
            status, _ = request(port, "GET", "/")
            self.assertEqual(status, 413)  # Over the 4 MiB answer bound, refused at once.
            self.assertLess(time.monotonic() - start, 1.0)
            # Eight long-polls that never read their answer, then a one-byte change.
            polls = []
            for _ in range(8):
                s = attacker_socket(port)
                s.sendall(b"GET /fill/0?wait=999999999&timeout=30 HTTP/1.1\r\nHost: x\r\n\r\n")
                polls.append(s)
            time.sleep(0.2)
            start = time.monotonic()
            self.assertEqual(request(port, "PUT", "/fill/0", b"x")[0], 200)
            print(f"hostile measured: a 1-byte PUT with 8 unread polls parked took "
                  f"{(time.monotonic() - start) * 1000:.1f} ms", file=sys.stderr)
            self.assertLess(time.monotonic() - start, 1.0)
            for s in polls:
                s.close()
        # Under ASan a 4 MiB value's copy and encoding is many times slower: 1.5 s there (677 ms
        # measured once in a Clang -O0 build); the release bound catches a stall of seconds.
        self.attack(port, host, body, p99_limit=1.5 if SANITIZED else HEALTHY_P99)
        self.assert_job_succeeds(host, node)

    def test_a_connection_flood_from_one_address_shuts_no_node_out(self):
        port, host, node = self.start_job(seconds=HEARTBEAT + 5)
        sockets = []

        def body():
            # 600 long-polls that would hold their slots for 60 s, then idle connections up to
            # 5 000 in all; held for longer than --heartbeat_timeout.
            self.hold_connections(port, sockets, 600, send=b"GET /nothing?wait=999999999&"
                                  b"timeout=60 HTTP/1.1\r\nHost: x\r\n\r\n")
            self.hold_connections(port, sockets, 4400)
            time.sleep(HEARTBEAT + 1)
        self.attack_holding(port, host, sockets, body)
        self.assert_job_succeeds(host, node)

    def test_long_polls_from_many_addresses_and_the_nodes_own_shut_no_node_out(self):
        # 600 long-polls from 30 addresses and 100 from the nodes' own address (127.0.0.1: nodes
        # simulated on one host share it), held past --heartbeat_timeout: every slot and the
        # nodes' address's share are taken, and each new connection closes the oldest instead
        # of being refused. Before, both nodes failed their heartbeat in 3.4-4.0 s.
        port, host, node = self.start_job(seconds=HEARTBEAT + 5)
        sockets = []

        def body():
            sources = [f"127.0.0.{10 + i}" for i in range(30)] + ["127.0.0.1"] * 5
            self.hold_connections(port, sockets, 700, sources, send=b"GET /default/info/?wait="
                                  b"999999999&timeout=60 HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(HEARTBEAT + 1)
        self.attack_holding(port, host, sockets, body)
        self.assert_job_succeeds(host, node)

    def test_answers_nobody_reads_are_bounded_in_bytes(self):
        # 400 GETs from 20 addresses of a prefix of 3.75 MiB, never read: at most 64 MiB of
        # answers are in flight (the oldest unread ones are closed), and the loop keeps
        # answering /healthy.
        port, host, node = self.start_job(seconds=HEARTBEAT + 5)
        chunk = b"v" * (256 << 10)
        for i in range(15):
            self.assertEqual(request(port, "PUT", f"/default/big/k{i:02}", chunk)[0], 200)
        sockets = []
        peak = [0]

        def body():
            self.hold_connections(port, sockets, 400, [f"127.0.0.{40 + i}" for i in range(20)],
                                  send=b"GET /default/big/ HTTP/1.1\r\nHost: x\r\n\r\n",
                                  receive_buffer=4096)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                peak[0] = max(peak[0], tcp_memory_bytes())
                time.sleep(0.05)
        # Under ASan every answer's write and close is several times slower: 1.5 s there
        # (3.6 s was the stall this bound catches, in a release build).
        self.attack_holding(port, host, sockets, body,
                            p99_limit=1.5 if SANITIZED else HEALTHY_P99)
        print(f"hostile measured: kernel TCP memory peak {peak[0] / 1048576:.0f} MiB",
              file=sys.stderr)
        # At most 64 MiB of answers in flight, evicted ones closed abortively (22 MiB measured;
        # 206 MiB with orphaned connections left to time out). Other tests may run beside it.
        self.assertLess(peak[0], 128 << 20)
        self.assert_job_succeeds(host, node)

    def test_a_full_store_leaves_room_for_the_jobs_records(self):
        port, host, node = self.start_job(seconds=5)

        def body():
            # Values until the store refuses even 16 bytes: the nodes still report done.
            size, i = 1 << 20, 0
            while size >= 16:
                i += 1
                if request(port, "PUT", f"/junk/{i}", b"j" * size)[0] == 413:
                    size //= 4
            self.assertEqual(request(port, "PUT", "/junk/last", b"j" * 16)[0], 413)
        self.attack(port, host, body)
        self.assert_job_succeeds(host, node)

    def test_writes_stay_fast_with_fifteen_thousand_keys(self):
        # The job runs until the writes are done: with a fixed 20 s, a machine at load 16 (and
        # the ASan tree) outlasted it, and the writes met a master that had gone
        # (ConnectionResetError, then ConnectionRefusedError; issue #42 item 10).
        done = self.dir / "writes-done"
        port, host, node = self.start_job(until=done)

        def rate(count):
            start = time.monotonic()
            for i in range(count):
                request(port, "PUT", f"/default/rate/{i % 50}", b"v")
            return count / (time.monotonic() - start)

        def body():
            empty = rate(300)
            # Under the job's own prefix, where the host looks for its peers.
            for i in range(15000):
                request(port, "PUT", f"/default/many/{i:05d}", b"v", source=ATTACKER)
            full = rate(300)
            print(f"hostile measured: PUT rate through one client, 0 keys {empty:.0f}/s, "
                  f"15 000 keys {full:.0f}/s", file=sys.stderr)
            self.assertGreater(full, empty * 0.5)
        try:
            self.attack(port, host, body)
        finally:
            done.touch()
        self.assert_job_succeeds(host, node)

    def test_a_hostile_failure_record_reaches_the_console_escaped(self):
        port, host, node = self.start_job(seconds=30)
        record = {"node": "\x1b]0;owned\x07", "pod": "p",
                  "cause": "x\x1b[2J\x1b]0;owned\x07\rfake line\u009b", "exit_code": 1e300}
        status, _ = request(port, "PUT", "/default/pdlaunch/news/failure",
                            json.dumps(record).encode())
        self.assertEqual(status, 200)
        for proc in (host, node):
            result = self.finish(proc, timeout=30)
            # Any client may write a failure record (the protocol has no authentication): the
            # job stops, and says so without letting the record act on the terminal.
            self.assertEqual(result.code, 1, result)
            raw = (self.dir / f"{proc.pdl_name}.stderr").read_bytes()
            for byte in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b"):
                self.assertNotIn(byte, raw)
            self.assertIn(r"x\x1b[2J\x1b]0;owned\x07\rfake line\xc2\x9b", result.stderr)

    def test_accept_errors_pause_instead_of_spinning(self):
        if SANITIZED:
            # UBSan's vptr check opens a pipe to test memory: at the descriptor limit it fails
            # and reports a false "invalid vptr" from Boost's error categories.
            self.skipTest("SKIPPED: the sanitizer runtime needs descriptors the test takes away")
        # The host may hold 64 descriptors: a few dozen connections make accept() fail with
        # EMFILE, which used to re-arm at once and spin at 100 % CPU.
        port, host, node = self.start_job(seconds=HEARTBEAT + 2,
                                          wrapper=("prlimit", "--nofile=64:64", "--"))
        sockets = []
        try:
            # From four addresses, so that the per-address bound does not keep them out.
            for i in range(160):
                try:
                    sockets.append(attacker_socket(port, timeout=1, source=f"127.0.0.{10 + i % 4}"))
                except OSError:
                    pass
            before = cpu_seconds(host.pid)
            time.sleep(2)
            used = cpu_seconds(host.pid) - before
            print(f"hostile measured: host CPU with accept() failing: {used:.2f} s in 2 s",
                  file=sys.stderr)
            self.assertLess(used, 0.5)
        finally:
            for s in sockets:
                s.close()
        self.assert_job_succeeds(host, node)


class HostileWorldTest(harness.LaunchTestCase):
    """Hostile review #38 item 1: the host's decisions are written by the host alone, and a
    participant adopts a world only with its own record as it published it."""

    def test_the_world_and_the_news_are_refused_from_the_network(self):
        port = free_port(self)
        args = ["--master", f"127.0.0.1:{port}", "--nnodes", 2, "--rendezvous_timeout", 60]
        host = self.start_launch(args + self.rank_args(), name="host")
        self.wait_until(lambda: (self.dir / "host.stderr").read_text().count("hosts the master"),
                        "the master to serve", timeout=20)
        world = b"1\n" + b"x" * 10
        for method, path, body in (("PUT", "/default/pdlaunch/world", world),
                                   ("POST", "/default/pdlaunch/news/formed", b'{"nodes": 2}'),
                                   ("DELETE", "/default/pdlaunch/news/terms", None),
                                   ("PUT", "/default/pdlaunch/news/refused/abcdef", b"x")):
            self.assertEqual(request(port, method, path, body)[0], 403, (method, path))
        node = self.start_launch(args + self.rank_args(), name="node")
        for proc in (host, node):
            result = self.finish(proc, timeout=60)
            self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(2)
        self.assertEqual([e["PADDLE_TRAINERS_NUM"] for e in envs], ["2", "2"])

    def test_a_node_whose_record_was_rewritten_starts_nothing(self):
        port = free_port(self)
        args = ["--master", f"127.0.0.1:{port}", "--nnodes", 3, "--rendezvous_timeout", 60,
                "--heartbeat_timeout", 3]
        host = self.start_launch(args + self.rank_args("--sleep", 30), name="host")
        self.wait_until(lambda: (self.dir / "host.stderr").read_text().count("hosts the master"),
                        "the master to serve", timeout=20)
        victim = self.start_launch(args + self.rank_args("--sleep", 30), name="victim")

        def victims_record():
            status, body = request(port, "GET", "/default/info/", source="127.0.0.1")
            records = json.loads(body) if status == 200 else {}
            return [(k, v) for k, v in records.items() if "aaaaaa" not in k]
        self.wait_until(lambda: victims_record(), "the second node to register", timeout=30)
        key, value = victims_record()[0]
        forged = json.loads(value)
        forged["endpoints"] = "127.0.0.9:1,127.0.0.9:2,127.0.0.9:3"
        forged["replicas"] = 3
        self.assertEqual(request(port, "PUT", key, json.dumps(forged).encode())[0], 200)
        last = self.start_launch(args + self.rank_args("--sleep", 30), name="last")
        result = self.finish(victim, timeout=60)
        self.assertEqual(result.code, 1, result)
        self.assertIn("holds another record for this node (127.0.0.1) than the one it published",
                      result.stderr.splitlines()[-1])
        self.assertNotIn("Run Pod", result.stderr)  # It started nothing.
        for proc in (host, last):  # Its heartbeat gone, the others stop.
            self.assertNotEqual(self.finish(proc, timeout=60).code, 0)


class HostileMemberTest(harness.LaunchTestCase):
    """Hostile review #38 item 4: a stranger that registers as a node and keeps its heartbeat
    fresh, but runs no rank, holds the host for a bound, not forever, and is named."""

    def test_a_member_that_only_heartbeats_fails_the_job_within_a_bound(self):
        port = free_port(self)
        heartbeat = 3
        host = self.start_launch(["--master", f"127.0.0.1:{port}", "--nnodes", 2,
                                  "--heartbeat_timeout", heartbeat, "--rendezvous_timeout", 60]
                                 + self.rank_args("--sleep", 1), name="host")
        self.wait_until(lambda: (self.dir / "host.stderr").read_text().count("hosts the master"),
                        "the master to serve", timeout=20)
        stop = threading.Event()

        def stranger():
            record = {"name": "zzzzzz", "rank": -1, "replicas": 1, "dtype": "cpu",
                      "candidate": f"{ATTACKER}:1", "endpoints": f"{ATTACKER}:2"}
            request(port, "PUT", "/default/pdlaunch/alive/zzzzzz?ttl=3", b"1")
            request(port, "PUT", "/default/pdlaunch/node_terms/zzzzzz",
                    json.dumps({"nnodes": 2, "mode": "collective", "node": ATTACKER}).encode())
            request(port, "PUT", "/default/info/zzzzzz/-1", json.dumps(record).encode())
            while not stop.wait(0.5):  # Its heartbeat, never "running", never done.
                try:
                    request(port, "PUT", "/default/pdlaunch/alive/zzzzzz?ttl=3", b"1")
                except OSError:
                    return
        thread = threading.Thread(target=stranger)
        thread.start()
        try:
            result = self.finish(host, timeout=90)
        finally:
            stop.set()
            thread.join(10)
        self.assertEqual(result.code, 1, result)
        # The host's rank ran 1 s; the bound is 2 x --heartbeat_timeout + 5 s after the forming.
        self.assertLess(result.elapsed, 1 + 2 * heartbeat + 5 + 20, result)
        self.assertIn(f"node {ATTACKER} (zzzzzz) joined the world of job default but started no "
                      "rank within 11 s: a stranger's records, or a launcher of another version; "
                      "stopping the job", result.stderr)


class HostileTokenTest(harness.LaunchTestCase):
    """Hostile review #38 item 2: with PDLAUNCH_JOB_TOKEN on every node, a stranger can neither
    read nor write the job's keys, and the token is written nowhere."""

    TOKEN = "tok-0123456789abcdef-secret"

    def start_job(self, port, host_env, node_env, *extra):
        args = ["--master", f"127.0.0.1:{port}", "--nnodes", 2, "--rendezvous_timeout", 60,
                "--log_dir", "logs", "--report", "report.json"] + list(extra)
        host = self.start_launch(args + self.rank_args("--sleep", 2), env=host_env,
                                 cwd=self.node_dir("host"), name="host")
        self.wait_until(lambda: (self.dir / "host.stderr").read_text().count("hosts the master"),
                        "the master to serve", timeout=20)
        node = self.start_launch(args + self.rank_args("--sleep", 2), env=node_env,
                                 cwd=self.node_dir("node"), name="node")
        return host, node

    def node_dir(self, name):
        path = self.dir / name
        path.mkdir(exist_ok=True)
        return path

    def test_a_stranger_without_the_token_reads_and_writes_nothing(self):
        port = free_port(self)
        env = self.env(PDLAUNCH_JOB_TOKEN=self.TOKEN)
        host, node = self.start_job(port, env, env)
        refused = []
        for method, path, body in (("GET", "/default/info/", None), ("GET", "/healthy", None),
                                   ("PUT", "/default/pdlaunch/news/failure", b'{"x": 1}'),
                                   ("DELETE", "/default/pdlaunch/world", None)):
            refused.append(request(port, method, path, body)[0])
        # The token presented by a stranger who knows it would work; another one does not.
        conn = socket.create_connection(("127.0.0.1", port), timeout=10,
                                        source_address=(ATTACKER, 0))
        conn.sendall(b"GET /healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Authorization: Bearer tok-0123456789abcdef-secreT\r\n\r\n")
        refused.append(int(conn.recv(4096).split(b" ", 2)[1]))
        conn.close()
        self.assertEqual(refused, [401] * 5)
        for proc in (host, node):
            result = self.finish(proc, timeout=60)
            self.assertEqual(result.code, 0, result)
        envs = self.recorded_envs(2)
        self.assertEqual([e["PADDLE_TRAINERS_NUM"] for e in envs], ["2", "2"])
        # Written nowhere: no rank inherits it, and no file, log line or report holds it.
        for e in envs:
            self.assertNotIn("PDLAUNCH_JOB_TOKEN", e)
        for path in self.dir.rglob("*"):
            if path.is_file():
                self.assertNotIn(self.TOKEN, path.read_text(errors="replace"), path)
        dry = self.run_launch(["--dry_run", "--master", f"127.0.0.1:{port}", "--nnodes", 2]
                              + self.rank_args(), env=env)
        self.assertEqual(dry.code, 0, dry)
        self.assertNotIn(self.TOKEN, dry.stdout + dry.stderr)

    def test_a_node_without_the_token_or_with_another_is_refused_in_one_line(self):
        port = free_port(self)
        env = self.env(PDLAUNCH_JOB_TOKEN=self.TOKEN)
        for node_env, why in ((self.env(), "has none in its environment"),
                              (self.env(PDLAUNCH_JOB_TOKEN="another-token-0123456789"),
                               "presents another one")):
            with self.subTest(why=why):
                host, node = self.start_job(port, env, node_env, "--heartbeat_timeout", 3)
                result = self.finish(node, timeout=60)
                self.assertEqual(result.code, 1, result)
                self.assertEqual(result.stderr.splitlines()[-1],
                                 f"launch: error: the master at 127.0.0.1:{port} takes a job "
                                 f"token, and this node {why}: give every node the same "
                                 'PDLAUNCH_JOB_TOKEN (docs/master.md, "Exposure")')
                host.kill()
                self.finish(host, timeout=60)

    def test_a_node_with_the_token_refuses_a_master_that_does_not_check_it(self):
        port = free_port(self)
        host, node = self.start_job(port, self.env(), self.env(PDLAUNCH_JOB_TOKEN=self.TOKEN),
                                    "--heartbeat_timeout", 3)
        result = self.finish(node, timeout=60)
        self.assertEqual(result.code, 1, result)
        self.assertIn("this node has a job token (PDLAUNCH_JOB_TOKEN), and the master at "
                      f"127.0.0.1:{port} does not check one (its node has none)",
                      result.stderr.splitlines()[-1])
        host.kill()
        self.finish(host, timeout=60)

    def test_a_malformed_token_is_a_usage_error_that_does_not_show_it(self):
        result = self.run_launch(self.rank_args(), env=self.env(PDLAUNCH_JOB_TOKEN="short one"))
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         "launch: error: PDLAUNCH_JOB_TOKEN: the token is 9 characters long; it "
                         "takes 16 to 1024")
        self.assertEqual(list(self.rec.iterdir()), [])


class HostileLogDirTest(harness.LaunchTestCase):
    """Hostile review #38 item 7: a log directory another user can write, and links planted in
    it, are never written through."""

    def test_a_directory_of_another_user_is_refused_before_anything_starts(self):
        shared = self.dir / "shared"
        shared.mkdir()
        os.chown(shared, 65534, 65534)
        result = self.run_launch(["--log_dir", shared] + self.rank_args())
        self.assertEqual(result.code, 1, result)
        self.assertEqual(result.stderr.splitlines()[-1],
                         f"launch: error: log directory '{shared}' can be written by another user "
                         "(owned by uid 65534; mode 755): a file or link planted there would be "
                         "written through; use a directory of your own, or make it sticky "
                         "(chmod +t)")
        self.assertEqual(list(self.rec.iterdir()), [])

    def test_links_planted_in_a_sticky_directory_are_not_written_through(self):
        sticky = self.dir / "sticky"
        sticky.mkdir()
        sticky.chmod(0o1777)
        victim = self.dir / "victim"
        victim.write_text("untouched\n")
        for name in ("workerlog.0", "endpoints.log"):
            for left in sticky.iterdir():  # What the previous run wrote.
                left.unlink()
            (sticky / name).symlink_to(victim)
            result = self.run_launch(["--log_dir", sticky] + self.rank_args())
            self.assertEqual(result.code, 1, result)
            self.assertIn("Too many levels of symbolic links", result.stderr.splitlines()[-1])
            self.assertEqual(victim.read_text(), "untouched\n")
        self.assertEqual(list(self.rec.iterdir()), [])

    def test_files_holding_the_environment_are_the_users_alone(self):
        result = self.run_launch(["--job_id", "j", "--log_dir", "logs"] + self.rank_args(),
                                 env=self.env(SECRET_TOKEN="s3cret"))
        self.assertEqual(result.code, 0, result)
        logs = self.dir / "logs"
        pod_log = next(logs.glob("j.*.log"))
        self.assertIn("s3cret", pod_log.read_text())
        for path in (pod_log, logs / "envlog.0"):
            self.assertEqual(path.stat().st_mode & 0o777, 0o600, path)


class HostileMasterAnswerTest(harness.LaunchTestCase):
    """A 'master' that answers every request with a chunked response whose trailer field is 65 534
    bytes (what Beast 1.81 throws on), against a participant."""

    def test_a_participant_survives_a_master_that_sends_a_huge_trailer(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = listener.getsockname()[1]
        stop = threading.Event()

        def serve():
            listener.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                with conn:
                    try:
                        conn.settimeout(2)
                        conn.recv(65536)
                        conn.sendall(b"HTTP/1.1 200 OK\r\nServer: pdlaunch/0\r\n"
                                     b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX: "
                                     + b"a" * 65534 + b"\r\n\r\n")
                    except OSError:
                        pass
        server = threading.Thread(target=serve, daemon=True)
        server.start()
        self.addCleanup(lambda: (stop.set(), server.join(5), listener.close()))
        result = self.run_launch(["--master", f"127.0.0.1:{port}", "--nnodes", 2,
                                  "--rendezvous_timeout", 4] + self.rank_args(), timeout=30)
        self.assertEqual(result.code, 1, result)
        self.assertNotIn("field value too large", result.stderr)
        self.assertRegex(result.stderr, r"launch: error: rendezvous timed out after 4 s")
        self.assertRegex(result.stderr, re.escape("receive: "))


class EtcdProxy(threading.Thread):
    """A hostile etcd gateway in front of a real one: every call is forwarded (one upstream
    connection per call), except what `mode` answers itself:
      watch_flood    /v3/watch: "created", then 12 MiB of one message without a newline;
      unary_trailer  /v3/kv/range: a chunked answer whose trailer field is 65 534 bytes;
      error_escape   /v3/kv/range: HTTP 500 with an etcd error full of terminal escapes."""

    def __init__(self, upstream, mode):
        super().__init__(daemon=True)
        self.upstream, self.mode = upstream, mode
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.endpoint = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.stop = threading.Event()
        self.served = []

    def run(self):
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        with conn:
            conn.settimeout(30)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                while len(body) < length:
                    body += conn.recv(65536)
                path = head.split(b" ")[1].decode()
                self.served.append(path)
                self.answer(conn, head, body, path)
            except (OSError, AttributeError, ValueError):
                pass

    def answer(self, conn, head, body, path):
        if self.mode == "watch_flood" and path == "/v3/watch":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            created = b'{"result":{"header":{"revision":"1"},"created":true}}\n'
            conn.sendall(b"%x\r\n%s\r\n" % (len(created), created))
            for _ in range(12):
                conn.sendall(b"%x\r\n%s\r\n" % (1 << 20, b"a" * (1 << 20)))
            self.stop.wait(30)
            return
        if self.mode == "unary_trailer" and path == "/v3/kv/range":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n"
                         b"0\r\nX: " + b"a" * 65534 + b"\r\n\r\n")
            return
        if self.mode == "error_escape" and path == "/v3/kv/range":
            error = json.dumps({"error": "x", "code": 2,
                                "message": "\x1b[2J\x1b]0;owned\x07\rforged\u009b"}).encode()
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (len(error), error))
            return
        head = re.sub(rb"(?i)\r\nconnection:[^\r]*", b"", head) + b"\r\nConnection: close"
        host, port = self.upstream.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as up:
            up.sendall(head + b"\r\n\r\n" + body)
            while True:
                chunk = up.recv(65536)
                if not chunk:
                    break
                conn.sendall(chunk)

    def close(self):
        self.stop.set()
        self.join(5)
        self.listener.close()


class HostileEtcdTest(harness.LaunchTestCase):
    """A hostile etcd gateway against an elastic node (issue #25 items 1, 6, 7)."""

    def start_node(self, mode, timeout="20"):
        etcd = EtcdServer(self.dir / "etcd.log")
        self.addCleanup(etcd.close)
        etcd.start()
        proxy = EtcdProxy(etcd.endpoint, mode)
        proxy.start()
        self.addCleanup(proxy.close)
        env = self.env(PADDLE_ELASTIC_TTL="3", PADDLE_ELASTIC_TIMEOUT=timeout)
        return proxy, self.start_launch(["--elastic_server", proxy.endpoint, "--job_id", "job1",
                                         "--np", "2", "--host", "127.0.0.2"] + self.rank_args(),
                                        env=env)

    def test_a_watch_message_without_end_is_cut_at_its_bound(self):
        proxy, node = self.start_node("watch_flood")
        err = self.dir / "launcher.stderr"
        self.wait_until(lambda: "a message over 8388608 bytes" in err.read_text(errors="replace"),
                        "the watch to break at its bound", timeout=30)
        hwm = vm_hwm(node.pid)
        print(f"hostile measured: elastic node VmHWM after 12 MiB of one watch message "
              f"{hwm / 1048576:.1f} MiB", file=sys.stderr)
        self.assertLess(hwm, HWM_LIMIT)
        self.assertIsNone(node.poll(), "the node died instead of retrying")
        node.send_signal(15)
        self.assertEqual(self.finish(node, timeout=20).code, 143)

    def test_a_unary_answer_with_a_huge_trailer_fails_the_call_not_the_node(self):
        proxy, node = self.start_node("unary_trailer", timeout="3")
        result = self.finish(node, timeout=30)
        self.assertEqual(result.code, 1, result)
        self.assertNotIn("field value too large", result.stderr)
        # As any other failed etcd call at that point: one line naming the call and why.
        self.assertRegex(result.stderr, r"launch: error: etcd 127\.0\.0\.1:\d+: POST /v3/kv/range: "
                                        r"malformed answer: ")

    def test_an_etcd_error_message_reaches_the_console_escaped(self):
        proxy, node = self.start_node("error_escape", timeout="3")
        result = self.finish(node, timeout=30)
        self.assertEqual(result.code, 1, result)
        raw = (self.dir / "launcher.stderr").read_bytes()
        for byte in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b"):
            self.assertNotIn(byte, raw)
        self.assertIn(r"\x1b[2J\x1b]0;owned\x07\rforged\xc2\x9b", result.stderr)


if __name__ == "__main__":
    harness.main()
