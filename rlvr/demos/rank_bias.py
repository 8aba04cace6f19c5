"""The demo "several correct answers: rank bias": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..text import number

NUMBER = 12  # its place in the lecture's order; its table is demo12_rank_bias
TITLE = "several correct answers: rank bias"
SWITCHABLE = True
FRAMES = ('runs', 'curves')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = True

CONFIG = {
    "help": "several correct answers per prompt (rows' correct_answers): which correct answer training "
            "concentrates on; one run per row x seed, rows as in training (grids allowed)",
    # 20 seeds: the entropy among the correct answers differs by a few hundredths of a nat between rows
    "seeds": list(range(20)),
    "rows": [
        {"method": ["grpo", "unlikeliness"], "lr": 2.0, "correct_answers": 4},
        {"method": "grpo", "lr": 2.0, "correct_answers": 4, "epochs": [2, 4], "clip_high": [0.2, 0.28]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: several correct answers per prompt; which one training finds (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": [
            "policy",
            "μ",
            "ε_high",
            "final pass@1",
            "correct-answer entropy",
            "Δ vs GRPO, μ = 1",
            "at pass@1 = {t:g}",
            "Δ vs GRPO, μ = 1",
        ],
        "note": [
            "{C} correct answers per prompt, each half as likely as the one before at step 0, where p(correct) per",  # noqa: E501
            "prompt and so pass@k are demo 1's. Correct-answer entropy: the exact entropy (nats) of π among the correct",  # noqa: E501
            "answers, renormalised, mean over all prompts ({h0:.3f} at step 0, {hmax:.3f} if all were alike);",  # noqa: E501
            "'at pass@1 = t': read off each run's curve where its exact pass@1 first reaches t (linear between",  # noqa: E501
            "evaluations). Δ: paired with the GRPO run (μ = 1) of the same seed.",
        ],
    },
    "zh": {
        "title": "演示 {number}：每道题有多个正确回答；训练找到的是哪一个（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": [
            "策略",
            "μ",
            "ε_high",
            "训练后 pass@1",
            "正确回答间的熵",
            "相对 GRPO（μ = 1）之差",
            "pass@1 = {t:g} 时",
            "相对 GRPO（μ = 1）之差",
        ],
        "note": [
            "每道题 {C} 个正确回答，第 0 步时每个的概率是前一个的一半；此时每道题的 p(正确) 与 pass@k 都与演示 1 相同。",  # noqa: E501
            "正确回答间的熵：π 限制在正确回答上并归一化后的精确熵（nats），对全部题目取平均（第 0 步为 {h0:.3f}，",  # noqa: E501
            "全部相等时为 {hmax:.3f}）；“pass@1 = t 时”：在每次运行的曲线上，精确 pass@1 首次达到 t 之处读出",
            "（评估点之间线性插值）。差：与同一种子的 GRPO（μ = 1）运行配对。",
        ],
    },
}


def pass1_every_run_reaches(final_pass1):
    """The pass@1 at which demo 12 compares runs: the lowest final pass@1, down to a multiple of 0.05."""
    return np.floor(np.min(final_pass1) * 20) / 20


def runs_at_target(frames):
    """(the experiment's runs with the final correct-answer entropy and, as entropy_correct_at, its
    value where the run's pass@1 first reaches the target; the target), or None without runs."""
    runs = A.experiment_runs(frames, "rank_bias", ["entropy_correct"])
    if runs is None or "correct_answers" not in runs:
        return None
    target = pass1_every_run_reaches(runs["final_pass1"])
    at = A.value_at_pass1(frames["curves"], "rank_bias", "entropy_correct", target).rename(
        columns={"entropy_correct": "entropy_correct_at"})
    return runs.merge(at, on=[k for k in at.columns if k != "entropy_correct_at"], how="left"), target


def table(frames, L):
    found = runs_at_target(frames)
    if found is None:
        return None
    (runs, target), curves = found, frames["curves"]
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, ("method", "epochs", "clip_high")):
        base = A.select_rows(
            runs, **dict(cfg, method="grpo", epochs=1, clip_low=None, clip_high=None, clip_c=None)
        )
        base = A.select_rows(base, clip_high=base["clip_high"].iloc[0]) if len(base) else base
        rows.append(
            [
                R.method_name(L, cfg["method"]),
                f"{cfg['epochs']}",
                f"{cfg['clip_high']:g}",
                A.pm(g["final_pass1"]),
                A.pm(g["entropy_correct"]),
                R.delta(g, base, "entropy_correct", 3),
                A.pm(g["entropy_correct_at"]),
                R.delta(g, base, "entropy_correct_at", 3),
                other,
            ]
        )
        n.append(g["seed"].nunique())
    head = [h.format(t=target) for h in L["head"]]
    head, rows = R.with_others(head, rows, L["other"])
    C = int(runs["correct_answers"].iloc[0])
    start = curves[(curves["experiment"] == "rank_bias") & (curves["level"] == "all") & (curves["step"] == 0)]
    note = [line.format(C=C, h0=start["entropy_correct"].mean(), hmax=np.log(C)) for line in L["note"]]
    return (R.title(L, runs.iloc[0], min(n)), [("", head, rows)], note)


