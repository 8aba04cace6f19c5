"""The report figures, from the aggregated results (pandas DataFrames)."""

from io import BytesIO
from pathlib import Path

import numpy as np

from . import io
from .task import LEVEL_KEYS as LEVELS

LEVEL_LABELS = {"very_hard": "very hard", "hard": "hard", "medium": "medium", "easy": "easy",
                "all": "all prompts"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # files only, no screen
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    """Draw into memory, then write atomically: a figure is complete under its name or absent."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = BytesIO()
    fig.savefig(buffer, dpi=120, format="png")
    plt.close(fig)
    io.write_bytes(path, buffer.getvalue())


def passk_by_level(ref, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for level in list(LEVELS) + ["all"]:
        sub = ref[ref["level"] == level].sort_values("k")
        ax.plot(sub["k"], sub["pass_at_k"], marker="o", ls="--" if level == "all" else "-",
                label=LEVEL_LABELS[level])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (answers drawn)")
    ax.set_ylabel("pass@k = 1 - (1 - p)^k")
    ax.set_title("Reference model: pass@k by difficulty")
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)


def gradient_estimators(gs, path):
    plt = _plt()
    # the probe level with the most methods (any config: one method, one level, missing cases)
    level = gs.groupby("level", sort=False)["method"].nunique().idxmax()
    multi = gs[gs["level"] == level]
    offsets = sorted(multi["reward_offset"].unique())
    methods = list(dict.fromkeys(multi["method"]))
    fig, (ax_mean, ax_std) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / max(1, len(offsets))
    x = np.arange(len(methods))
    for i, off in enumerate(offsets):
        sub = multi[multi["reward_offset"] == off].set_index("method").reindex(methods)
        ax_mean.bar(x + i * width, sub["grad_mean"], width, yerr=1.96 * sub["grad_mean_se"],
                    capsize=3, label=f"reward offset {off:g}")
        ax_std.bar(x + i * width, sub["grad_std"], width, label=f"reward offset {off:g}")
    true = multi["true_grad"].iloc[0]
    ax_mean.axhline(true, color="k", ls="--", lw=1, label="true gradient π(1-π)")
    for ax, title in ((ax_mean, "mean of the correct-logit gradient (95% CI)"),
                      (ax_std, "std of the correct-logit gradient")):
        ax.set_xticks(x + width * (len(offsets) - 1) / 2, methods)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    G, n = int(multi["G"].iloc[0]), int(multi["n_reps"].iloc[0])
    fig.suptitle(f"Gradient estimators on a {LEVEL_LABELS[level]} prompt, G = {G}, {n} repetitions")
    _save(fig, path)


def learning_curves(curves, path):
    plt = _plt()
    tr = curves[(curves["experiment"] == "training") & (curves["level"].isin(["all", "very_hard"]))]
    rows = list(dict.fromkeys(zip(tr["method"], tr["lr"], tr["reward_offset"])))
    n_seeds = tr["seed"].nunique()
    # mean and spread over seeds of every (level, row, step), in one pass over the frame
    over_seeds = tr.groupby(["level", "method", "lr", "reward_offset", "step"])["pass1"]
    mean_all, sd_all = over_seeds.mean(), over_seeds.std(ddof=1).fillna(0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for ax, level in zip(axes, ["all", "very_hard"]):
        for m, lr, off in rows:
            mean = mean_all.loc[(level, m, lr, off)]  # [T], indexed by step
            se = sd_all.loc[(level, m, lr, off)] / np.sqrt(n_seeds)
            line, = ax.plot(mean.index, mean, lw=1.5, ls="-" if off == 0 else ":",
                            label=f"{m}, lr {lr:g}, offset {off:g}")
            ax.fill_between(mean.index, mean - 1.96 * se, mean + 1.96 * se, alpha=0.2,
                            color=line.get_color())
        ax.set_title(f"pass@1 on {LEVEL_LABELS[level]} (mean of {n_seeds} seeds, 95% band)",
                     fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("exact pass@1")
    axes[1].legend(fontsize=7, loc="upper left")
    _save(fig, path)


def group_size(runs, path):
    plt = _plt()
    gz = runs[runs["experiment"] == "group_size"]
    stats = gz.groupby("G").agg(p=("final_pass1", "mean"), p_sd=("final_pass1", "std"),
                                z=("zero_signal_frac", "mean"), z_sd=("zero_signal_frac", "std"),
                                n=("seed", "nunique"))
    se = 1.96 / np.sqrt(stats["n"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar(stats.index, stats["p"], yerr=stats["p_sd"].fillna(0) * se, marker="o",
                label="final pass@1", capsize=3)
    ax.errorbar(stats.index, stats["z"], yerr=stats["z_sd"].fillna(0) * se, marker="s",
                label="share of groups with no signal", capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(stats.index, [str(g) for g in stats.index])
    ax.set_xlabel("group size G (answers per step fixed)")
    ax.set_title(f"Group size at {int(gz['G'].iloc[0] * gz['prompts_per_step'].iloc[0])} "
                 f"answers per step ({int(stats['n'].min())} seeds, 95% CI)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)


def bias_vs_p(exact, gs, path):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mc = gs[gs["reward_offset"] == 0]
    for method, sub in exact.groupby("method", sort=False):
        line, = ax.plot(sub["p"], sub["mean_over_true"], lw=1.5, label=method)
        pts = mc[mc["method"] == method]
        if len(pts):
            ax.errorbar(pts["p_correct"], pts["mean_over_true"], yerr=1.96 * pts["grad_mean_se"] / pts["true_grad"],
                        fmt="o", ms=4, color=line.get_color(), capsize=2)
    G = int(exact["G"].iloc[0])
    p = np.linspace(0.005, 0.995, 200)
    ax.plot(p, (G - 1) / G / np.sqrt(p * (1 - p)), "k:", lw=1, label="(G-1)/G / sqrt(p(1-p))")
    ax.set_xscale("logit")
    ax.set_ylim(0, 6)
    ax.set_xlabel("π(correct) = p")
    ax.set_ylabel("E[ĝ] / ∇J along the correct logit")
    ax.set_title(f"Exact bias of each estimator, G = {G} (lines), Monte Carlo with 95% CI (points)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _save(fig, path)


def passk_trained(ref, passk, path):
    plt = _plt()
    tr = passk[passk["experiment"] == "training"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, level in zip(axes, ["very_hard", "all"]):
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # one colour per training row
        r = ref[ref["level"] == level].sort_values("k")
        ax.plot(r["k"], r["pass_at_k"], "k--", marker="o", ms=3, label="reference")
        for (m, lr, off), g in tr[tr["level"] == level].groupby(["method", "lr", "reward_offset"], sort=False):
            mean = g.groupby("k")["pass_at_k"].mean()
            ax.plot(mean.index, mean, marker=".", ls="-" if off == 0 else ":", label=f"{m}, lr {lr:g}, offset {off:g}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"exact pass@k on {LEVEL_LABELS[level]}, before and after training", fontsize=10)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("pass@k (mean over seeds)")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    _save(fig, path)


def dynamic_sampling(curves, path):
    plt = _plt()
    dyn = curves[(curves["experiment"] == "dynamic") & (curves["level"] == "all")]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for rounds, sub in dyn.groupby("max_rounds"):
        wide = sub.pivot_table(index="step", columns="seed", values="pass1")
        answers = sub.groupby("step")["answers"].mean()
        mean = wide.mean(axis=1)
        se = wide.std(axis=1, ddof=1).fillna(0) / np.sqrt(wide.shape[1])
        label = f"dynamic sampling (≤ {rounds} rounds a step)" if rounds else "plain"
        line, = ax.plot(answers, mean, label=label)
        ax.fill_between(answers, mean - 1.96 * se, mean + 1.96 * se, alpha=0.2, color=line.get_color())
    ax.set_xlabel("answers sampled (kept or not)")
    ax.set_ylabel("exact pass@1, all prompts")
    ax.set_title("Dynamic sampling against plain training at equal answers (95% band)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)


def lr_sweep(runs, path):
    from .render import lr_sweep_summary

    plt = _plt()
    summary = lr_sweep_summary(runs)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-.")]  # coinciding curves stay visible
    for i, (method, sub) in enumerate(summary.groupby("method", sort=False)):
        sub = sub.sort_values("lr")
        marker, ls = styles[i % len(styles)]
        line, = ax.plot(sub["lr"], sub["mean"], marker=marker, ls=ls, ms=4, mfc="none", label=method)
        ax.fill_between(sub["lr"], sub["mean"] - 1.96 * sub["se"], sub["mean"] + 1.96 * sub["se"],
                        alpha=0.2, color=line.get_color())
        best = sub.loc[sub["mean"].idxmax()]
        ax.plot(best["lr"], best["mean"], marker="*", ms=11, color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(summary["lr"].unique()), [f"{lr:g}" for lr in sorted(summary["lr"].unique())])
    ax.set_xlabel("learning rate")
    ax.set_ylabel("final exact pass@1, all prompts")
    ax.set_title("Final pass@1 against the learning rate (95% band; ★ each method's best lr)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)


# name -> (draw(frames, path), the frames it needs); the pipeline draws demos 1-2 in one job
# and demos 3-6 in another, so the first can run while training still does
FIGURES = {
    "passk_by_level": (lambda f, p: passk_by_level(f["reference"], p), ("reference",)),
    "gradient_estimators": (lambda f, p: gradient_estimators(f["gradstats"], p), ("gradstats",)),
    "bias_vs_p": (lambda f, p: bias_vs_p(f["exact"], f["gradstats"], p), ("exact", "gradstats")),
    "learning_curves": (lambda f, p: learning_curves(f["curves"], p), ("curves",)),
    "group_size": (lambda f, p: group_size(f["runs"], p), ("runs",)),
    "passk_trained": (lambda f, p: passk_trained(f["reference"], f["passk"], p), ("reference", "passk")),
    "dynamic_sampling": (lambda f, p: dynamic_sampling(f["curves"], p), ("curves",)),
    "lr_sweep": (lambda f, p: lr_sweep(f["runs"], p), ("runs",)),
}


def write_figures(frames, outdir, names=None, drop=()):
    """Write the named report figures (default: all) as PNG under outdir and delete the figures
    named in drop (those of demos the config no longer asks for); return the paths written."""
    names = list(FIGURES) if names is None else names
    for name in [*names, *drop]:
        if name not in FIGURES:
            raise ValueError(f"unknown figure {name!r}; the figures are: {', '.join(FIGURES)}")
    for name in names:
        missing = [k for k in FIGURES[name][1] if k not in frames]
        if missing:
            raise ValueError(f"figure {name!r} needs " + ", ".join(f"--{k}" for k in missing))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for name in drop:
        (outdir / f"{name}.png").unlink(missing_ok=True)
    paths = []
    for name in names:
        path = outdir / f"{name}.png"
        FIGURES[name][0](frames, path)
        paths.append(path)
    return paths
