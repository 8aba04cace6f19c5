#!/usr/bin/env python
"""Where a network training job's CPU time goes (issue 49 item 5): the default config's first
network row (GRPO, Adam lr 3e-4, 60 steps of 32 prompts x 8 answers, an exact record every 10
steps) for 3 seeds packed, each from its base in a finished default run, under cProfile with CPU
time.

    python bench/net_row_profile.py              # needs results/network/base/seed<s>.parquet
    python bench/net_row_profile.py --seeds 5

Prints the total and the functions that take the most cumulative CPU time.
"""

import argparse
import cProfile
import io
import pstats
import time
from dataclasses import replace

import rlvr  # noqa: F401  before numpy and torch: the pinned numeric platform (rlvr/numerics.py)
from rlvr import config as C
from rlvr import io as rio
from rlvr.net.base import model_of, stack_bases
from rlvr.net.results import row_columns
from rlvr.net.specs import base_files
from rlvr.task import make_task


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--results", default="results")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    _, rows = C.network_jobs(C.load_config("config/config.yaml"))
    row = replace(rows[0], seeds=tuple(range(a.seeds)))
    paths = [f"{a.results}/{base_files(seed)[0]}.parquet" for seed in row.seeds]
    start = stack_bases([rio.read_arrow(p, required=("name", "value")) for p in paths], model_of(row), paths)
    profile = cProfile.Profile(time.process_time)
    t0 = time.process_time()
    profile.runcall(row_columns, make_task(), row, start)
    print(f"{row.path}: {time.process_time() - t0:.1f} CPU-s")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(a.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
