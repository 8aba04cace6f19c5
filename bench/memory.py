"""Peak memory of the task job and of one training job, against rlvr.budget.memory_mb, the
estimate the config check refuses with and the train rule asks the scheduler for.

    python bench/memory.py            # a few (P, M, seeds), a fresh process each
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from rlvr import budget as B
from rlvr import config as C
from rlvr.specs import TrainRow, to_json

CASES = [(200, 16, 40), (200, 16, 400), (2000, 64, 40), (20000, 64, 40)]  # P, M, seeds


def peak_mb(cmd):
    """Peak resident memory (MiB) of cmd, alone: run under a fresh wrapper process, whose
    children's maximum is cmd's only."""
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
               "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], check=True, capture_output=True, text=True)
    return int(out.stdout) / 1024


def main():
    print(f"{'P':>6} {'M':>4} {'seeds':>5}  {'task MiB':>8} {'(est.)':>7}  {'train MiB':>9} {'(est.)':>7}")
    for P, M, seeds in CASES:
        with tempfile.TemporaryDirectory() as d:
            task = dict(C.validate_config({})["task"], P=P, M=M)
            task_mb = peak_mb([sys.executable, "-m", "rlvr", "task", "--spec", json.dumps(task),
                               "--out", f"{d}/task.parquet"])
            row = TrainRow(experiment="training", method="grpo", lr=2.0, reward_offset=0.0, G=16,
                           prompts_per_step=8, steps=20, max_rounds=0, seeds=tuple(range(seeds)),
                           value_lr=0.2, eval_every=5, k=(1, 64, 256))
            outputs = [
                x
                for kind in ("run", "curve", "passk", "klgrad")
                for x in (f"--{kind}", f"{d}/{kind}.parquet")
            ]
            train_mb = peak_mb([sys.executable, "-m", "rlvr", "train", "--spec", to_json(row),
                                "--task", f"{d}/task.parquet", *outputs])
            assert Path(f"{d}/run.parquet").exists()
        print(f"{P:6d} {M:4d} {seeds:5d}  {task_mb:8.0f} {B.memory_mb(P, M):7.0f}  "
              f"{train_mb:9.0f} {B.memory_mb(P, M, seeds):7.0f}")


if __name__ == "__main__":
    main()
