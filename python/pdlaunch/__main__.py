"""`python -m pdlaunch ARGS` is `pdlaunch ARGS`: this process becomes the launcher."""
import sys

from pdlaunch import exec_launcher

exec_launcher(sys.argv[1:])
