"""The demo "dynamic sampling": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import style

NUMBER = 5  # its place in the lecture's order; its table is demo5_dynamic_sampling
TITLE = "dynamic sampling"
SWITCHABLE = True
FRAMES = ('runs', 'curves')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = False
EXPERIMENT = "dynamic"  # its rows' experiment (their files' paths and `experiment` column)


def train_rows(section, row):
    """Its training jobs: filtered with at most section["max_rounds"] rounds a step, and plain for
    max_rounds x the steps, so that the plain run can be read at an equal number of steps and at
    an equal budget of answers (experiment EXPERIMENT; rlvr/config.py's row makes one)."""
    return [row(EXPERIMENT, section["method"], section["lr"], section["reward_offset"], section["G"],
                section["prompts_per_step"], steps, section["seeds"], rounds)
            for rounds, steps in ((section["max_rounds"], section["steps"]),
                                  (0, section["steps"] * section["max_rounds"]))]


def check_section(section, task, checks):
    """Its section's problems (rlvr.config.Checks)."""
    checks.method("dynamic_sampling.method", section["method"])
    checks.G("dynamic_sampling.G", section["G"], [section["method"]])
    checks.need(section["prompts_per_step"] <= task["P"], "dynamic_sampling.prompts_per_step",
                f"{section['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")


TEXT = {
    "en": {
        "title": "Demo {number}: dynamic sampling ({method}, lr {lr:g}, {pps} prompts x {G} answers, at most {R} rounds a step; {n} seeds)",  # noqa: E501
        "head": [
            "run",
            "steps",
            "answers drawn",
            "final pass@1",
            "very hard",
            "no-signal groups",
            "batch filled",
        ],
        "rows": ["dynamic sampling", "plain, equal steps", "plain, equal answers"],
        "reach": "answers drawn until exact pass@1 (all prompts) first reaches a target (mean ± s.e.; linear between evaluations every {every} steps):",  # noqa: E501
        "plain": "plain",
        "ratio": "plain / dynamic",
        "note": "(plain, equal answers: read off the plain run of {steps} steps, evaluated every few steps, at the dynamic run's answers, linear in between)",  # noqa: E501
    },
    "zh": {
        "title": "演示 {number}：动态采样（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，每步最多 {R} 轮；{n} 个种子）",  # noqa: E501
        "head": ["运行", "步数", "抽取的回答数", "训练后 pass@1", "很难", "没有学习信号的组", "批次填满率"],
        "rows": ["动态采样", "普通，相同步数", "普通，相同回答数"],
        "reach": "精确 pass@1（全部题目）首次达到目标时已抽取的回答数（平均 ± 标准误；评估每 {every} 步一次，其间线性插值）：",  # noqa: E501
        "plain": "普通",
        "ratio": "普通 / 动态",
        "note": "（普通、相同回答数：从 {steps} 步的普通运行的曲线上，在动态采样的回答数处读出，评估点之间线性插值）",  # noqa: E501
    },
}


def dynamic_comparison(runs, curves):
    """Per seed: the dynamic run's final pass@1 and answers, and the plain run's pass@1 at the
    dynamic run's number of steps and at its number of answers (linear in answers between
    evaluations). Returns a DataFrame with one row per seed."""
    import pandas as pd

    dyn = runs[(runs["experiment"] == EXPERIMENT) & (runs["max_rounds"] > 0)]
    plain = curves[(curves["experiment"] == EXPERIMENT) & (curves["max_rounds"] == 0)]
    rows = []
    for _, d in dyn.iterrows():
        c = plain[(plain["seed"] == d["seed"]) & (plain["level"] == "all")].sort_values("step")
        cv = plain[(plain["seed"] == d["seed"]) & (plain["level"] == "very_hard")].sort_values("step")
        at_steps = c[c["step"] == d["steps"]]  # the plain run at the dynamic run's steps, if recorded
        if not len(at_steps):  # (eval_every not dividing them): no comparison at equal steps, not a wrong one
            continue
        at_steps = at_steps.iloc[0]
        rows.append({"seed": d["seed"], "dyn_pass1": d["final_pass1"],
                     "dyn_very_hard": d["final_pass1_very_hard"], "dyn_answers": d["answers"],
                     "dyn_zero": d["zero_signal_frac"], "dyn_kept": d["kept_frac"],
                     "steps_pass1": at_steps["pass1"], "steps_answers": at_steps["answers"],
                     "steps_very_hard": cv[cv["step"] == at_steps["step"]]["pass1"].iloc[0],
                     "budget_pass1": np.interp(d["answers"], c["answers"], c["pass1"]),
                     "budget_very_hard": np.interp(d["answers"], cv["answers"], cv["pass1"]),
                     "budget_steps": np.interp(d["answers"], c["answers"], c["step"])})
    return pd.DataFrame(rows)


def answers_to_reach(curves, targets):
    """Per (max_rounds, seed) of the dynamic-sampling runs: the answers drawn until exact pass@1 on
    all prompts first reaches each target (A.value_at_pass1; NaN if never). One row per run."""
    out = None
    for t in targets:
        at = A.value_at_pass1(curves, EXPERIMENT, "answers", t)[["max_rounds", "seed", "answers"]]
        at = at.rename(columns={"answers": t})
        out = at if out is None else out.merge(at, on=["max_rounds", "seed"])
    return out


def _answers_cell(x):
    x = np.asarray(x, float)
    if np.isnan(x).any():
        return L_NOT_REACHED
    return f"{x.mean():,.0f} ± {A.se(x):,.0f}"


L_NOT_REACHED = "-"  # a seed never reached the target


TARGETS = (0.8, 0.9, 0.95)


def table(frames, L):
    runs, curves = frames["runs"], frames.get("curves")
    if curves is None or "max_rounds" not in runs or not (runs["experiment"] == EXPERIMENT).any():
        return None
    cmp = dynamic_comparison(runs, curves)
    if not len(cmp):
        return None
    d0 = runs[(runs["experiment"] == EXPERIMENT) & (runs["max_rounds"] > 0)].iloc[0]
    names = L["rows"]
    rows = [
        [
            names[0],
            f"{int(d0['steps'])}",
            f"{cmp['dyn_answers'].mean():,.0f}",
            A.pm(cmp["dyn_pass1"]),
            A.pm(cmp["dyn_very_hard"], 2),
            f"{cmp['dyn_zero'].mean() * 100:.1f}%",
            f"{cmp['dyn_kept'].mean() * 100:.0f}%",
        ],
        [
            names[1],
            f"{int(d0['steps'])}",
            f"{cmp['steps_answers'].mean():,.0f}",
            A.pm(cmp["steps_pass1"]),
            A.pm(cmp["steps_very_hard"], 2),
            "",
            "100%",
        ],
        [
            names[2],
            f"{cmp['budget_steps'].mean():.0f}",
            f"{cmp['dyn_answers'].mean():,.0f}",
            A.pm(cmp["budget_pass1"]),
            A.pm(cmp["budget_very_hard"], 2),
            "",
            "100%",
        ],
    ]
    parts = [("", L["head"], rows)]
    reach = answers_to_reach(curves[curves["experiment"] == EXPERIMENT], TARGETS)
    dyn, plain = reach[reach["max_rounds"] > 0], reach[reach["max_rounds"] == 0]
    if len(dyn) and len(plain):
        ratio = [f"{plain[t].mean() / dyn[t].mean():.2f}"  # '-': a seed never reached it, or all at step 0
                 if dyn[t].notna().all() and plain[t].notna().all() and dyn[t].mean() > 0
                 else L_NOT_REACHED for t in TARGETS]
        parts.append((L["reach"].format(every=int(curves["step"].diff().abs().replace(0, np.nan).min())),
                      [L["head"][0]] + [f"pass@1 {t:g}" for t in TARGETS],
                      [[names[0]] + [_answers_cell(dyn[t]) for t in TARGETS],
                       [L["plain"]] + [_answers_cell(plain[t]) for t in TARGETS],
                       [L["ratio"]] + ratio]))
    return (
        L["title"].format(
            method=d0["method"],
            lr=d0["lr"],
            pps=int(d0["prompts_per_step"]),
            G=int(d0["G"]),
            R=int(d0["max_rounds"]),
            n=len(cmp),
        ),
        parts,
        [L["note"].format(steps=int(d0["steps"] * d0["max_rounds"]))],
    )


def claims(frames):
    """What FINDINGS.md says of this demo, computed: dynamic sampling against plain training at
    equal steps and at an equal budget of answers, the answers each needs to reach a pass@1
    (paired by seed: both runs of a seed draw the same first batch), and what the filter drops."""
    runs, curves = frames["runs"], frames.get("curves")
    if curves is None or "max_rounds" not in runs or not (runs["experiment"] == EXPERIMENT).any():
        return []
    cmp = dynamic_comparison(runs, curves)
    if not len(cmp):
        return []
    d0 = runs[(runs["experiment"] == EXPERIMENT) & (runs["max_rounds"] > 0)].iloc[0]
    equal_steps = K.over_seeds(cmp["dyn_pass1"] - cmp["steps_pass1"])
    out = [K.Claim("equal_steps", (
        f"At equal steps ({int(d0['steps'])}) dynamic sampling {K.change(equal_steps, 'the final pass@1')} "
        f"(to {A.pm(cmp['dyn_pass1'])}), drawing "
        f"{cmp['dyn_answers'].mean() / cmp['steps_answers'].mean():.1f}× the answers; at an equal budget of "
        f"answers plain training reaches {A.pm(cmp['budget_pass1'])} (read off its "
        f"{int(d0['steps'] * d0['max_rounds'])}-step curve at {cmp['dyn_answers'].mean() / 1000:.0f}k "
        f"answers; {len(cmp)} seeds, paired)"), (equal_steps,))]
    reach = answers_to_reach(curves[curves["experiment"] == EXPERIMENT], TARGETS)
    dyn = reach[reach["max_rounds"] > 0].set_index("seed")
    plain = reach[reach["max_rounds"] == 0].set_index("seed")
    found = [(t, K.over_seeds((plain[t] - dyn[t]).dropna()), plain[t].mean(), dyn[t].mean()) for t in TARGETS
             if plain[t].notna().all() and dyn[t].notna().all() and dyn[t].mean() > 0]  # > 0: not at step 0
    if found:
        out.append(K.Claim("answers_to_reach", (
            "Answers drawn until pass@1 first reaches a target, plain training against dynamic sampling: "
            + "; ".join(f"{t:g}: {p:,.0f} against {d:,.0f}, {K.signed(x, 0)} ({p / d - 1:+.0%})"
                        for t, x, p, d in found) + f" ({found[0][1].seeds} seeds, paired)"),
            tuple(x for _, x, _, _ in found)))
    out.append(K.Claim("filter", (
        f"The filter drops {cmp['dyn_zero'].mean():.0%} of the groups dynamic sampling draws (those without "
        f"signal), and the batch is {cmp['dyn_kept'].mean():.0%} full on average after at most "
        f"{int(d0['max_rounds'])} rounds"), ()))
    return out


def dynamic_sampling(curves):
    from matplotlib.ticker import FuncFormatter

    dyn = curves[(curves["experiment"] == EXPERIMENT) & (curves["level"] == "all")]
    fig, axes = F.subplots(1, 2, height=2.8)
    ax = axes[0, 0]
    method = style.label(dyn["method"].iloc[0]) if len(dyn) else ""
    # the two runs are not estimators (the same method with or without dynamic sampling): greys
    for (rounds, sub), colour, ls in zip(dyn.groupby("max_rounds"), ("black", "0.55"), ("-", "--")):
        s = A.over_seeds(sub, "step", "pass1")
        answers = sub.groupby("step")["answers"].mean()  # x: mean over seeds (rounds vary per seed)
        label = f"{method}, dynamic sampling (≤ {rounds} rounds a step)" if rounds else f"{method}, plain"
        F.line(ax, answers.to_numpy(), s, color=colour, ls=ls, label=label)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v else "0"))
    ax.set_xlabel("answers sampled, kept or not")
    ax.set_ylabel("exact pass@1, all prompts")
    ax.set_title("Plain vs dynamic sampling (95% band)")
    # the answers each needs to reach a pass@1, paired by seed: what the left panel's gap is
    targets = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
    at = {t: A.value_at_pass1(curves, EXPERIMENT, "answers", t) for t in targets}
    gap = []
    for t in targets:
        plain, filtered = (at[t][rounds_of(at[t], dynamic)] for dynamic in (False, True))
        d = (plain.set_index("seed")["answers"] - filtered.set_index("seed")["answers"]).dropna()
        gap.append((t, d.mean() / 1000, 1.96 * A.se(d) / 1000))
    ax = axes[0, 1]
    ax.axhline(0, color="0.4", lw=0.8)
    t, mean, ci = (np.array(x) for x in zip(*gap))
    ax.errorbar(t, mean, yerr=ci, fmt="o-", ms=3, color="black", capsize=2, lw=1)
    ax.set_xlabel("exact pass@1 reached")
    ax.set_ylabel("answers, plain − dynamic\n(thousands, same seed)")
    ax.set_title("Answers to reach a pass@1 (95% CI)")
    F.legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=1)
    return fig


def rounds_of(frame, dynamic):
    """The rows of frame from the runs with dynamic sampling (max_rounds > 0) or without."""
    return (frame["max_rounds"] > 0) == dynamic


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "dynamic_sampling": (lambda f: dynamic_sampling(f["curves"]), ('curves',)),
}
