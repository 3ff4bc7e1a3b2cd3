"""Paddle's HTTP master and Paddle's rendezvous, written from the protocol as docs/master.md
describes it ("Rendezvous (Paddle's protocol)", "The wire protocol") alone (not from pdlaunch's
code), to show that pdlaunch interoperates with Paddle's own launcher.

    paddle_kv.py serve PORT          a KV server as Paddle's kv_server.py: HTTP/1.0, one thread,
                                     GET prefix / PUT / POST / DELETE, /healthy = ok; prints
                                     "serving" when it listens
    paddle_kv.py join HOST:PORT JOB NNODES IP REPLICAS [RANK]
                                     a Paddle node's sync_peers: PUT /JOB/info/<pod>/RANK with the
                                     peer JSON (RANK -1 by default; a node of --ips gives its
                                     entry), poll GET /JOB/info every 0.5 s until NNODES peers;
                                     prints the ordered peer list as JSON and exits 0
    paddle_kv.py handshake-host IP NPEERS
                                     the --ips handshake of Paddle 3's master node, written from
                                     the facts of context/__init__.py update_by_ips (not from
                                     pdlaunch's code): bind IP on 6768, 6769, ... up to 6778, accept
                                     until NPEERS distinct client addresses connected, send each
                                     "connect success"; prints "port N", then serves the KV store
                                     there as Paddle's master does
    paddle_kv.py handshake-join MASTER_IP
                                     the same handshake from a node that is not the master's: per
                                     port, 3 tries of connect (5 s timeout), send "connect master",
                                     read the answer, "connect success" ends it; the next port
                                     after three failures (Paddle first sleeps 2 s per port: 0.2 s
                                     here); prints "port N" and exits 0, or exits 1 after 6778
"""
import socket
import http.client
import http.server
import json
import random
import string
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def output(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        found = {k: v.decode() for k, v in self.server.kv.items() if k.startswith(self.path)}
        self.output(200, json.dumps(found).encode()) if found else self.output(404)

    def do_PUT(self):
        length = int(self.headers.get("Content-Length", 0))
        self.server.kv[self.path] = self.rfile.read(length)
        self.output(200)

    do_POST = do_PUT

    def do_DELETE(self):
        self.output(200 if self.server.kv.pop(self.path, None) is not None else 404)


def serve(port):
    server = http.server.HTTPServer(("", port), Handler)
    server.kv = {"/healthy": b"ok"}
    print("serving", flush=True)
    server.serve_forever()


def join(master, job, nnodes, ip, replicas, rank=-1):
    host, port = master.rsplit(":", 1)
    pod = "".join(random.choice(string.ascii_lowercase) for _ in range(6))
    value = json.dumps({"name": pod, "rank": rank, "replicas": replicas, "dtype": "cpu",
                        "candidate": f"{ip}:1", "endpoints": ",".join(
                            f"{ip}:{10 + i}" for i in range(replicas))})
    key = f"/{job}/info/{pod}/{rank}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=5)
            conn.request("POST", key, body=value)
            conn.getresponse().read()
            conn = http.client.HTTPConnection(host, int(port), timeout=5)
            conn.request("GET", f"/{job}/info")
            response = conn.getresponse()
            body = response.read()
            if response.status == 200:
                peers = json.loads(body)
                if len(peers) == nnodes:
                    print(json.dumps([json.loads(peers[k]) for k in sorted(peers)]), flush=True)
                    return 0
        except OSError:
            pass
        time.sleep(0.5)
    return 1


def handshake_host(ip, npeers):
    for port in range(6768, 6779):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.settimeout(200)
        try:
            listener.bind((ip, port))
            listener.listen()
            clients, addresses = [], set()
            while len(addresses) < npeers:
                conn, address = listener.accept()
                addresses.add(address)
                clients.append(conn)
            for conn in clients:
                conn.send(b"connect success")
            # Paddle keeps these connections open until update_by_ips returns, long before its
            # HTTP master binds this port. Here the bind follows at once, so each client is let
            # close first: a connection the host closed first would hold the port (EADDRINUSE).
            for conn in clients:
                conn.settimeout(30)
                conn.recv(1)
                conn.close()
            listener.close()
        except OSError:
            listener.close()
            continue
        print(f"port {port}", flush=True)
        server = http.server.HTTPServer((ip, port), Handler)
        server.kv = {"/healthy": b"ok"}
        server.serve_forever()
    return 1


def handshake_join(master_ip):
    for port in range(6768, 6779):
        time.sleep(0.2)
        for _ in range(3):
            try:
                conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                conn.settimeout(5)
                conn.connect((master_ip, port))
                conn.send(b"connect master")
                if conn.recv(1024).decode() == "connect success":
                    conn.close()
                    print(f"port {port}", flush=True)
                    return 0
            except OSError:
                pass
    return 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "handshake-host":
        sys.exit(handshake_host(sys.argv[2], int(sys.argv[3])))
    elif sys.argv[1] == "handshake-join":
        sys.exit(handshake_join(sys.argv[2]))
    else:
        sys.exit(join(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]),
                      int(sys.argv[7]) if len(sys.argv) > 7 else -1))
