"""A trainer that proves the world is consistent: a full-mesh exchange of rank ids.

    mesh.py --out DIR [--timeout SECONDS]

Each rank (RANK = PADDLE_TRAINER_ID) listens on PADDLE_CURRENT_ENDPOINT, then connects to every
other endpoint of PADDLE_TRAINER_ENDPOINTS (retrying until --timeout, default 60 s), sends
"rank RANK" and reads the peer's answer "rank PEER". A rank is done when every other rank has
answered it and it has answered every other rank; then it writes DIR/mesh.RANK.json:
  {"rank": R, "endpoint": "ip:port", "answered_by": {peer: "rank PEER"},
   "heard_from": {peer: "source address of its connection"}, "env": {PADDLE_*, MASTER_*, ...}}
and exits 0. Timeout: a line on stderr saying who is missing, exit 3 (no file written).
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

RANK = int(os.environ["PADDLE_TRAINER_ID"])
ENV_KEYS = ("PADDLE_TRAINER_ID", "PADDLE_CURRENT_ENDPOINT", "PADDLE_TRAINERS_NUM",
            "PADDLE_TRAINER_ENDPOINTS", "PADDLE_RANK_IN_NODE", "PADDLE_NNODES",
            "PADDLE_LOCAL_SIZE", "PADDLE_MASTER", "MASTER_ADDR", "MASTER_PORT", "RANK",
            "WORLD_SIZE", "LOCAL_RANK", "PADDLE_WORLD_DEVICE_IDS")


def split_endpoint(text):
    """"host:port" or "[ipv6]:port" -> (host without brackets, port)."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def read_line(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise ConnectionError(f"peer closed after {data!r}")
        data += chunk
    return data.decode().strip()


class Server(threading.Thread):
    """Answers every connection with our rank; records who said hello from which address."""

    def __init__(self, endpoint):
        super().__init__(daemon=True)
        family = socket.AF_INET6 if ":" in split_endpoint(endpoint)[0] else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(split_endpoint(endpoint))
        self.sock.listen(64)
        self.heard_from = {}
        self.lock = threading.Lock()

    def run(self):
        while True:
            conn, peer_address = self.sock.accept()
            address = peer_address[0]
            with conn:
                conn.settimeout(10)
                try:
                    hello = read_line(conn)
                    conn.sendall(f"rank {RANK}\n".encode())
                except OSError:
                    continue
            peer = int(hello.split()[1])
            with self.lock:
                self.heard_from[peer] = address


def ask(endpoint, deadline):
    """Connects to `endpoint` until it answers or the deadline passes; returns its answer."""
    while True:
        try:
            with socket.create_connection(split_endpoint(endpoint), timeout=5) as conn:
                conn.sendall(f"rank {RANK}\n".encode())
                return read_line(conn)
        except OSError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    endpoints = os.environ["PADDLE_TRAINER_ENDPOINTS"].split(",")
    server = Server(os.environ["PADDLE_CURRENT_ENDPOINT"])
    server.start()
    others = [peer for peer in range(len(endpoints)) if peer != RANK]
    answered_by = {peer: ask(endpoints[peer], deadline) for peer in others}
    while True:
        with server.lock:
            heard_from = dict(server.heard_from)
        if set(heard_from) >= set(others) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    missing_answers = [p for p in others if answered_by[p] is None]
    missing_hellos = sorted(set(others) - set(heard_from))
    if missing_answers or missing_hellos:
        print(f"mesh rank {RANK}: no answer from {missing_answers}, no hello from "
              f"{missing_hellos} after {args.timeout}s", file=sys.stderr, flush=True)
        return 3
    result = {"rank": RANK, "endpoint": os.environ["PADDLE_CURRENT_ENDPOINT"],
              "answered_by": answered_by, "heard_from": heard_from,
              "env": {k: os.environ.get(k) for k in ENV_KEYS}}
    tmp = os.path.join(args.out, f".mesh.{RANK}.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.rename(tmp, os.path.join(args.out, f"mesh.{RANK}.json"))
    print(f"mesh rank {RANK}: heard from {sorted(heard_from)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
