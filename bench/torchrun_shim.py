"""Runs torchrun (torch.distributed.run) with one fix for Debian's torch 1.13 on Python 3.11.

Std.from_str("0") returns None there (Python 3.11 no longer lists the zero and composite
members of an IntFlag when iterating it), so the default `--redirects 0 --tee 0` crashes torchrun
before it starts a worker. This maps the single digits 0-3 with Std(int) and leaves everything
else to torchrun. Where torch is not affected, nothing is patched. Usage: as torchrun.
"""

import sys

from torch.distributed.elastic.multiprocessing import api


def _patch_std_from_str():
    original = api.Std.from_str
    if original("0") is not None:
        return

    def from_str(vm):
        if vm in ("0", "1", "2", "3"):
            return api.Std(int(vm))
        return original(vm)

    api.Std.from_str = staticmethod(from_str)


if __name__ == "__main__":
    _patch_std_from_str()
    from torch.distributed.run import main

    sys.argv[0] = "torchrun"
    sys.exit(main())
