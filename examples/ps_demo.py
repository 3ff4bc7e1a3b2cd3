"""A small parameter-server job over TCP, Python standard library only (issue #4).

    build/launch --server_num 2 --worker_num 4 examples/ps_demo.py

The role comes from TRAINING_ROLE, as the launcher sets it:

* PSERVER: listens on PADDLE_PORT (all interfaces) and holds one shard of a float parameter
  vector (--dim values, all --init at first, split into contiguous shards over the servers in
  PADDLE_PSERVERS_IP_PORT_LIST order). It serves pulls and gradient pushes, applies SGD
  (param -= lr * grad) and runs until SIGTERM (exit 0), or until a worker sends "stop".
* TRAINER: for --steps steps pulls every shard, computes the gradient
  grad[j] = 0.01 * (j + 1) * (PADDLE_TRAINER_ID + 1) * (step + 1) and pushes each server its
  part. Then it tells every server it is done. Worker 0 waits until every server counted
  PADDLE_TRAINERS_NUM done workers, pulls the final parameters and prints
  `final parameters: [0.8500, 0.7000, ...]` (4 decimals). Gradients do not depend on the
  parameters, so the result is init - lr * (sum of all gradients) whatever the interleaving.
* HETER_TRAINER: has no work in this demo; idles until SIGTERM (exit 0).

Protocol: one JSON object per line each way, on one connection per worker and server:
  {"op": "pull"}                               -> {"ok": true, "offset": 0, "values": [...]}
  {"op": "push", "trainer": 1, "grad": [...]}  -> {"ok": true}
  {"op": "done", "trainer": 1}                 -> {"ok": true, "done": 3}
  {"op": "status"}                             -> {"ok": true, "done": 3, "pushes": 17}
  {"op": "stop"}                               -> {"ok": true}, then the server exits 0
Workers connect with bounded retries (servers may still be starting, or gone).

Test hooks: --fail-worker N (worker N exits 3 after its first step), --fail-server N (server N
exits 5 on its first push, before applying it), --record DIR (each process writes
DIR/<role>.<id>.json with its pid and environment), --stop-servers (worker 0 stops the servers
after printing the result, for a node that runs servers only).
"""
import argparse
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time

ROLE_NAMES = {"PSERVER": "server", "TRAINER": "worker", "HETER_TRAINER": "heter"}


class Terminated(Exception):
    """Raised in the main thread by the SIGTERM handler."""


def say(text, stream=sys.stdout):
    print(text, file=stream, flush=True)


def fail(code, text):
    say(text, sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description="A parameter-server demo over TCP.")
    p.add_argument("--dim", type=int, default=8, help="parameter vector length")
    p.add_argument("--steps", type=int, default=5, help="steps per worker")
    p.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    p.add_argument("--init", type=float, default=1.0, help="initial value of every parameter")
    p.add_argument("--fail-worker", type=int, default=None, help="this worker exits 3")
    p.add_argument("--fail-server", type=int, default=None, help="this server exits 5")
    p.add_argument("--record", default=None, help="directory for <role>.<id>.json records")
    p.add_argument("--stop-servers", action="store_true", help="worker 0 stops the servers")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds a worker keeps retrying a server, or worker 0 waits for all")
    return p.parse_args()


def env(name):
    value = os.environ.get(name)
    if value is None:
        fail(2, f"ps_demo: {name} is not set (run it with the launcher's PS mode)")
    return value


def endpoints(name):
    return [item for item in env(name).split(",") if item]


def own_index(items):
    """This process's index in an endpoint list: POD_IP:PADDLE_PORT, else the one item with
    PADDLE_PORT."""
    port = env("PADDLE_PORT")
    me = f"{os.environ.get('POD_IP', '')}:{port}"
    if me in items:
        return items.index(me)
    same_port = [i for i, item in enumerate(items) if item.rpartition(":")[2] == port]
    if len(same_port) != 1:
        fail(2, f"ps_demo: cannot find {me} in {','.join(items)}")
    return same_port[0]


def shard_range(index, servers, dim):
    return index * dim // servers, (index + 1) * dim // servers


def gradient(trainer, step, dim):
    return [0.01 * (j + 1) * (trainer + 1) * (step + 1) for j in range(dim)]


def format_vector(values):
    return "[" + ", ".join(f"{round(v, 4) + 0.0:.4f}" for v in values) + "]"


def record(args, role, index):
    if not args.record:
        return
    path = os.path.join(args.record, f"{role}.{index}.json")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"pid": os.getpid(), "role": role, "id": index, "env": dict(os.environ)}, f)
    os.rename(tmp, path)


def on_sigterm(_signum, _frame):
    raise Terminated()


# --- server ---------------------------------------------------------------------------------


