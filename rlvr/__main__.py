import os
import sys

# Arrow allocates from the C library's malloc in rlvr's commands: with pyarrow's default pool
# (mimalloc) an aggregation of the default config's 193 training rows took 1.6-2.9x as long on
# 2 cores (BENCHMARKS.md, "the aggregation"); ARROW_DEFAULT_MEMORY_POOL set by the user wins
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from .cli import main  # noqa: E402  (after the setting: pyarrow reads it at its first allocation)

sys.exit(main())
