"""Reliability R21 and R22: per-rank logs and the console (docs/reliability.md).

pdlaunch, like Paddle, echoes local rank 0 alone, unprefixed; every rank's output is in its
workerlog.N. These tests check what that design promises: nothing lost, nothing split.
"""
import json

import harness
from relcase import RelTestCase, rel_rank

LINES = 10000
PARTIAL = "rank {rank} crashed in the middle of this line"
MIX_MIB = 8  # MiB of short lines per rank in the console test
THROUGHPUT_BOUND = 20.0  # MB/s aggregate (target 200)


class LogCompletenessTest(RelTestCase):
    """R21: a rank prints 10 000 lines with print() (never flushing), then a partial line, then
    dies of SIGSEGV. Its workerlog.N holds every byte: it is the rank's stdout from the start,
    and `python -u` (PYTHONUNBUFFERED=1) leaves nothing in a buffer."""

    def expected(self, rank):
        return rel_rank.numbered_lines(rank, LINES) + PARTIAL.format(rank=rank)

    def test_log_holds_every_byte_up_to_a_crash_mid_line(self):
        result = self.run_launch(["--nproc_per_node", 2] + self.rel_args(
            "--lines", LINES, "--partial", PARTIAL, "--ready", "--barrier", 2, "--die",
            "1:SEGV", "--sleep", 600))
        self.assertEqual(result.code, 139, result)
        for rank in (0, 1):
            log = self.dir / "log" / f"workerlog.{rank}"
            self.assertEqual(log.read_text(), self.expected(rank), f"workerlog.{rank}")
            env = json.loads((self.rec / f"env.{rank}.json").read_text())
            self.assertEqual(env["stdout"], str(log.resolve()))  # its stdout from exec on
            self.assertEqual(env["PYTHONUNBUFFERED"], "1")
        # Rank 0's output, partial last line included, is also on the console, whole.
        stdout = (self.dir / "launcher.stdout").read_text()
        self.assertTrue(stdout.endswith("\n" + self.expected(0)), stdout[-300:])
        self.assertNotIn("rank 1 ", stdout)
        self.assertIn(f"ended with signal 11 (SIGSEGV); last 20 lines of "
                      f"{(self.dir / 'log' / 'workerlog.1').resolve()}:\n", result.stderr)
        self.assertIn(PARTIAL.format(rank=1), result.stderr)

    def test_relaunch_appends_and_log_overwrite_truncates(self):
        args = ["--nproc_per_node", 2] + self.rel_args("--lines", 3)
        for _ in range(2):
            self.assertEqual(self.run_launch(args).code, 0)
        log = self.dir / "log" / "workerlog.1"
        # Byte-exact around the line that names the second run (docs/cli.md, "Runs that share
        # a log directory").
        first, banner, second = log.read_text().partition("===== pdlaunch: job default")
        self.assertEqual(first, rel_rank.numbered_lines(1, 3))
        self.assertEqual(second.split("=====\n", 1)[1], rel_rank.numbered_lines(1, 3))
        self.assertEqual(self.run_launch(["--log_overwrite"] + args).code, 0)
        self.assertEqual(log.read_text(), rel_rank.numbered_lines(1, 3))


class ConsoleMultiplexTest(RelTestCase):
    """R22, what pdlaunch provides: 8 ranks write a \\r progress bar, a 256 KiB line in 1 KiB
    pieces with pauses, 8 MiB of short lines in 1 MiB writes and a partial last line. Every
    workerlog.N is byte-exact; the console carries rank 0's bytes exactly, after the launcher's
    own lines, never split and never mixed with another rank's."""

    def test_rank_zero_echo_is_byte_exact_and_no_rank_is_starved(self):
        proc = self.start_timed(["--nproc_per_node", 8] + self.rel_args(
            "--console-mix", MIX_MIB))
        exited_at = self.exit_time(proc)
        result = self.finish(proc)
        self.assertEqual(result.code, 0, result)
        total = 0
        for rank in range(8):
            expected = b"".join(data for data, _ in rel_rank.console_mix(rank, MIX_MIB))
            log = self.dir / "log" / f"workerlog.{rank}"
            self.assertTrue(log.read_bytes() == expected, f"workerlog.{rank} differs")
            total += len(expected)
            if rank == 0:
                echo = expected
        stdout = (self.dir / "launcher.stdout").read_bytes()
        self.assertTrue(stdout.endswith(echo), "rank 0's bytes are not the console's end")
        header = stdout[:len(stdout) - len(echo)]
        self.assertTrue(header.endswith(b"\n"), header[-200:])
        self.assertNotIn(b"rank ", header)
        self.assertIn(b"launch proc_id:", header)
        rate = total / 1e6 / (exited_at - proc.pdl_start)
        self.measure("R22", "8 ranks, aggregate output through logs and echo", rate, "MB/s",
                     f">= {THROUGHPUT_BOUND:.0f} MB/s")
        self.assertGreaterEqual(rate, THROUGHPUT_BOUND)
        for path in [self.dir / "launcher.stdout", *(self.dir / "log").glob("workerlog.*")]:
            path.unlink()  # 75 MB the work directory need not keep once checked


if __name__ == "__main__":
    harness.main()
