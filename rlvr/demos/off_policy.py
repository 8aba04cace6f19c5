"""The demo "off-policy rollouts": its table (en, zh), its figure and its claims.

The answers of a step come from a sampler other than the policy being trained: the policy of
sampler_lag steps ago (asynchronous rollouts) or the policy's logits plus a fixed Gaussian
perturbation of scale sampler_noise (a sampler-trainer precision mismatch), corrected by
is_correction (rlvr/importance.py's is_weights: none, full, truncated or masked importance
weights, bounded by is_cap_low and is_cap). The runs include each peer's default correction
(PEERS). Beside them, exact: the share of the on-policy expected update of π(correct) that each
correction keeps, its spread and its bias (exact.off_policy_group_moments), on made prompts over
π(correct) and on the task's own prompts per level. What each name below is:
rlvr/demos/__init__.py.
"""

import functools
from typing import NamedTuple

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..exact import off_policy_group_moments, uniform_wrong_prompt
from ..knobs import expand_rows
from ..policy import softmax
from ..sampler import sampler_noise_logits
from ..task import LEVEL_KEYS, LEVEL_NAMES_EN

NUMBER = 15  # its place in the lecture's order; its table is demo15_off_policy
TITLE = "off-policy rollouts and their corrections"
SWITCHABLE = True
FRAMES = ('task', 'runs')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = True
EXPERIMENT = "off_policy"
MISMATCHES = ("sampler_lag", "sampler_noise")  # the two ways the sampler differs; both 0: on-policy
SHOWN = (*MISMATCHES, "is_correction", "is_cap", "is_cap_low")
MISMATCH_VALUES = {"sampler_lag": [4, 16, 64], "sampler_noise": [0.5, 1.0, 2.0]}  # the default rows'
# the peers' default corrections, each read in its code at the named commit:
# name -> (is_correction, is_cap, is_cap_low; None: the correction's own lower bound)
PEERS = {
    # verl b178a3c RolloutCorrectionConfig: rollout_is "sequence", rollout_is_threshold 2.0, rollout_rs None
    "verl": ("truncated", 2.0, None),
    # TRL f2cd577 GRPOConfig: vllm_importance_sampling_mode "sequence_mask", clip_max 3.0, clip_min None
    "TRL": ("masked", 3.0, 0.0),
    # OpenRLHF 3c3be62 (off by default): is_correction_type "tis", a clamp of each token's ratio to
    # [0.5, 5.0]; a toy answer has no tokens, so here the answer's ratio is clamped
    "OpenRLHF": ("truncated", 5.0, 0.5),
}


def _rows():
    """The default rows: on-policy, then each mismatch at its sizes under no correction, full IS,
    truncation and masking at C = 2, and each peer's default that is not among them. (masked_renorm
    weighs as masked under the lecture's loss, whose normaliser is a constant.)"""
    grpo = {"method": "grpo", "lr": 2.0}
    rows = [grpo]
    for mismatch, values in MISMATCH_VALUES.items():
        rows.append({**grpo, mismatch: values, "is_correction": ["none", "full", "truncated", "masked"]})
        rows += [{**grpo, mismatch: values, "is_correction": c, "is_cap": cap, "is_cap_low": low}
                 for c, cap, low in PEERS.values() if (c, cap, low) != ("truncated", 2.0, None)]
    return rows


CONFIG = {
    "help": "answers drawn from a stale policy (sampler_lag) or a perturbed one (sampler_noise), "
    "corrected by "
    "importance weights (is_correction); one run per row x seed, rows as in training (grids allowed); "
    "a row with neither is the on-policy run the others are paired with",
    "seeds": list(range(10)),
    "rows": _rows(),
}

