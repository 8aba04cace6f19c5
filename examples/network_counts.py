"""Write examples/network_base_counts.csv, the worked example of `rlvr predict`: what an eval
harness would report for the network's base of seed 0 (demo 17), 16 answers sampled a prompt.

    python examples/network_counts.py     # after `snakemake -c all` (it reads the base's file)

The base's exact P(correct) per prompt is known (teacher forcing), so the only error of the
counts is the sampling's: rlvr.predict.sample_counts draws c ~ Binomial(16, P(correct)), the
same draws as demo 17's `predicted_zero_signal` claim, which compares the predictions with what
the network's training saw.
"""

from pathlib import Path

import rlvr  # noqa: F401  before numpy: the pinned numeric platform (rlvr/numerics.py)
from rlvr.demos.network import PREDICT_ANSWERS
from rlvr.predict import sample_counts
from rlvr.task import LEVEL_KEYS

HERE = Path(__file__).parent
SEED = 0


def main():
    import pandas as pd

    base = pd.read_parquet(HERE.parent / "results" / "network" / "base_prompts.parquet")
    base = base[base["seed"] == SEED].sort_values("prompt")
    counts = pd.DataFrame({"prompt": base["text"].to_numpy(), "n": PREDICT_ANSWERS,
                           "c": sample_counts(base["p_correct"].to_numpy(), PREDICT_ANSWERS, SEED),
                           "level": [LEVEL_KEYS[i] for i in base["level"]]})
    counts.to_csv(HERE / "network_base_counts.csv", index=False)
    print(f"wrote {HERE / 'network_base_counts.csv'}: {len(counts)} prompts, {counts['c'].sum()} of "
          f"{counts['n'].sum()} answers correct")


if __name__ == "__main__":
    main()