def claims(frames):
    """What FINDINGS.md says of this demo, computed: GRPO's concentration, the unlikeliness
    reward's own (its entropy falls too, less), and against GRPO at one update per batch (paired
    by seed) the unlikeliness reward, more updates, a higher ε_high."""
    found = runs_at_target(frames)
    if found is None:
        return []
    (runs, target), curves = found, frames["curves"]
    low, high = runs["clip_high"].min(), runs["clip_high"].max()
    grpo = {"method": "grpo", "epochs": 1, "clip_high": low}
    if not len(A.select_rows(runs, **grpo)):
        return []
    out = []
    c = curves[(curves["experiment"] == "rank_bias") & (curves["level"] == "all")]
    h0 = c[c["step"] == 0]["entropy_correct"].mean()
    g = A.select_rows(runs, **grpo)
    end = int(g["steps"].iloc[0])
    out.append(K.Claim("grpo_concentrates", (
        f"GRPO's correct-answer entropy falls from {h0:.3f} nats at step 0 to {A.pm(g['entropy_correct'])} "
        f"in {end} steps ({A.pm(g['entropy_correct_at'])} at pass@1 {target:g}; {len(g)} seeds)"), ()))
    unlikely = {"method": "unlikeliness", "epochs": 1, "clip_high": low}
    if len(A.select_rows(runs, **unlikely)):
        at = K.paired(runs, "entropy_correct_at", unlikely, grpo)
        final = K.paired(runs, "entropy_correct", unlikely, grpo)
        pass1 = K.paired(runs, "final_pass1", unlikely, grpo)
        own = A.select_rows(runs, **unlikely)["entropy_correct"]
        fall = K.over_seeds(own - h0)  # it concentrates too, if this is resolved below 0
        out.append(K.Claim("unlikeliness", (
            f"Over {end} steps the unlikeliness reward "
            f"{K.change(fall, 'its correct-answer entropy', unit=' nats')} "
            f"(from {h0:.3f} at step 0 to {A.pm(own)}). Against GRPO, the unlikeliness reward "
            f"{K.change(at, f'the correct-answer entropy at pass@1 {target:g}', unit=' nats')}"
            f" ({K.change(final, 'it at the end', unit=' nats')}) and {K.change(pass1, 'the final pass@1')} "
            f"({at.seeds} seeds, paired)"), (fall, at, final, pass1)))
        last = curves[
            (curves["experiment"] == "rank_bias") & (curves["epochs"] == 1) & (curves["clip_high"] == low)
        ]
        last = last[last["step"] == last["step"].max()]
        by_level = {lv: K.paired(last[last["level"] == lv], "entropy_correct", {"method": "unlikeliness"},
                                 {"method": "grpo"}) for lv in ("easy", "medium", "hard", "very_hard")}
        if "easy" in set(last["level"]):
            out.append(K.Claim("by_level", (
                "At the end, the unlikeliness reward's correct-answer entropy minus GRPO's, per level: "
                + ", ".join(f"{F.LEVEL_LABELS[lv]} {K.signed(d)}" for lv, d in by_level.items())
                + f" nats ({by_level['easy'].seeds} seeds, paired)"), tuple(by_level.values())))
    mus = sorted(mu for mu in runs["epochs"].unique() if mu > 1)
    more = [(mu, K.paired(runs, "entropy_correct_at", dict(grpo, epochs=mu), grpo),
             K.paired(runs, "final_pass1", dict(grpo, epochs=mu), grpo)) for mu in mus
            if len(A.select_rows(runs, **dict(grpo, epochs=mu)))]
    if more:
        changes = [f"μ = {mu} {K.change(h, f'the correct-answer entropy at pass@1 {target:g}', unit=' nats')}"
                   f" and {K.change(p, 'the final pass@1')}" for mu, h, p in more]
        out.append(K.Claim("more_updates", "Against one update per batch, " + "; ".join(changes)
                           + f" ({more[0][1].seeds} seeds, paired)",
                           tuple(d for _, h, p in more for d in (h, p))))
    higher = [(mu, K.paired(runs, "entropy_correct_at", dict(grpo, epochs=mu, clip_high=high),
                            dict(grpo, epochs=mu))) for mu in mus
              if high > low and len(A.select_rows(runs, **dict(grpo, epochs=mu, clip_high=high)))]
    if higher:
        out.append(K.Claim("clip_higher", f"ε_high {number(high)} instead of {number(low)} " + "; ".join(
            f"at μ = {mu} {K.change(d, f'the correct-answer entropy at pass@1 {target:g}', unit=' nats')}"
            for mu, d in higher)
            + f" (paired with the same μ, {higher[0][1].seeds} seeds)", tuple(d for _, d in higher)))
    return out