class Shard:
    """One server's slice of the parameters; every method is thread-safe."""

    def __init__(self, index, offset, values, lr, crash_on_push):
        self.index, self.offset, self.values, self.lr = index, offset, values, lr
        self.crash_on_push = crash_on_push
        self.lock = threading.Lock()
        self.done = set()
        self.pushes = 0

    def handle(self, request):
        op = request.get("op")
        with self.lock:
            if op == "pull":
                return {"ok": True, "offset": self.offset, "values": list(self.values)}
            if op == "push":
                return self.push(request)
            if op == "done":
                self.done.add(request["trainer"])
                return {"ok": True, "done": len(self.done)}
            if op == "status":
                return {"ok": True, "done": len(self.done), "pushes": self.pushes}
            if op == "stop":
                return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def push(self, request):
        if self.crash_on_push:
            say(f"server {self.index}: crashing on purpose (--fail-server)")
            os._exit(5)
        grad = request["grad"]
        if len(grad) != len(self.values):
            return {"ok": False, "error": f"gradient of {len(grad)} values, shard has "
                                          f"{len(self.values)}"}
        self.values = [v - self.lr * g for v, g in zip(self.values, grad)]
        self.pushes += 1
        return {"ok": True}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            request = json.loads(line)
            reply = self.server.shard.handle(request)
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()
            if request.get("op") == "stop":
                say(f"server {self.server.shard.index}: stop requested")
                threading.Thread(target=self.server.shutdown, daemon=True).start()
                return


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def run_server(args):
    servers = endpoints("PADDLE_PSERVERS_IP_PORT_LIST")
    index = own_index(servers)
    begin, end = shard_range(index, len(servers), args.dim)
    shard = Shard(index, begin, [args.init] * (end - begin), args.lr,
                  args.fail_server == index)
    signal.signal(signal.SIGTERM, on_sigterm)
    with Server(("", int(env("PADDLE_PORT"))), Handler) as server:
        server.shard = shard
        record(args, "server", index)
        say(f"server {index}: serving parameters [{begin}, {end}) on port {env('PADDLE_PORT')}")
        try:
            server.serve_forever(poll_interval=0.1)
        except Terminated:
            say(f"server {index}: SIGTERM, exiting after {shard.pushes} pushes")
            return 0
    say(f"server {index}: stopped after {shard.pushes} pushes")
    return 0


# --- worker ---------------------------------------------------------------------------------


class Client:
    """A connection to one server that reconnects and retries until a deadline."""

    def __init__(self, endpoint, timeout):
        host, _, port = endpoint.rpartition(":")
        self.endpoint, self.address, self.timeout = endpoint, (host, int(port)), timeout
        self.sock = self.reader = None

    def call(self, request):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._exchange(request)
            except (OSError, ValueError) as e:
                self.close()
                if time.monotonic() > deadline:
                    fail(1, f"ps_demo: server {self.endpoint} unreachable for "
                            f"{self.timeout:.0f}s: {e}")
                time.sleep(0.1)

    def _exchange(self, request):
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=self.timeout)
            self.reader = self.sock.makefile("rb")
        self.sock.sendall((json.dumps(request) + "\n").encode())
        line = self.reader.readline()
        if not line:
            raise ValueError("connection closed")
        reply = json.loads(line)
        if not reply.get("ok"):
            fail(1, f"ps_demo: server {self.endpoint} refused {request['op']}: {reply}")
        return reply

    def close(self):
        if self.sock is not None:
            self.reader.close()
            self.sock.close()
        self.sock = self.reader = None


def pull_all(clients, dim):
    params = [0.0] * dim
    for client in clients:
        reply = client.call({"op": "pull"})
        offset = reply["offset"]
        params[offset:offset + len(reply["values"])] = reply["values"]
    return params


def wait_all_done(clients, trainers, timeout):
    deadline = time.monotonic() + timeout
    for client in clients:
        while client.call({"op": "status"})["done"] < trainers:
            if time.monotonic() > deadline:
                fail(4, f"ps_demo: not every one of the {trainers} workers finished within "
                        f"{timeout:.0f}s")
            time.sleep(0.05)


def run_worker(args):
    trainer = int(env("PADDLE_TRAINER_ID"))
    trainers = int(env("PADDLE_TRAINERS_NUM"))
    servers = endpoints("PADDLE_PSERVERS_IP_PORT_LIST")
    record(args, "worker", trainer)
    clients = [Client(endpoint, args.timeout) for endpoint in servers]
    for step in range(args.steps):
        params = pull_all(clients, args.dim)
        grad = gradient(trainer, step, args.dim)
        for index, client in enumerate(clients):
            begin, end = shard_range(index, len(servers), args.dim)
            client.call({"op": "push", "trainer": trainer, "grad": grad[begin:end]})
        say(f"worker {trainer} step {step}: pulled {format_vector(params)}, pushed its gradient")
        if args.fail_worker == trainer:
            fail(3, f"worker {trainer}: failing on purpose after step {step} (--fail-worker)")
    for client in clients:
        client.call({"op": "done", "trainer": trainer})
    if trainer == 0:
        wait_all_done(clients, trainers, args.timeout)
        say(f"final parameters: {format_vector(pull_all(clients, args.dim))}")
        if args.stop_servers:
            for client in clients:
                client.call({"op": "stop"})
    return 0


# --- heter worker ---------------------------------------------------------------------------


def run_heter(args):
    heters = endpoints("PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST")
    index = own_index(heters)
    record(args, "heter", index)
    signal.signal(signal.SIGTERM, on_sigterm)
    say(f"heter worker {index}: no work in this demo, idle until stopped")
    try:
        while True:
            time.sleep(3600)
    except Terminated:
        say(f"heter worker {index}: SIGTERM, exiting")
    return 0


def main():
    args = parse_args()
    role = os.environ.get("TRAINING_ROLE", "")
    if role == "PSERVER":
        return run_server(args)
    if role == "TRAINER":
        return run_worker(args)
    if role == "HETER_TRAINER":
        return run_heter(args)
    fail(2, f"ps_demo: TRAINING_ROLE is {role!r}, expected one of {', '.join(ROLE_NAMES)}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
