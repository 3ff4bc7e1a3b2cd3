#!/usr/bin/env python3
"""The auto tuner's YAML editor (src/plan/yaml_edit.cc) against PyYAML: random nested configs,
dumped by PyYAML in block and mixed (flow leaves) styles, some with comments; one key of each set
through the editor (an existing value, a mapping, or a new key). Every edit the editor makes
must load back, with PyYAML, as the configuration with that key set, as Paddle's PyYAML round trip
would give it; what it refuses it must refuse with its one line. Fails on any mismatch, on an
unexpected error, or if fewer than half of the cases were edits.

    yaml_edit_vs_pyyaml.py DRIVER [CASES]
"""
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

import yaml


class Literal(str):
    """A string PyYAML writes as a block scalar (|), '#' lines inside it."""


yaml.SafeDumper.add_representer(
    Literal, lambda dumper, s: dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|"))


def scalar(rng):
    return rng.choice([rng.randint(0, 100), "abc", "x y", True, None, 1.5, "on", "01", "a:b",
                       "'q'", "#h", "-1", "yes", Literal("one\n# not a comment\n  deeper\n"),
                       Literal("one\n  deeper\n# not a comment\n")])


def mapping(rng, depth):
    m = {}
    for i in range(rng.randint(1, 4)):
        key = rng.choice(["a", "b", "c", f"key_{i}", "with space", "Global"])
        if depth < 3 and rng.random() < 0.4:
            m[key] = mapping(rng, depth + 1)
        else:
            m[key] = scalar(rng) if rng.random() < 0.85 else [1, 2]
    return m


def main():
    driver = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    rng = random.Random(7)
    edited = refused = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.yaml")
        for case in range(cases):
            doc = mapping(rng, 0)
            text = yaml.safe_dump(doc, default_flow_style=rng.choice([False, None]),
                                  sort_keys=False, indent=rng.choice([2, 4]))
            if rng.random() < 0.5:
                text = "# a comment\n" + text.replace("\n", "  # another\n", 1)
            with open(path, "w") as f:
                f.write(text)
            keys, at = [], doc
            while isinstance(at, dict) and at:
                keys.append(rng.choice(list(at)))
                if not isinstance(at[keys[-1]], dict) or rng.random() < 0.3:
                    break
                at = at[keys[-1]]
            if rng.random() < 0.2:
                keys[-1] = "new_key"
            value = rng.choice([7, "stage2", True, None, "True", {"op": 1, "b": 2}, 1e-05, 0.5,
                                2.5e20])
            run = subprocess.run([driver, path, ".".join(keys), json.dumps(value)],
                                 capture_output=True, text=True)
            if run.returncode == 3 and run.stderr.startswith("refused: ") and \
                    run.stderr.count("\n") == 1:
                refused += 1
                continue
            if run.returncode != 0:
                sys.exit(f"case {case}: exit {run.returncode}: {run.stderr}\n{text}")
            expected = copy.deepcopy(doc)
            parent = expected
            for key in keys[:-1]:
                parent = parent[key]
            parent[keys[-1]] = value
            try:
                got = yaml.safe_load(run.stdout)
            except yaml.YAMLError as e:
                sys.exit(f"case {case}: {keys} = {value!r}: not YAML any more: {e}\n{text}\n"
                         f"---\n{run.stdout}")
            if got != expected:
                sys.exit(f"case {case}: {keys} = {value!r}: loads as {got!r}, not {expected!r}\n"
                         f"{text}\n---\n{run.stdout}")
            edited += 1
    print(f"{cases} cases: {edited} edits, each as PyYAML would set it; {refused} refused")
    if edited < cases // 2:
        sys.exit("fewer than half of the cases were edits: the check proves too little")


if __name__ == "__main__":
    main()
