#!/usr/bin/env python3
"""Paddle's test/legacy_test/nproc_process.py, without Paddle: `nproc_process.py PREFIX [xpu]`
reads FLAGS_selected_xpus (where Paddle is compiled with XPU; here: given `xpu`) or
FLAGS_selected_gpus, PADDLE_TRAINER_ID, PADDLE_TRAINER_ENDPOINTS and PADDLE_CURRENT_ENDPOINT,
prints the line Paddle's helper prints and writes it (no newline) to PREFIX.check_<id>.log."""
import os
import sys


def main(prefix, family="gpu"):
    selected_devices = os.getenv("FLAGS_selected_xpus" if family == "xpu" else "FLAGS_selected_gpus")
    trainer_id = int(os.getenv("PADDLE_TRAINER_ID"))
    worker_endpoints = os.getenv("PADDLE_TRAINER_ENDPOINTS")
    current_endpoint = os.getenv("PADDLE_CURRENT_ENDPOINT")
    trainers_num = len(worker_endpoints.split(","))
    name = (f"selected_devices:{selected_devices} worker_endpoints:{worker_endpoints} "
            f"trainers_num:{trainers_num} current_endpoint:{current_endpoint} "
            f"trainer_id:{trainer_id}")
    print(name)
    with open(f"{prefix}.check_{trainer_id}.log", "w") as f:
        f.write(name)


if __name__ == "__main__":
    main(*sys.argv[1:])
