"""Issue #2: a failing rank stops the job; the launcher reports it and returns its exit code."""

import harness
from harness import LaunchTestCase, abort_line

# Siblings of a failing rank would sleep this long: a launcher that does not stop them fails
# the test by its run timeout instead of passing slowly.
SIBLING_SLEEP = 600
# The launcher must be done well within this (default grace is 5 s; generous for a loaded host).
PROMPT = 60


class AbortTest(LaunchTestCase):
    """Exit code and ABORT line of a failed job; siblings and their children stopped."""

    def run_failing(self, nproc, *rank_flags, flags=()):
        args = list(flags) + ["--nproc_per_node", nproc] + self.rank_args(
            "--sleep", SIBLING_SLEEP, "--delay", "0.5", *rank_flags)
        result = self.run_launch(args)
        self.assertLess(result.elapsed, PROMPT, result)
        self.assert_all_gone(self.recorded_pids("pid").values())
        return result

    def test_rank_exit_code_becomes_the_launchers(self):
        result = self.run_failing(2, "--say", "last words before failing", "--exit", "1:7")
        self.assertEqual(result.code, 7, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(2, [1]))
        self.assertNotIn("Local processes completed.", harness.log_messages(result.stderr))
        # The tail of the failed rank's log is shown (rank 1's output reaches no other place).
        self.assertIn("rank 1: last words before failing", result.stdout + result.stderr)

    def test_abort_names_the_global_rank_and_world_size(self):
        result = self.run_failing(4, "--exit", "2:3")
        self.assertEqual(result.code, 3, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(4, [2]))
        self.assertEqual(len(self.recorded_pids("pid")), 4)

    def test_rank_killed_by_sigsegv_gives_139(self):
        result = self.run_failing(2, "--signal", "1:SEGV")
        self.assertEqual(result.code, 139, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(2, [1]))

    def test_rank_killed_by_sigkill_gives_137(self):
        result = self.run_failing(2, "--signal", "0:KILL")
        self.assertEqual(result.code, 137, result)
        self.assert_logged(result.stderr, "ERROR", abort_line(2, [0]))

    def test_exit_codes_pass_through(self):
        for code in (1, 2, 42, 126, 127, 255):
            with self.subTest(code=code):
                result = self.run_launch(["/bin/sh", "-c", f"exit {code}"])
                self.assertEqual(result.code, code, result)
                self.assert_logged(result.stderr, "ERROR", abort_line(1, [0]))

    def test_sibling_ignoring_sigterm_is_killed_after_the_grace_period(self):
        result = self.run_failing(2, "--ignore", "TERM,INT,HUP", "--exit", "1:7",
                                  flags=["--grace", "1"])
        self.assertEqual(result.code, 7, result)
        self.assertGreaterEqual(result.elapsed, 1.0, result)

    def test_grandchildren_of_all_ranks_are_stopped(self):
        result = self.run_failing(2, "--grandchild", self.rec, "--exit", "1:5")
        self.assertEqual(result.code, 5, result)
        grandchildren = self.recorded_pids("grandchild")
        self.assertEqual(sorted(grandchildren), [0, 1])
        self.assert_all_gone(grandchildren.values())

    def test_rank_exiting_zero_early_does_not_stop_the_others(self):
        args = ["--nproc_per_node", 2] + self.rank_args("--exit", "1:0", "--sleep", "3", "--bye")
        result = self.run_launch(args)
        self.assertEqual(result.code, 0, result)
        self.assertEqual((self.dir / "log" / "workerlog.0").read_text(), "rank 0: bye\n")
        self.assert_logged(result.stderr, "INFO", "Local processes completed.")
        self.assertNotIn("ABORT", result.stdout + result.stderr)


if __name__ == "__main__":
    harness.main()
