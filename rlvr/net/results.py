"""What the network's pipeline jobs compute, as columns: the base's files and a row's files
(rlvr/net/specs.py NET_FILES). The jobs (rlvr/jobs/net_base.py, net_train.py) write them, and
`python -m rlvr all` (rlvr/compute.py) computes them in one process from the same functions."""

import numpy as np
import torch

from ..objective import Objective
from ..policy import softmax
from ..task import LEVEL_KEYS
from .base import train_base
from .exact import candidate_probs
from .model import Config, init_params
from .specs import EXPERIMENT, MODEL_KEYS, ROW_COLUMNS, objective_of
from .tokens import make_token_task
from .train import BATCH_STATS, train


def model_of(spec):
    """The rlvr.net.model.Config of a NetBase or NetRow spec."""
    sizes = spec.model if hasattr(spec, "model") else tuple(getattr(spec, k) for k in MODEL_KEYS)
    return Config(**dict(zip(MODEL_KEYS, sizes)))


def base_columns(task, spec, log=lambda msg: None):
    """The base of spec (a NetBase) on the toy task: (its parameters as columns, a row per value:
    name, value (float32, each tensor flattened in order); each prompt's exact P(correct) and
    mass on the candidates beside the toy reference's P(correct), with its text and candidates)."""
    torch.set_num_threads(1)  # one thread: the same bits on every run (rlvr/net/model.py)
    ttask = make_token_task(task, seed=spec.task_seed)
    cfg = model_of(spec)
    params, losses = train_base(cfg, ttask, [(spec.seed,)], steps=spec.steps, batch=spec.batch, lr=spec.lr,
                                log_every=max(1, spec.steps // 10))
    probs = candidate_probs(params, cfg, ttask)[0]  # [P, M]
    toy = softmax(np.asarray(ttask["logits"], float))
    values = [p[0].reshape(-1).numpy() for p in params.values()]
    log(f"base: final loss {losses[-1].mean():.4f}; mean P(correct) {probs[:, 0].mean():.4f} (toy "
        f"{toy[:, 0].mean():.4f}); mass on the candidates {probs.sum(axis=1).mean():.3f}")
    return ({"name": np.repeat(list(params), [len(v) for v in values]), "value": np.concatenate(values)},
            {"prompt": np.arange(ttask["P"]), "level": ttask["level"], "text": ttask["prompt_text"],
             "answers": [" ".join(row) for row in ttask["answer_text"]],  # the correct one first
             "p_correct": probs[:, 0], "toy_p_correct": toy[:, 0], "mass_on_candidates": probs.sum(axis=1)})


def params_from_columns(names, values, cfg, where="the base"):
    """base_columns' parameters {name: [1, ...]} back as tensors; ValueError naming `where` if
    they are not the model cfg's (a base of another size)."""
    shapes = {n: v.shape[1:] for n, v in init_params(cfg, [(0,)]).items()}
    sizes = [int(np.prod(shape)) for shape in shapes.values()]
    names = np.asarray(names)
    if len(names) != sum(sizes) or not np.array_equal(names, np.repeat(list(shapes), sizes)):
        raise ValueError(f"{where}: the base of another model than n_layer {cfg.n_layer}, d_model "
                         f"{cfg.d_model}, n_head {cfg.n_head}; run snakemake again, which makes it")
    ends = np.cumsum(sizes)
    return {n: torch.from_numpy(np.array(values[end - size:end], np.float32)).reshape(1, *shape)
            for (n, shape), size, end in zip(shapes.items(), sizes, ends)}


def row_columns(task, row, start):
    """Train one network row (a NetRow), all its seeds packed, from the base's parameters `start`;
    {kind: columns} of its files (NET_FILES), each row's identifying columns first."""
    torch.set_num_threads(1)  # one thread: a seed's bits the same alone or packed (rlvr/net/model.py)
    ttask = make_token_task(task, seed=row.task_seed)
    out = train(model_of(row), ttask, [(seed,) for seed in row.seeds], row.method, start=start,
                steps=row.steps, n=row.prompts_per_step, G=row.G, lr=row.lr,
                obj=Objective(**objective_of(row)),
                optimizer=row.optimizer, max_len=row.max_len, record_every=row.eval_every,
                reward_offset=row.reward_offset)
    seeds, steps = np.array(row.seeds), out["record_steps"]
    probs = out["probs"]  # [R, E, P, M]
    R, E, P, _ = probs.shape
    knobs = {"experiment": EXPERIMENT} | {name: getattr(row, name) for name in ROW_COLUMNS} | \
        dict(zip(MODEL_KEYS, row.model))

    def rows(n, **cols):
        return {**{k: [v] * n for k, v in knobs.items()}, **cols}

    n_steps = out[BATCH_STATS[0]].shape[0]
    batch = rows(n_steps * E, seed=np.repeat(seeds, n_steps), step=np.tile(np.arange(n_steps), E),
                 **{name: out[name].T.reshape(-1) for name in BATCH_STATS})
    # per (model, record, level): P(correct), the mass on the candidates, and the expected tokens
    # (EOS included) of the correct answer and of a wrong candidate, given one is drawn
    length = ttask["answer_len"].astype(float)  # [P, M]
    level_of = np.asarray(ttask["level"])
    groups = [(key, level_of == i) for i, key in enumerate(LEVEL_KEYS)] + [("all", np.ones(P, bool))]
    groups = [(key, where) for key, where in groups if where.any()]
    wrong = probs[..., 1:]
    wrong_length = (wrong * length[:, 1:]).sum(-1) / wrong.sum(-1)  # [R, E, P]
    per_prompt = {"pass1": probs[..., 0], "mass_on_candidates": probs.sum(axis=-1),
                  "length_correct": np.broadcast_to(length[:, 0], probs.shape[:3]),
                  "length_wrong": wrong_length}
    # [E, R, levels] each, flattened seed-major, then step, then level
    by_level = {name: np.stack([v[..., where].mean(axis=-1) for _, where in groups], axis=-1)
                .transpose(1, 0, 2) for name, v in per_prompt.items()}
    L = len(groups)
    curve = rows(E * R * L, seed=np.repeat(seeds, R * L), step=np.tile(np.repeat(steps, L), E),
                 level=[key for _ in range(E * R) for key, _ in groups],
                 **{name: v.reshape(-1) for name, v in by_level.items()})
    k = np.array(row.k)
    pk = (1 - (1 - probs[..., 0][..., None]) ** k).mean(axis=2)  # [R, E, K]: exact, over every prompt
    passk = rows(R * E * len(k), seed=np.repeat(seeds, R * len(k)), step=np.tile(np.repeat(steps, len(k)), E),
                 k=np.tile(k, R * E), pass_at_k=pk.transpose(1, 0, 2).reshape(-1))
    prompts = rows(R * E * P, seed=np.repeat(seeds, R * P), step=np.tile(np.repeat(steps, P), E),
                   prompt=np.tile(np.arange(P), R * E),
                   p_correct=probs[..., 0].transpose(1, 0, 2).reshape(-1),
                   mass_on_candidates=probs.sum(axis=-1).transpose(1, 0, 2).reshape(-1))
    return {"batch": batch, "curve": curve, "passk": passk, "prompts": prompts}, out
