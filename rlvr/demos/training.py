"""The demo "training": its table (en, zh), its figures.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 3  # its place in the lecture's order; its table is demo3_training
TITLE = "training"
SWITCHABLE = False  # always on: demo 6 and the network (demo 17) read its rows
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('reference', 'runs', 'curves')
ROWS = True

CONFIG = {
    "help": "the lecture's training runs: one run per row and seed",
    "seeds": list(range(5)),
    "rows": [
        {"method": "none", "lr": 2.0, "reward_offset": 0.0},
        {"method": "learned", "lr": 2.0, "reward_offset": 0.0},
        {"method": "rloo", "lr": 2.0, "reward_offset": 0.0},
        {"method": "grpo", "lr": 2.0, "reward_offset": 0.0},
        {"method": "none", "lr": 2.0, "reward_offset": 5.0},
        {"method": "learned", "lr": 2.0, "reward_offset": 5.0},
        {"method": "rloo", "lr": 2.0, "reward_offset": 5.0},
        {"method": "grpo", "lr": 2.0, "reward_offset": 5.0},
        {"method": "none", "lr": 8.0, "reward_offset": 0.0},
        {"method": "grpo", "lr": 4.0, "reward_offset": 0.0},
        # the field's estimators, beyond the lecture
        {"method": "dr_grpo", "lr": 2.0, "reward_offset": 0.0},
        {"method": "grpo_unbiased_std", "lr": 2.0, "reward_offset": 0.0},
        {"method": "batch_std", "lr": 2.0, "reward_offset": 0.0},
        {"method": "reinforce_pp_baseline", "lr": 2.0, "reward_offset": 0.0},
        {"method": "oracle", "lr": 2.0, "reward_offset": 0.0},
        {"method": "optimal", "lr": 2.0, "reward_offset": 0.0},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: training ({pps} prompts x {G} answers per step, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["method", "lr", "offset", "final pass@1", "by level: very hard / hard / medium / easy"],
        "ref": "(reference model: pass@1 = {p:.3f})",
    },
    "zh": {
        "title": "演示 {number}：训练（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个随机种子的平均 ± 标准误）",  # noqa: E501
        "head": ["方法", "学习率", "格式分", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易"],
        "ref": "（参考模型：pass@1 = {p:.3f}）",
    },
}


def table(frames, L):
    ref, runs = frames["reference"], frames["runs"]
    tr = runs[runs["experiment"] == "training"]
    if not len(tr):
        return None
    rows = [[R.method_name(L, m), f"{lr:4.1f}", f"{off:3.0f}", A.pm(sub["final_pass1"]), R.levels_str(sub)]
            for (m, lr, off), sub in tr.groupby(["method", "lr", "reward_offset"], sort=False)]
    r0 = tr.iloc[0]
    n_seeds = tr.groupby(["method", "lr", "reward_offset"])["seed"].nunique().min()
    at1 = ref[(ref["level"] == "all") & (ref["k"] == 1)]["pass_at_k"]
    footer = [L["ref"].format(p=float(at1.iloc[0]))] if len(at1) else []
    return (L["title"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                                                steps=int(r0["steps"]), n=int(n_seeds)),
            [("", L["head"], rows)], footer)


def claims(frames):
    """What FINDINGS.md says of the lecture's training runs, computed: the offset against no
    offset (paired by seed), the lecture's four estimators at lr 2, the larger steps, and every
    estimator at lr 2."""
    runs = frames["runs"]
    tr = runs[runs["experiment"] == "training"]
    if not len(tr):
        return []

    def final(**where):
        return A.select_rows(tr, **where)["final_pass1"]

    out = []
    lr, offsets = 2.0, sorted(o for o in tr["reward_offset"].unique() if o != 0)
    lecture = [
        m for m in ("none", "learned", "rloo", "grpo") if len(final(method=m, lr=lr, reward_offset=0.0))
    ]
    if offsets and lecture:
        off, parts, same, diffs = offsets[0], [], [], []
        for m in lecture:
            this, base = dict(method=m, lr=lr, reward_offset=off), dict(method=m, lr=lr, reward_offset=0.0)
            d = A.paired(A.select_rows(tr, **this), A.select_rows(tr, **base), "final_pass1", on=("seed",))
            if not len(d):
                continue
            if (d["final_pass1"].abs() < 1e-9).all():  # rounding only: the same runs
                same.append(style.label(m))
            else:
                diffs.append(K.over_seeds(d["final_pass1"]))
                parts.append(f"{K.change(diffs[-1], 'the final pass@1')} for {style.label(m)} "
                             f"(to {A.pm(final(**this))})")
        seeds = len(final(method=lecture[0], lr=lr, reward_offset=0.0))
        out.append(
            K.Claim(
                "offset",
                (
                    f"At lr {lr:g}, a reward offset of {off:g} "
                    + "; ".join(parts)
                    + (
                        f"; {' and '.join(same)} end within 1e-9 of their runs without it (by construction: "
                        f"their advantages do not see a constant)"
                        if same
                        else ""
                    )
                    + f" ({seeds} seeds, paired)"
                ),
                tuple(diffs),
            )
        )
    if "grpo" in lecture and len(lecture) > 1:
        others = [final(method=m, lr=lr, reward_offset=0.0).mean() for m in lecture if m != "grpo"]
        text = (f"At lr {lr:g} GRPO ends at {A.pm(final(method='grpo', lr=lr, reward_offset=0.0))} against "
                f"{min(others):.3f}–{max(others):.3f} for "
                f"{', '.join(style.label(m) for m in lecture if m != 'grpo')}")
        diffs = ()
        if len(final(method="none", lr=8.0, reward_offset=0.0)) and len(
            final(method="grpo", lr=4.0, reward_offset=0.0)
        ):
            d = K.paired(
                tr,
                "final_pass1",
                dict(method="none", lr=8.0, reward_offset=0.0),
                dict(method="grpo", lr=4.0, reward_offset=0.0),
            )
            text += (
                f"; no baseline at lr 8 ends at {A.pm(final(method='none', lr=8.0, reward_offset=0.0))}, "
                f"GRPO at lr 4 at {A.pm(final(method='grpo', lr=4.0, reward_offset=0.0))} (no baseline at lr "
                f"8 against GRPO at lr 4: {K.signed(d)}, paired)"
            )
            diffs = (d,)
        out.append(K.Claim("lecture_estimators", text, diffs))
    at = [(m, final(method=m, lr=lr, reward_offset=0.0)) for m in dict.fromkeys(tr["method"])]
    at = sorted([(m, x) for m, x in at if len(x)], key=lambda mx: -mx[1].mean())
    if len(at) > 1:
        out.append(K.Claim("every_estimator", f"At lr {lr:g} (offset 0), final pass@1: " + ", ".join(
            f"{style.label(m)} {x.mean():.3f}" for m, x in at) + f" (means over {len(at[0][1])} seeds; s.e. "
            f"{min(A.se(x) for _, x in at):.3f}–{max(A.se(x) for _, x in at):.3f})", ()))
    curves = frames.get("curves")
    if curves is not None:
        out += entropy_at_pass1(curves)
    return out


def entropy_at_pass1(curves, grid=(0.3, 0.4, 0.5, 0.6, 0.7)):
    """The entropy of demo 3's rows at offset 0 read off each row's seed-mean curve at equal
    pass@1 (linear between evaluations): how far apart the rows are, against how far it falls.
    Only where every row's mean pass@1 rises monotonically and reaches the grid's ends."""
    c = curves[(curves["experiment"] == "training") & (curves["level"] == "all")]
    c = c[c["reward_offset"] == 0]
    at = []
    for _, g in c.groupby(["method", "lr"], sort=False):
        mean = g.groupby("step")[["pass1", "entropy"]].mean()
        if not (mean["pass1"].is_monotonic_increasing and mean["pass1"].iloc[0] <= grid[0]
                and mean["pass1"].iloc[-1] >= grid[-1]):
            return []
        at.append(np.interp(grid, mean["pass1"], mean["entropy"]))
    if len(at) < 2:
        return []
    at = np.array(at)  # [rows, points]
    seeds = c["seed"].nunique()
    return [K.Claim("entropy_at_pass1", (
        f"At equal pass@1 ({grid[0]:g} … {grid[-1]:g}) the entropies of demo 3's {len(at)} rows at offset 0 "
        f"differ by at most {(at.max(axis=0) - at.min(axis=0)).max():.2f} nats, while the entropy falls by "
        f"{at.mean(axis=0)[0] - at.mean(axis=0)[-1]:.1f} nats over that range (each row's mean over its "
        f"{seeds} seeds)"), ())]


def learning_curves(curves):
    tr = curves[curves["experiment"] == "training"]
    levels = [lv for lv in ("all", "very_hard") if lv in set(tr["level"])]
    fig, _ = F.training_grid(tr, levels, "step", "pass1", "exact pass@1, {}", "training step")
    return fig


def entropy_vs_pass1(curves):
    from matplotlib.transforms import ScaledTranslation

    tr = curves[(curves["experiment"] == "training") & (curves["level"] == "all")]
    if (tr["reward_offset"] == 0).any():  # without a reward offset: the offset is another question (demo 3)
        tr = tr[tr["reward_offset"] == 0]
    tr, note = A.focus(tr, ("method", "lr", "reward_offset"))
    base_lr, rows, families = F.training_rows(tr)
    groups = dict(list(tr.groupby(["method", "lr", "reward_offset"])))
    n_legend = max([sum(style.family(m) == f for m, _, _ in rows) for f in families] or [0])
    fig, axes = F.subplots(1, max(len(families), 1), sharex=True, sharey=True, height=2.5 + 0.15 * n_legend)
    start = tr[tr["step"] == 0][["pass1", "entropy"]].mean()  # the reference policy: every run's step 0
    for j, (ax, family) in enumerate(zip(axes[0], families)):
        ax.plot(start["pass1"], start["entropy"], ls="none", marker="o", ms=5, mfc="white", mew=1.2,
                color=style.REFERENCE["color"], zorder=4, label="reference (step 0)" if j == 0 else None)
        for m, lr, off in rows:
            if style.family(m) != family:
                continue
            g = groups[m, lr, off]
            x, y = (A.over_seeds(g, "step", v) for v in ("pass1", "entropy"))
            look = F.row_style(lr, off, base_lr)
            ax.plot(x["mean"], y["mean"], **F.tag(m), **look, label=F.row_label(m, lr, off, base_lr))
            end = x.index.max()  # the last policy, with its 95% intervals in both directions
            bars = ax.errorbar(
                x.loc[end, "mean"],
                y.loc[end, "mean"],
                fmt="o",
                ms=3,
                capsize=1.5,
                lw=0.8,
                xerr=np.nan_to_num(x.loc[end, "ci"]),
                yerr=np.nan_to_num(y.loc[end, "ci"]),
                **F.tag(m),
            )
            F.gid(bars.get_children(), m)
        ax.set_title(family)
        ax.set_xlabel("exact pass@1, all prompts")
        # under its column, a fixed distance below the axes (below the x label at any figure height)
        below = ax.transAxes + ScaledTranslation(0, -0.42, fig.dpi_scale_trans)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, handlelength=1.8)
    axes[0, 0].set_ylabel("exact entropy (nats), all prompts")
    if note:
        fig.suptitle(f"Training rows{note}", fontsize="medium")
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "learning_curves": (lambda f: learning_curves(f["curves"]), ('curves',)),
    "entropy_vs_pass1": (lambda f: entropy_vs_pass1(f["curves"]), ('curves',)),
}
