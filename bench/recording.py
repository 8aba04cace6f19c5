#!/usr/bin/env python
"""What training's recorded quantities cost (issue 37 item 3): CPU seconds of every default
training row, in one process, split into the training itself and each recording step.

    python bench/recording.py            # every row of the default config, once
    python bench/recording.py --rows 40  # the first 40 rows

Each phase's function is wrapped by a timer (time.process_time) in rlvr.training's namespace, so
the split is the same code the pipeline runs; the wrappers cost ~1 µs a call. Recording during
training: `refresh` (the exact per-prompt stats of the rows that moved: π(correct), entropy, KL
to the reference, expected lengths, the correct answers' entropy), `curve_values` (their means
over prompts and per level, and the clip fractions) and `records` (a Record per seed). After
training (`row_columns`): `crossover_ks` (the exact pass@k curve up to k = 256 against the
reference's), `passk_columns` (exact pass@k per level), `kl_gradient_columns` (each KL
estimator's exact gradient) and the rest of row_columns (the tables' columns from the Records).
"""

import argparse
import time
from collections import defaultdict

import rlvr.training as T
from rlvr import config as C
from rlvr.task import make_task

SPENT = defaultdict(float)
DURING = ("refresh", "curve_values", "records")
AFTER = ("crossover_ks", "passk_columns", "kl_gradient_columns")


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name] += time.process_time() - t0
    return wrapper


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, help="only the first ROWS training rows of the default config")
    a = parser.parse_args()
    for name in (*DURING, *AFTER, "train_seeds", "row_columns"):
        setattr(T, name, timed(name, getattr(T, name)))
    cfg = C.load_config(None)
    rows = C.train_rows(cfg)[: a.rows]
    task = make_task(**cfg["task"])
    for row in rows:
        T.row_columns(task, row)
    total = SPENT["row_columns"]
    recording = sum(SPENT[name] for name in DURING)
    work = SPENT["train_seeds"] - recording
    after = total - SPENT["train_seeds"]
    print(f"{len(rows)} rows, {sum(len(r.seeds) for r in rows)} runs: {total:.1f} CPU-s in row_columns")
    print(f"  training (draw, advantages, updates): {work:6.2f} s  {work / total:6.1%}")
    for name in DURING:
        print(f"  recording: {name:22s} {SPENT[name]:6.2f} s  {SPENT[name] / total:6.1%}")
    for name in AFTER:
        print(f"  after training: {name:17s} {SPENT[name]:6.2f} s  {SPENT[name] / total:6.1%}")
    rest = after - sum(SPENT[name] for name in AFTER)
    print(f"  after training: the tables' columns {rest:6.2f} s  {rest / total:6.1%}")


if __name__ == "__main__":
    main()
