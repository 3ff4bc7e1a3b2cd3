"""What `cmake --install` and the Debian package ship besides the binary (issue #11, item 5): the
man page and the bash and zsh completion, generated at build time, tried in real shells and in
man(1). The package itself is tested in tests/package."""
import os
import re
import shutil
import subprocess
import unittest
from pathlib import Path

import harness
from harness import LaunchTestCase
from shells import bash_complete, interactive_complete

GENERATED = Path(harness.BIN).resolve().parent / "share"
BASH_SCRIPT = GENERATED / "bash-completion" / "launch"
ZSH_DIR = GENERATED / "zsh"
MAN_PAGE = GENERATED / "man" / "launch.1.gz"


def help_flags():
    """Every long option of `launch --help`, in its order."""
    out = subprocess.run([harness.BIN, "--help"], capture_output=True, text=True, check=True)
    return re.findall(r"^  (?:-h, )?(--[a-z][a-z0-9_]*)", out.stdout, re.M)


# The options --help lists that are refused as not built yet (docs/cli.md).
REFUSED = set()


class CompletionTest(LaunchTestCase):
    """The generated completion scripts in bash and zsh."""

    def setUp(self):
        super().setUp()
        self.assertTrue(BASH_SCRIPT.is_file(), f"{BASH_SCRIPT} was not generated (build all)")
        self.assertTrue((ZSH_DIR / "_launch").is_file(), "the zsh completion was not generated")
        (self.dir / "train.py").write_text("print('hi')\n")
        (self.dir / "logs_here").mkdir()
        self.source = f"source {BASH_SCRIPT}"

    def complete(self, *words):
        return bash_complete(list(words), self.source, self.dir)

    def test_bash_offers_every_flag_the_parser_accepts(self):
        offered = set(self.complete("launch", "--"))
        self.assertEqual(offered, set(help_flags()) - REFUSED)
        for flag in REFUSED:
            probe = subprocess.run([harness.BIN, "--dry_run", f"{flag}=x", "t.py"],
                                   capture_output=True, text=True, timeout=30)
            self.assertIn("not supported yet", probe.stderr)
            self.assertEqual(probe.returncode, 2)

    def test_bash_completes_a_prefix_and_values(self):
        self.assertEqual(self.complete("launch", "--run_m"), ["--run_mode"])
        self.assertEqual(self.complete("launch", "--run_mode", ""),
                         ["collective", "ps", "ps-heter", "rpc"])
        self.assertEqual(self.complete("launch", "--run_mode", "=", "p"), ["ps", "ps-heter"])
        self.assertEqual(self.complete("launch", "--log_level", "W"), ["WARNING"])
        self.assertEqual(self.complete("launch", "--force", "=", ""), ["true", "false"])
        self.assertEqual(self.complete("launch", "--log_dir", "logs"), ["logs_here"])
        # Free text (an address): nothing offered, and no file names either.
        self.assertEqual(self.complete("launch", "--master", ""), [])

    def test_bash_leaves_the_script_and_its_arguments_alone(self):
        # After the script every word is the script's: no launcher option is offered, even for
        # a word starting with --; readline then completes file names (complete -o default).
        self.assertEqual(self.complete("launch", "--gpus", "0,1", "train.py", "--"), [])
        self.assertEqual(self.complete("launch", "--log_dir=x", "train.py", "--lr"), [])
        self.assertEqual(self.complete("launch", "--", "--dry"), [])
        # A valued option's value is not the script: the next option is still completed.
        self.assertEqual(self.complete("launch", "--gpus", "0,1", "--dry"), ["--dry_run"])
        self.assertEqual(self.complete("launch", "--log_dir", "=", "x", "--dry"), ["--dry_run"])

    def test_bash_interactively(self):
        shown = interactive_complete("bash", self.source, "launch --run_mode p", self.dir,
                                     r"ps-heter")
        self.assertIn("ps", shown)
        shown = interactive_complete("bash", self.source, "launch --sort", self.dir,
                                     r"launch --sort_ip")
        shown = interactive_complete("bash", self.source, "launch tra", self.dir,
                                     r"launch train\.py")

    def test_zsh_interactively(self):
        if shutil.which("zsh") is None:
            self.fail("zsh is not installed (apt install zsh; scripts/test.sh installs it)")
        setup = f"fpath=({ZSH_DIR} $fpath); autoload -Uz compinit; compinit -u -D"
        shown = interactive_complete("zsh", setup, "launch --run_mode ", self.dir,
                                     r"ps-heter")
        for mode in ("collective", "rpc"):
            self.assertIn(mode, shown)
        interactive_complete("zsh", setup, "launch --log_lev", self.dir, r"--log_level")
        shown = interactive_complete("zsh", setup, "launch --log_level ", self.dir, r"CRITICAL")
        self.assertIn("WARNING", shown)
        interactive_complete("zsh", setup, "launch --nproc_per_node 2 tra", self.dir,
                             r"train\.py")


