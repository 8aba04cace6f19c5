import sys

from .forkserver import run_in_forkserver

# a pipeline job first asks the warm fork server (rlvr/forkserver.py); else it runs here
code = run_in_forkserver(sys.argv[1:])
if code is None:
    from .cli import main

    code = main()
sys.exit(code)
