#!/usr/bin/env python3
"""The oracle of tests/unit/cli/cli_test.cc's ArgparsePrefixTest: what Python's argparse makes of
every prefix that two or more of the launcher's long options share, as
`python -m paddle.distributed.launch` applies it (issue #29 item 3).

Today's parser is built with the option strings of Paddle's
python/paddle/distributed/launch/context/args_envs.py (parse_args), in its order; an option it
does not know sends the command line to the legacy parser
(python/paddle/distributed/fleet/launch.py, _parse_args; docs/cli.md, "Flags"), built
the same way with the legacy options the launcher takes; what neither knows is pdlaunch's own
(resolved by the same rule). Prints one C++ table row per prefix:
  {"--ma", "ambiguous option: --ma could match --master, --max_restart"},
  {"--nn", "--nnodes"},
Usage: argparse_prefixes.py FLAG...   (every long option of the launcher, in --help's order:
  argparse_prefixes.py --help $(build/launch --help | grep -o '^  --[a-z_]*'))
"""
import argparse
import contextlib
import io
import sys

TODAYS = ["--help", "--master", "--legacy", "--rank", "--log_level", "--log_overwrite", "--sort_ip",
          "--enable_gpu_log", "--nnodes", "--nproc_per_node", "--log_dir", "--run_mode",
          "--job_id", ("--devices", "--gpus", "--npus", "--xpus"), "--host", "--ips",
          "--start_port", "--auto_parallel_config", "--auto_cluster_config",
          "--auto_tuner_json", "--servers", "--trainers", "--trainer_num", "--server_num",
          "--gloo_port", "--with_gloo", "--max_restart", "--elastic_level", "--elastic_timeout"]
LEGACY = ["--help", "--log_dir", "--backend", "--nproc_per_node", "--run_mode", "--gpus",
          "--selected_gpus", "--xpus", "--selected_xpus", "--ips", "--servers", "--workers",
          "--heter_workers", "--heter_devices", "--worker_num", "--server_num",
          "--heter_worker_num", "--http_port", "--elastic_server", "--job_id", "--np", "--scale",
          "--host", "--force", "--elastic_pre_hook"]


def parser_of(options):
    parser = argparse.ArgumentParser(prog="launch", add_help=False)  # --help: a plain option
    for option in options:
        names = option if isinstance(option, tuple) else (option,)
        parser.add_argument(*names, dest=names[0][2:])
    return parser


def resolve(parser, prefix):
    """The option `prefix` means to `parser`, None if unknown; raises ValueError(message) for an
    ambiguous one."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            namespace, unknown = parser.parse_known_args([prefix, "x"])
    except SystemExit:
        raise ValueError(err.getvalue().strip().splitlines()[-1].split("error: ", 1)[1])
    if unknown:
        return None  # [prefix, "x"]: an unknown option and a positional
    (dest,) = [k for k, v in vars(namespace).items() if v == "x"]
    for action in parser._actions:
        if action.dest == dest:
            return [s for s in action.option_strings if s.startswith(prefix)][0]


def main(flags):
    flags = list(dict.fromkeys(flags))  # In the order given: pdlaunch's own are named so
    every = {f for o in TODAYS for f in (o if isinstance(o, tuple) else (o,))} | set(LEGACY)
    own = [f for f in flags if f not in every]
    parsers = [parser_of(TODAYS), parser_of(LEGACY), parser_of(own)]
    prefixes = set()
    for a in flags:
        for b in flags:
            if a < b:
                common = 0
                while common < min(len(a), len(b)) and a[common] == b[common]:
                    common += 1
                for length in range(3, common + 1):
                    prefixes.add(a[:length])
    for prefix in sorted(prefixes):
        if prefix in flags:
            # An exact name of either parser wins: pdlaunch's one deliberate difference (docs/cli.md):
            # today's parser would call the legacy --np ambiguous (--nproc_per_node, --npus).
            outcome = prefix
        else:
            outcome = "unrecognized"
            try:
                for parser in parsers:
                    found = resolve(parser, prefix)
                    if found:
                        outcome = found
                        break
            except ValueError as error:
                outcome = str(error)
        print(f'    {{"{prefix}", "{outcome}"}},')


if __name__ == "__main__":
    main(sys.argv[1:])
