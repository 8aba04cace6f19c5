"""What a network training job computes, as columns: a row's files (rlvr/net/specs.py
NET_FILES). The job (rlvr/jobs/net_train.py) writes them, and `python -m rlvr all`
(rlvr/compute.py) computes them in one process from the same function; the base's files:
rlvr/net/base.py base_columns."""

import numpy as np

from ..numerics import pin_torch
from ..objective import Objective
from ..task import LEVEL_KEYS
from .base import model_of
from .specs import EXPERIMENT, MODEL_KEYS, ROW_COLUMNS, objective_of
from .tokens import make_token_task
from .train import BATCH_STATS, train

SAMPLED = ("off_share", "length_off", "length_off_se", "length_wrong_all", "length_wrong_all_se")


def _mean_se(values, where):
    """Mean and standard error (sd/√n over the answers, pooled over prompts: a slight overestimate
    where prompts differ) of values [..., N] over the entries where [..., N] holds; NaN with none."""
    n = where.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(where, values, 0.0).sum(axis=-1) / n
        var = np.where(where, (values - mean[..., None]) ** 2, 0.0).sum(axis=-1) / (n - 1)
        return mean, np.sqrt(var / n)


def sampled_stats(y, n_tok, groups):
    """Per record, model and group of prompts, from answers sampled at the records (rlvr.net.train
    record_sample): y [R, E, P, K] which candidate each is (−1 off them), n_tok [R, E, P, K] its
    tokens (EOS counted); groups: [P] bool masks. Returns {name: [R, E, groups]} for SAMPLED: the
    share of the answers off the candidates; the mean tokens of those, and of every wrong answer
    (a wrong candidate or a string off them), each with its s.e. (NaN where there are none)."""
    out = {name: [] for name in SAMPLED}
    for where in groups:
        yy, nn = y[:, :, where].reshape(*y.shape[:2], -1), n_tok[:, :, where].reshape(*y.shape[:2], -1)
        out["off_share"].append((yy < 0).mean(axis=-1))
        for name, which in (("length_off", yy < 0), ("length_wrong_all", yy != 0)):
            mean, se = _mean_se(nn, which)
            out[name].append(mean)
            out[f"{name}_se"].append(se)
    return {name: np.stack(v, axis=-1) for name, v in out.items()}


def row_columns(task, row, start):
    """Train one network job (a NetRow: a row's block of seeds, packed) from the base's `start`;
    {kind: columns} of its files (NET_FILES), each row's identifying columns first."""
    pin_torch()  # one thread, no oneDNN: the same bits on every run and CPU (rlvr/numerics.py)
    ttask = make_token_task(task, seed=row.task_seed)
    try:
        out = train(model_of(row), ttask, [(seed,) for seed in row.seeds], row.method, start=start,
                    steps=row.steps, n=row.prompts_per_step, G=row.G, lr=row.lr,
                    obj=Objective(**objective_of(row)),
                    optimizer=row.optimizer, max_len=row.max_len, record_every=row.eval_every,
                    reward_offset=row.reward_offset, reward=row.reward, sampler_lag=row.sampler_lag,
                    correction=(row.is_correction, row.is_cap, row.is_level))
    except FloatingPointError as err:  # named by its row: the job's error says which
        raise FloatingPointError(f"network row {row.row_path}: {err}") from None
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
    # and from the answers sampled at each record, every string (off the candidates too): the share
    # off the candidates, the tokens of those, and of every wrong answer, each with its s.e.
    y, n_tok = out["sampled"], out["sampled_len"].astype(float)  # [R, E, P, K]
    by_level |= {name: v.transpose(1, 0, 2) for name, v in
                 sampled_stats(y, n_tok, [where for _, where in groups]).items()}
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
