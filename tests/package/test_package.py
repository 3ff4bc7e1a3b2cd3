"""The Debian package (issue #11, item 5): build it with CPack from this build tree, install it
with apt-get, use what it installed (launch --version, man -w launch, bash completion through
bash-completion's loader, a 2-rank job), remove it and check that nothing of it is left.

This test changes the machine: it installs and removes the package `pdlaunch` (root only; CI
runs as root). It refuses to start if a pdlaunch package is already installed, rather than
replace or remove somebody's copy. Environment: PDLAUNCH_BUILD_DIR (the configured and built
tree), PDLAUNCH_VERSION."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from shells import bash_complete, interactive_complete  # noqa: E402

BUILD = Path(os.environ.get("PDLAUNCH_BUILD_DIR",
                            Path(__file__).resolve().parents[2] / "build"))
VERSION = os.environ.get("PDLAUNCH_VERSION", "0.1.0")
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
APT = ["apt-get", "-o", "DPkg::Lock::Timeout=120"]  # wait for another apt, never fail on it


def run(argv, **kwargs):
    kwargs.setdefault("timeout", 300)
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)


def installed_version():
    out = run(["dpkg-query", "-W", "-f", "${Status} ${Version}", "pdlaunch"])
    if out.returncode == 0 and out.stdout.startswith("install ok installed"):
        return out.stdout.split()[-1]
    return None


class PackageTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("the package test installs a package: run it as root")
        existing = installed_version()
        if existing is not None:
            raise AssertionError(f"a pdlaunch package ({existing}) is already installed here; "
                                 "remove it (apt-get remove pdlaunch) to run this test")
        cls.tmp = Path(tempfile.mkdtemp(prefix="pdlaunch-package-"))
        built = run(["cpack", "--config", BUILD / "CPackConfig.cmake", "-B", cls.tmp / "out"],
                    cwd=cls.tmp)
        if built.returncode != 0:
            raise AssertionError(f"cpack failed:\n{built.stdout}\n{built.stderr}")
        cls.deb = cls.tmp / "out" / f"pdlaunch_{VERSION}_amd64.deb"
        if not cls.deb.is_file():
            raise AssertionError(f"no {cls.deb.name}; cpack made: {list((cls.tmp / 'out').iterdir())}")

    @classmethod
    def tearDownClass(cls):
        if installed_version() is not None:  # a failed test must not leave it installed
            run(APT + ["purge", "-y", "pdlaunch"], env=APT_ENV)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        return run(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def test_package(self):
        # The control fields: the runtime dependency is libc alone (libstdc++ is static).
        self.assertEqual(self.field("Package"), "pdlaunch")
        self.assertEqual(self.field("Version"), VERSION)
        self.assertEqual(self.field("Architecture"), "amd64")
        self.assertRegex(self.field("Depends"), r"^libc6 \(>= [0-9.]+\)$")
        contents = run(["dpkg-deb", "-c", self.deb]).stdout
        for path in ("./usr/bin/launch", "./usr/share/man/man1/launch.1.gz",
                     "./usr/share/bash-completion/completions/launch",
                     "./usr/share/zsh/vendor-completions/_launch",
                     "./usr/share/doc/pdlaunch/copyright",
                     "./usr/share/doc/pdlaunch/changelog.gz",
                     "./usr/share/doc/pdlaunch/cli.md"):
            self.assertIn(path, contents)
        for line in contents.splitlines():
            self.assertIn("root/root", line)  # owner and group of every member

        # Install it as a user would.
        installed = run(APT + ["install", "-y", "--no-install-recommends", self.deb],
                        env=APT_ENV)
        self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
        self.assertEqual(installed_version(), VERSION)
        files = [Path(p) for p in run(["dpkg", "-L", "pdlaunch"]).stdout.split()]
        self.assertIn(Path("/usr/bin/launch"), files)

        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "LC_ALL": "C", "HOME": str(self.tmp), "PADDLE_LAUNCH_PYTHON": "/usr/bin/python3"}
        self.assertEqual(shutil.which("launch", path=env["PATH"]), "/usr/bin/launch")
        version = run(["launch", "--version"], env=env)
        self.assertEqual(version.returncode, 0, version)
        self.assertRegex(version.stdout, rf"^launch \(pdlaunch\) {re.escape(VERSION)}\n"
                         r"commit ([0-9a-f]{12}(-dirty)?|unknown)\n$")

        man = run(["man", "-w", "launch"], env=env)
        self.assertEqual((man.returncode, man.stdout.strip()),
                         (0, "/usr/share/man/man1/launch.1.gz"), man.stderr)
        page = run(["man", "-P", "cat", "launch"], env=dict(env, MANWIDTH="200"))
        self.assertIn("--nproc_per_node", page.stdout)
        # What --help and the man page point at is installed (issue #29 item 10).
        self.assertIn("/usr/share/doc/pdlaunch/", run(["launch", "--help"], env=env).stdout)
        for doc in ("cli.md", "README.md", "examples/README.md", "examples/print_env.py"):
            self.assertTrue((Path("/usr/share/doc/pdlaunch") / doc).is_file(), doc)

        # bash-completion finds the file by the command's name, as in an interactive shell.
        loader = ("source /usr/share/bash-completion/bash_completion && "
                  "__load_completion launch")
        self.assertEqual(bash_complete(["launch", "--run_mode", ""], loader, self.tmp),
                         ["collective", "ps", "ps-heter", "rpc"])
        if shutil.which("zsh"):
            setup = "autoload -Uz compinit; compinit -u -D"  # zsh's default fpath, nothing added
            interactive_complete("zsh", setup, "launch --log_level ", self.tmp, r"CRITICAL")

        # A 2-rank job from the installed binary.
        job = self.tmp / "job"
        job.mkdir()
        (job / "train.py").write_text(
            "import os\nprint('rank', os.environ['PADDLE_TRAINER_ID'], 'of',"
            " os.environ['PADDLE_TRAINERS_NUM'])\n")
        ran = run(["launch", "--nproc_per_node", "2", "train.py"], env=env, cwd=job, timeout=120)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        for rank in (0, 1):
            self.assertIn(f"rank {rank} of 2", (job / "log" / f"workerlog.{rank}").read_text())

        # Remove it: none of its files is left, and dpkg no longer knows it.
        removed = run(APT + ["purge", "-y", "pdlaunch"], env=APT_ENV)
        self.assertEqual(removed.returncode, 0, removed.stdout + removed.stderr)
        self.assertIsNone(installed_version())
        left = [p for p in files if p.is_file() or p.is_symlink()
                or (p.is_dir() and "pdlaunch" in p.name)]
        self.assertEqual(left, [])
        self.assertIsNone(shutil.which("launch", path="/usr/bin"))

    def test_lintian(self):
        """lintian (scripts/test.sh installs it); every finding CPack lets us fix is fixed, the
        rest is listed in docs/install.md."""
        if shutil.which("lintian") is None:
            print("SKIPPED: lintian is not installed (apt install lintian to run this check)")
            self.skipTest("lintian is not installed")
        out = run(["lintian", "--tag-display-limit 0", self.deb])
        errors = [line for line in out.stdout.splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], out.stdout)


if __name__ == "__main__":
    unittest.main()
