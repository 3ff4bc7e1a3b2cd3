#!/usr/bin/env python3
"""A trainer for the auto tuner's tests (issue #28): no GPU, a known metric and memory model.

    fake_trainer.py [--dp N] [--mp N] [--pp N] [--sharding N] [--stage N] [PARAMS.json|.yaml]
                    [--hang] [--seconds S] [--mem-file PATH] [--use_flash True|False]

micro_batch_size comes from PARAMS.json's "per_device_train_batch_size", or PARAMS.yaml's
Global.micro_batch_size (the tuner rewrites a copy per trial). Memory: 20 * mbs / mp "MiB", out of memory past 30 (it prints Paddle's text and
exits 1). Metric: 100 * mbs + 10 * dp, printed as PaddleNLP does, 12 times; the tuner averages
the last ones. Step time (interval_runtime): 0.5 * mp seconds. --hang: sleep for ever when mp == 1 and mbs == 1 (a trial the deadline must stop).
--mem-file: writes 1000 * mbs + 100 * dp there, the MiB a fake nvidia-smi reports in use.
--use_flash True (a custom_search_dim): the metric is 1000 more.
--oom-rank R: only rank R (PADDLE_TRAINER_ID) runs out of memory; the others train on.
--fail-layout "dp8 mp1 pp1 mbs1": that layout exits 3 without a metric (a crash, not an OOM).
"""
import json
import os
import signal
import sys
import time


def main(argv):
    # A trial's deadline stops it with SIGTERM: the memory file is cleared then too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cfg = {"dp": 1, "mp": 1, "pp": 1, "sharding": 1, "stage": 1}
    params, hang, seconds, mem_file, flash, oom_rank = None, False, 0.05, None, False, None
    fail_layout = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--") and arg[2:] in cfg:
            cfg[arg[2:]] = int(argv[i + 1])
            i += 2
            continue
        if arg == "--hang":
            hang = True
        elif arg == "--seconds":
            seconds = float(argv[i + 1])
            i += 1
        elif arg == "--mem-file":  # Where a fake nvidia-smi reads the memory this trial "uses".
            mem_file = argv[i + 1]
            i += 1
        elif arg == "--fail-layout":
            fail_layout = argv[i + 1]
            i += 1
        elif arg == "--oom-rank":
            oom_rank = argv[i + 1]
            i += 1
        elif arg == "--use_flash":
            flash = argv[i + 1] == "True"
            i += 1
        elif arg.endswith((".json", ".yaml")):
            params = arg
        i += 1
    mbs = 1
    if params and params.endswith(".json"):
        with open(params) as f:
            mbs = int(json.load(f).get("per_device_train_batch_size", 1))
    elif params:  # A YAML config in the shape of PaddleMIX's: Global.micro_batch_size.
        import yaml
        with open(params) as f:
            mbs = int(yaml.safe_load(f)["Global"]["micro_batch_size"])
    layout = f"dp{cfg['dp']} mp{cfg['mp']} pp{cfg['pp']} mbs{mbs}"
    print(f"layout {layout}" + (" flash" if flash else ""), flush=True)
    if layout == fail_layout:
        print("Segmentation fault in the fake kernel", flush=True)
        return 3
    if mem_file:  # 1000 MiB per sample of the micro-batch, 100 per data-parallel replica.
        with open(mem_file, "w") as f:
            f.write(str(1000 * mbs + 100 * cfg["dp"]))
    try:
        return train(cfg, mbs, hang, seconds, flash, oom_rank)
    finally:
        if mem_file:  # The memory is free again: the next trial's sampler must not see it.
            with open(mem_file, "w") as f:
                f.write("0")


def train(cfg, mbs, hang, seconds, flash, oom_rank):
    if hang and cfg["mp"] == 1 and mbs == 1:
        time.sleep(3600)
    rank = os.environ.get("PADDLE_TRAINER_ID")
    if 20 * mbs / cfg["mp"] > 30 and oom_rank in (None, rank):
        print("Out of memory error on GPU 0: failed to allocate 2.00 GiB", flush=True)
        return 1
    metric = 100 * mbs + 10 * cfg["dp"] + (1000 if flash else 0)
    # What dp_estimation's trials get: their devices and Paddle's optimizer flag.
    print(f"devices {os.environ.get('FLAGS_selected_gpus')} bypass "
          f"{os.environ.get('FLAGS_shard_bypass_dygraph_optimizer')}", flush=True)
    for step in range(12):
        time.sleep(seconds / 12)
        print(f"global step {step}, loss: 1.0, interval_runtime: {0.5 * cfg['mp']}, "
              f"interval_samples_per_second: {metric}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
