"""A real collective job: every rank all-reduces tensor([rank + 1]) over gloo and checks the sum.

    build/launch --nproc_per_node 4 examples/torch_allreduce.py              # init_method env://
    build/launch --nproc_per_node 4 examples/torch_allreduce.py --init tcp   # tcp://MASTER_ADDR:...

`env://` reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. `--init tcp` uses only Paddle's
names for rank and world size (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM) with
tcp://MASTER_ADDR:MASTER_PORT. Prints "rank R: allreduce sum = S (expected S)"; exits 1 on a
mismatch. Needs PyTorch (Debian: python3-torch; run with PADDLE_LAUNCH_PYTHON=/usr/bin/python3).
"""
import argparse
import os
import sys


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", choices=("env", "tcp"), default="env",
                        help="rendezvous: env:// (default) or tcp://MASTER_ADDR:MASTER_PORT")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for the other ranks (default 120)")
    return parser.parse_args()


def init_group(dist, init, timeout):
    if init == "env":
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)
        return
    url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group("gloo", init_method=url, timeout=timeout,
                            rank=int(os.environ["PADDLE_TRAINER_ID"]),
                            world_size=int(os.environ["PADDLE_TRAINERS_NUM"]))


def main():
    args = parse_args()
    # A single-node job talks over loopback; gloo otherwise picks the interface of the hostname.
    if os.environ.get("MASTER_ADDR", "").startswith("127."):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import datetime  # noqa: E402  (imports kept after argument parsing: --help stays fast)
    import torch
    import torch.distributed as dist

    init_group(dist, args.init, datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    tensor = torch.tensor([rank + 1], dtype=torch.int64)
    dist.all_reduce(tensor)
    got, expected = int(tensor.item()), world * (world + 1) // 2
    print(f"rank {rank}: allreduce sum = {got} (expected {expected})", flush=True)
    dist.destroy_process_group()
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
