"""The demo "learning-rate sweep": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 7  # its place in the lecture's order; its table is demo7_lr_sweep
TITLE = "learning-rate sweep"
SWITCHABLE = True
FRAMES = ('runs',)  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = True

CONFIG = {
    "help": "final pass@1 against the learning rate per estimator: one run per row x seed, rows as in "
            "training (grids allowed)",
    "seeds": list(range(5)),
    "rows": [
        {"method": ["none", "learned", "rloo", "grpo"],
         "lr": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]},
        # Adam rescales each logit's step by its gradient's running size: the estimators' scale cancels
        {"method": ["none", "learned", "rloo", "grpo"], "lr": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
         "optimizer": "adam"},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: final pass@1 against the learning rate ({pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "lr": "lr",
        "best": "best lr",
        "edge": "* the grid's largest or smallest lr: the sweep does not bracket that optimum",
    },
    "zh": {
        "title": "演示 {number}：训练后 pass@1 与学习率（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "lr": "学习率",
        "best": "最佳学习率",
        "edge": "* 网格中最大或最小的学习率：扫描没有包住这个最优值",
    },
}


def sweep_runs(runs):
    """The lr sweep's runs."""
    return runs[runs["experiment"] == "lr_sweep"]


def lr_sweep_summary(runs):
    """Final pass@1 per (optimizer, method, lr) of the lr sweep: mean, s.e. over seeds and seed count."""
    return sweep_runs(runs).groupby(["optimizer", "method", "lr"], sort=False)["final_pass1"].agg(
        mean="mean", se=A.se, n="count").reset_index()


def by_optimizer(summary):
    """[(optimizer, its rows of summary)], in the order the config has them."""
    return [(o, summary[summary["optimizer"] == o]) for o in dict.fromkeys(summary["optimizer"])]


def at_edge(lr, summary):
    """Whether a best lr is the sweep's largest or smallest: an optimum the grid does not bracket."""
    return lr in (summary["lr"].min(), summary["lr"].max())


