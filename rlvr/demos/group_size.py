"""The demo "group size": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 4  # its place in the lecture's order; its table is demo4_group_size
TITLE = "group size"
SWITCHABLE = True
FRAMES = ('runs',)  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = False

def train_rows(section, row):
    """Its training jobs: section["answers_per_step"] answers a step, split into groups of each G
    of section["G"]; row(experiment, method, lr, offset, G, prompts per step, steps, seeds) makes one."""
    return [row("group_size", section["method"], section["lr"], section["reward_offset"], G,
                section["answers_per_step"] // G, section["steps"], section["seeds"]) for G in section["G"]]


def check_section(section, task, checks):
    """Its section's problems (rlvr.config.Checks): each G divides the answers a step and gives
    no more prompts a step than the task has."""
    checks.method("group_size.method", section["method"])
    A = section["answers_per_step"]
    for i, G in enumerate(section["G"]):
        key = f"group_size.G[{i}]"
        checks.G(key, G, [section["method"]])
        if G > A or A % G:
            checks.need(False, key, f"G = {G} must divide group_size.answers_per_step = {A}")
        elif A // G > task["P"]:
            checks.need(
                False, key, f"G = {G} gives {A // G} prompts per step, more than task.P = {task['P']}"
            )


TEXT = {
    "en": {
        "title": "Demo {number}: group size G (fixed {A} answers per step; {method}, lr {lr:g}; {steps} steps, {n} seeds)",  # noqa: E501
        "head": [
            "G",
            "prompts/step",
            "final pass@1",
            "by level: very hard / hard / medium / easy",
            "no-signal groups",
            "predicted p^G + (1-p)^G",
        ],
        "rloo": "(at G = 2, GRPO is RLOO: two different rewards get advantages +1 and -1 under both)",
    },
    "zh": {
        "title": "演示 {number}：组的大小 G（总样本数固定：每步 {A} 个回答；{method}，学习率 {lr:g}；{steps} 步，{n} 个种子）",  # noqa: E501
        "head": ["G", "每步题数", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易", "没有学习信号的组", "预测 p^G + (1-p)^G"],  # noqa: E501
        "rloo": "（G = 2 时 GRPO 就是 RLOO：两个不同的奖励在两者中的优势都是 +1 和 -1）",
    },
}


def table(frames, L):
    runs = frames["runs"]
    gz = runs[runs["experiment"] == "group_size"]
    if not len(gz):
        return None
    rows = [
        [
            f"{G:3d}",
            f"{int(sub['prompts_per_step'].iloc[0]):3d}",
            A.pm(sub["final_pass1"]),
            R.levels_str(sub),
            f"{sub['zero_signal_frac'].mean() * 100:5.1f}% ± {A.se(sub['zero_signal_frac']) * 100:.1f}",
            f"{sub['zero_signal_pred_frac'].mean() * 100:5.1f}%",
        ]
        for G, sub in gz.groupby("G", sort=True)
    ]
    r0 = gz.iloc[0]
    # at G = 2 two different rewards give advantages ±1 under GRPO (up to EPS) and under RLOO alike
    footer = [L["rloo"]] if r0["method"] == "grpo" and 2 in set(gz["G"]) else []
    return (L["title"].format(A=int(r0["G"] * r0["prompts_per_step"]), method=r0["method"], lr=r0["lr"],
                              steps=int(r0["steps"]), n=int(gz.groupby("G")["seed"].nunique().min())),
            [("", L["head"], rows)], footer)


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each halving of G against the next (paired by
    seed), what the lecture's 5 seeds could resolve, and the zero-signal prediction."""
    runs = frames["runs"]
    gz = runs[runs["experiment"] == "group_size"]
    Gs = sorted(gz["G"].unique())
    if len(Gs) < 2:
        return []
    steps = [(a, b, K.paired(gz, "final_pass1", {"G": a}, {"G": b})) for a, b in zip(Gs, Gs[1:])]
    answers = int(gz["G"].iloc[0] * gz["prompts_per_step"].iloc[0])
    out = [K.Claim("smaller_groups", (
        f"At {answers} answers a step, " + "; ".join(f"G = {a} against G = {b} "
                                                     f"{K.change(d, 'the final pass@1')}"
                                                       for a, b, d in steps)
        + f" ({steps[0][2].seeds} seeds, paired)"), tuple(d for _, _, d in steps))]
    first = sorted(gz["seed"].unique())[:5]
    if len(first) == 5 and gz["seed"].nunique() > 5:
        a, b = Gs[:2]
        d = K.paired(gz[gz["seed"].isin(first)], "final_pass1", {"G": a}, {"G": b})
        out.append(K.Claim("lecture_seeds", f"with the lecture's 5 seeds, G = {a} against G = {b} "
                                            f"{K.change(d, 'the final pass@1')}", (d,)))
    gap = (gz.groupby("G")["zero_signal_frac"].mean() - gz.groupby("G")["zero_signal_pred_frac"].mean()).abs()
    out.append(K.Claim("zero_signal", (
        f"p^G + (1 − p)^G predicts the observed share of groups without signal within {gap.max() * 100:.1f} "
        f"points at every G; at G = {Gs[0]}, {gz[gz['G'] == Gs[0]]['zero_signal_frac'].mean():.1%} of the "
        "groups carry no signal"), ()))
    return out


def group_size(runs):
    gz = runs[runs["experiment"] == "group_size"]
    fig, axes = F.subplots(1, 2, height=2.5, sharex=True)
    ax_p, ax_z = axes[0]
    for m, sub in gz.groupby("method", sort=False):
        p, z = A.over_seeds(sub, "G", "final_pass1"), A.over_seeds(sub, "G", "zero_signal_frac")
        for ax, s, fmt in ((ax_p, p, "o-"), (ax_z, z, "o")):
            F.gid(ax.errorbar(s.index, s["mean"], yerr=s["ci"].fillna(0), fmt=fmt, capsize=2, ms=3.5,
                             label="observed (mean over seeds, 95% CI)", **F.tag(m)).get_children(), m)
        # predicted from the policy at each step: a group has no signal when its G rewards are equal
        pred = sub.groupby("G")["zero_signal_pred_frac"].mean()
        ax_z.plot(pred.index, pred, ls="--", lw=1, **F.tag(m),
                  label="predicted: mean over the groups drawn of $p^G + (1 - p)^G$")
    F.log_ticks(ax_p, gz["G"], most=8)
    for ax, title, ylabel in ((ax_p, "pass@1 after training", "final exact pass@1, all prompts"),
                              (ax_z, "groups with all-equal rewards (no signal)", "share of groups")):
        ax.set(title=title, ylabel=ylabel, xlabel="group size G")
    answers = int(gz["G"].iloc[0] * gz["prompts_per_step"].iloc[0])
    n = gz["seed"].nunique()
    fig.suptitle(f"{', '.join(map(style.label, gz['method'].unique()))} at {answers} answers per step "
                 f"({n} seed{'s' * (n > 1)})", fontsize="medium")
    F.legend_below(fig, ax_z.get_legend_handles_labels()[0][::-1], ncol=2)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "group_size": (lambda f: group_size(f["runs"]), ('runs',)),
}
