#!/usr/bin/env python3
"""A memory_estimation_tool for the auto tuner's tests (issue #28): prints the MB a layout would
use, 20000 * micro_batch_size / mp_degree (fake_trainer.py's memory model, in MB), as Paddle's
prune.py reads a tool's stdout. Every call is appended to the file ESTIMATOR_LOG, when set.
ESTIMATOR_FAIL set: exits 1 (a broken tool)."""
import argparse
import os
import sys

parser = argparse.ArgumentParser()
for flag in ("dp_degree", "mp_degree", "pp_degree", "vpp_degree", "sharding_degree",
             "sharding_stage", "micro_batch_size", "hidden_size", "num_attention_heads",
             "num_layers", "max_sequence_length", "vocab_size", "intermediate_size"):
    parser.add_argument("--" + flag, type=int)
parser.add_argument("--use_recompute")
parser.add_argument("--recompute_granularity")
args = parser.parse_args()
if os.environ.get("ESTIMATOR_FAIL"):
    sys.exit(1)
if os.environ.get("ESTIMATOR_LOG"):
    with open(os.environ["ESTIMATOR_LOG"], "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\n")
print(20000 * args.micro_batch_size / args.mp_degree)
