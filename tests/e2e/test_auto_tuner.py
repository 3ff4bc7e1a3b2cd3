"""Issue #28: --auto_tuner_json with a fake trainer (tests/helpers/fake_trainer.py): a known metric
(100 * mbs + 10 * dp) and memory model (out of memory when 20 * mbs / mp > 30), 8 devices named by
CUDA_VISIBLE_DEVICES, one process per trial (--nproc_per_node 1)."""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import harness
from harness import LaunchTestCase

TRAINER = harness.REPO / "tests" / "helpers" / "fake_trainer.py"


def processes_in(directory):
    """The pids of the processes whose working directory is under `directory`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd").startswith(str(directory)):
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


# The search of tuner_json() over 8 devices: schedule_mode performance, so mp ascending and mbs
# descending (Paddle's dist_degree); the fake trainer's memory model makes two layouts OOM.
KNOWN_SEARCH = [
    "[1/5] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs2 recompute=- → OOM",
    "[2/5] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → 180 "
    "interval_samples_per_second (best so far)",
    "[3/5] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs4 recompute=- → OOM",
    "[4/5] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- → 240 "
    "interval_samples_per_second (best so far)",
    "[5/5] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → pruned: mbs 2 ran, a "
    "smaller one is slower"
]


def trial_lines(result):
    """The search's trial lines on stdout, without their time-left estimate."""
    return [re.sub(r"; (about .* left|under 1 s left)$", "", line)
            for line in result.stdout.splitlines() if line.startswith("[")]


def tuner_json(**extra):
    cfg = {
        "dp_degree": "auto", "mp_degree": [1, 2], "micro_batch_size": "auto",
        "model_cfg": {"global_batch_size": 16, "num_layers": 4, "hidden_size": 64,
                      "num_attention_heads": 4, "vocab_size": 128},
        "metric_cfg": {"name": "interval_samples_per_second", "OptimizationDirection": "Maximize"},
        "run_cmd": {"dp_degree": ["--dp", ""], "mp_degree": ["--mp", ""],
                    "micro_batch_size": ["./params.json", "per_device_train_batch_size"]},
        "schedule_mode": "performance", "max_time_per_task": 30,
    }
    cfg.update(extra)
    return cfg