def table(frames, L):
    runs = frames["runs"]
    summary = lr_sweep_summary(runs)
    if not len(summary):
        return None
    parts, edges = [], False
    optimizers = by_optimizer(summary)
    for optimizer, own in optimizers:
        methods = list(dict.fromkeys(own["method"]))
        cell = {(r.method, r.lr): f"{r.mean:.3f} ± {r.se:.3f}" for r in own.itertuples()}
        rows = [[f"{lr:g}"] + [cell.get((m, lr), "") for m in methods] for lr in sorted(own["lr"].unique())]
        best = own.loc[own.groupby("method", sort=False)["mean"].idxmax()].set_index("method")
        edge = {m: "*" if at_edge(best.loc[m, "lr"], own) else "" for m in methods}
        rows.append([L["best"]] + [f"{best.loc[m, 'lr']:g}{edge[m]}: {best.loc[m, 'mean']:.3f} ± "
                                   f"{best.loc[m, 'se']:.3f}" for m in methods])
        edges |= any(edge.values()) and own["lr"].nunique() > 1
        subtitle = style.OPTIMIZER_LABELS[optimizer] if len(optimizers) > 1 else ""
        parts.append((subtitle, [L["lr"]] + [R.method_name(L, m) for m in methods], rows))
    r0 = runs[runs["experiment"] == "lr_sweep"].iloc[0]
    return (L["title"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                              steps=int(r0["steps"]), n=int(summary["n"].min())),
            parts, [L["edge"]] if edges else [])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each estimator's best lr per optimizer, and how
    far apart the best-lr runs end (paired by seed against the best of them); and, under an
    optimizer other than SGD, GRPO − REINFORCE at each lr both ran."""
    runs = frames["runs"]
    summary = lr_sweep_summary(runs)
    if not len(summary):
        return []
    sweep, made = sweep_runs(runs), []
    for optimizer, own in by_optimizer(summary):
        runs_o = sweep[sweep["optimizer"] == optimizer]
        best = own.loc[own.groupby("method", sort=False)["mean"].idxmax()]
        top = best.loc[best["mean"].idxmax()]
        apart = [(r.method, r.lr, K.paired(pd_concat(runs_o, r.method, r.lr, top), "final_pass1",
                                           {"method": r.method}, {"method": top["method"]}))
                 for r in best.itertuples() if r.method != top["method"]]
        under = "" if optimizer == "sgd" else f"Under {style.OPTIMIZER_LABELS[optimizer]}, e"
        text = ((under or "E") + "ach estimator's best lr and its final pass@1: " + ", ".join(
            f"{style.label(r.method)} {r.lr:g}: {r.mean:.3f} ± {r.se:.3f}" for r in best.itertuples()))
        if apart:
            text += (f"; against {style.label(top['method'])}'s best (paired by seed): " + ", ".join(
                f"{style.label(m)} {K.signed(d, 4)}" for m, _, d in apart))
        edges = [style.label(r.method) for r in best.itertuples() if at_edge(r.lr, own)]
        if edges and own["lr"].nunique() > 1:
            every = "every estimator's" if len(edges) == len(best) else ", ".join(edges) + ":"
            text += (f"; {every} best lr is the grid's largest or smallest, so the sweep does not bracket "
                     "an optimum there")
        suffix = "" if optimizer == "sgd" else f"_{optimizer}"
        made.append(K.Claim(f"best_lr{suffix}", text + f" ({int(own['n'].min())} seeds)",
                            tuple(d for _, _, d in apart)))
        pairs = [(lr, K.paired(runs_o[runs_o["lr"] == lr], "final_pass1", {"method": "grpo"},
                                {"method": "none"}))
                 for lr in sorted(own["lr"].unique())
                 if {"grpo", "none"} <= set(own.loc[own["lr"] == lr, "method"])]
        if optimizer != "sgd" and pairs:
            made.append(K.Claim(
                f"grpo_against_reinforce{suffix}",
                f"Under {style.OPTIMIZER_LABELS[optimizer]}, final pass@1 of GRPO − REINFORCE (no "
                f"baseline) at equal lr, paired by seed: " + ", ".join(
                    f"lr {lr:g}: {K.signed(d, 3)}" for lr, d in pairs)
                + f" ({int(own['n'].min())} seeds)", tuple(d for _, d in pairs)))
    return made


def pd_concat(sweep, method, lr, top):
    """The runs of one method at one lr beside those of the best configuration `top`."""
    return sweep[((sweep["method"] == method) & (sweep["lr"] == lr))
                 | ((sweep["method"] == top["method"]) & (sweep["lr"] == top["lr"]))]


def lr_sweep(runs):
    summary = lr_sweep_summary(runs)
    order = list(dict.fromkeys(summary["optimizer"]))  # the config's (before sorting by lr)
    summary = summary.sort_values("lr", kind="stable")  # methods keep their order
    optimizers = sorted(by_optimizer(summary), key=lambda item: order.index(item[0]))
    methods = list(dict.fromkeys(summary["method"]))
    ncols = max(1, min(4, len(methods)))
    per = -(-len(methods) // ncols)  # rows of panels an optimizer takes
    nrows = per * len(optimizers)
    fig, axes = F.subplots(nrows, ncols, height=0.6 + 1.7 * nrows, sharex="row", sharey=True)
    # a panel per method (and optimizer), the others in grey behind it: curves that coincide stay visible
    for i, (optimizer, own) in enumerate(optimizers):
        panels = axes[i * per:(i + 1) * per].flat
        for ax, m in zip(panels, methods):
            for other, o in own.groupby("method", sort=False):
                if other != m:
                    ax.plot(o["lr"], o["mean"], color="0.8", lw=0.8, zorder=1)
            sub = own[own["method"] == m].set_index("lr")
            if not len(sub):
                ax.set_visible(False)
                continue
            sub["ci"] = 1.96 * sub["se"]
            F.line(ax, sub.index, sub, m, marker="o", ms=2.5)
            best = sub["mean"].idxmax()  # hollow at the grid's edge: an optimum the sweep does not bracket
            ax.plot(best, sub.loc[best, "mean"], marker="*", ms=9, ls="none", clip_on=False, **F.tag(m),
                    fillstyle="none" if at_edge(best, own) else "full")
            name = style.OPTIMIZER_LABELS[optimizer]
            ax.set_title(style.label(m) + (f", {name}" if len(optimizers) > 1 else ""))
            F.log_ticks(ax, own["lr"])
        for ax in list(panels)[len(methods):]:
            ax.set_visible(False)
    fig.supxlabel("learning rate", fontsize="medium")
    fig.supylabel("final exact pass@1, all prompts", fontsize="medium")
    fig.suptitle("Final pass@1 against the learning rate (95% band; ★ best lr, ☆ at the grid's edge; grey: "
                 "the other estimators)", fontsize="medium")
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "lr_sweep": (lambda f: lr_sweep(f["runs"]), ('runs',)),
}