TEXT = {
    "en": {
        "title": "Demo {number}: off-policy rollouts and their corrections ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["sampler", "correction", "final pass@1", "− on-policy", "very hard: − on-policy"],
        "on_policy": "on-policy",
        "lag": "{v:g} steps stale",
        "noise": "logits + {v:g} ε",
        "exact_levels": "exact, on the task's prompts per level, kept / trained: the share of the on-policy expected update of π(correct) a batch drawn from the sampler keeps ({method}, G = {G}; a stale sampler: at step {lag}, the policy moved along its expected path, the sampler step 0's; a perturbed one: the training seeds' ε), beside the trained final pass@1 − on-policy",  # noqa: E501
        "exact_uniform": "exact, on made prompts whose wrong answers are alike, by π(correct): the share of the on-policy expected update of π(correct) kept; at π(correct) = {p:g}, the update's s.d. along ∇π(correct) and the error of its mean, each over the on-policy one's",  # noqa: E501
        "exact_head": ["sampler", "correction"],
        "kept_at": "kept at {p:g}",
        "sd": "s.d. ×",
        "bias": "bias",
        "note": [
            "Exact pass@1 at the last step; '− on-policy': paired by seed with the on-policy run of the",
            "same seed. ρ = π_old(y) / π_sampler(y) per answer; full: weight ρ; truncated: ρ clamped to",
            "[C_low, C] (C_low 0 unless given); masked: ρ, and 0 where ρ leaves [C_low, C] (C_low 1/C",
            "unless given); masked_renorm: masked, the dropped answers out of the loss's count. verl: its",
            "default rollout correction (b178a3c); TRL: its default sequence_mask (f2cd577); OpenRLHF: its",
            "tis clamp (3c3be62), per token there, on the answer's ratio here. A stale sampler in the exact",
            "part: the policy moved along its expected on-policy path (lr x prompts_per_step / P a step).",
        ],
    },
    "zh": {
        "title": "演示 {number}：异策略采样及其校正（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["采样器", "校正", "最终 pass@1", "− 同策略", "很难：− 同策略"],
        "on_policy": "同策略",
        "lag": "落后 {v:g} 步",
        "noise": "logits + {v:g} ε",
        "exact_levels": "精确值，任务的题目按难度，保留 / 训练：从采样器抽取的一批回答保留的同策略 π(正确) 期望更新的比例（{method}，G = {G}；落后的采样器：第 {lag} 步，策略沿其期望路径移动，采样器为第 0 步的策略；扰动的采样器：训练种子的 ε），旁边是训练的最终 pass@1 − 同策略",  # noqa: E501
        "exact_uniform": "精确值，错误答案相同的构造题目，按 π(正确)：保留的同策略 π(正确) 期望更新的比例；在 π(正确) = {p:g} 处，更新沿 ∇π(正确) 的标准差及其均值的误差，均相对同策略",  # noqa: E501
        "exact_head": ["采样器", "校正"],
        "kept_at": "{p:g} 处保留",
        "sd": "标准差 ×",
        "bias": "偏差",
        "note": [
            "最后一步的精确 pass@1；“− 同策略”：与同一种子的同策略运行配对之差。",
            "每个回答 ρ = π_old(y) / π_采样器(y)；full：权重 ρ；",
            "truncated：ρ 截断到 [C_low, C]（未给出时 C_low 为 0）；",
            "masked：ρ，ρ 超出 [C_low, C] 时为 0（未给出时 C_low 为 1/C）；",
            "masked_renorm：masked，丢弃的回答不计入损失的计数。",
            "verl：其默认校正（b178a3c）；TRL：其默认 sequence_mask（f2cd577）；",
            "OpenRLHF：其 tis 截断（3c3be62），",
            "在那里按词元，这里按整个回答的比值。精确部分的落后采样器：策略沿其同策略期望路径移动",
            "（每步 lr × prompts_per_step / P），一阶模型。",
        ],
    },
}

LEVELS = tuple(reversed(LEVEL_KEYS))  # easy first, as the tables read
LEVEL_NAMES = dict(zip(LEVEL_KEYS, LEVEL_NAMES_EN))
P_SHOWN = (0.01, 0.05, 0.2, 0.5)  # π(correct) of the exact table's made prompts
P_DETAIL = 0.05  # ... and the one its spread and bias are given at (a hard prompt)
P_GRID = np.geomspace(0.003, 0.9, 25)  # the figure's
NOISE_DRAWS = 2048  # a made prompt's perturbations ε, drawn once (seed 0): the exact part averages them


def _on_policy(cfg):
    """What selects the on-policy runs a run of cfg is paired with: the same row without a
    mismatch, whatever its correction (with the sampler the policy, ρ = 1 and every correction
    weighs 1)."""
    return {**cfg, "sampler_lag": 0, "sampler_noise": 0.0, "is_correction": None, "is_cap": None,
            "is_cap_low": None}


def check_section(section, task, checks):
    """Its section's problems (rlvr.config.Checks): every row with a mismatch needs its on-policy
    partner among the rows, the same row without sampler_lag and sampler_noise."""
    if not section["enabled"]:
        return
    rows = list(expand_rows(section["rows"], EXPERIMENT))
    on_policy = {_partner_key(row) for row, _ in rows if not row["sampler_lag"] and not row["sampler_noise"]}
    for row, keys in rows:
        if (row["sampler_lag"] or row["sampler_noise"]) and _partner_key(row) not in on_policy:
            checks.need(False, keys["row"], "its runs are paired with the on-policy runs of the same row: "
                        "add that row without sampler_lag and sampler_noise to off_policy.rows")


