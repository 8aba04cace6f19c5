"""The demo "off-policy rollouts": its table (en, zh), its figure and its claims.

The answers of a step come from a sampler other than the policy being trained: the policy of
sampler_lag steps ago (asynchronous rollouts) or the policy's logits plus a fixed Gaussian
perturbation of scale sampler_noise (a sampler-trainer precision mismatch), corrected by
is_correction (rlvr/objective.py's is_weights: none, full, truncated or masked importance
weights). What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..exact import off_policy_group_gradient, uniform_wrong_prompt
from ..knobs import expand_rows
from ..task import LEVEL_KEYS, LEVEL_NAMES_EN

NUMBER = 15  # its place in the lecture's order; its table is demo15_off_policy
TITLE = "off-policy rollouts and their corrections"
SWITCHABLE = True
FRAMES = ('runs',)  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = True
EXPERIMENT = "off_policy"
MISMATCHES = ("sampler_lag", "sampler_noise")  # the two ways the sampler differs; both 0: on-policy
SHOWN = (*MISMATCHES, "is_correction", "is_cap")

CONFIG = {
    "help": "answers drawn from a stale policy (sampler_lag) or a perturbed one (sampler_noise), "
    "corrected by "
    "importance weights (is_correction); one run per row x seed, rows as in training (grids allowed); "
    "a row with neither is the on-policy run the others are paired with",
    "seeds": list(range(10)),
    "rows": [
        {"method": "grpo", "lr": 2.0},
        {
            "method": "grpo",
            "lr": 2.0,
            "sampler_lag": [4, 16, 64],
            "is_correction": ["none", "full", "truncated", "masked"],
        },
        {
            "method": "grpo",
            "lr": 2.0,
            "sampler_noise": [0.5, 1.0, 2.0],
            "is_correction": ["none", "full", "truncated", "masked"],
        },
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: off-policy rollouts and their corrections ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["sampler", "correction", "final pass@1", "− on-policy", "very hard: − on-policy"],
        "on_policy": "on-policy",
        "lag": "{v:g} steps stale",
        "noise": "logits + {v:g} ε",
        "exact": "exact, for the estimator trained ({method}, G = {G}): the share of the on-policy expected gradient of π(correct) that a group drawn from the sampler keeps, by how often the sampler draws the correct answer",  # noqa: E501
        "exact_beside": "exact, beside it, for {method}, whose advantage does not depend on the group: the same share",  # noqa: E501
        "exact_head": ["π_sampler(correct) / π(correct)"],
        "note": [
            "Exact pass@1 at the last step; '− on-policy': paired by seed with the on-policy run of the same",
            "seed. ρ = π_old(y) / π_sampler(y) per answer; full: weight ρ; truncated: min(ρ, C); masked: ρ,",
            "and 0 where ρ leaves [1/C, C]. In the exact part π(correct) = 0.5, the wrong answers uniform.",
        ],
    },
    "zh": {
        "title": "演示 {number}：异策略采样及其校正（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["采样器", "校正", "最终 pass@1", "− 同策略", "很难：− 同策略"],
        "on_policy": "同策略",
        "lag": "落后 {v:g} 步",
        "noise": "logits + {v:g} ε",
        "exact": "精确值（所训练的估计器 {method}，G = {G}）：从采样器抽取的一组回答保留的同策略 π(正确) 期望梯度的比例，按采样器抽到正确答案的频率",  # noqa: E501
        "exact_beside": "精确值，作为对照：{method}（优势与组无关）的同一比例",
        "exact_head": ["π_采样器(正确) / π(正确)"],
        "note": [
            "最后一步的精确 pass@1；“− 同策略”：与同一种子的同策略运行配对之差。",
            "每个回答 ρ = π_old(y) / π_采样器(y)；full：权重 ρ；truncated：min(ρ, C)；masked：ρ，",
            "ρ 超出 [1/C, C] 时为 0。精确部分 π(正确) = 0.5，错误答案均匀。",
        ],
    },
}

LEVELS = tuple(reversed(LEVEL_KEYS))  # easy first, as the tables read
LEVEL_NAMES = dict(zip(LEVEL_KEYS, LEVEL_NAMES_EN))
SAMPLER_SHARES = (1.5, 1.0, 0.5, 0.25, 0.125, 0.0625)  # π_sampler(correct) / π(correct) in the exact part


def _on_policy(cfg):
    """What selects the on-policy runs a run of cfg is paired with: the same row without a
    mismatch, whatever its correction (with the sampler the policy, ρ = 1 and every correction
    weighs 1)."""
    return {**cfg, "sampler_lag": 0, "sampler_noise": 0.0, "is_correction": None, "is_cap": None}


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


CAPPED = ("truncated", "masked", "masked_renorm")  # the corrections that read is_cap
REINFORCE = "none"  # the estimator whose exact part is shown beside the trained one's


def _correction(cfg):
    c = cfg["is_correction"]
    return f"{c} (C = {cfg['is_cap']:g})" if c in CAPPED else c


def _cap(runs):
    """The C of the exact part: the smallest cap of a capped correction among the runs (2 if none)."""
    caps = runs.loc[runs["is_correction"].isin(CAPPED), "is_cap"]
    return float(caps.min()) if len(caps) else 2.0


def kept_share(correction, cap, sampler_share, method, G, p=0.5, M=16):
    """The exact share of the on-policy E[ĝ]·∇π(correct) that a group of G answers drawn from a
    sampler keeps under a correction, for the estimator `method` (reward 1{correct}) on a prompt
    with π(correct) = p and the wrong answers uniform, the sampler drawing the correct answer
    sampler_share times as often (exact.off_policy_group_gradient)."""
    pi, mu = uniform_wrong_prompt(p, M), uniform_wrong_prompt(p * sampler_share, M)
    grad_p = p * (np.eye(M)[0] - pi)  # ∇_z π(correct)
    on = off_policy_group_gradient(pi, pi, method, G, "none") @ grad_p
    return off_policy_group_gradient(pi, mu, method, G, correction, cap) @ grad_p / on


def _trained(runs):
    """The estimator (as figures name it) and group size the demo trains, for its exact part: its
    first row's."""
    return runs["method"].iloc[0], int(runs["G"].iloc[0])


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
    corrections = list(dict.fromkeys((c, cap if c in CAPPED else None)
                                     for c, cap in zip(runs["is_correction"], runs["is_cap"])))
    exact_head = L["exact_head"] + [
        _correction({"is_correction": c, "is_cap": cap}) for c, cap in corrections
    ]
    trained = _trained(runs)
    exact = []  # the estimator trained's, and beside it REINFORCE's (per answer: the group does not matter)
    shown = [(trained, "exact")]
    if trained[0] != REINFORCE:
        shown.append(((REINFORCE, trained[1]), "exact_beside"))
    for (method, G), label in shown:
        exact_rows = [[f"{s:g}"] + [f"{kept_share(c, cap, s, method, G):.3f}" for c, cap in corrections]
                      for s in SAMPLER_SHARES]
        exact.append((L[label].format(method=style.label(method), G=G), exact_head, exact_rows))
    return (
        R.title(L, runs.iloc[0], min(n)),
        [("", head, rows), *exact],
        L["note"],
    )


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
    """{(correction, cap): [(mismatch value, Difference to on-policy, cfg)]} over the runs that set
    `mismatch` (a correction without a cap: cap None)."""
    out = {}
    for cfg, _, _ in A.configurations(runs[runs[mismatch] > 0], SHOWN):
        capped = cfg["is_correction"] in CAPPED
        out.setdefault((cfg["is_correction"], cfg["is_cap"] if capped else None), []).append(
            (cfg[mismatch], _paired(runs, cfg, _base(runs, cfg)), cfg))
    return out


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
        plain = sorted(gaps.get(("none", None), []), key=lambda x: x[0])
        if not plain:
            continue
        seeds = plain[0][1].seeds
        costs = "; ".join(f"{what.format(v=v)} {K.change(d, 'the final pass@1')}" for v, d, _ in plain)
        out.append(K.Claim(f"{mismatch}_cost", f"Against on-policy sampling, {costs} ({seeds} seeds, paired)",
                           tuple(d for _, d, _ in plain)))
        largest = plain[-1][0]
        parts, diffs = [], []
        for (correction, _), values in gaps.items():
            for v, d, cfg in values:
                uncorrected = A.select_rows(runs, **{**cfg, "is_correction": "none", "is_cap": None})
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
    cap, (method, G) = _cap(runs), _trained(runs)
    corrections = ("truncated", "full", "masked")
    kept = {c: _share_words(kept_share(c, cap, 0.25, method, G)) for c in corrections}
    plain = {c: kept_share(c, cap, 0.25, REINFORCE, G) for c in corrections}
    out.append(K.Claim("truncation_exact", (
        f"Exactly, for the estimator trained ({style.label(method)}, G = {G}) on a prompt with "
        "π(correct) = 0.5: where the sampler draws the correct answer a quarter as often as π, "
        f"truncating at C = {cap:g} keeps {kept['truncated']} the on-policy expected gradient of "
        f"π(correct), full IS {kept['full']} it and masking at C = {cap:g} {kept['masked']} it"
        + ("" if method == REINFORCE else f" ({style.label(REINFORCE)}: truncation {plain['truncated']:.2f}, "
           f"full IS {plain['full']:.2f}, masking {plain['masked']:.2f})")),
        ()))
    return out


