#!/usr/bin/env python3
"""The auto tuner's overhead between two trials (issue #28): last process of one trial gone ->
first process of the next started, from the --report of a search of five layouts with
tests/helpers/fake_trainer.py (no GPU; CUDA_VISIBLE_DEVICES names 8 devices).

    python3 bench/tuner_gap.py [--launch build/launch] [--rounds 5] [--nodes 2 [--etcd|--ips]]

--nodes 2: two launchers on 127.0.0.2 and 127.0.0.3 (4 devices each) through --master
127.0.0.2:<free port>; the gaps are node a's, so they include the exchange of each trial's
outcome through the master and the next trial's rendezvous. --etcd: through --master
etcd://<Debian's etcd on a free loopback port> instead (tests/e2e/etcd.py starts it). --ips:
the nodes listed by --ips 127.0.0.2,127.0.0.3 (each trial an --ips job on a free fixed port)
and agreeing through the HTTP --master beside the list.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from etcd import EtcdServer, PortReservation  # noqa: E402
TUNER = {
    "dp_degree": "auto", "mp_degree": [1, 2], "micro_batch_size": "auto",
    "model_cfg": {"global_batch_size": 16, "num_layers": 4},
    "metric_cfg": {"name": "interval_samples_per_second", "OptimizationDirection": "Maximize"},
    "run_cmd": {"dp_degree": ["--dp", ""], "mp_degree": ["--mp", ""],
                "micro_batch_size": ["./params.json", "per_device_train_batch_size"]},
    "schedule_mode": "performance", "run_best": False,
}


def when(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launch", default="build/launch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--etcd", action="store_true")
    parser.add_argument("--ips", action="store_true")
    args = parser.parse_args()
    launch = str(Path(args.launch).resolve())
    gaps = []
    etcd = None
    if args.etcd:
        etcd_dir = tempfile.TemporaryDirectory(prefix="pdlaunch-tuner-etcd-")
        etcd = EtcdServer(Path(etcd_dir.name) / "etcd.log")
        etcd.start()
    try:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="pdlaunch-tuner-") as tmp:
                work = Path(tmp)
                (work / "tuner.json").write_text(json.dumps(TUNER))
                (work / "params.json").write_text('{"per_device_train_batch_size": 1}')
                trainer = [str(REPO / "tests/helpers/fake_trainer.py"), "./params.json"]
                if args.nodes == 1:
                    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7")
                    subprocess.run([launch, "--auto_tuner_json", "tuner.json", "--nproc_per_node",
                                    "1", "--report", "r.json", *trainer], cwd=work, env=env,
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                else:
                    # A port below the ephemeral range, locked as the launcher locks its own: one
                    # from bind(0) may be handed to an outgoing connection before the master binds.
                    reservation = PortReservation(2)
                    master = (f"etcd://{etcd.endpoint}" if etcd
                              else f"127.0.0.2:{reservation.ports[0]}")
                    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1,2,3")
                    # --ips: the nodes by the list, the trainers on a fixed free port.
                    nodes_by = (["--ips", "127.0.0.2,127.0.0.3"] if args.ips
                                else ["--nnodes", "2"])
                    if args.ips:
                        env["FLAGS_START_PORT"] = str(reservation.ports[1])
                    nodes = []
                    for name, host in (("a", "127.0.0.2"), ("b", "127.0.0.3")):
                        node = work / name
                        node.mkdir()
                        for f in ("tuner.json", "params.json"):
                            (node / f).write_text((work / f).read_text())
                        nodes.append(subprocess.Popen(
                            [launch, "--master", master, *nodes_by, "--host", host,
                             "--auto_tuner_json", "tuner.json", "--nproc_per_node", "1", "--report",
                             "r.json", *trainer], cwd=node, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL))
                    for node in nodes:
                        if node.wait(timeout=300) != 0:
                            for other in nodes:  # Nor a launcher.
                                if other.poll() is None:
                                    other.kill()
                                    other.wait()
                            raise SystemExit("a node of the two-node search failed")
                    reservation.close()
                    work = work / "a"
                procs = json.loads((work / "r.json").read_text())["processes"]
                gaps += [(when(b["start_time"]) - when(a["end_time"])) * 1000
                         for a, b in zip(procs, procs[1:])]
    finally:
        # Also when a round fails: no etcd left behind.
        if etcd:
            etcd.close()
    print(f"| trials' gaps | median | max |\n|---|---|---|\n| {len(gaps)} | "
          f"{statistics.median(gaps):.1f} ms | {max(gaps):.1f} ms |")
    print("(the report's times have millisecond resolution)")


if __name__ == "__main__":
    main()