def _partner_key(row):
    return tuple(sorted((k, v) for k, v in row.items() if k not in SHOWN))


def _runs(frames):
    """The demo's runs, None where the results hold none."""
    runs = frames["runs"]
    if "sampler_lag" not in runs or not (runs["experiment"] == EXPERIMENT).any():
        return None
    return runs[runs["experiment"] == EXPERIMENT]


def _sampler(L, cfg):
    if cfg["sampler_lag"]:
        return L["lag"].format(v=cfg["sampler_lag"])
    if cfg["sampler_noise"]:
        return L["noise"].format(v=cfg["sampler_noise"])
    return L["on_policy"]


CAPPED = ("truncated", "masked", "masked_renorm")  # the corrections that read is_cap and is_cap_low


def _low(cfg):
    """A configuration's is_cap_low: None for the correction's own (the knob's null; −1 in a spec)."""
    low = cfg.get("is_cap_low")
    return None if low is None or low < 0 else float(low)


def _key(cfg):
    """(is_correction, is_cap, is_cap_low) of a configuration, the bounds None where not read."""
    c = cfg["is_correction"]
    return (c, float(cfg["is_cap"]), _low(cfg)) if c in CAPPED else (c, None, None)


def _correction(cfg):
    """A correction in words: its name, its bounds and the peer whose default it is."""
    c, cap, low = _key(cfg)
    if c not in CAPPED:
        return c
    peer = next((name for name, p in PEERS.items() if p == (c, cap, low)), None)
    bounds = f"C = {cap:g}" if low is None else (f"C = {cap:g}, no lower bound" if low == 0
                                                  else f"[{low:g}, {cap:g}]")
    return f"{c} ({bounds}{'; ' + peer if peer else ''})"


def _named(key):
    return _correction(dict(zip(("is_correction", "is_cap", "is_cap_low"), key)))


def _colour(key):
    """A correction's colour: its name's, a variant shade where it sets its own lower bound."""
    return style.correction_colour(key[0], variant=key[2] is not None)


def _trained(runs, P):
    """The estimator, group size and expected step (lr · prompts_per_step / P: how far a prompt's
    logits move a step on average) the demo trains, for its exact part: its first row's."""
    r = runs.iloc[0]
    return r["method"], int(r["G"]), float(r["lr"]) * float(r["prompts_per_step"]) / P


def expected_path(z, method, G, step_lr, steps):
    """Logits z [N, M] moved `steps` times by the expected on-policy update, z + step_lr·E[ĝ]: where
    a policy trained at that rate goes if each step were its mean (a first-order model of training)."""
    for _ in range(steps):
        pi = softmax(z)
        z = z + step_lr * off_policy_group_moments(pi, pi, method, G, "none")[0]
    return z


def mismatched(z, mismatch, value, method, G, step_lr, eps=None):
    """(π [N, M], π_sampler [N, M]) of logits z [N, M] under a mismatch: sampler_lag L, the policy
    L steps along its expected path and the sampler where it started; sampler_noise σ, the
    sampler's logits z + σ ε (eps [N, M], standard normal)."""
    if mismatch == "sampler_lag":
        return softmax(expected_path(z, method, G, step_lr, int(value))), softmax(z)
    return softmax(z), softmax(z + value * eps)


class Kept(NamedTuple):
    """What a correction keeps of a group of prompts' on-policy expected update, [n_groups] each."""
    share: np.ndarray  # of the on-policy E[ĝ]·∇π(correct), summed over the group's prompts
    share_se: np.ndarray  # its standard error where the group's prompts are random draws (else 0)
    sd: np.ndarray  # the s.d. of ĝ·∇π(correct) over the on-policy one's
    bias: np.ndarray  # ‖E[ĝ] − E_on[ĝ]‖ / ‖E_on[ĝ]‖ over the group's logits