class AutoTunerTest(LaunchTestCase):

    def setUp(self):
        super().setUp()
        self.params = self.dir / "params.json"
        self.params.write_text('{"per_device_train_batch_size": 1, "other": "x"}\n')

    def tune(self, cfg, *trainer_args, extra=(), timeout=120):
        (self.dir / "tuner.json").write_text(json.dumps(cfg))
        env = self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7")
        return self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                *extra, TRAINER, "./params.json", *trainer_args],
                               env=env, timeout=timeout)

    def dry_run(self, cfg):
        """--dry_run of the search of `cfg` on the 8 devices: its JSON plan."""
        (self.dir / "tuner.json").write_text(json.dumps(cfg))
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  "--dry_run", TRAINER],
                                 env=self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7"))
        self.assertEqual(result.code, 0, result)
        return json.loads(result.stdout)

    def history(self):
        with open(self.dir / "tuner_history.csv") as f:
            return list(csv.DictReader(f))

    def test_a_missing_nvidia_smi_is_said_once_per_search(self):
        # Issue #42 item 6: every trial's GPU log (GPU mode, no nvidia-smi on PATH) said so at its
        # first sample, 1 s after its ranks started: once per search is enough.
        result = self.tune(tuner_json(), "--seconds", "1.5")
        self.assertEqual(result.code, 0, result)
        # In the first trial's launcher lines, which go to its directory (unless --echo).
        self.assertNotIn("nvidia-smi is not on PATH", result.stdout + result.stderr)
        said = sum((trial / "launcher.log").read_text().count("gpu log: nvidia-smi is not on PATH")
                   for trial in self.dir.glob("Job*_GBS*"))
        self.assertEqual(said, 1, result)

    def test_finds_the_best_prunes_what_cannot_win_and_runs_it(self):
        result = self.tune(tuner_json(), extra=("--report", "r.json"))
        self.assertEqual(result.code, 0, result)
        # The final table of the best, then --report with every process: the four trials' and
        # the best run's, one each.
        table = result.stdout[result.stdout.index("auto tuner: the best layouts"):].splitlines()
        self.assertEqual(table[:3], [
            "auto tuner: the best layouts (interval_samples_per_second, higher is best):",
            "  1. dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=-  240  (Job4)",
            "  2. dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-  180  (Job2)"])
        report = json.loads((self.dir / "r.json").read_text())
        self.assertEqual(len(report["processes"]), 5, report["processes"])
        lines = [l for l in result.stdout.splitlines() if l.startswith("[")]
        # Each trial's line estimates how long the search may still take (the mean trial so
        # far times the candidates the history does not prune yet); after the fourth the history
        # prunes the last one, so nothing is left.
        for line in lines[:3]:
            self.assertRegex(line, r"; (about \d+ s left|under 1 s left)$")
        self.assertNotIn(" left", lines[3])
        lines = [re.sub(r"; (about .* left|under 1 s left)$", "", l) for l in lines]
        # schedule_mode performance: mp ascending, mbs descending (Paddle's dist_degree).
        self.assertEqual(lines, KNOWN_SEARCH)
        rows = self.history()
        self.assertEqual([(r["dp_degree"], r["mp_degree"], r["micro_batch_size"],
                           r["interval_samples_per_second"], r["max_mem_usage"]) for r in rows],
                         [("8", "1", "2", "", "OOM"), ("8", "1", "1", "180", ""),
                          ("4", "2", "4", "", "OOM"), ("4", "2", "2", "240", "")])
        best = json.loads((self.dir / "best_cfg" / "best_cfg.json").read_text())
        self.assertEqual((best["dp_degree"], best["mp_degree"], best["micro_batch_size"]), (4, 2, 2))
        self.assertIn("Launch best cfg:", result.stdout)
        self.assertIn("layout dp4 mp2 pp1 mbs2",
                      (self.dir / "best_cfg" / "workerlog.0").read_text())
        # Each trial had its own copy of params.json; the user's file is untouched.
        self.assertEqual(json.loads(self.params.read_text())["per_device_train_batch_size"], 1)
        trial = self.dir / ("Job4_GBS16_DP4_MP2_PP1_VPP1_Sharding1_Stage1_MBS2_Recompute_None_"
                            "Granularity_None_AccStep2")
        self.assertTrue((trial / "workerlog.0").is_file())

    def test_the_console_shows_one_line_per_trial_and_echo_brings_the_rest_back(self):
        # Issue #42 item 2: every expected out-of-memory trial printed ABORT!!!, Pod failed,
        # Container failed !!!, the error log detail, and every trial's output was echoed.
        result = self.tune(tuner_json(), extra=("--report", "r.json"))
        self.assertEqual(result.code, 0, result)
        console = result.stdout + result.stderr
        for quiet in ("ABORT!!!", "Pod failed", "Container failed", "ERROR LOG DETAIL",
                      "Out of memory error on", "layout dp8 mp1 pp1 mbs2"):
            self.assertNotIn(quiet, console)
        # The best run is a job as any other: its output is on the console.
        self.assertIn("layout dp4 mp2 pp1 mbs2", result.stdout)
        # What the trial's console would have said is in its directory.
        trial = next(self.dir.glob("Job1_*"))
        launcher_log = (trial / "launcher.log").read_text()
        self.assertIn("ABORT!!! Out of all 1 trainers", launcher_log)
        self.assertIn("Out of memory error on GPU 0", launcher_log)
        # --report: each process names its trial; a trial's OOM is no root cause of a success.
        report = json.loads((self.dir / "r.json").read_text())
        self.assertEqual([p["job_id"] for p in report["processes"]],
                         ["auto_tuner_1", "auto_tuner_2", "auto_tuner_3", "auto_tuner_4",
                          "best_cfg"])
        self.assertEqual((report["reason"], report["root_cause"]), ("success", None))
        # --echo: the trials' consoles come back.
        (self.dir / "tuner_history.csv").unlink()
        echoed = self.tune(tuner_json(), extra=("--echo", "0"))
        self.assertEqual(echoed.code, 0, echoed)
        self.assertIn("ABORT!!!", echoed.stderr)
        self.assertIn("[rank 0]: layout dp8 mp1 pp1 mbs2", echoed.stdout)

    def test_a_failed_trial_says_where_its_logs_are(self):
        result = self.tune(tuner_json(mp_degree=[1]), "--fail-layout", "dp8 mp1 pp1 mbs1")
        lines = [l for l in result.stdout.splitlines() if l.startswith("[")]
        failed = [l for l in lines if "mbs1 " in l]
        self.assertEqual(len(failed), 1, result)
        self.assertRegex(failed[0], r"→ exit code \d+ \(logs: .*Job\d+_GBS16_DP8_MP1_")
        self.assertNotIn("ABORT!!!", result.stderr)

    def test_a_yaml_config_is_rewritten_per_trial_keeping_its_comments(self):
        # A config in PaddleMIX's shape: only the key's line changes in each trial's copy
        # (Paddle's PyYAML dump drops the comments and sorts the keys); the search is the same.
        config = ("# PaddleMIX-style trainer config\n"
                  "Global:\n"
                  "  seed: 42\n"
                  "  micro_batch_size: 1   # per device\n"
                  "Model:\n"
                  "  name: llama\n")
        (self.dir / "config.yaml").write_text(config)
        cfg = tuner_json()
        cfg["run_cmd"]["micro_batch_size"] = ["./config.yaml", "Global.micro_batch_size"]
        (self.dir / "tuner.json").write_text(json.dumps(cfg))
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./config.yaml"],
                                 env=self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7"))
        self.assertEqual(result.code, 0, result)
        self.assertEqual(trial_lines(result), KNOWN_SEARCH)
        self.assertEqual((self.dir / "config.yaml").read_text(), config)  # The user's file.
        trial = ("Job4_GBS16_DP4_MP2_PP1_VPP1_Sharding1_Stage1_MBS2_Recompute_None_"
                 "Granularity_None_AccStep2")
        self.assertEqual((self.dir / f"config_{trial}.yaml").read_text(),
                         config.replace("micro_batch_size: 1 ", "micro_batch_size: 2 "))
        self.assertIn("layout dp4 mp2 pp1 mbs2",
                      (self.dir / "best_cfg" / "workerlog.0").read_text())

    def test_global_batch_size_auto_runs_the_gbs_pre_search_first(self):
        # 8 devices: the pre-search's layout is sharding 2, mp 2, pp 2 (utils.py's cube and
        # square roots) with mbs 1, 2, 4 ... and the global batch 4 x mbs; the fake trainer runs
        # out of memory past 20 x mbs / mp = 30, so mbs 4 (gbs 16) stops it: the batch is 8.
        cfg = tuner_json(run_best=False)
        cfg["model_cfg"]["global_batch_size"] = "auto"
        result = self.tune(cfg)
        self.assertEqual(result.code, 0, result)
        gbs_lines = [l for l in result.stdout.splitlines() if l.startswith("[GBS")]
        self.assertEqual(gbs_lines, [
            "[GBS 1/10] dp1 mp2 pp2 vpp1 sharding2 stage1 mbs1 recompute=off gbs4 → ran (110 "
            "interval_samples_per_second)",
            "[GBS 2/10] dp1 mp2 pp2 vpp1 sharding2 stage1 mbs2 recompute=off gbs8 → ran (210 "
            "interval_samples_per_second)",
            "[GBS 3/10] dp1 mp2 pp2 vpp1 sharding2 stage1 mbs4 recompute=off gbs16 → OOM"])
        self.assertIn("auto tuner: global_batch_size 8 (the largest of the GBS pre-search that "
                      "ran)", result.stderr)
        with open(self.dir / "tuner_gbs_history.csv") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([(r["micro_batch_size"], r["global_batch_size"], r["max_mem_usage"])
                          for r in rows], [("1", "4", ""), ("2", "8", ""), ("4", "16", "OOM")])
        self.assertTrue((self.dir / "Job1_GBSSearch" / ("GBS8_DP1_MP2_PP2_Sharding_degree_2_"
                         "stage_1_MBS2_Recompute_False_granularity_None") / "workerlog.0").is_file())
        # Then the search of a given global batch of 8, its trials numbered from 2 (the
        # pre-search is Paddle's job 1).
        main = [l for l in result.stdout.splitlines() if l.startswith("[") and
                not l.startswith("[GBS")]
        self.assertTrue(main, result.stdout)
        self.assertTrue(all(r["global_batch_size"] == "8" for r in self.history()))
        self.assertTrue(list(self.dir.glob("Job2_GBS8_*")), sorted(os.listdir(self.dir)))
        # A second run resumes the pre-search from its history too: nothing of it runs again.
        again = self.tune(cfg)
        self.assertEqual(again.code, 0, again)
        self.assertEqual(len([l for l in again.stdout.splitlines()
                              if l.startswith("[GBS") and "(from tuner_gbs_history.csv)" in l]), 3)

    def test_several_nodes_without_a_master_is_a_usage_error(self):
        (self.dir / "tuner.json").write_text(json.dumps(tuner_json()))
        result = self.run_launch(["--ips", "127.0.0.2,127.0.0.3", "--auto_tuner_json", "tuner.json",
                                  TRAINER])
        self.assertEqual(result.code, 2, result)
        self.assertIn("--auto_tuner_json with --nnodes > 1 needs --master host:port",
                      result.stderr)
        # Without --master the first node would host every job on a new port of its own.
        result = self.run_launch(["--nnodes", 2, "--auto_tuner_json", "tuner.json", TRAINER])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.count("\n"), 1, result)
        self.assertIn("needs --master host:port or --master etcd://host:port, the same on every node",
                      result.stderr)

    def test_peak_memory_from_the_gpu_log_keeps_the_best_that_fits(self):
        # Issue #28 item 4: the peak memory of a trial comes from the GPU log's sampler (a fake
        # nvidia-smi reporting what the trainer says it uses: 1000 * mbs + 100 * dp MiB), and
        # with buffer and max_mem_usage the best is the fastest that stays under the limit:
        # dp4 mbs2 (240/s, 2400 MiB) does not, dp8 mbs1 (180/s, 1800 MiB) does.
        fake = self.dir / "fakebin"
        fake.mkdir()
        mem = self.dir / "mem"
        (fake / "nvidia-smi").write_text(f"""#!/bin/sh
case "$*" in
  *query-gpu=index,uuid*) echo '0, GPU-1, 550.54.15, NVIDIA H200, 1, Disabled, Disabled' ;;
  *query-compute-apps*) ;;
  *utilization*) echo "0, 50, 143771, $(cat {mem} 2>/dev/null || echo 0), 1000, 2026/11/27 10:00:00.000" ;;
  *) exit 9 ;;
esac
""")
        (fake / "nvidia-smi").chmod(0o755)
        (self.dir / "tuner.json").write_text(json.dumps(tuner_json(buffer=100, max_mem_usage=2300)))
        env = self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7", PDLAUNCH_GPU_LOG_PERIOD="0.1",
                       PATH=f"{fake}:{os.environ['PATH']}")
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./params.json", "--seconds", "0.8", "--mem-file", mem],
                                 env=env)
        self.assertEqual(result.code, 0, result)
        rows = {(r["dp_degree"], r["micro_batch_size"]): r["max_mem_usage"] for r in self.history()}
        self.assertEqual((rows[("8", "1")], rows[("4", "2")]), ("1800", "2400"), rows)
        best = json.loads((self.dir / "best_cfg" / "best_cfg.json").read_text())
        self.assertEqual((best["dp_degree"], best["micro_batch_size"]), (8, 1))
        # Issue #42 item 1: the table's first line is the layout that runs, and the faster one
        # over the limit is marked.
        table = result.stdout[result.stdout.index("auto tuner: the best layouts"):].splitlines()
        self.assertEqual(table[:3], [
            "auto tuner: the best layouts (interval_samples_per_second, higher is best; under "
            "max_mem_usage 2300 - buffer 100 MiB first):",
            "  1. dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-  180  1800 MiB  (Job2)",
            "  2. dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=-  240  2400 MiB (over "
            "max_mem_usage 2300 - buffer 100)  (Job4)"])

    def test_an_unrelated_process_on_the_device_is_never_touched(self):
        # Paddle's tuner runs `kill -9` on every process `fuser -v /dev/nvidia*` lists between
        # trials, other users' jobs included. pdlaunch stops a trial through its own cgroup (or
        # its process groups) and nothing else: a process holding a device file outside the job
        # lives through the whole search, and no fuser is ever run.
        fake = self.dir / "fakebin"
        fake.mkdir()
        (fake / "fuser").write_text(f"#!/bin/sh\necho \"$@\" >> {self.dir / 'fuser.calls'}\n")
        (fake / "fuser").chmod(0o755)
        device = self.dir / "nvidia0"
        device.write_text("")
        other = subprocess.Popen(["sh", "-c", f'exec sleep 600 < "{device}"'],
                                 start_new_session=True)
        self.addCleanup(lambda: (other.kill(), other.wait()))
        env = self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7", PATH=f"{fake}:{os.environ['PATH']}")
        (self.dir / "tuner.json").write_text(json.dumps(tuner_json()))
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./params.json"], env=env)
        self.assertEqual(result.code, 0, result)
        self.assertIsNone(other.poll(), "the unrelated process was killed")
        self.assertFalse((self.dir / "fuser.calls").exists())

    def test_customize_runs_every_layout_of_its_csv_in_order(self):
        # search_algo customize (Paddle's CustomizeSearch): the CSV's layouts, in its order, none
        # pruned: mbs 1 after mbs 2 of the same layout runs (the grid would prune it).
        (self.dir / "layouts.csv").write_text(
            "dp_degree,mp_degree,pp_degree,vpp_degree,micro_batch_size,sharding_degree,"
            "sharding_stage,use_recompute,recompute_granularity\n"
            "4,2,1,1,2,1,1,false,\n"
            "4,2,1,1,1,1,1,false,\n"
            "8,1,1,1,1,1,1,false,\n")
        result = self.tune(tuner_json(search_algo={"name": "customize"},
                                      configs_csv="layouts.csv", run_best=False))
        self.assertEqual(result.code, 0, result)
        lines = trial_lines(result)
        self.assertEqual(lines, [
            "[1/3] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=off → 240 "
            "interval_samples_per_second (best so far)",
            "[2/3] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=off → 140 "
            "interval_samples_per_second",
            "[3/3] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=off → 180 "
            "interval_samples_per_second"])
        self.assertEqual(len(self.history()), 3)

    def test_a_custom_search_dim_reaches_the_script_and_prunes_by_its_order(self):
        # custom_search_dim (Paddle's utils.py, prune.py): --use_flash True, then False; with
        # prune true, False of a layout where True ran is not tried. The best run gets it too.
        cfg = tuner_json(dp_degree=4, mp_degree=[2], micro_batch_size=[1, 2],
                         custom_search_dim={"use_flash": {"value": [True, False], "prune": True}})
        cfg["run_cmd"]["use_flash"] = ["--use_flash", ""]
        result = self.tune(cfg)
        self.assertEqual(result.code, 0, result)
        lines = trial_lines(result)
        self.assertEqual(lines, [
            "[1/4] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- use_flash=True → 1240 "
            "interval_samples_per_second (best so far)",
            "[2/4] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- use_flash=False → pruned: "
            "use_flash True ran, a later value is not tried",
            "[3/4] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- use_flash=True → pruned: "
            "mbs 2 ran, a smaller one is slower",
            # Runs: only a layout that ran prunes as slower (Paddle also passes "runnable" on
            # from [2], which it never ran; docs/auto-tuner.md).
            "[4/4] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- use_flash=False → 140 "
            "interval_samples_per_second"])
        self.assertEqual([(r["use_flash"], r["interval_samples_per_second"])
                          for r in self.history()], [("True", "1240"), ("False", "140")])
        trial = self.dir / ("Job1_GBS16_DP4_MP2_PP1_VPP1_Sharding1_Stage1_MBS2_Recompute_None_"
                            "Granularity_None_AccStep2_UseFlashTrue")
        self.assertIn("flash", (trial / "workerlog.0").read_text())
        best = json.loads((self.dir / "best_cfg" / "best_cfg.json").read_text())
        self.assertIs(best["use_flash"], True)
        self.assertIn("layout dp4 mp2 pp1 mbs2 flash",
                      (self.dir / "best_cfg" / "workerlog.0").read_text())

    def test_a_memory_estimation_tool_prunes_before_launching(self):
        # memory_estimation_tool (prune.py prune_by_memory_estimation): the tool's MB above
        # max_mem_usage (MiB, as everywhere in pdlaunch) prunes a layout before it runs: the
        # two layouts that ran out of memory in the search above never start.
        estimator = harness.REPO / "tests" / "helpers" / "fake_memory_estimator.py"
        calls = self.dir / "estimates.log"
        cfg = tuner_json(memory_estimation_tool=str(estimator), max_mem_usage=30000, run_best=False)
        (self.dir / "tuner.json").write_text(json.dumps(cfg))
        env = self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7", ESTIMATOR_LOG=str(calls))
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./params.json"], env=env)
        self.assertEqual(result.code, 0, result)
        lines = trial_lines(result)
        self.assertEqual(lines, [
            "[1/3] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → 180 "
            "interval_samples_per_second (best so far)",
            "[2/3] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs2 recompute=- → 240 "
            "interval_samples_per_second (best so far)",
            "[3/3] dp4 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → pruned: mbs 2 ran, a "
            "smaller one is slower"])
        self.assertIn("2 pruned before launching, 3 candidates", result.stderr)
        # Paddle's arguments, once per layout the rules before it kept.
        made = calls.read_text().splitlines()
        self.assertEqual(len(made), 5)
        self.assertTrue(made[0].startswith("--dp_degree 8 --mp_degree 1 --pp_degree 1 "
                                           "--vpp_degree 1 --sharding_degree 1 --sharding_stage 1 "
                                           "--use_recompute None --micro_batch_size 2 "
                                           "--recompute_granularity None --hidden_size 64 "
                                           "--num_attention_heads 4 --num_layers 4 "
                                           "--vocab_size 128"), made[0])
        # The dry run says why, and a broken tool is one line naming it, nothing started.
        dry = self.run_launch(["--dry_run", "--auto_tuner_json", "tuner.json",
                               "--nproc_per_node", "1", TRAINER], env=env)
        pruned = {l["layout"]: l["pruned"] for l in json.loads(dry.stdout)["layouts"]}
        self.assertEqual(pruned["dp8 mp1 pp1 vpp1 sharding1 stage1 mbs2 recompute=-"],
                         "estimated 40000 MB, above max_mem_usage 30000")
        env["ESTIMATOR_FAIL"] = "1"
        shutil.rmtree(self.dir / ("Job1_GBS16_DP8_MP1_PP1_VPP1_Sharding1_Stage1_MBS1_Recompute_"
                                  "None_Granularity_None_AccStep2"))
        broken = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./params.json"], env=env)
        self.assertEqual(broken.code, 1, broken)
        self.assertIn(f"auto tuner: memory_estimation_tool '{estimator}' failed for dp8 mp1 pp1 "
                      "vpp1 sharding1 stage1 mbs2 recompute=- (a non-zero exit, or no answer "
                      "within 60 s)", broken.stderr)
        self.assertFalse(list(self.dir.glob("Job1*")))

    def test_a_second_run_resumes_without_rerunning_finished_trials(self):
        first = self.tune(tuner_json(task_limit=2, run_best=False))
        self.assertEqual(first.code, 0, first)
        self.assertEqual(len(self.history()), 2)
        second = self.tune(tuner_json(run_best=False))
        self.assertEqual(second.code, 0, second)
        resumed = [l for l in second.stdout.splitlines() if "(from " in l]
        self.assertEqual(len(resumed), 2, second.stdout)
        self.assertEqual(len(self.history()), 4)

    def test_a_hung_trial_is_stopped_at_its_deadline_and_the_search_goes_on(self):
        start = time.monotonic()
        result = self.tune(tuner_json(max_time_per_task=2, run_best=False), "--hang")
        self.assertEqual(result.code, 0, result)
        self.assertLess(time.monotonic() - start, 60)
        self.assertIn("[2/5] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → timeout",
                      result.stdout)
        # The console has the trial's line; the launcher's account is in the trial's directory.
        self.assertNotIn("reached its deadline", result.stderr)
        self.assertIn("reached its deadline of 2 s",
                      (next(self.dir.glob("Job2_*")) / "launcher.log").read_text())
        rows = self.history()
        self.assertEqual(rows[1]["error_info"], "['timeout']")
        self.assertEqual(rows[3]["interval_samples_per_second"], "240")

    def test_ctrl_c_stops_the_search_writes_the_history_and_says_how_to_resume(self):
        (self.dir / "tuner.json").write_text(json.dumps(tuner_json(run_best=False)))
        env = self.env(CUDA_VISIBLE_DEVICES="0,1,2,3,4,5,6,7")
        proc = self.start_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./params.json", "--hang"], env=env)
        self.wait_until(lambda: any(self.dir.glob("Job2_*/workerlog.0")), "the hanging trial")
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGINT)
        result = self.finish(proc, timeout=30)
        self.assertEqual(result.code, 130, result)
        self.assertIn("run the same command again to resume", result.stdout)
        # Issue #42 item 12: the interrupted trial is no result: only Job1 is history, and the
        # same command resumes with Job2.
        self.assertEqual([r["job_id"] for r in self.history()], ["1"])
        resumed = self.start_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                     TRAINER, "./params.json", "--hang"], env=env, name="again")
        self.wait_until(lambda: "(from tuner_history.csv)" in
                        (self.dir / "again.stdout").read_text(), "trial 1 taken from the history")
        os.kill(resumed.pid, signal.SIGINT)
        again = self.finish(resumed, timeout=30)
        self.assertIn("auto tuner interrupted during trial 2", again.stdout)  # Resumed with it.

    def test_dp_estimation_runs_one_replica_of_each_layout_and_converts_its_metric(self):
        # 8 devices here, layouts for 32: mp 2 or 1 with pp 1 and dp 1 leave sharding 16 or 32,
        # so each trial is one replica on 2 or 1 devices, its batch 32 / 16 or 32 / 32.
        cfg = tuner_json(search_algo={
            "name": "dp_estimation", "estimated_num_gpus": 32,
            "conversion": {"step_time": "interval_runtime", "comm_bw": [100]}},
            mp_degree=[1, 2], sharding_degree="auto", micro_batch_size=[1],
            schedule_mode="memory")
        cfg["model_cfg"]["global_batch_size"] = 32
        listed = self.dry_run(cfg)
        self.assertEqual((listed["devices"], listed["estimated_num_gpus"]), (8, 32))
        self.assertEqual([l["layout"] for l in listed["layouts"]],
                         ["dp1 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp16, gbs2)",
                          "dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp32, gbs1)"])
        result = self.tune(cfg)
        self.assertEqual(result.code, 0, result)
        self.assertIn("dp_degree should be [1] in dp estimation search mode", result.stderr)
        # main.py's conversion: comm_time 7 x 4 / 100 = 0.28 s; the step 0.5 x mp s; 110
        # samples/s become 1 / 1.28 x 110 = 85.9375 and 0.5 / 0.78 x 110 = 70.51282.
        self.assertEqual(trial_lines(result), [
            "[1/2] dp1 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp16, gbs2) → 110 "
            "interval_samples_per_second, 85.9375 at dp16 (comm_bw 100) (best so far)",
            "[2/2] dp1 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp32, gbs1) → 110 "
            "interval_samples_per_second, 70.51282 at dp32 (comm_bw 100)"])
        # Each replica ran on the first mp x pp devices, with Paddle's optimizer flag.
        job1 = self.dir / ("Job1_GBS2_DP1_MP2_PP1_VPP1_Sharding1_Stage1_MBS1_Recompute_None_"
                           "Granularity_None_AccStep2")
        job2 = self.dir / ("Job2_GBS1_DP1_MP1_PP1_VPP1_Sharding1_Stage1_MBS1_Recompute_None_"
                           "Granularity_None_AccStep1")
        self.assertIn("devices 0,1 bypass 1", (job1 / "workerlog.0").read_text())
        self.assertIn("devices 0 bypass 1", (job2 / "workerlog.0").read_text())
        rows = self.history()
        self.assertEqual([(r["mp_degree"], r["estimated_dp_degree"], r["num_gpus"],
                           r["global_batch_size"], r["bw_100_interval_samples_per_second"])
                          for r in rows], [("2", "16", "2", "2", "85.9375"),
                                           ("1", "32", "1", "1", "70.51282")])
        with open(self.dir / "tuner_history_enhanced.csv") as f:
            enhanced = list(csv.DictReader(f))
        self.assertEqual([r["job_id"] for r in enhanced], ["1", "2"])
        # As in Paddle, the best is not run: its layout is for 32 devices.
        self.assertNotIn("Launch best cfg", result.stdout)
        self.assertIn("the best is not run here", result.stdout)
        self.assertFalse((self.dir / "best_cfg" / "workerlog.0").exists())
        best = json.loads((self.dir / "best_cfg" / "best_cfg.json").read_text())
        self.assertEqual((best["mp_degree"], best["estimated_dp_degree"]), (2, 16))
        # Resume: nothing runs again.
        again = self.tune(cfg)
        self.assertEqual(again.code, 0, again)
        self.assertEqual(len([l for l in trial_lines(again) if "(from " in l]), 2, again)

    def test_dp_estimation_sharding_overlap_runs_the_widened_replica_without_and_with(self):
        # 4 devices, layouts for 16: the replica of mp 2 (for dp 8) on 2 devices, then widened by
        # sharding 2 to the 4 without and with the overlap, whose YAML key differs between the two.
        (self.dir / "c.yaml").write_text("Global:\n  micro_batch_size: 1\n  overlap: false  # keep\n")
        cfg = tuner_json(search_algo={
            "name": "dp_estimation", "estimated_num_gpus": 16,
            "conversion": {"step_time": "interval_runtime"},
            "sharding_overlap": {"sharding_mp": ["./c.yaml", "Global.overlap", True, False]}},
            mp_degree=[2], sharding_degree="auto", micro_batch_size=[1], dp_degree=[1],
            run_cmd={"mp_degree": ["--mp", ""],
                     "micro_batch_size": ["./c.yaml", "Global.micro_batch_size"]})
        (self.dir / "tuner.json").write_text(json.dumps(cfg))
        result = self.run_launch(["--auto_tuner_json", "tuner.json", "--nproc_per_node", "1",
                                  TRAINER, "./c.yaml"],
                                 env=self.env(CUDA_VISIBLE_DEVICES="0,1,2,3"))
        self.assertEqual(result.code, 0, result)
        self.assertEqual([re.sub(r" → .*", "", l) for l in trial_lines(result)], [
            "[1/3] dp1 mp2 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp8, gbs2)",
            "[2/3] dp1 mp2 pp1 vpp1 sharding2 stage1 mbs1 recompute=- overlap=off",
            "[3/3] dp1 mp2 pp1 vpp1 sharding2 stage1 mbs1 recompute=- overlap=on"])
        logs = sorted(self.dir.glob("Job*/workerlog.0"))
        self.assertEqual([re.search(r"devices \S+ bypass \S+", p.read_text()).group(0)
                          for p in logs],
                         ["devices 0,1 bypass 1", "devices 0,1,2,3 bypass 0",
                          "devices 0,1,2,3 bypass 0"])
        copies = {p.name.split("_Overlap_")[1]: p.read_text()
                  for p in self.dir.glob("c_Job*_Overlap_*.yaml")}
        self.assertEqual(copies, {"False.yaml": "Global:\n  micro_batch_size: 1\n  overlap: false  # keep\n",
                                  "True.yaml": "Global:\n  micro_batch_size: 1\n  overlap: true  # keep\n"})
        rows = self.history()
        self.assertEqual([r["sharding_overlap"] for r in rows], ["", "False", "True"])
        # The same metric with and without: a gain of 0, the replica's bw_ value as it was.
        self.assertEqual(rows[0]["overlap_bw_100_interval_samples_per_second"],
                         rows[0]["bw_100_interval_samples_per_second"])

    def test_dp_estimation_across_nodes_needs_etcd(self):
        result = self.tune(tuner_json(search_algo={"name": "dp_estimation",
                                                   "estimated_num_gpus": 16}),
                           extra=["--master", "127.0.0.1:1", "--nnodes", 2])
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.strip().splitlines()[-1],
                         "launch: error: --auto_tuner_json: dp_estimation across several nodes "
                         "runs through --master etcd://host:port, as Paddle's: a replica of fewer "
                         "nodes is an etcd job of the first of them (docs/auto-tuner.md)")

    def test_dry_run_lists_the_layouts_with_their_prunes(self):
        plan = self.dry_run(tuner_json(invalid_strategy=["dp8_mbs1"]))
        self.assertEqual(plan["devices"], 8)
        pruned = {l["layout"]: l["pruned"] for l in plan["layouts"]}
        self.assertEqual(pruned["dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=-"],
                         "invalid_strategy dp8_mbs1")
        self.assertEqual(list(self.dir.glob("Job*")), [])

    def test_a_key_it_does_not_know_is_a_usage_error_naming_it(self):
        result = self.tune(tuner_json(search_algo={"name": "gbs"}))
        self.assertEqual(result.code, 2, result)
        self.assertEqual(result.stderr.strip().splitlines()[-1],
                         "launch: error: --auto_tuner_json: search_algo.name: 'gbs': expected "
                         "grid, dp_estimation or customize (gbs is the pre-search that "
                         "model_cfg.global_batch_size \"auto\" runs before any of them)")
        result = self.tune(tuner_json(dp_degre="auto"))
        self.assertEqual(result.code, 2, result)
        self.assertIn("--auto_tuner_json: dp_degre: unknown key", result.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()


class AutoTunerTwoNodeTest(LaunchTestCase):
    """Issue #28 item 5: two nodes (launchers on 127.0.0.2 and 127.0.0.3, each in a directory of
    its own, as two hosts) search through the HTTP master of --master; one rank per node, 4
    devices each: the same 8-device space as AutoTunerTest. Only rank 1 (node b) runs out of
    memory, so node a sees a failed job with a metric and must still record OOM: the outcomes
    are merged, not each node's own."""

    def node_dir(self, name, cfg=None):
        d = self.dir / name
        d.mkdir(exist_ok=True)
        (d / "tuner.json").write_text(json.dumps(cfg or tuner_json()))
        (d / "params.json").write_text('{"per_device_train_batch_size": 1}\n')
        return d

    def master(self):
        """The --master of the nodes: the HTTP master on a reserved port of node a's address."""
        from etcd import PortReservation
        reservation = PortReservation(1)
        self.addCleanup(reservation.close)
        return f"127.0.0.2:{reservation.ports[0]}"

    def node_env(self, visible):
        return self.env(CUDA_VISIBLE_DEVICES=visible)

    def start_nodes(self, launcher_args=(), trainer_args=(), devices=("0,1,2,3", "0,1,2,3"),
                    cfg=None):
        """Nodes a (127.0.0.2, which an HTTP master's address names) and b (127.0.0.3), each in
        its own directory, searching through self.master(): {name: process}."""
        master = self.master()
        procs = {}
        for (name, host), visible in zip((("a", "127.0.0.2"), ("b", "127.0.0.3")), devices):
            procs[name] = self.start_launch(
                ["--master", master, "--nnodes", 2, "--host", host, "--nproc_per_node", 1,
                 *launcher_args, "--auto_tuner_json", "tuner.json", TRAINER, "./params.json",
                 *trainer_args],
                env=self.node_env(visible), cwd=self.node_dir(name, cfg), name=name)
        return procs

    def test_two_nodes_agree_on_every_trial_and_run_the_best_together(self):
        procs = self.start_nodes(trainer_args=("--oom-rank", 1))
        results = {name: self.finish(proc, 180) for name, proc in procs.items()}
        self.assert_nodes_ended_0(results)
        lines = {name: trial_lines(r) for name, r in results.items()}
        self.assertEqual(lines["a"], KNOWN_SEARCH, results["a"])
        self.assertEqual(lines["b"], lines["a"], results["b"])
        # One history on both (the merged outcomes, the longest time of each trial).
        history = {n: (self.dir / n / "tuner_history.csv").read_text() for n in ("a", "b")}
        self.assertEqual(history["a"], history["b"])
        # One node (rank 1's; whichever node it was) saw the out-of-memory text, the other only
        # a failed job: yet both recorded OOM.
        oom_trial = ("Job1_GBS16_DP8_MP1_PP1_VPP1_Sharding1_Stage1_MBS2_Recompute_None_"
                     "Granularity_None_AccStep1")
        saw = sorted("Out of memory" in (self.dir / n / oom_trial / "workerlog.0").read_text()
                     for n in ("a", "b"))
        self.assertEqual(saw, [False, True])
        # The best ran on both nodes, one rank each (each node names its log by local index).
        for n in ("a", "b"):
            self.assertIn("layout dp4 mp2 pp1 mbs2",
                          (self.dir / n / "best_cfg" / "workerlog.0").read_text())
        # The exchanges' rendezvous lines are the launcher's bookkeeping: not on the console.
        self.assertNotIn("auto_tuner_1_outcome", results["a"].stderr + results["b"].stderr)
        self.assertIn("auto tuner: the 2 nodes search the same", results["a"].stderr)

    def test_a_node_stopped_by_ctrl_c_stops_the_other_at_once(self):
        # Issue #42 item 3: node b gets SIGINT during trial 2 (20 s long). Node a learns it from
        # b's failure record within its heartbeat, says which node and why, keeps trial 2 out of
        # the history and exits 130 too: it waited 3 x 2 + 1 + 10 s for b's outcome before,
        # then said the nodes did not agree.
        procs = self.start_nodes(launcher_args=("--heartbeat_timeout", 2, "--grace", 1),
                                 trainer_args=("--seconds", 20))
        b_out = self.dir / "b.stdout"
        self.wait_until(lambda: "[1/5]" in b_out.read_text(), "trial 1 on node b", timeout=60)
        self.wait_until(lambda: any((self.dir / "b").glob("Job2_*/workerlog.0")),
                        "trial 2 on node b", timeout=60)
        procs["b"].send_signal(signal.SIGINT)
        stopped = time.monotonic()
        results = {name: self.finish(proc, 60) for name, proc in procs.items()}
        self.assertLess(time.monotonic() - stopped, 2 + 1 + 10, "node a waited for node b")
        for name, result in results.items():
            self.assertEqual(result.code, 130, f"node {name}: {result!r}")
        self.assertIn("auto tuner: the launcher on node 127.0.0.3 received SIGINT during "
                      "auto_tuner_2; the search stops here", results["a"].stderr)
        self.assertIn("auto tuner interrupted during trial 2", results["a"].stdout)
        self.assertNotIn("did not agree", results["a"].stderr)
        for name in ("a", "b"):
            with open(self.dir / name / "tuner_history.csv") as f:
                self.assertEqual([r["job_id"] for r in csv.DictReader(f)], ["1"], name)

    def test_a_node_that_dies_stops_the_search_on_the_other(self):
        # Node b's launcher is SIGKILLed during trial 2 (20 s long): node a's trial fails within
        # the heartbeat timeout, then the exchange that follows waits 3 x 2 + 1 + 10 s for b and
        # the search stops there, the history written (without trial 2), nothing left running.
        procs = self.start_nodes(launcher_args=("--heartbeat_timeout", 2, "--grace", 1),
                                 trainer_args=("--seconds", 20))
        b_out = self.dir / "b.stdout"
        self.wait_until(lambda: "[1/5]" in b_out.read_text(), "trial 1 on node b", timeout=60)
        time.sleep(1)  # Trial 2 has started.
        procs["b"].kill()
        procs["b"].wait()
        killed = time.monotonic()
        result = self.finish(procs["a"], 90)
        self.assertNotEqual(result.code, 0, result)
        # 2 s to notice, 17 s of the exchange: well within 45 s.
        self.assertLess(time.monotonic() - killed, 45, "node a waited past its bounds")
        self.assertIn("auto tuner: the nodes did not agree on the outcome of trial 2", result.stderr)
        with open(self.dir / "a" / "tuner_history.csv") as f:
            rows = list(csv.DictReader(f))
        # Trial 2's outcome was never merged: left out, to be run again when the search resumes.
        self.assertEqual([r["job_id"] for r in rows], ["1"])
        self.assertEqual(rows[0]["max_mem_usage"], "OOM")
        self.wait_until(lambda: not processes_in(self.dir), "no process left in the test's "
                        "directories (node b's ranks go with its watchdog)", timeout=20)
        # The same command on both nodes resumes: trial 1 from the history (node b wrote the
        # same one before it was killed), trial 2 run again, the search as it would have been.
        self.assertEqual((self.dir / "b" / "tuner_history.csv").read_text(),
                         (self.dir / "a" / "tuner_history.csv").read_text())
        procs = self.start_nodes(launcher_args=("--heartbeat_timeout", 2, "--grace", 1))
        results = {name: self.finish(proc, 120) for name, proc in procs.items()}
        self.assert_nodes_ended_0(results)
        for name, result in results.items():
            self.assertEqual(trial_lines(result),
                             [KNOWN_SEARCH[0] + " (from tuner_history.csv)"] + KNOWN_SEARCH[1:],
                             result)

    def test_a_hung_trial_is_stopped_on_every_node_at_its_deadline(self):
        start = time.monotonic()
        procs = self.start_nodes(trainer_args=("--hang",),
                                 cfg=tuner_json(max_time_per_task=2, run_best=False))
        results = {name: self.finish(proc, 90) for name, proc in procs.items()}
        self.assertLess(time.monotonic() - start, 60)
        self.assert_nodes_ended_0(results)
        for name, result in results.items():
            self.assertIn("[2/5] dp8 mp1 pp1 vpp1 sharding1 stage1 mbs1 recompute=- → timeout",
                          result.stdout)
        # The node whose deadline passes first stops its rank, which ends the trial on the
        # other, maybe before its own deadline: a deadline anywhere makes it a timeout.
        self.assertTrue(any("reached its deadline of 2 s" in
                            (next((self.dir / n).glob("Job2_*")) / "launcher.log").read_text()
                            for n in results), results)
        self.assertEqual(trial_lines(results["a"]), trial_lines(results["b"]))
        history = {n: (self.dir / n / "tuner_history.csv").read_text() for n in ("a", "b")}
        self.assertEqual(history["a"], history["b"])
        self.assertFalse(processes_in(self.dir), "a hung rank was left running")

    def test_the_gbs_pre_search_runs_on_every_node_alike(self):
        # global_batch_size "auto" across two nodes: its trials are jobs of both, their outcomes
        # merged as the search's (only rank 1 runs out of memory at mbs 4), then the search.
        cfg = tuner_json(run_best=False)
        cfg["model_cfg"]["global_batch_size"] = "auto"
        procs = self.start_nodes(trainer_args=("--oom-rank", 1), cfg=cfg)
        results = {name: self.finish(proc, 180) for name, proc in procs.items()}
        self.assert_nodes_ended_0(results)
        for name, result in results.items():
            self.assertEqual([l.split(" → ")[1] for l in result.stdout.splitlines()
                              if l.startswith("[GBS")],
                             ["ran (110 interval_samples_per_second)",
                              "ran (210 interval_samples_per_second)", "OOM"], result)
            self.assertIn("auto tuner: global_batch_size 8", result.stderr)
        self.assertEqual(trial_lines(results["a"]), trial_lines(results["b"]))
        for csv_name in ("tuner_gbs_history.csv", "tuner_history.csv"):
            self.assertEqual((self.dir / "a" / csv_name).read_text(),
                             (self.dir / "b" / csv_name).read_text(), csv_name)

    def test_nodes_with_different_searches_stop_before_any_trial(self):
        procs = self.start_nodes(devices=("0,1,2,3", "0,1"))
        for name, proc in procs.items():
            result = self.finish(proc, 120)
            self.assertEqual(result.code, 1, f"node {name}: {result!r}")
            self.assertIn("auto tuner: the nodes do not search the same layouts", result.stderr)
            self.assertFalse(list((self.dir / name).glob("Job*")), "a trial ran")


class AutoTunerIpsTwoNodeTest(AutoTunerTwoNodeTest):
    """The same two-node search with the nodes listed by --ips: each trial an --ips job of both
    (fixed ports from FLAGS_START_PORT, no rendezvous), the agreement on each trial through the
    HTTP --master beside the list (docs/auto-tuner.md, "Several nodes")."""

    def start_nodes(self, launcher_args=(), trainer_args=(), devices=("0,1,2,3", "0,1,2,3"),
                    cfg=None):
        master = self.master()
        from etcd import PortReservation
        start_port = PortReservation(1)
        self.addCleanup(start_port.close)
        procs = {}
        for (name, host), visible in zip((("a", "127.0.0.2"), ("b", "127.0.0.3")), devices):
            env = self.node_env(visible)
            env["FLAGS_START_PORT"] = str(start_port.ports[0])
            procs[name] = self.start_launch(
                ["--ips", "127.0.0.2,127.0.0.3", "--master", master, "--host", host,
                 "--nproc_per_node", 1, *launcher_args, "--auto_tuner_json", "tuner.json",
                 TRAINER, "./params.json", *trainer_args],
                env=env, cwd=self.node_dir(name, cfg), name=name)
        return procs

    # Trials of the list are Paddle 2's --ips jobs, whose nodes never talk: a node stopped by
    # Ctrl-C is noticed at the next exchange (docs/auto-tuner.md, "Several nodes").
    test_a_node_stopped_by_ctrl_c_stops_the_other_at_once = None

    def test_the_master_beside_the_list_is_used_without_a_warning(self):
        procs = self.start_nodes()
        for name, proc in procs.items():
            result = self.finish(proc, 120)
            self.assertEqual(result.code, 0, f"node {name}: {result!r}")
            self.assertNotIn("is not used", result.stderr)
            self.assertIn("auto tuner: the 2 nodes search the same", result.stderr)
            self.assertRegex(result.stderr, r"node [01] of 2 in --ips")  # Trials of the list.


class AutoTunerEtcdTwoNodeTest(AutoTunerTwoNodeTest):
    """The same two-node search through etcd (--master etcd://, Paddle's way), Debian's etcd on a
    free loopback port: every trial an etcd job of both nodes, the agreement through etcd keys
    (docs/auto-tuner.md). PADDLE_ELASTIC_TTL 3: a dead node's lease goes within 3 s, and the
    exchange after the trial waits 3 + --grace 1 + 10 s for it."""

    # An etcd trial learns of a stopped node when its lease goes: at the next exchange
    # (docs/auto-tuner.md, "Several nodes").
    test_a_node_stopped_by_ctrl_c_stops_the_other_at_once = None

    def setUp(self):
        super().setUp()
        from etcd import EtcdServer
        self.etcd = EtcdServer(self.dir / "etcd.log")
        self.addCleanup(self.etcd.close)
        self.etcd.start()

    def master(self):
        return f"etcd://{self.etcd.endpoint}"

    def node_env(self, visible):
        return self.env(CUDA_VISIBLE_DEVICES=visible, PADDLE_ELASTIC_TTL="3")

    def test_dp_estimation_runs_a_replica_of_fewer_nodes_on_the_first_of_them(self):
        # 4 devices a node, layouts for 16 with mp 4: the replica of pp 1 (for dp 4) needs 4
        # devices, one node; that of pp 2 (for dp 2) needs 8, both. The nodes' names sorted put
        # node a (127.0.0.2) first: it alone runs the first.
        cfg = tuner_json(search_algo={"name": "dp_estimation", "estimated_num_gpus": 16},
                         mp_degree=[4], pp_degree=[1, 2], sharding_degree="auto", dp_degree=[1],
                         micro_batch_size=[1], schedule_mode="memory")
        cfg["model_cfg"]["global_batch_size"] = 16
        procs = self.start_nodes(cfg=cfg)
        results = {name: self.finish(proc, 180) for name, proc in procs.items()}
        self.assert_nodes_ended_0(results)
        self.assertEqual(trial_lines(results["a"]), trial_lines(results["b"]))
        self.assertEqual([re.sub(r" → .*", "", l) for l in trial_lines(results["a"])], [
            "[1/2] dp1 mp4 pp1 vpp1 sharding1 stage1 mbs1 recompute=- (for dp4, gbs4)",
            "[2/2] dp1 mp4 pp2 vpp1 sharding1 stage1 mbs1 recompute=- (for dp2, gbs8)"])
        self.assertTrue(all("→ 110 interval_samples_per_second" in l
                            for l in trial_lines(results["a"])), results["a"].stdout)
        self.assertEqual(sorted(p.name[:4] for p in (self.dir / "a").glob("Job*")),
                         ["Job1", "Job2"])
        self.assertEqual([p.name[:4] for p in (self.dir / "b").glob("Job*")], ["Job2"])
        self.assertIn("auto_tuner_1 runs on the first 1 of the 2 nodes; this node waits for its "
                      "outcome", results["b"].stderr)
        self.assertEqual((self.dir / "a" / "tuner_history.csv").read_text(),
                         (self.dir / "b" / "tuner_history.csv").read_text())

    def test_the_search_leaves_no_key_behind_but_its_exchanges_for_seconds(self):
        procs = self.start_nodes()
        for name, proc in procs.items():
            self.assertEqual(self.finish(proc, 180).code, 0, name)
        # Each trial's etcd job's keys went after its outcome; the exchanges' after the best
        # run, a job of both nodes (every node is past every exchange then).
        self.wait_until(lambda: not self.etcd.keys("/"), "etcd to hold no key", timeout=5)

    def test_two_searches_on_one_etcd_never_meet(self):
        # Two searches of different --job_id at once on one etcd, two nodes each: each trial's
        # etcd job is <job_id>:auto_tuner_<n>, the exchanges are under the job id, so neither
        # joins, stops or cleans up the other's trials.
        procs = {}
        for job, hosts in (("s1", ("127.0.0.2", "127.0.0.3")), ("s2", ("127.0.0.4", "127.0.0.5"))):
            for host in hosts:
                name = f"{job}_{host}"
                procs[name] = self.start_launch(
                    ["--master", self.master(), "--nnodes", 2, "--host", host, "--job_id", job,
                     "--nproc_per_node", 1, "--auto_tuner_json", "tuner.json", TRAINER,
                     "./params.json"],
                    env=self.node_env("0,1,2,3"), cwd=self.node_dir(name), name=name)
        for name, proc in procs.items():
            result = self.finish(proc, 180)
            self.assertEqual(result.code, 0, f"{name}: {result!r}")
            self.assertEqual(trial_lines(result), KNOWN_SEARCH, name)

    def test_an_elastic_range_or_level_is_a_usage_error(self):
        (self.dir / "tuner.json").write_text(json.dumps(tuner_json()))
        for args, text in ((["--nnodes", "2:3"], "needs a fixed --nnodes, not 2:3"),
                           (["--nnodes", "2", "--elastic_level", "1"],
                            "--elastic_level 1 would restart or shrink it")):
            result = self.run_launch(["--master", self.master(), *args, "--auto_tuner_json",
                                      "tuner.json", TRAINER])
            self.assertEqual(result.code, 2, result)
            self.assertIn(text, result.stderr)
            self.assertEqual(result.stderr.count("\n"), 1, result)