class ManPageTest(LaunchTestCase):
    """The man page help2man made from --help and --version, rendered by man(1)."""

    def render(self):
        self.assertTrue(MAN_PAGE.is_file(), f"{MAN_PAGE} was not generated (help2man missing?)")
        env = dict(os.environ, LC_ALL="C", MANWIDTH="200")
        out = subprocess.run(["man", "-P", "cat", "-l", str(MAN_PAGE)], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_every_flag_and_the_sections(self):
        text = self.render()
        self.assertRegex(text, r"launch - start and supervise a distributed training job")
        for flag in help_flags():
            self.assertIn(flag, text)
        for section in ("SYNOPSIS", "DESCRIPTION", "EXAMPLES", "FILES", "SEE ALSO"):
            self.assertRegex(text, rf"(?m)^{section}$")
        self.assertIn(os.environ.get("PDLAUNCH_VERSION", "0.1.0"), text)
        self.assertIn("launch --master 10.0.0.1:8090 --nnodes 2 --devices 0,1 train.py", text)


if __name__ == "__main__":
    unittest.main()


# The glibc libraries a program may need: the C library, its loader, and glibc's libm.
GLIBC_LIBRARIES = {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
GLIBC_FLOOR = (2, 34)


class BinaryFloorTest(unittest.TestCase):
    """Issue #41 item 1: the launcher needs glibc 2.34 at most (Ubuntu 22.04, RHEL 9) and no
    other shared library; the .deb and the wheel ship this binary."""

    def setUp(self):
        if os.environ.get("PDLAUNCH_SANITIZE"):
            self.skipTest("a sanitizer build links the sanitizers' runtimes")

    def readelf(self, *args):
        return subprocess.run(["readelf", "-W", *args, harness.BIN], capture_output=True,
                              text=True, check=True).stdout

    def test_no_symbol_of_a_glibc_after_2_34(self):
        versions = set(re.findall(r"@GLIBC_(\d+)\.(\d+)", self.readelf("--dyn-syms")))
        self.assertTrue(versions, "no versioned glibc symbol: is this the launcher?")
        newest = max((int(a), int(b)) for a, b in versions)
        newer = sorted(word for word in self.readelf("--dyn-syms").split()
                       if any(word.endswith(f"@GLIBC_{a}.{b}") for a, b in versions
                              if (int(a), int(b)) > GLIBC_FLOOR))
        self.assertLessEqual(newest, GLIBC_FLOOR, newer)
        # Packed relative relocations need glibc 2.36's loader.
        self.assertNotIn("GLIBC_ABI_DT_RELR", self.readelf("-V"))
        self.assertNotIn("(RELR)", self.readelf("-d"))

    def test_no_library_beyond_glibc(self):
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", self.readelf("-d")))
        self.assertIn("libc.so.6", needed)
        self.assertEqual(needed - GLIBC_LIBRARIES, set())

    def test_exceptions_still_unwind(self):
        # The unwinder finds its tables through the launcher's own _dl_find_object: a usage
        # error and --help both throw.
        out = subprocess.run([harness.BIN, "--nproc_per_node", "x", "t.py"], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 2, out)
        self.assertIn("invalid int value: 'x'", out.stderr)
        out = subprocess.run([harness.BIN, "--help"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out)