def cap_measures(pi, sampler, method, G, keys, groups):
    """{correction key: Kept} of prompts pi, sampler [N, M] in groups (groups [N] ints), under the
    lecture's loss (exact.off_policy_group_moments). share_se treats a group's prompts as
    independent draws (the delta method for a ratio of sums)."""
    on, var_on = off_policy_group_moments(pi, pi, method, G, "none")
    d = pi[:, :1] * (np.eye(pi.shape[1])[0] - pi)  # [N, M]: ∇π(correct)
    b = (on * d).sum(axis=1)  # [N]
    count = np.bincount(groups)

    def per(x):
        return np.bincount(groups, x)

    out = {}
    for key in keys:
        correction, cap, low = key
        # a correction without bounds (none, full) reads no cap: the default stands in
        mean, var = off_policy_group_moments(pi, sampler, method, G, correction, cap or 2.0, low)
        a = (mean * d).sum(axis=1)  # [N]
        share = per(a) / per(b)
        resid = per((a - share[groups] * b) ** 2)
        se = np.sqrt(resid / np.maximum(count * (count - 1), 1)) / np.abs(per(b) / count)
        out[key] = Kept(share, np.where(count > 1, se, 0.0), np.sqrt(per(var) / per(var_on)),
                        np.sqrt(per(((mean - on) ** 2).sum(axis=1)) / per((on**2).sum(axis=1))))
    return out


def exact_applies(runs):
    """Whether the exact part describes the runs: their loss is the lecture's (one update a batch,
    every answer weighed alike), as exact.off_policy_group_moments assumes."""
    r = runs.iloc[0]
    return r["loss_agg"] == "seq-mean-token-sum-norm" and r["epochs"] == 1 and r["minibatches"] == 1


def _answers_and_prompts(task):
    """(M, P) of the task frame: its answers per prompt (logit_ columns) and its prompts."""
    return sum(c.startswith("logit_") for c in task), len(task)


def _made_logits(p, M):
    """Logits [n, M] of made prompts with π(correct) = p [n] and the wrong answers alike."""
    return np.log(np.stack([uniform_wrong_prompt(x, M) for x in p]))


def _start_for(p_target, M, method, G, step_lr, lag):
    """The π(correct) [n] a made prompt starts from so that `lag` expected steps bring it to
    p_target [n] (bisection on the log-odds; the path is monotone)."""
    lo, hi = np.full(len(p_target), -14.0), np.log(p_target / (1 - p_target))
    for _ in range(30):  # to 14 / 2^30 in the log-odds
        mid = (lo + hi) / 2
        p = 1 / (1 + np.exp(-mid))
        end = softmax(expected_path(_made_logits(p, M), method, G, step_lr, lag))[:, 0]
        lo, hi = np.where(end < p_target, mid, lo), np.where(end < p_target, hi, mid)
    return 1 / (1 + np.exp(-(lo + hi) / 2))


def made_prompt_measures(runs, M, P, mismatch, value, keys, p):
    """{key: Kept [n]} at the policy's π(correct) = p [n] on made prompts (wrong answers alike; a
    perturbed sampler: NOISE_DRAWS fixed draws of ε, the same at every p)."""
    return _made_prompt_measures(*_trained(runs, P), M, mismatch, float(value), tuple(keys),
                                 tuple(float(x) for x in p))


@functools.lru_cache(maxsize=32)  # the table in each language and the claims ask for the same
def _made_prompt_measures(method, G, step_lr, M, mismatch, value, keys, p):
    p = np.asarray(p, float)
    if mismatch == "sampler_lag":
        z = _made_logits(_start_for(p, M, method, G, step_lr, int(value)), M)
        eps, groups = None, np.arange(len(p))
    else:
        z = np.repeat(_made_logits(p, M), NOISE_DRAWS, axis=0)  # [n·D, M]
        eps = np.random.default_rng(0).standard_normal((NOISE_DRAWS, M))  # the same draws at every p
        eps = np.tile(eps, (len(p), 1))
        groups = np.repeat(np.arange(len(p)), NOISE_DRAWS)
    pi, mu = mismatched(z, mismatch, value, method, G, step_lr, eps)
    return cap_measures(pi, mu, method, G, keys, groups)


def level_measures(task, runs, mismatch, value, keys):
    """{key: kept share [4] per level, very hard first} on the task's own prompts at the start of
    training: a stale sampler at step `value`, the policy moved along its expected path from the
    task's and the sampler the task's own; a perturbed one with the training seeds' own ε
    (sampler.sampler_noise_logits)."""
    z = task[[c for c in task if c.startswith("logit_")]].to_numpy()  # [P, M]
    seeds = tuple(sorted(int(s) for s in runs["seed"].unique()))
    return _level_measures(_Array(z), _Array(task["level"].to_numpy()), _trained(runs, len(z)), seeds,
                           mismatch, float(value), tuple(keys))


