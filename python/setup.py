"""The wheel's build steps beyond pyproject.toml: the launcher binary as its `pdlaunch` script,
the takeover's .pth file at the root of site-packages, and a tag that says what the binary
needs (py3-none-manylinux_2_<glibc floor>_<arch>: no Python ABI, a Linux glibc floor).
scripts/wheel.sh sets PDLAUNCH_WHEEL_VERSION and PDLAUNCH_WHEEL_PLATFORM."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from distutils.command.build_scripts import build_scripts  # setuptools 66 has no own
from wheel.bdist_wheel import bdist_wheel

PTH = "pdlaunch_takeover.pth"


class BuildPy(build_py):
    """Puts the takeover's .pth next to the package, at the root of site-packages."""

    def run(self):
        super().run()
        shutil.copy(PTH, os.path.join(self.build_lib, PTH))


class CopyScripts(build_scripts):
    """The script is the launcher binary: copied as it is (setuptools would read it as text to
    look for a Python #! line to rewrite)."""

    def run(self):
        self.mkpath(self.build_dir)
        for script in self.scripts:
            target = os.path.join(self.build_dir, os.path.basename(script))
            shutil.copy2(script, target)
            os.chmod(target, 0o755)


class PlatformWheel(bdist_wheel):
    """A wheel for one platform (it holds a native binary) and any Python 3."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", os.environ["PDLAUNCH_WHEEL_PLATFORM"]


setup(
    version=os.environ["PDLAUNCH_WHEEL_VERSION"],
    scripts=["scripts/pdlaunch"],
    cmdclass={"build_py": BuildPy, "build_scripts": CopyScripts, "bdist_wheel": PlatformWheel},
)
