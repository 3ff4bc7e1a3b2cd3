"""`python -m paddle.distributed.launch ARGS` run by pdlaunch (docs/install.md, "Taking over
Paddle's module"). Imported by pdlaunch_takeover.pth at Python's start, only when
PDLAUNCH_TAKEOVER=1: if this interpreter was started to run one of Paddle's launcher modules,
it becomes the launcher with the module's arguments before anything of Paddle is imported.
Any other Python program goes on untouched."""
import sys

# The modules Paddle's toolkits run: today's launcher and the legacy (fleetrun) one.
MODULES = ("paddle.distributed.launch", "paddle.distributed.fleet.launch")

# Python's options that take a value in the next argument (or the rest of their cluster).
VALUED = "WX"


def module_and_args(argv):
    """(module, its args) when `argv` (sys.orig_argv) runs `-m module`, else None."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--check-hash-based-pycs":
            i += 2
            continue
        if not arg.startswith("-") or arg in ("-", "--") or arg.startswith("--"):
            return None  # A script, stdin, or the end of Python's options.
        cluster = arg[1:]
        for j, option in enumerate(cluster):
            rest = cluster[j + 1:]
            if option == "m":
                if rest:
                    return rest, argv[i + 1:]
                return (argv[i + 1], argv[i + 2:]) if i + 1 < len(argv) else None
            if option == "c":
                return None
            if option in VALUED:
                i += 0 if rest else 1
                break
        i += 1
    return None


def run():
    found = module_and_args(getattr(sys, "orig_argv", []))
    if found is None or found[0] not in MODULES:
        return
    from pdlaunch import exec_launcher
    exec_launcher(found[1])
