"""The base policy: the network taught the toy's reference policy π_ref by supervised learning.

Each step, each model draws its own batch of (prompt, answer) pairs — prompt uniform over the
task's P, answer j from π_ref(· | prompt) = softmax(toy logits) over the M candidates — and takes
one Adam step on the mean over the batch of −log π_θ(answer string | prompt) (the string's tokens
and its EOS). The minimiser of the expected loss is π_θ = π_ref on the candidates, so the base's
P(correct) per prompt approaches the toy's, and the mass it puts off the candidates shrinks.
The learning rate warms up linearly, then decays along a cosine to `lr_min_ratio`·lr, which
averages out the sampling noise of the last steps.

Model e's init is drawn from generator(key) and its data from generator((*key, DATA_STREAM)), so
with one thread two runs give bit-identical parameters, and a model's parameters do not depend
on what it is packed with.
"""

import math
import sys

import numpy as np
import torch

from ..numerics import pin_torch
from ..policy import softmax
from .exact import candidate_probs
from .model import Config, answer_logprob, cat, diverged, generator, init_params
from .tokens import make_token_task

DATA_STREAM = 1


def _draw(ttask, cdf, batch, g):
    """batch (prompt, candidate) pairs from generator g: prompts [batch], candidates [batch]."""
    prompts = torch.randint(ttask["P"], (batch,), generator=g)
    u = torch.rand((batch, 1), generator=g, dtype=torch.float64)
    return prompts, (cdf[prompts] <= u).sum(dim=-1).clamp_(max=cdf.shape[1] - 1)


def train_base(cfg, ttask, keys, steps=1500, batch=512, lr=3e-3, warmup=50, lr_min_ratio=0.1,
               log_every=0):
    """Train len(keys) models packed; returns (params {name: [E, ...]}, losses [steps, E] numpy).

    ttask: rlvr.net.tokens.make_token_task's mapping (its "logits" are π_ref's); keys: one tuple of
    ints per model. log_every > 0 prints the mean loss every that many steps (to stderr).
    """
    params = {k: v.requires_grad_() for k, v in init_params(cfg, keys).items()}
    gens = [generator((*key, DATA_STREAM)) for key in keys]
    cdf = torch.from_numpy(np.cumsum(softmax(np.asarray(ttask["logits"], float)), axis=1))  # [P, M]
    prompt_tok, answer_tok = torch.from_numpy(ttask["prompt"]), torch.from_numpy(ttask["answers"])
    answer_len = torch.from_numpy(ttask["answer_len"])
    opt = torch.optim.Adam(params.values(), lr=lr)
    losses = np.zeros((steps, len(keys)))
    for step in range(steps):
        ramp = min(1.0, (step + 1) / warmup) if warmup else 1.0
        cosine = 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in opt.param_groups:
            group["lr"] = lr * ramp * (lr_min_ratio + (1 - lr_min_ratio) * cosine)
        drawn = [_draw(ttask, cdf, batch, g) for g in gens]
        p = torch.stack([d[0] for d in drawn])  # [E, batch]
        j = torch.stack([d[1] for d in drawn])
        logp = answer_logprob(params, cfg, prompt_tok[p], answer_tok[p, j], answer_len[p, j])  # [E, batch]
        loss = -logp.mean(dim=1)  # [E]: each model's own loss; their sum leaves each gradient its own
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        losses[step] = loss.detach().numpy()
        if (bad := diverged(params)).any():  # an error, never a NaN base for every row after it
            raise FloatingPointError(f"the base diverged at step {step + 1} (seed {keys[bad.argmax()][-1]}): "
                                     f"its parameters at lr {lr:g} left the floating-point range; lower "
                                     "network.base.lr")
        if log_every and (step + 1) % log_every == 0:
            print(f"base: step {step + 1} of {steps}, loss {losses[step].mean():.4f}", file=sys.stderr,
                  flush=True)
    return {k: v.detach() for k, v in params.items()}, losses


def model_of(spec):
    """The rlvr.net.model.Config of a NetBase or NetRow spec (rlvr/net/specs.py): its sizes in
    Config's order, n_layer, d_model, n_head."""
    return Config(*(spec.model if hasattr(spec, "model") else (spec.n_layer, spec.d_model, spec.n_head)))


def base_columns(task, spec, log=lambda msg: None):
    """The base of spec (a NetBase) on the toy task: (its parameters as columns, a row per tensor:
    name, shape, value (float32, flattened), in the model's order; each prompt's exact P(correct) and
    mass on the candidates beside the toy reference's P(correct), with its seed, text and
    candidates)."""
    pin_torch()  # one thread, no oneDNN: the same bits on every run and CPU (rlvr/numerics.py)
    ttask = make_token_task(task, seed=spec.task_seed)
    cfg = model_of(spec)
    params, losses = train_base(cfg, ttask, [(spec.seed,)], steps=spec.steps, batch=spec.batch, lr=spec.lr,
                                log_every=max(1, spec.steps // 10))
    probs = candidate_probs(params, cfg, ttask)[0]  # [P, M]
    toy = softmax(np.asarray(ttask["logits"], float))
    log(f"base: final loss {losses[-1].mean():.4f}; mean P(correct) {probs[:, 0].mean():.4f} (toy "
        f"{toy[:, 0].mean():.4f}); mass on the candidates {probs.sum(axis=1).mean():.3f}")
    return ({"name": list(params), "shape": [list(p.shape[1:]) for p in params.values()],
             "value": [p[0].reshape(-1).numpy() for p in params.values()]},
            {"seed": np.full(ttask["P"], spec.seed), "prompt": np.arange(ttask["P"]), "level": ttask["level"],
             "text": ttask["prompt_text"],
             "answers": [" ".join(row) for row in ttask["answer_text"]],  # the correct one first
             "p_correct": probs[:, 0], "toy_p_correct": toy[:, 0], "mass_on_candidates": probs.sum(axis=1)})


def params_from_columns(columns, cfg, where="the base"):
    """base_columns' parameters {name: [1, ...]} back as tensors, from its columns name, shape and
    value (its dict, or the table read from its file); ValueError naming `where` if they are
    not the model cfg's (a base of another size)."""
    shapes = {n: list(v.shape[1:]) for n, v in init_params(cfg, [(0,)]).items()}
    names, values = columns["name"], _rows(columns["value"])
    names = names.to_pylist() if hasattr(names, "to_pylist") else list(names)
    if names != list(shapes) or [list(s) for s in _rows(columns["shape"])] != \
            list(shapes.values()) or [v.size for v in values] != [int(np.prod(s)) for s in shapes.values()]:
        raise ValueError(f"{where}: the base of another model than n_layer {cfg.n_layer}, d_model "
                         f"{cfg.d_model}, n_head {cfg.n_head}; run snakemake again, which makes it")
    return {n: torch.from_numpy(np.array(v, np.float32)).reshape(1, *shape)
            for (n, shape), v in zip(shapes.items(), values)}


def _rows(column):
    """A list column's rows as numpy arrays: of a pyarrow column (split off its flat values, not
    converted value by value) or of a list of arrays."""
    if not hasattr(column, "combine_chunks"):
        return [np.asarray(row) for row in column]
    lists = column.combine_chunks()
    offsets = lists.offsets.to_numpy()
    flat = lists.flatten().to_numpy()
    return np.split(flat, offsets[1:-1] - offsets[0])


def stack_bases(tables, cfg, where):
    """The parameters {name: [E, ...]} of E bases packed, one a seed of a job in its order, from
    their base_columns tables (or dicts); where: a name for each, for the error."""
    return cat([params_from_columns(t, cfg, w) for t, w in zip(tables, where)])