class _Array:
    """An array as a cache key: equal where the bytes, shape and type are."""

    def __init__(self, a):
        self.a, self._key = a, (a.shape, a.dtype.str, a.tobytes())

    def __eq__(self, other):
        return self._key == other._key

    def __hash__(self):
        return hash(self._key)


@functools.lru_cache(maxsize=32)  # the table in each language and the claims ask for the same
def _level_measures(z, level, trained, seeds, mismatch, value, keys):
    z, level = z.a, level.a
    P, M = z.shape
    method, G, step_lr = trained
    eps = None
    if mismatch == "sampler_noise":
        eps = sampler_noise_logits(seeds, (P, M), 1.0).reshape(-1, M)  # [S·P, M]
        z, level = np.tile(z, (len(seeds), 1)), np.tile(level, len(seeds))
    pi, mu = mismatched(z, mismatch, value, method, G, step_lr, eps)
    return {key: kept.share for key, kept in cap_measures(pi, mu, method, G, keys, level).items()}


def table(frames, L):
    runs = _runs(frames)
    if runs is None:
        return None
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, SHOWN):
        base = _base(runs, cfg)
        on = not cfg["sampler_lag"] and not cfg["sampler_noise"]
        rows.append(
            [
                _sampler(L, cfg),
                "" if on else _correction(cfg),
                A.pm(g["final_pass1"]),
                "" if on else R.delta(g, base, "final_pass1", 3),
                "" if on else R.delta(g, base, "final_pass1_very_hard", 3),
                other,
            ]
        )
        n.append(g["seed"].nunique())
    head, rows = R.with_others(list(L["head"]), rows, L["other"])
    task = frames["task"]
    M, P = _answers_and_prompts(task)
    method, G, _ = _trained(runs, P)
    configs = _configs(runs)
    level_rows, made_rows = [], []
    for mismatch, values in (_values(runs) if exact_applies(runs) else {}).items():
        largest = values[-1]
        keys = [k for (m, v, k) in configs if m == mismatch and v == largest]
        exact = level_measures(task, runs, mismatch, largest, keys)
        for key in keys:
            cfg, g = configs[mismatch, largest, key]
            base = _base(runs, cfg)
            level_rows.append([_sampler(L, cfg), _named(key)] + [
                f"{exact[key][LEVEL_KEYS.index(lv)]:.2f} / {R.delta(g, base, f'final_pass1_{lv}', 3)}"
                for lv in LEVELS])
        for v in values:
            keys = [k for (m, value, k) in configs if m == mismatch and value == v]
            at = made_prompt_measures(runs, M, P, mismatch, v, keys, (*P_SHOWN, P_DETAIL))
            for key in keys:
                k = at[key]
                made_rows.append([_sampler(L, _only(mismatch, v)), _named(key),
                                  *(_share(x, se) for x, se in zip(k.share[:-1], k.share_se[:-1])),
                                  f"{k.sd[-1]:.2f}", f"{k.bias[-1]:.2f}"])
    level_head = L["exact_head"] + [LEVEL_NAMES[lv] for lv in LEVELS]
    lag = _values(runs).get("sampler_lag", [0])[-1]
    made_head = L["exact_head"] + [L["kept_at"].format(p=p) for p in P_SHOWN] + [L["sd"], L["bias"]]
    levels_title = L["exact_levels"].format(method=style.label(method), G=G, lag=f"{lag:g}")
    exact = [(levels_title, level_head, level_rows),
             (L["exact_uniform"].format(p=P_DETAIL), made_head, made_rows)] if level_rows else []
    return R.title(L, runs.iloc[0], min(n)), [("", head, rows), *exact], L["note"]


def _share(x, se):
    """A share kept in words: '0.91', or '0.91 ± 0.01' where it is an average over random draws."""
    return f"{x:.2f}" if se == 0 else f"{x:.2f} ± {se:.2f}"


def _only(mismatch, value):
    """A configuration's mismatch fields with this one set and the others 0 (for _sampler)."""
    return {m: value if m == mismatch else 0 for m in MISMATCHES}


def _values(runs):
    """{mismatch: its sizes among the runs, ascending} for each mismatch the runs vary."""
    return {m: sorted(float(v) for v in set(runs[m]) if v > 0) for m in MISMATCHES if (runs[m] > 0).any()}


def _configs(runs):
    """{(mismatch, size, correction key): (cfg, its runs)} of the runs with a mismatch, in the
    order A.configurations gives them."""
    out = {}
    for cfg, g, _ in A.configurations(runs, SHOWN):
        for m in MISMATCHES:
            if cfg[m]:
                out[m, float(cfg[m]), _key(cfg)] = (cfg, g)
    return out


