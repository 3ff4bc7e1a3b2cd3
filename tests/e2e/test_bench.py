"""The bench scripts' own logic where a run can go wrong (issue #42 item 13): a partial run is
reported as one, never a traceback."""
import importlib.util
import tempfile
import unittest
from pathlib import Path

import harness

SCALE = harness.REPO / "bench" / "scale.py"


def load_scale():
    spec = importlib.util.spec_from_file_location("scale", SCALE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BenchScaleTest(unittest.TestCase):
    def test_a_stamp_created_but_never_written_is_a_rank_not_started(self):
        scale = load_scale()
        with tempfile.TemporaryDirectory() as tmp:
            stamps = Path(tmp)
            (stamps / "stamp.0").write_text("1700000000.25\n")
            (stamps / "stamp.1").write_text("")  # A rank stopped mid-write.
            (stamps / "stamp.2").write_text("17000")  # Cut short: still a number.
            (stamps / "stamp.3").write_text("1700000000.2x")
            self.assertEqual(sorted(scale.stamps_written(stamps)), [17000.0, 1700000000.25])
            self.assertIsNone(scale.read_stamp(stamps / "fail"))


if __name__ == "__main__":
    harness.main()
