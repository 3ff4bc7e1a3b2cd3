"""A real etcd (Debian's etcd-server) for the elastic e2e tests: free loopback ports, a temporary
data dir, stopped (and restartable on the same ports and data) by the test. Never skipped: when
/usr/bin/etcd is missing the test fails and says so (scripts/test.sh installs etcd-server)."""
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ETCD = "/usr/bin/etcd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _b64(text):
    return base64.b64encode(text.encode()).decode()


class EtcdServer:
    def __init__(self, log_path):
        if not os.access(ETCD, os.X_OK):
            raise AssertionError(f"{ETCD} is missing: install Debian's etcd-server "
                                 "(scripts/test.sh does)")
        self.client_port = free_port()
        self.peer_port = free_port()
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
