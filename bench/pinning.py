#!/usr/bin/env python
"""What the pinned numeric platform costs (rlvr/numerics.py): CPU seconds of the same work on the
pinned kernels (numpy's baseline, torch's AVX2, MKL's COMPATIBLE branch, no oneDNN) and on this
CPU's own (numpy and torch imported before rlvr, nothing set), one thread, in alternating
fresh processes.

    python bench/pinning.py              # 3 pairs of each measurement
    python bench/pinning.py --pairs 5

The work: the toy (GRPO, RLOO and REINFORCE, 5 seeds x 200 steps each, rlvr.train); the network's
base (200 of its 1,500 steps of 512 answers); one network row (GRPO at Adam lr 3e-4, 3 seeds x
20 steps, its exact evaluation every 10 steps), at the default config's sizes. Prints the median
CPU-s of each on each platform and their ratio.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from rlvr.numerics import VARIABLES  # what rlvr pins: each measurement's process starts without them

REPO = Path(__file__).resolve().parents[1]

WORK = """
import json, sys, time
if sys.argv[1] == "native":
    import numpy, torch  # before rlvr: this CPU's own kernels, oneDNN on
import rlvr
from rlvr.numerics import pin_torch, problems
import torch
if sys.argv[1] == "pinned":
    pin_torch()
    assert not problems(), problems()
else:
    torch.set_num_threads(1)
    assert problems(), "native is not native"
from rlvr import config as C
from rlvr.net.base import model_of, train_base
from rlvr.net.results import row_columns
from rlvr.net.tokens import make_token_task
from rlvr.task import make_task
from dataclasses import replace

task = make_task()
out = {}
t0 = time.process_time()
for m in ("grpo", "rloo", "none"):
    rlvr.train(task, m, 200, 32, 8, 1.0, [0, 1, 2, 3, 4], eval_every=10)
out["toy"] = time.process_time() - t0
base_spec, rows = C.network_jobs(C.load_config("config/config.yaml"))
t0 = time.process_time()
params, _ = train_base(model_of(base_spec), make_token_task(task, seed=0), [(0,)], steps=200, batch=512,
                       lr=base_spec.lr, log_every=10**9)
out["network base, 200 steps"] = time.process_time() - t0
row = replace(rows[0], steps=20)
start = {k: v.detach() for k, v in params.items()}
t0 = time.process_time()
row_columns(task, row, start)
out["network row, 3 seeds x 20 steps"] = time.process_time() - t0
print(json.dumps(out))
"""


def measure(platform):
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    said = subprocess.run([sys.executable, "-c", WORK, platform], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(said.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    runs = {"pinned": [], "native": []}
    for _ in range(a.pairs):
        for platform in runs:
            runs[platform].append(measure(platform))
    print(f"CPU-s, median of {a.pairs} alternating pairs (one thread)")
    print("| work | this CPU's own kernels | pinned | pinned / own |")
    print("|---|--:|--:|--:|")
    for work in runs["pinned"][0]:
        own, pinned = (statistics.median(r[work] for r in runs[p]) for p in ("native", "pinned"))
        print(f"| {work} | {own:.2f} | {pinned:.2f} | {pinned / own:.2f}x |")


if __name__ == "__main__":
    main()
