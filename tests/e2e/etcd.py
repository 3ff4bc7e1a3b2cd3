"""A real etcd (Debian's etcd-server) for the elastic e2e tests: free locked ports, a temporary
data dir, stopped (and restartable on the same ports and data) by the test. Never skipped: when
/usr/bin/etcd is missing the test fails and says so (scripts/test.sh installs etcd-server)."""
import base64
import fcntl
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ETCD = "/usr/bin/etcd"


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def default_lock_file():
    """The launcher's default port lock file (src/plan/ports.cc, PrivateDirectory): root's in
    /run/pdlaunch, another user's in /run/user/<uid> or /tmp/pdlaunch-<uid>, made 0700."""
    uid = os.geteuid()
    runtime = f"/run/user/{uid}"
    if uid != 0 and os.path.isdir(runtime):
        directory = runtime
    else:
        directory = "/run/pdlaunch" if uid == 0 else f"/tmp/pdlaunch-{uid}"
        os.makedirs(directory, mode=0o700, exist_ok=True)
    return os.path.join(directory, "ports.lock")


class PortReservation:
    """`count` ports held the way the launcher holds its own (src/plan/ports.cc): below the ephemeral
    range, where no outgoing connection is ever given a port (bind(0) answers from inside it,
    so another test's client could take a port between the check and etcd's bind, and again
    while etcd restarts), and OFD-locked in this user's lock file, which launchers and
    other fixtures skip. Held until close()."""

    def __init__(self, count):
        path = os.environ.get("PDLAUNCH_PORT_LOCK_FILE") or default_lock_file()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        self.ports = []
        low, high = 20000, max(20000 + count, _ephemeral_low() - 1)
        start = random.randrange(low, high)
        for i in range(high - low):
            port = low + (start - low + i) % (high - low)
            if self._lock(port) and self._bindable(port):
                self.ports.append(port)
                if len(self.ports) == count:
                    return
            else:
                self._unlock(port)
        raise AssertionError(f"no {count} free ports in {low}-{high}")

    def _flock(self, kind, port):
        return struct.pack("hhxxxxqqixxxx", kind, os.SEEK_SET, port, 1, 0)

    def _lock(self, port):
        try:
            fcntl.fcntl(self.fd, fcntl.F_OFD_SETLK, self._flock(fcntl.F_WRLCK, port))
            return True
        except OSError:
            return False

    def _unlock(self, port):
        fcntl.fcntl(self.fd, fcntl.F_OFD_SETLK, self._flock(fcntl.F_UNLCK, port))

    @staticmethod
    def _bindable(port):
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
                return True
            except OSError:
                return False

    def close(self):
        os.close(self.fd)


def _b64(text):
    return base64.b64encode(text.encode()).decode()


class EtcdServer:
    def __init__(self, log_path):
        if not os.access(ETCD, os.X_OK):
            raise AssertionError(f"{ETCD} is missing: install Debian's etcd-server "
                                 "(scripts/test.sh does)")
        self.ports = PortReservation(2)
        self.client_port, self.peer_port = self.ports.ports
        self.data_dir = tempfile.mkdtemp(prefix="pdlaunch-etcd-")
        self.log_path = log_path
        self.proc = None

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.client_port}"

    def start(self, timeout=20):
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [ETCD, "--name", "default", "--data-dir", self.data_dir,
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"default={peer}"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.call("/v3/kv/range", {"key": _b64("/")})
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"etcd did not come up; see {self.log_path}")
                time.sleep(0.1)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self):
        self.stop()
        self.ports.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def call(self, path, body):
        request = urllib.request.Request(f"http://{self.endpoint}{path}",
                                         data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def keys(self, prefix):
        """{key: value} of every key starting with `prefix`."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        answer = self.call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(end)})
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
                for kv in answer.get("kvs", [])}
