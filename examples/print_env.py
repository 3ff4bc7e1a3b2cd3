"""A minimal "training script": prints the rank environment the launcher set, one per line.

    build/launch --nproc_per_node 2 examples/print_env.py

Rank 0's lines appear on the launcher's console; every rank's are in log/workerlog.<local rank>.
"""
import os

NAMES = (
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_RANK_IN_NODE",
    "PADDLE_LOCAL_DEVICE_IDS",
    "PADDLE_WORLD_DEVICE_IDS",
    "PADDLE_DISTRI_BACKEND",
    "PADDLE_MASTER",
    "PADDLE_LOG_DIR",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def main():
    for name in NAMES:
        print(f"{name}={os.environ.get(name, '<unset>')}")
    # The device keys of whichever family the launcher found: FLAGS_selected_gpus, _xpus, _npus,
    # ..., and a custom device's PADDLE_XCCL_BACKEND.
    for name in sorted(os.environ):
        if name.startswith("FLAGS_selected_") or name == "PADDLE_XCCL_BACKEND":
            print(f"{name}={os.environ[name]}")


if __name__ == "__main__":
    main()
