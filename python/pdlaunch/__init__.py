"""pdlaunch, a native launcher for PaddlePaddle distributed training (docs/install.md).

The wheel's `pdlaunch` command is the launcher binary itself; `python -m pdlaunch` execs it.
With PDLAUNCH_TAKEOVER=1, `python -m paddle.distributed.launch` and `python -m
paddle.distributed.fleet.launch` exec it too (pdlaunch/_takeover.py)."""
import os
import sys


def binary():
    """The path of the launcher binary this package was installed with, or None."""
    # The wheel's script goes to <prefix>/bin next to <prefix>/lib/pythonX.Y/site-packages in a
    # venv, a --user install (~/.local) and a system one alike.
    # (os.path, not pathlib: with the takeover on, every Python start imports this package.)
    prefix = os.path.realpath(__file__)
    for _ in range(5):  # pdlaunch/__init__.py -> pdlaunch -> site-packages -> pythonX.Y -> lib
        prefix = os.path.dirname(prefix)
    candidate = os.path.join(prefix, "bin", "pdlaunch")
    if os.access(candidate, os.X_OK):
        return candidate
    try:  # Another layout: the wheel's own record of where its files went.
        from importlib.metadata import files
        for file in files("pdlaunch") or ():
            if file.name == "pdlaunch" and file.parent.name == "bin":
                path = file.locate()
                if os.access(path, os.X_OK):
                    return str(path)
    except Exception:  # noqa: BLE001 - no metadata: not found
        pass
    return None


def exec_launcher(args):
    """Replaces this Python process with the launcher, given `args`: the same pid, so signals
    and the exit code are the launcher's, and no Python stays between them."""
    path = binary()
    if path is None:
        sys.stderr.write("pdlaunch: the launcher binary of this installation is missing "
                         "(reinstall the pdlaunch wheel)\n")
        sys.exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path, *args])