def rank_bias(curves):
    rb, note = A.focus(curves[(curves["experiment"] == "rank_bias") & (curves["level"] == "all")],
                      ("method", "epochs", "clip_high"))
    configs = list(rb.groupby(["method", "epochs", "clip_high"], sort=False))
    epochs = sorted(rb["epochs"].unique())
    low = rb["clip_high"].min()
    final = rb[rb["step"] == rb["step"].max()]
    target = pass1_every_run_reaches(final["pass1"])  # where the table compares them
    at = A.value_at_pass1(rb, "rank_bias", "entropy_correct", target).set_index("seed")
    base = at[(at["method"] == "grpo") & (at["epochs"] == 1) & (at["clip_high"] == low)]["entropy_correct"]
    fig, axes = F.subplots(1, 2, height=3.0)
    labels, diffs = [], []
    for (method, mu, high), g in configs:
        look = {"ls": ("-", "--", ":", "-.")[epochs.index(mu) % 4], "alpha": 1.0 if high == low else 0.5}
        label = ", ".join([style.label(method)] + ([f"μ = {mu}"] if len(epochs) > 1 else [])
                          + ([f"ε_high = {number(high)}"] if rb["clip_high"].nunique() > 1 else []))
        x, h = (A.over_seeds(g, "step", column) for column in ("pass1", "entropy_correct"))
        axes[0, 0].plot(x["mean"], h["mean"], **F.tag(method), **look, label=label)
        # the table's comparison: entropy at the target pass@1, paired with GRPO (μ = 1) by seed
        mine = at[(at["method"] == method) & (at["epochs"] == mu) & (at["clip_high"] == high)]
        d = (mine["entropy_correct"] - base).dropna()
        if len(base) and not (method == "grpo" and mu == 1 and high == low):
            labels.append(label)
            diffs.append((method, d.mean(), 1.96 * A.se(d), look))
    axes[0, 0].axvline(target, color="0.4", lw=0.8, ls="--", zorder=1)
    axes[0, 0].annotate(f"pass@1 = {target:g} (table)", (target, 1), xycoords=("data", "axes fraction"),
                        xytext=(-3, -3), textcoords="offset points", ha="right", va="top", fontsize="small")
    axes[0, 0].set_xlabel("exact pass@1, all prompts (mean over seeds)")
    axes[0, 0].set_ylabel("entropy among the correct\nanswers (nats), all prompts")
    ax = axes[0, 1]
    ax.axvline(0, color="0.4", lw=0.8)
    for i, (method, mean, ci, look) in enumerate(diffs):  # one row per configuration, top to bottom
        ax.errorbar(mean, -i, xerr=ci, fmt="o", ms=4, capsize=2, alpha=look["alpha"], **F.tag(method))
    ax.set_yticks([-i for i in range(len(labels))], labels, fontsize="x-small")
    ax.set_xlabel(f"Δ entropy at pass@1 = {target:g} vs GRPO, μ = 1\n(nats, same seed; 95% CI)")
    C = int(rb["correct_answers"].iloc[0]) if "correct_answers" in rb and len(rb) else 0
    fig.suptitle(f"Which of {C} correct answers training concentrates on (mean over seeds{note})",
                 fontsize="medium")
    F.legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=3)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "rank_bias": (lambda f: rank_bias(f["curves"]), ('curves',)),
}