def _base(runs, cfg):
    """The on-policy runs a run of cfg is paired with (the first such configuration)."""
    base = A.select_rows(runs, **_on_policy(cfg))
    if not len(base):
        return base
    return A.select_rows(base, **{k: base[k].iloc[0] for k in ("is_correction", "is_cap")})


def _gap(runs, cfg, base):
    """cfg's runs with their final pass@1 minus base's, paired by seed."""
    return A.paired(A.select_rows(runs, **cfg), base, "final_pass1", on=("seed",))


def _paired(runs, cfg, base):
    """cfg's final pass@1 minus base's, paired by seed: a Difference."""
    return K.over_seeds(_gap(runs, cfg, base)["final_pass1"])


def _gaps(runs, mismatch):
    """{correction key: [(mismatch value, Difference to on-policy, cfg)]} over the runs that set
    `mismatch` (_key: a correction without bounds has them None)."""
    out = {}
    for cfg, _, _ in A.configurations(runs[runs[mismatch] > 0], SHOWN):
        out.setdefault(_key(cfg), []).append((cfg[mismatch], _paired(runs, cfg, _base(runs, cfg)), cfg))
    return out


def _uncorrected(cfg):
    """What selects the runs with cfg's sampler and no correction."""
    return {**cfg, "is_correction": "none", "is_cap": None, "is_cap_low": None}


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each mismatch's cost at each size without a
    correction, what each correction leaves of it at the largest size, paired with on-policy and
    with no correction, and per difficulty level each capped correction against no correction and
    where it loses most, for each sampler (stale, perturbed) apart."""
    runs = _runs(frames)
    if runs is None:
        return []
    out = []
    for mismatch, what in (("sampler_lag", "a sampler {v:g} steps stale"),
                           ("sampler_noise", "a sampler whose logits carry a fixed noise of σ = {v:g}")):
        gaps = _gaps(runs, mismatch)
        plain = sorted(gaps.get(("none", None, None), []), key=lambda x: x[0])
        if not plain:
            continue
        seeds = plain[0][1].seeds
        costs = "; ".join(f"{what.format(v=v)} {K.change(d, 'the final pass@1')}" for v, d, _ in plain)
        out.append(K.Claim(f"{mismatch}_cost", f"Against on-policy sampling, {costs} ({seeds} seeds, paired)",
                           tuple(d for _, d, _ in plain)))
        largest = plain[-1][0]
        parts, diffs = [], []
        for (correction, _, _), values in gaps.items():
            for v, d, cfg in values:
                uncorrected = A.select_rows(runs, **_uncorrected(cfg))
                if correction != "none" and v == largest and len(uncorrected):
                    vs_none = _paired(runs, cfg, uncorrected)
                    parts.append(f"{_correction(cfg)} ends at {K.signed(d)} from on-policy "
                                 f"({K.change(vs_none, 'it')} against no correction)")
                    diffs += [d, vs_none]
        if parts:
            text = f"At {what.format(v=largest)}: " + "; ".join(parts) + f" ({seeds} seeds, paired)"
            out.append(K.Claim(f"{mismatch}_corrections", text, tuple(diffs)))
        by_level = _by_level(runs, gaps, largest)
        if by_level:
            text, diffs = by_level
            out.append(K.Claim(f"{mismatch}_by_level", f"At {what.format(v=largest)}, {text}",
                               tuple(diffs)))
        peers = _peer_claim(runs, mismatch, what)
        if peers:
            out.append(peers)
    if exact_applies(runs):
        out += _exact_claims(frames["task"], runs)
    return out


def _peer_claim(runs, mismatch, what):
    """Each peer's default and full IS against verl's (truncated at C = 2) at each size of the
    mismatch, final pass@1 paired by seed: a Claim, or None where the runs lack verl's."""
    gaps, verl = _gaps(runs, mismatch), PEERS["verl"]
    if verl not in gaps:
        return None
    others = [k for k in (("full", None, None), *PEERS.values()) if k != verl and k in gaps]
    parts, diffs = [], []
    for v, _, cfg in sorted(gaps[verl], key=lambda x: x[0]):
        base = A.select_rows(runs, **cfg)
        each = []
        for key in others:
            this = next((c for value, _, c in gaps[key] if value == v), None)
            if this is not None:
                d = _paired(runs, this, base)
                each.append(f"{_named(key)} {K.signed(d)}")
                diffs.append(d)
        if each:
            parts.append(f"at {what.format(v=v)}: " + ", ".join(each))
    if not parts:
        return None
    text = (f"Against verl's rollout correction at its defaults ({_named(verl)}), the final pass@1 "
            + "; ".join(parts) + f" ({diffs[0].seeds} seeds, paired)")
    return K.Claim(f"{mismatch}_peers", text, tuple(diffs))


