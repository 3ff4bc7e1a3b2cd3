"""A configurable rank for the reliability suite (tests/reliability/, docs/reliability.md).

What rank.py does, plus: the time each signal arrives, process trees, barriers and exact output
patterns. RANK = PADDLE_TRAINER_ID; DIR = --rec. Times are time.monotonic() (CLOCK_MONOTONIC,
comparable between processes). Steps, in this order, each only when its option is given:
  --rec DIR             write DIR/env.RANK.json (the environment, plus "argv" and "stdout": the
                        file fd 1 pointed at when the rank started) and DIR/pid.RANK
  --on SIG:ACTION[@R]   (repeatable; with @R only on rank R) on SIG, append "SIG TIME" to
                        DIR/sig.RANK, then:
                          stay       go on (the signal is otherwise ignored)
                          die        die of SIG (its default action)
                          exit=CODE  exit with CODE
                          finish=S   work S more seconds (a checkpoint), print
                                     "rank RANK: checkpoint saved", exit 0
  --tree KINDS          start descendants (comma-separated) and write "KIND PID" lines to
                        DIR/tree.RANK: fork (a forked child, as a data-loader worker), shell
                        (`sh -c` starting a `sleep` and waiting for it; two lines, "shell" and
                        "shell-sleep"), double (a double-forked orphan, still in the rank's
                        process group), stubborn (a forked child ignoring TERM, INT and HUP),
                        daemon (a daemon: fork, setsid, fork; out of the rank's process group
                        and session), stubborn-daemon (a daemon ignoring TERM, INT and HUP);
                        all of them run (sleep 600 s) by the time the file is written
  --bind                listen on PADDLE_CURRENT_ENDPOINT and, on rank 0, MASTER_PORT; exit 98
                        with "bind HOST:PORT failed: ..." on stderr when it cannot
  --lines N             print() N numbered lines (numbered_lines), never flushing: only the
                        launcher's `python -u` makes them reach the log before a crash
  --console-mix MIB     write console_mix(RANK, MIB): a \\r progress bar, a 256 KiB line written
                        in pieces, MIB MiB of short lines in 1 MiB writes, a partial last line
  --partial TEXT        write TEXT without a newline ("{rank}" in TEXT becomes RANK)
  --ready               create DIR/ready.RANK
  --barrier N           wait until DIR/ready.0 .. DIR/ready.(N-1) exist
  --hold FILE           wait until FILE exists
  --until-signals SIGS  wait until each of SIGS (e.g. USR1,USR2) arrived, then exit 0
  --exit R:CODE         rank R exits with CODE after --delay seconds
  --die R:SIG           rank R kills itself with SIG (e.g. SEGV, KILL) after --delay seconds
  --sleep S             then sleep S seconds and exit 0
A wait (--barrier, --hold, --until-signals) gives up after 120 s with exit 9. Core dumps are off.
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time

from rank import bind_endpoints, write_file  # noqa: E402 (rank.py sits next to this file)

RANK = int(os.environ.get("PADDLE_TRAINER_ID", "-1"))
WAIT_LIMIT = 120
RESET = ("TERM", "INT", "HUP", "QUIT", "USR1", "USR2")
received = set()  # names of the signals that arrived


def numbered_lines(rank, count):
    """The text --lines writes."""
    return "".join(f"rank {rank} line {i:05d}/{count} {'x' * 60} end\n"
                   for i in range(1, count + 1))


def console_mix(rank, mib):
    """[(bytes, pause seconds after writing them)] that --console-mix writes, in order."""
    pieces = [(f"\rrank {rank} progress {i:3d}%".encode(), 0.001 if i % 10 == 0 else 0)
              for i in range(101)]
    pieces.append((b"\n", 0))
    long_piece = f"[rank {rank} long line piece]".encode().ljust(1024, b"-")
    pieces += [(long_piece, 0.002 if i % 64 == 63 else 0) for i in range(256)]
    pieces.append((b" end of long line\n", 0))
    line = f"rank {rank} burst {'y' * 50}\n".encode()
    block = line * ((1 << 20) // len(line))
    pieces += [(block, 0)] * mib
    pieces.append((f"rank {rank} last line without newline".encode(), 0))
    return pieces


def append_line(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def signal_number(name):
    return getattr(signal, "SIG" + name)


def reset_signals(ignored=()):
    for name in RESET:
        signal.signal(signal_number(name), signal.SIG_DFL)
    for name in ignored:
        signal.signal(signal_number(name), signal.SIG_IGN)


def die_of(sig):
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    sys.stdout.flush()
    os.kill(os.getpid(), sig)
    time.sleep(60)
    os._exit(70)  # Never reached unless the signal was blocked.


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--rec")
    p.add_argument("--on", action="append", default=[])
    p.add_argument("--tree", default="")
    p.add_argument("--bind", action="store_true")
    p.add_argument("--lines", type=int, default=0)
    p.add_argument("--console-mix", type=int)
    p.add_argument("--partial")
    p.add_argument("--ready", action="store_true")
    p.add_argument("--barrier", type=int, default=0)
    p.add_argument("--hold")
    p.add_argument("--until-signals", default="")
    p.add_argument("--exit", action="append", default=[])
    p.add_argument("--die", action="append", default=[])
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--sleep", type=float, default=0.0)
    return p.parse_args()


def record(directory):
    env = dict(os.environ)
    env["argv"] = sys.argv
    env["stdout"] = os.readlink("/proc/self/fd/1")
    write_file(os.path.join(directory, f"env.{RANK}.json"), json.dumps(env))
    write_file(os.path.join(directory, f"pid.{RANK}"), str(os.getpid()))


def install_handler(directory, spec):
    spec, _, only = spec.partition("@")
    if only and int(only) != RANK:
        return
    name, _, action = spec.partition(":")
    verb, _, value = action.partition("=")
    sig = signal_number(name)

    def handler(_signum, _frame):
        append_line(os.path.join(directory, f"sig.{RANK}"), f"{name} {time.monotonic():.6f}")
        received.add(name)
        if verb == "die":
            die_of(sig)
        elif verb == "exit":
            sys.stdout.flush()
            os._exit(int(value))
        elif verb == "finish":
            time.sleep(float(value))
            print(f"rank {RANK}: checkpoint saved", flush=True)
            os._exit(0)
    if verb not in ("stay", "die", "exit", "finish"):
        sys.exit(f"rel_rank.py: bad action in --on {spec}")
    signal.signal(sig, handler)


def fork_sleeper(ignored=()):
    """Forks a child that sleeps 600 s with default signal actions (except `ignored`)."""
    pid = os.fork()
    if pid == 0:
        reset_signals(ignored)
        time.sleep(600)
        os._exit(0)
    return pid


def double_fork(new_session=False, ignored=()):
    """A grandchild whose parent exits at once: an orphan. Without `new_session` it stays in
    our process group; with it, it is a daemon as daemon(3) makes one (the middle process calls
    setsid), in a session and process group of its own. Returns the grandchild's pid."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        if new_session:
            os.setsid()
        if os.fork() == 0:
            reset_signals(ignored)
            os.write(write_end, str(os.getpid()).encode())
            os.close(write_end)
            time.sleep(600)
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end) as f:
        return int(f.read())


