"""A configurable trainer for the e2e tests: one process of a launched job.

Steps, in this order, each only when its option is given (RANK = PADDLE_TRAINER_ID):
  --record DIR        write DIR/env.RANK.json (the whole environment, plus "argv") and DIR/pid.RANK
  --await FILE        wait until FILE exists (at most 60 s, else exit 1 with a message)
  --ignore SIGS       ignore these signals, e.g. TERM,INT
  --trap DIR          on SIGUSR1/SIGUSR2 write DIR/got.SIGNAME.RANK and exit 0
  --grandchild DIR    start `sleep 600` in this process group; write its pid to DIR/grandchild.RANK
  --bind              listen on PADDLE_CURRENT_ENDPOINT (and MASTER_PORT on rank 0); exit 98 with
                      "bind HOST:PORT failed: ..." on stderr when it cannot
  --say TEXT          print "rank RANK: TEXT" on stdout
  --lines N           print N numbered lines "rank R line 000001/N xx...x end" on stdout
  --ready DIR         create DIR/ready.RANK
  --exit R:CODE       rank R exits with CODE after --delay seconds
  --signal R:SIG      rank R kills itself with SIG (e.g. SEGV) after --delay seconds
  --sleep SECONDS     then sleep (default 0) and exit 0
  --bye               after sleeping, print "rank RANK: bye" (proof the sleep was not cut short)
Files are written atomically (temporary name, then rename).
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

RANK = int(os.environ.get("PADDLE_TRAINER_ID", "-1"))
PAD = "x" * 80


def write_file(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(tmp, path)


def rank_and_value(spec):
    rank, _, value = spec.partition(":")
    return int(rank), value


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--record")
    p.add_argument("--await", dest="await_file")
    p.add_argument("--await_timeout", type=float, default=60.0)
    p.add_argument("--ignore", default="")
    p.add_argument("--trap")
    p.add_argument("--grandchild")
    p.add_argument("--bind", action="store_true")
    p.add_argument("--say")
    p.add_argument("--lines", type=int, default=0)
    p.add_argument("--ready")
    p.add_argument("--exit", action="append", default=[])
    p.add_argument("--signal", action="append", default=[])
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--bye", action="store_true")
    args, _ = p.parse_known_args()  # unknown tokens are only recorded (argv), not refused
    return args


def record(directory):
    env = dict(os.environ)
    env["argv"] = sys.argv
    write_file(os.path.join(directory, f"env.{RANK}.json"), json.dumps(env))
    write_file(os.path.join(directory, f"pid.{RANK}"), str(os.getpid()))


def trap(directory):
    def handler(signum, _frame):
        name = signal.Signals(signum).name
        write_file(os.path.join(directory, f"got.{name}.{RANK}"), str(os.getpid()))
        sys.exit(0)
    signal.signal(signal.SIGUSR1, handler)
    signal.signal(signal.SIGUSR2, handler)


def listen(host, port, sockets):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
        s.listen()
    except OSError as e:
        print(f"bind {host}:{port} failed: {e}", file=sys.stderr, flush=True)
        sys.exit(98)
    sockets.append(s)


def bind_endpoints(sockets):
    host, _, port = os.environ["PADDLE_CURRENT_ENDPOINT"].rpartition(":")
    listen(host, int(port), sockets)
    if RANK == 0:
        listen(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), sockets)


def print_lines(n):
    out = sys.stdout
    for i in range(1, n + 1):
        out.write(f"rank {RANK} line {i:06d}/{n} {PAD} end\n")
    out.flush()


def finish(args):
    for spec in args.exit:
        rank, code = rank_and_value(spec)
        if rank == RANK:
            time.sleep(args.delay)
            sys.stdout.flush()
            os._exit(int(code))
    for spec in args.signal:
        rank, name = rank_and_value(spec)
        if rank == RANK:
            time.sleep(args.delay)
            sys.stdout.flush()
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the test dir
            sig = getattr(signal, "SIG" + name)
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            time.sleep(60)
    time.sleep(args.sleep)
    if args.bye:
        print(f"rank {RANK}: bye", flush=True)


def main():
    args = parse_args()
    sockets = []
    if args.record:
        record(args.record)
    if args.await_file:
        deadline = time.monotonic() + args.await_timeout
        while not os.path.exists(args.await_file):
            if time.monotonic() > deadline:
                sys.exit(f"rank {RANK}: {args.await_file} did not appear within "
                         f"{args.await_timeout:g} s")
            time.sleep(0.01)
    for name in filter(None, args.ignore.split(",")):
        signal.signal(getattr(signal, "SIG" + name), signal.SIG_IGN)
    if args.trap:
        trap(args.trap)
    if args.grandchild:
        child = subprocess.Popen(["sleep", "600"])
        write_file(os.path.join(args.grandchild, f"grandchild.{RANK}"), str(child.pid))
    if args.bind:
        bind_endpoints(sockets)
    if args.say:
        print(f"rank {RANK}: {args.say}", flush=True)
    print_lines(args.lines)
    if args.ready:
        write_file(os.path.join(args.ready, f"ready.{RANK}"), str(os.getpid()))
    finish(args)


if __name__ == "__main__":
    main()
