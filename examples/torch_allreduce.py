"""A real collective job: every rank all-reduces tensor([rank + 1]) and checks the sum.

    build/launch --nproc_per_node 4 examples/torch_allreduce.py              # init_method env://
    build/launch --nproc_per_node 4 examples/torch_allreduce.py --init tcp   # tcp://MASTER_ADDR:...
    build/launch --gpus 0,1 examples/torch_allreduce.py --backend nccl --mib 256

`--backend gloo` (the default) runs on CPUs; `--backend nccl` puts each rank on the first GPU the
launcher gave it (FLAGS_selected_gpus, else LOCAL_RANK) and, with `--mib N`, also times ten
all-reduces of N MiB of float32 after three warm-ups ("rank R: N MiB all-reduce, median M ms").

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
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                        help="collective backend: gloo on CPUs (default) or nccl on GPUs")
    parser.add_argument("--mib", type=int, default=0,
                        help="also time all-reduces of this many MiB (default 0: none)")
    return parser.parse_args()


def init_group(dist, init, backend, timeout):
    if init == "env":
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
        return
    url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group(backend, init_method=url, timeout=timeout,
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

    device = "cpu"
    if args.backend == "nccl":
        selected = os.environ.get("FLAGS_selected_gpus") or os.environ.get("LOCAL_RANK", "0")
        device = f"cuda:{int(selected.split(',')[0])}"
        torch.cuda.set_device(device)
    init_group(dist, args.init, args.backend, datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    tensor = torch.tensor([rank + 1], dtype=torch.int64, device=device)
    dist.all_reduce(tensor)
    got, expected = int(tensor.item()), world * (world + 1) // 2
    print(f"rank {rank}: allreduce sum = {got} (expected {expected})", flush=True)
    if args.mib > 0:
        time_allreduce(torch, dist, rank, args.mib, device)
    dist.destroy_process_group()
    return 0 if got == expected else 1


def time_allreduce(torch, dist, rank, mib, device):
    import time  # noqa: E402
    data = torch.ones(mib * 1024 * 1024 // 4, dtype=torch.float32, device=device)
    samples = []
    for i in range(13):
        if device != "cpu":
            torch.cuda.synchronize()
        start = time.perf_counter()
        dist.all_reduce(data)
        if device != "cpu":
            torch.cuda.synchronize()
        if i >= 3:
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    print(f"rank {rank}: {mib} MiB all-reduce, median {samples[len(samples) // 2]:.3f} ms "
          f"on {device}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