def shell_tree(directory):
    """(pid of `sh`, pid of the `sleep` it started and waits for)."""
    pid_file = os.path.join(directory, f"shell-sleep.{RANK}")
    shell = subprocess.Popen(["/bin/sh", "-c", 'sleep 600 & echo $! > "$0.tmp"; '
                              'mv "$0.tmp" "$0"; wait', pid_file],
                             stdin=subprocess.DEVNULL, preexec_fn=reset_signals)
    wait_for(lambda: os.path.exists(pid_file))
    with open(pid_file, encoding="utf-8") as f:
        sleeper = int(f.read())
    os.unlink(pid_file)
    return shell.pid, sleeper


def start_tree(directory, kinds):
    lines = []
    for kind in filter(None, kinds.split(",")):
        if kind == "fork":
            pid = fork_sleeper()
        elif kind == "stubborn":
            pid = fork_sleeper(ignored=("TERM", "INT", "HUP"))
        elif kind == "shell":
            pid, sleeper = shell_tree(directory)
            lines.append(f"shell-sleep {sleeper}")
        elif kind == "double":
            pid = double_fork()
        elif kind == "daemon":
            pid = double_fork(new_session=True)
        elif kind == "stubborn-daemon":
            pid = double_fork(new_session=True, ignored=("TERM", "INT", "HUP"))
        else:
            sys.exit(f"rel_rank.py: unknown --tree kind {kind}")
        lines.append(f"{kind} {pid}")
    write_file(os.path.join(directory, f"tree.{RANK}"), "\n".join(lines) + "\n")


def write_console_mix(mib):
    for data, pause in console_mix(RANK, mib):
        write_all(data)
        if pause:
            time.sleep(pause)


def wait_for(predicate):
    deadline = time.monotonic() + WAIT_LIMIT
    while not predicate():
        if time.monotonic() > deadline:
            print(f"rel_rank.py: rank {RANK} gave up waiting", file=sys.stderr, flush=True)
            os._exit(9)
        time.sleep(0.005)


def finish(args):
    for spec in args.exit:
        rank, _, code = spec.partition(":")
        if int(rank) == RANK:
            time.sleep(args.delay)
            sys.stdout.flush()
            os._exit(int(code))
    for spec in args.die:
        rank, _, name = spec.partition(":")
        if int(rank) == RANK:
            time.sleep(args.delay)
            die_of(signal_number(name))
    time.sleep(args.sleep)


def wait_steps(args):
    if args.barrier:
        names = [os.path.join(args.rec, f"ready.{r}") for r in range(args.barrier)]
        wait_for(lambda: all(os.path.exists(n) for n in names))
    if args.hold:
        wait_for(lambda: os.path.exists(args.hold))
    wanted = set(filter(None, args.until_signals.split(",")))
    if wanted:
        wait_for(lambda: wanted <= received)
        sys.stdout.flush()
        os._exit(0)


def main():
    args = parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core files in the test directory
    sockets = []
    if args.rec:
        record(args.rec)
    for spec in args.on:
        install_handler(args.rec, spec)
    if args.tree:
        start_tree(args.rec, args.tree)
    if args.bind:
        bind_endpoints(sockets)
    for line in numbered_lines(RANK, args.lines).splitlines(keepends=True):
        print(line, end="")
    if args.console_mix is not None:
        write_console_mix(args.console_mix)
    if args.partial:
        print(args.partial.replace("{rank}", str(RANK)), end="")
    if args.ready:
        write_file(os.path.join(args.rec, f"ready.{RANK}"), str(os.getpid()))
    wait_steps(args)
    finish(args)


if __name__ == "__main__":
    main()
