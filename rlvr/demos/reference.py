"""The demo "reference model": its table (en, zh), its figures.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import figures as F
from ..task import LEVEL_KEYS as LEVELS

NUMBER = 1  # its place in the lecture's order; its table is demo1_reference
TITLE = "reference model"
SWITCHABLE = True
FRAMES = ('reference',)  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = False

TEXT = {
    "en": {
        "title": "Demo {number}: the reference model (before RL), {P} prompts, 4 levels",
        "head": ["level", "prompts"],
        "chen": "unbiased estimate from {n} samples per prompt (Chen et al. 2021) against the exact value, all prompts:",  # noqa: E501
        "chen_head": ["k", "exact", "estimate ± s.e."],
    },
    "zh": {
        "title": "演示 {number}：参考模型（RL 之前）——{P} 道题，4 种难度",
        "head": ["难度", "题数"],
        "chen": "用每题 {n} 个样本的无偏估计（Chen 等 2021）与精确值对比，全部题目：",
        "chen_head": ["k", "精确值", "估计 ± 标准误"],
    },
}


def table(frames, L):
    ref = frames["reference"]
    ks = sorted(ref["k"].unique())
    head = L["head"] + [f"pass@{k}" for k in ks]
    rows = []
    for level in list(LEVELS) + ["all"]:
        sub = ref[ref["level"] == level].set_index("k")
        if len(sub):
            rows.append([L["levels"][level], f"{int(sub['n_prompts'].iloc[0])}"]
                        + [f"{sub.loc[k, 'pass_at_k']:.3f}" for k in ks])
    parts = [("", head, rows)]
    every = (
        ref[(ref["level"] == "all") & ref["pass_at_k_estimate"].notna()]
        if "pass_at_k_estimate" in ref
        else ()
    )
    if len(every):  # none where every k exceeds n_samples: the estimate needs k <= n
        rows = [
            [
                f"{int(x['k'])}",
                f"{x['pass_at_k']:.4f}",
                f"{x['pass_at_k_estimate']:.4f} ± {x['pass_at_k_estimate_se']:.4f}",
            ]
            for _, x in every.iterrows()
        ]
        parts.append((L["chen"].format(n=int(every["n_samples"].iloc[0])), L["chen_head"], rows))
    P = int(ref.loc[ref["level"] == "all", "n_prompts"].iloc[0])
    return (L["title"].format(P=P), parts, [])


def claims(frames):
    """The reference model's exact pass@k on the hardest level (the lecture's starting point)."""
    from .. import claims as K

    ref = frames["reference"]
    hard = ref[ref["level"] == LEVELS[0]].set_index("k")["pass_at_k"]
    ks = [k for k in (1, 64, 256) if k in hard.index]
    if not ks:
        return []
    return [K.Claim("hardest", f"{F.LEVEL_LABELS[LEVELS[0]]} prompts start at " + ", ".join(
        f"pass@{k} {hard[k]:.3f}" for k in ks) + " (exact)", ())]


def passk_by_level(ref):
    fig, axes = F.subplots(height=2.3)
    ax = axes[0, 0]
    levels = [lv for lv in LEVELS if lv in set(ref["level"])]
    # levels are ordered: a sequential map
    shades = F.matplotlib().colormaps["viridis"](np.linspace(0, 0.8, len(levels)))
    for level, colour in zip([*levels, "all"], [*shades, "0.45"]):
        sub = ref[ref["level"] == level].sort_values("k")
        ax.plot(sub["k"], sub["pass_at_k"], marker="o", ms=2.5, color=colour,
                ls="--" if level == "all" else "-", label=F.LEVEL_LABELS[level])
    F.log_ticks(ax, ref["k"], most=6)
    ax.set_xlabel("k (answers drawn per prompt)")
    ax.set_ylabel("exact pass@k (mean over prompts)")
    ax.set_title("Reference model: pass@k = $1 - (1 - p)^k$")
    handles = ax.get_legend_handles_labels()[0]
    ax.legend(handles=[*handles[-2::-1], handles[-1]], loc="center left", bbox_to_anchor=(1.0, 0.5),
              handlelength=1.8)  # top to bottom as the curves are
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "passk_by_level": (lambda f: passk_by_level(f["reference"]), ('reference',)),
}