def _exact_claims(task, runs):
    """The exact part's claims: on a made prompt at π(correct) = P_DETAIL and on the task's prompts
    per level, what each correction keeps at each mismatch's largest size."""
    M, P = _answers_and_prompts(task)
    method, G, step_lr = _trained(runs, P)
    configs, out = _configs(runs), []
    r = runs.iloc[0]
    for mismatch, values in _values(runs).items():
        v = values[-1]
        keys = [k for (m, value, k) in configs if m == mismatch and value == v]
        what = (f"a sampler {v:g} steps stale (the policy moved along its expected path at lr {r['lr']:g}, "
                f"{int(r['prompts_per_step'])} of {P} prompts a step)" if mismatch == "sampler_lag" else
                f"a sampler whose logits carry a fixed noise of σ = {v:g}")
        exactly = "Exactly" if mismatch == "sampler_lag" else (
            f"Exactly over its groups, averaged over {NOISE_DRAWS} draws of the noise (the share ± s.e.)")
        made = made_prompt_measures(runs, M, P, mismatch, v, keys, (*P_SHOWN, P_DETAIL))  # the table's
        each = "; ".join(f"{_named(k)} keeps {_share(made[k].share[-1], made[k].share_se[-1])} of it "
                         f"(s.d. × {made[k].sd[-1]:.2f}, bias {made[k].bias[-1]:.2f})" for k in keys)
        out.append(K.Claim(f"{mismatch}_caps_exact", (
            f"{exactly}, for {style.label(method)} (G = {G}) on a made prompt with π(correct) = {P_DETAIL:g} "
            f"and its wrong answers alike, with {what}, of the on-policy expected update of π(correct): "
            f"{each}"), ()))
        levels = level_measures(task, runs, mismatch, v, keys)
        drawn = "" if mismatch == "sampler_lag" else " (the training seeds' own draws)"
        names = " / ".join(LEVEL_NAMES[lv] for lv in LEVEL_KEYS)
        each = "; ".join(f"{_named(k)} {' / '.join(f'{x:.2f}' for x in levels[k])}" for k in keys)
        out.append(K.Claim(f"{mismatch}_caps_by_level", (
            f"Exactly, on the task's own prompts at the start of training, with {what}{drawn}, the share "
            f"of the on-policy expected update of π(correct) a batch keeps, {names}: {each}"), ()))
    return out


def _level_gaps(runs, cfg):
    """{level: per-seed differences} of cfg's final pass@1 on each difficulty level minus no
    correction's (the same sampler, is_correction none), paired by seed: {} where no such runs are."""
    this = A.select_rows(runs, **cfg)
    base = A.select_rows(runs, **_uncorrected(cfg))
    if not len(this) or not len(base):
        return {}
    columns = [f"final_pass1_{level}" for level in LEVELS if f"final_pass1_{level}" in runs]
    return {c.removeprefix("final_pass1_"): A.paired(this, base, c, on=("seed",)).set_index("seed")[c]
            for c in columns}


def _most_lost(gaps):
    """Where per-level gaps ({level: per-seed differences}) lose most, in words, and the
    Differences it adds to the levels' own: the largest loss must be resolved below 0, and larger
    than the next level's loss (paired by seed) to be named alone."""
    mean = {lv: g.mean() for lv, g in gaps.items()}
    worst, second = sorted(gaps, key=mean.get)[:2]
    d = K.over_seeds(gaps[worst])
    if not (d.resolved and d.mean < 0):
        return "it loses resolvably on no level", []
    margin = K.over_seeds((gaps[second] - gaps[worst]).dropna())
    if margin.resolved:
        return (f"it loses most on the {LEVEL_NAMES[worst]} prompts ({K.number(margin, 3)} more than on "
                f"the {LEVEL_NAMES[second]} ones)"), [d, margin]
    return (f"it loses most on the {LEVEL_NAMES[worst]} and {LEVEL_NAMES[second]} prompts (the two "
            f"differ by {K.signed(margin)})"), [d, margin]


