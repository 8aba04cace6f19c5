#!/usr/bin/env python
"""CPU-seconds of one model-step of the network (issue 35), one thread.

    python bench/net_step.py                 # default size, E = 1 and E = 4, 10 timed steps each
    python bench/net_step.py --base base.pt  # from saved base parameters (bench/net_base.py --save)
    python bench/net_step.py --train         # rlvr.net.train.train_step instead (the token-level objective)

A model-step: each model draws 64 prompts and samples G = 8 answers to each (512 answers of up to
8 tokens, with the KV cache), rewards them (1 iff the sum then EOS), computes GRPO's advantages
with the toy's estimator registry, and takes one Adam step on −Σ A·log π(answer) / 512 (the
answers teacher-forced again, with gradients). Timed by process CPU time, per step; the medians
are printed, per model for the pack (its time / E), and of its two parts: sampling, and the rest
(rewards, advantages, forward, backward, Adam). From a fresh init the answers mostly run to
the 8 tokens (EOS is one token in 13), the most a step can sample.

With --train the step is rlvr.net.train.train_step, the training code's own: the same rollouts,
rewards and advantages, then one Adam update (μ = 1) of rlvr.net.objective.token_loss, the
per-token clipped objective aggregated by seq-mean-token-sum-norm; only the step's total is
timed (train_step does not time its parts).
"""

import argparse
import statistics
import time

import numpy as np
import torch

from rlvr.estimators import advantages
from rlvr.net.model import Config, answer_logprob, generator, init_params
from rlvr.net.sample import sample_answers
from rlvr.net.tokens import make_token_task, reward_correct
from rlvr.net.train import train_step
from rlvr.objective import Objective
from rlvr.task import make_task


def model_step(params, cfg, ttask, opt, gens, n=64, G=8, max_len=8):
    """One step of E packed models; returns (CPU-s sampling, CPU-s the rest, mean answer length)."""
    E = len(gens)
    t0 = time.process_time()
    prompts = torch.stack([torch.randint(ttask["P"], (n,), generator=g) for g in gens])  # [E, n]
    prompt_tok = torch.from_numpy(ttask["prompt"])[prompts]  # [E, n, Lp]
    tokens, lengths = sample_answers(params, cfg, prompt_tok, G, gens, max_len=max_len)  # [E, n, G, L]
    t1 = time.process_time()
    r = np.stack([reward_correct(ttask, prompts[e].numpy(), tokens[e].numpy(), lengths[e].numpy())
                  for e in range(E)])  # [E, n, G]
    A = torch.from_numpy(advantages(r.reshape(E * n, G), "grpo").reshape(E, n * G))
    logp = answer_logprob(params, cfg, prompt_tok[:, :, None].expand(-1, -1, G, -1).reshape(E, n * G, -1),
                          tokens.reshape(E, n * G, max_len), lengths.reshape(E, n * G))  # [E, n·G]
    loss = -(A * logp).mean(dim=1).sum()  # each model's mean over its answers; the sum keeps them apart
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return t1 - t0, time.process_time() - t1, float(lengths.double().mean())


def timed_train_step(params, cfg, ttask, opt, gens, n=64, G=8, max_len=8):
    """One rlvr.net.train.train_step of E packed models (GRPO, μ = 1, no KL); returns (CPU-s of the
    step, 0: not split into parts, mean answer length), as model_step."""
    t0 = time.process_time()
    length = train_step(params, None, opt, gens, cfg, ttask, "grpo", Objective(), n, G, max_len)["length"]
    return time.process_time() - t0, 0.0, float(length.mean())


def time_steps(cfg, ttask, E, steps, warmup, base, step=model_step):
    keys = [(0, e) for e in range(E)]
    params = init_params(cfg, keys) if base is None else {k: v.repeat(E, *[1] * (v.dim() - 1))
                                                           for k, v in base.items()}
    params = {k: v.requires_grad_() for k, v in params.items()}
    opt = torch.optim.Adam(params.values(), lr=1e-4)
    gens = [generator((*key, 2)) for key in keys]
    rows = [step(params, cfg, ttask, opt, gens) for _ in range(warmup + steps)][warmup:]
    total = [s + u for s, u, _ in rows]
    return (statistics.median(total), min(total), max(total), statistics.median(r[0] for r in rows),
            statistics.median(r[1] for r in rows), float(np.mean([r[2] for r in rows])))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--packs", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--base", help="start from these parameters (one model, torch.save'd)")
    ap.add_argument("--train", action="store_true",
                    help="time rlvr.net.train.train_step (the per-token objective)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = Config()
    ttask = make_token_task(make_task(), seed=0)
    base = None if a.base is None else torch.load(a.base)
    step = timed_train_step if a.train else model_step
    print(f"model: {cfg}; one step = 64 prompts × 8 answers of up to 8 tokens + one Adam update"
          + (" (rlvr.net.train.train_step)" if a.train else ""))
    print("| E | CPU-s a step (median) | per model | min–max | sampling | update | answer tokens |")
    print("|--:|--:|--:|--:|--:|--:|--:|")
    for E in a.packs:
        med, lo, hi, sampling, update, length = time_steps(cfg, ttask, E, a.steps, a.warmup, base, step)
        parts = "— | —" if a.train else f"{sampling:.3f} | {update:.3f}"
        print(f"| {E} | {med:.3f} | {med / E:.3f} | {lo:.3f}–{hi:.3f} | {parts} | {length:.1f} |", flush=True)


if __name__ == "__main__":
    main()