def _level_gaps(runs, cfg):
    """{level: per-seed differences} of cfg's final pass@1 on each difficulty level minus no
    correction's (the same sampler, is_correction none), paired by seed: {} where no such runs are."""
    this = A.select_rows(runs, **cfg)
    base = A.select_rows(runs, **{**cfg, "is_correction": "none", "is_cap": None})
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
    for (correction, _), values in gaps.items():
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


def _share_words(share):
    """A share of a gradient in words: "all of", "none of", "0.50 of", "1.22 times"."""
    if abs(share - 1) < 1e-12 or abs(share) < 1e-12:
        return "all of" if share > 0.5 else "none of"
    return f"{share:.2f} times" if share > 1 else f"{share:.2f} of"


def off_policy(runs):
    """Final pass@1 minus on-policy against the lag and the noise, one line per correction, and the
    exact share of the gradient each correction keeps against the sampler's π(correct)."""
    import pandas as pd

    fig, axes = F.subplots(1, 3, height=2.6)
    axes = axes[0]
    for ax, mismatch, xlabel in zip(axes, MISMATCHES, ("sampler lag (steps)", "sampler noise σ")):
        ax.axhline(0, **style.REFERENCE, lw=1, label="on-policy")
        for (correction, cap), values in _gaps(runs, mismatch).items():
            base = _base(runs, values[0][2])
            rows = [_gap(runs, cfg, base).assign(x=v) for v, _, cfg in values]
            s = A.over_seeds(pd.concat(rows), "x", "final_pass1")
            ax.plot(
                s.index,
                s["mean"],
                marker="o",
                ms=3,
                color=style.correction_colour(correction),
                label=_correction({"is_correction": correction, "is_cap": cap}),
                gid=f"correction:{correction}",
            )
            ax.fill_between(
                s.index,
                s["mean"] - s["ci"],
                s["mean"] + s["ci"],
                color=style.correction_colour(correction),
                alpha=0.2,
                lw=0,
            )
        if len(set(runs[mismatch])) > 1:
            F.log_ticks(ax, [v for v in set(runs[mismatch]) if v > 0])
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel("final pass@1 − on-policy")
    ax = axes[2]
    shares = np.geomspace(1 / 16, 1.5, 61)
    cap, (method, G) = _cap(runs), _trained(runs)
    for correction in dict.fromkeys(runs["is_correction"]):
        for shown, ls, lw in ((method, "-", 1.5), (REINFORCE, ":", 1.0)):
            if shown == REINFORCE and method == REINFORCE:
                continue
            ax.plot(
                shares,
                [kept_share(correction, cap, s, shown, G) for s in shares],
                color=style.correction_colour(correction),
                ls=ls,
                lw=lw,
                gid=f"correction:{correction}",
            )
    F.log_ticks(ax, [1 / 16, 1 / 4, 1])
    ax.set_xlabel("π_sampler(correct) / π(correct)")
    ax.set_ylabel("share of ∇π(correct) kept")
    ax.set_title(f"exact: {style.label(method)}, G = {G}, C = {cap:g}"
                 + ("" if method == REINFORCE else f"\n(dotted: {style.label(REINFORCE)})"), fontsize="small")
    axes[0].set_title("stale sampler")
    axes[1].set_title("perturbed sampler")
    fig.suptitle(
        "Final pass@1 against on-policy (paired by seed, mean and 95% band) and the exact gradient kept",
        fontsize="medium",
    )
    F.legend_below(fig, axes[0].get_legend_handles_labels()[0], ncol=5)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "off_policy": (lambda f: off_policy(_runs(f)), ("runs",)),
}
