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


def lr_sweep_summary(runs):
    """Final pass@1 per (method, lr) of the lr sweep: mean, s.e. over seeds and seed count."""
    sweep = runs[runs["experiment"] == "lr_sweep"]
    return sweep.groupby(["method", "lr"], sort=False)["final_pass1"].agg(
        mean="mean", se=A.se, n="count").reset_index()


def at_edge(lr, summary):
    """Whether a best lr is the sweep's largest or smallest: an optimum the grid does not bracket."""
    return lr in (summary["lr"].min(), summary["lr"].max())


def table(frames, L):
    runs = frames["runs"]
    summary = lr_sweep_summary(runs)
    if not len(summary):
        return None
    methods = list(dict.fromkeys(summary["method"]))
    cell = {(r.method, r.lr): f"{r.mean:.3f} ± {r.se:.3f}" for r in summary.itertuples()}
    rows = [[f"{lr:g}"] + [cell.get((m, lr), "") for m in methods] for lr in sorted(summary["lr"].unique())]
    best = summary.loc[summary.groupby("method", sort=False)["mean"].idxmax()].set_index("method")
    edge = {m: "*" if at_edge(best.loc[m, "lr"], summary) else "" for m in methods}
    rows.append([L["best"]] + [f"{best.loc[m, 'lr']:g}{edge[m]}: {best.loc[m, 'mean']:.3f} ± "
                               f"{best.loc[m, 'se']:.3f}" for m in methods])
    r0 = runs[runs["experiment"] == "lr_sweep"].iloc[0]
    return (L["title"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                                                steps=int(r0["steps"]), n=int(summary["n"].min())),
            [("", [L["lr"]] + [R.method_name(L, m) for m in methods], rows)],
            [L["edge"]] if any(edge.values()) and summary["lr"].nunique() > 1 else [])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each estimator's best lr, and how far apart the
    best-lr runs end (paired by seed against the best of them)."""
    runs = frames["runs"]
    summary = lr_sweep_summary(runs)
    if not len(summary):
        return []
    sweep = runs[runs["experiment"] == "lr_sweep"]
    best = summary.loc[summary.groupby("method", sort=False)["mean"].idxmax()]
    top = best.loc[best["mean"].idxmax()]
    apart = [(r.method, r.lr, K.paired(pd_concat(sweep, r.method, r.lr, top), "final_pass1",
                                       {"method": r.method}, {"method": top["method"]}))
             for r in best.itertuples() if r.method != top["method"]]
    text = ("Each estimator's best lr and its final pass@1: " + ", ".join(
        f"{style.label(r.method)} {r.lr:g}: {r.mean:.3f} ± {r.se:.3f}" for r in best.itertuples()))
    if apart:
        text += (f"; against {style.label(top['method'])}'s best (paired by seed): " + ", ".join(
            f"{style.label(m)} {K.signed(d, 4)}" for m, _, d in apart))
    edges = [style.label(r.method) for r in best.itertuples() if at_edge(r.lr, summary)]
    if edges and summary["lr"].nunique() > 1:
        every = "every estimator's" if len(edges) == len(best) else ", ".join(edges) + ":"
        text += (f"; {every} best lr is the grid's largest or smallest, so the sweep does not bracket "
                 "an optimum there")
    return [K.Claim("best_lr", text + f" ({int(summary['n'].min())} seeds)", tuple(d for _, _, d in apart))]


def pd_concat(sweep, method, lr, top):
    """The runs of one method at one lr beside those of the best configuration `top`."""
    return sweep[((sweep["method"] == method) & (sweep["lr"] == lr))
                 | ((sweep["method"] == top["method"]) & (sweep["lr"] == top["lr"]))]


def lr_sweep(runs):
    summary = lr_sweep_summary(runs).sort_values("lr", kind="stable")  # methods keep their order
    methods = list(dict.fromkeys(summary["method"]))
    ncols = max(1, min(4, len(methods)))
    nrows = -(-len(methods) // ncols)
    fig, axes = F.subplots(nrows, ncols, height=0.6 + 1.7 * nrows, sharex=True, sharey=True)
    # a panel per method, the others in grey behind it: curves that coincide all stay visible
    for ax, m in zip(axes.flat, methods):
        for other, o in summary.groupby("method", sort=False):
            if other != m:
                ax.plot(o["lr"], o["mean"], color="0.8", lw=0.8, zorder=1)
        sub = summary[summary["method"] == m].set_index("lr")
        sub["ci"] = 1.96 * sub["se"]
        F.line(ax, sub.index, sub, m, marker="o", ms=2.5)
        best = sub["mean"].idxmax()  # hollow at the grid's edge: an optimum the sweep does not bracket
        ax.plot(best, sub.loc[best, "mean"], marker="*", ms=9, ls="none", clip_on=False, **F.tag(m),
                fillstyle="none" if at_edge(best, summary) else "full")
        ax.set_title(style.label(m))
        F.log_ticks(ax, summary["lr"])
    for ax in axes.flat[len(methods):]:
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
