#!/usr/bin/env python
"""How close the network's base policy gets to the toy's reference (issue 35), one thread.

    python bench/net_base.py                 # default size, 1,500 Adam steps of 512 answers
    python bench/net_base.py --steps 500

Prints, per difficulty level, the base's exact mean P(correct) beside the toy's, the range of its
per-prompt P(correct), exact pass@k against the toy's, and the share of its mass on the 16
candidates; the CPU time of training.
"""

import argparse
import time

import numpy as np
import torch

from rlvr.metrics import pass_at_k
from rlvr.net.base import train_base
from rlvr.net.exact import candidate_probs, level_means
from rlvr.net.model import Config
from rlvr.net.tokens import make_token_task
from rlvr.policy import softmax
from rlvr.task import LEVEL_KEYS, make_task


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="write the parameters here (torch.save)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    task = make_task()
    ttask = make_token_task(task, seed=0)
    cfg = Config()
    t0 = time.process_time()
    params, losses = train_base(cfg, ttask, [(0, a.seed)], steps=a.steps, batch=a.batch, lr=a.lr,
                                log_every=max(1, a.steps // 10))
    cpu = time.process_time() - t0
    if a.save:
        torch.save(params, a.save)
    probs = candidate_probs(params, cfg, ttask)[0]  # [P, M]
    p_net, p_toy = probs[:, 0], softmax(task["logits"])[:, 0]
    print(f"\n{a.steps} steps of {a.batch} answers: {cpu:.0f} CPU-s ({cpu / a.steps:.3f} a step); "
          f"final loss {losses[-50:].mean():.4f}")
    print("P(correct) per level, network / toy (%):")
    per_level = zip(LEVEL_KEYS, level_means(p_net, task["level"]), level_means(p_toy, task["level"]))
    for name, net, toy in per_level:
        print(f"  {name:10s} {100 * net:6.2f} / {100 * toy:6.2f}")
    print(f"per-prompt P(correct): {p_net.min():.4f} .. {p_net.max():.4f} "
          f"(toy {p_toy.min():.4f} .. {p_toy.max():.4f})")
    ks = np.array([1, 16, 64, 256])
    print("pass@" + "/".join(map(str, ks)) + ": network "
          + " / ".join(f"{v:.3f}" for v in pass_at_k(p_net[:, None], ks).mean(0)) + ", toy "
          + " / ".join(f"{v:.3f}" for v in pass_at_k(p_toy[:, None], ks).mean(0)))
    mass = probs.sum(axis=1)
    print(f"mass on the 16 candidates: mean {100 * mass.mean():.1f} % (min {100 * mass.min():.1f} %)")
    tv = 0.5 * np.abs(probs / mass[:, None] - softmax(task["logits"])).sum(axis=1)
    print(f"total variation to π_ref on the candidates (renormalised): mean {tv.mean():.3f}")


if __name__ == "__main__":
    main()