def _by_level(runs, gaps, largest):
    """Each capped correction at the largest mismatch against no correction, per difficulty
    level, and where it loses most: (text, Differences) or None."""
    parts, diffs, seeds = [], [], 0
    for (correction, _, _), values in gaps.items():
        for v, _, cfg in values:
            if correction not in CAPPED or v != largest:
                continue
            levels = _level_gaps(runs, cfg)
            if not levels:
                continue
            per = {lv: K.over_seeds(g) for lv, g in levels.items()}
            most, rests = _most_lost(levels)
            each = ", ".join(f"{LEVEL_NAMES[lv]} {K.signed(d)}" for lv, d in per.items())
            parts.append(f"{_correction(cfg)} against no correction, per level: {each}; {most}")
            diffs += [*per.values(), *rests]
            seeds = min(d.seeds for d in per.values())
    if not parts:
        return None
    return "; ".join(parts) + f" (final pass@1, {seeds} seeds, paired)", diffs


def off_policy(runs):
    """Final pass@1 minus on-policy against the lag and the noise, one line per correction."""
    import pandas as pd

    fig, axes = F.subplots(1, 2, height=2.6)
    axes = axes[0]
    for ax, mismatch, xlabel in zip(axes, MISMATCHES, ("sampler lag (steps)", "sampler noise σ")):
        ax.axhline(0, **style.REFERENCE, lw=1, label="on-policy")
        for key, values in _gaps(runs, mismatch).items():
            base = _base(runs, values[0][2])
            rows = [_gap(runs, cfg, base).assign(x=v) for v, _, cfg in values]
            s = A.over_seeds(pd.concat(rows), "x", "final_pass1")
            ax.plot(s.index, s["mean"], marker="o", ms=3, color=_colour(key), label=_named(key),
                    gid=f"correction:{_named(key)}")
            ax.fill_between(s.index, s["mean"] - s["ci"], s["mean"] + s["ci"], color=_colour(key), alpha=0.2,
                            lw=0)
        if len(set(runs[mismatch])) > 1:
            F.log_ticks(ax, [v for v in set(runs[mismatch]) if v > 0])
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("final pass@1 − on-policy")
    axes[0].set_title("stale sampler")
    axes[1].set_title("perturbed sampler")
    fig.suptitle("Final pass@1 against on-policy (paired by seed, mean and 95% band)", fontsize="medium")
    F.legend_below(fig, axes[0].get_legend_handles_labels()[0], ncol=3)
    return fig


def off_policy_caps(frames):
    """Exact, on made prompts: the share of the on-policy expected update of π(correct) each
    correction keeps against the policy's π(correct), a panel per mismatch and size."""
    runs, task = _runs(frames), frames["task"]
    if not exact_applies(runs) or not _values(runs):
        fig, axes = F.subplots(1, 1, height=1.2)
        axes[0, 0].set_axis_off()
        axes[0, 0].text(0.5, 0.5, "not computed: the runs train with no mismatch, or with a loss other than "
                        "the lecture's (one update a batch, every answer alike)", ha="center", va="center",
                        fontsize="small", wrap=True)
        return fig
    M, P = _answers_and_prompts(task)
    method, G, _ = _trained(runs, P)
    values, configs = _values(runs), _configs(runs)
    ncol = max(len(v) for v in values.values())
    fig, axes = F.subplots(len(values), ncol, height=1.9 * len(values) + 0.8, sharex=True, sharey=True)
    labelled = {}
    for row, (mismatch, sizes) in enumerate(values.items()):
        for col in range(ncol):
            ax = axes[row][col]
            if col >= len(sizes):
                ax.set_visible(False)
                continue
            v = sizes[col]
            keys = [k for (m, value, k) in configs if m == mismatch and value == v]
            at = made_prompt_measures(runs, M, P, mismatch, v, keys, P_GRID)
            ax.axhline(1, **style.REFERENCE, lw=1)
            for key in keys:
                (line,) = ax.plot(P_GRID, at[key].share, color=_colour(key), label=_named(key),
                                  gid=f"correction:{_named(key)}")
                labelled.setdefault(_named(key), line)
            ax.set_xscale("log")
            ax.set_title(_sampler(TEXT["en"], _only(mismatch, v)), fontsize="small")
            if row == len(values) - 1:
                ax.set_xlabel("π(correct) of the policy")
        axes[row][0].set_ylabel("share of E[Δπ(correct)] kept")
    fig.suptitle(f"Exact: what each correction keeps of the on-policy expected update "
                 f"({style.label(method)}, G = {G}; made prompts, wrong answers alike)", fontsize="medium")
    F.legend_below(fig, list(labelled.values()), ncol=3)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "off_policy": (lambda f: off_policy(_runs(f)), ("runs",)),
    "off_policy_caps": (off_policy_caps, ("task", "runs")),
}
