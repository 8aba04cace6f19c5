"""The demo "gradient estimators": its table (en, zh), its figures.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import figures as F
from .. import render as R
from .. import style
from ..estimators import ESTIMATORS
from ..task import LEVEL_KEYS as LEVELS

NUMBER = 2  # its place in the lecture's order; its table is demo2_gradients
TITLE = "gradient estimators"
SWITCHABLE = True
CONFIG_SECTION = "gradient_stats"  # the config section that turns it off: the statistics it draws
FRAMES = ('gradstats', 'exact')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = False

TEXT = {
    "en": {
        "title": "Demo {number}: bias and variance of the gradient estimate (reference model, G = {G}, {n} repetitions each)",  # noqa: E501
        "case": "reward offset {off:g}; a {level} prompt (pi(correct) = {p:.2f}, true gradient pi(1-pi) = {g:.4f}):",  # noqa: E501
        "head": [
            "method",
            "grad mean",
            "± s.e.",
            "exact mean",
            "z vs exact",
            "std",
            "exact std",
            "total variance of the gradient",
            "exact",
        ],
        "ratio": "GRPO's gradient mean over the true gradient (one prompt per level):",
        "ratio_row": "pi(correct) = {p:.2f}   {method} / true gradient = {r:.2f} ± {se:.2f}",
    },
    "zh": {
        "title": "演示 {number}：梯度估计的偏差与方差（参考模型，G = {G}，每种情况重复 {n} 次）",
        "case": "奖励偏移 {off:g}；一道{level}的题（π(正确) = {p:.2f}，真实梯度 π(1-π) = {g:.4f}）：",
        "head": ["方法", "梯度均值", "± 标准误", "精确均值", "z（对精确值）", "标准差", "精确标准差", "整个梯度向量的总方差", "精确值"],  # noqa: E501
        "ratio": "GRPO 的梯度均值与真实梯度之比（各难度各取一道题）：",
        "ratio_row": "π(正确) = {p:.2f}   {method} / 真实梯度 = {r:.2f} ± {se:.2f}",
    },
}


def table(frames, L):
    gs = frames["gradstats"]
    parts = []
    # one block per (offset, probe level) that compares several methods ...
    for (off, level), sub in gs.groupby(["reward_offset", "level"], sort=False):
        if sub["method"].nunique() < 2:
            continue
        r = sub.iloc[0]
        title = L["case"].format(off=off, level=L["levels"][level], p=r["p_correct"],
                                       g=r["true_grad"])
        rows = [[R.method_name(L, x["method"]), f"{x['grad_mean']:7.4f}", f"{x['grad_mean_se']:.4f}",
                 f"{x['exact_grad_mean']:7.4f}", f"{x['z_vs_exact']:+.1f}", f"{x['grad_std']:7.4f}",
                 f"{x['exact_grad_std']:7.4f}", f"{x['total_var']:7.4f}", f"{x['exact_total_var']:7.4f}"]
                for _, x in sub.iterrows()]
        parts.append((title, L["head"], rows))
    # ... and GRPO's mean over the true gradient on each level it was run on
    ratio = gs[(gs["method"] == "grpo") & (gs["reward_offset"] == 0)].copy()
    ratio["order"] = ratio["level"].map(LEVELS.index)
    ratio = ratio.sort_values("order")
    if len(ratio) > 1:
        rows = [[L["levels"][x["level"]],
                 L["ratio_row"].format(p=x["p_correct"], method="GRPO", r=x["mean_over_true"],
                                             se=x["grad_mean_se"] / x["true_grad"])
                 + f"  (exact {x['exact_mean_over_true']:.2f})"]
                for _, x in ratio.iterrows()]
        parts.append((L["ratio"], [L["level"], ""], rows))
    first = gs.iloc[0]
    return (L["title"].format(G=int(first["G"]), n=int(first["n_reps"])), parts, [])


def claims(frames):
    """What FINDINGS.md says of this demo, computed (exact values, and the Monte Carlo checks)."""
    from .. import claims as K

    gs = frames["gradstats"]
    out = [K.Claim("exact_against_monte_carlo", (
        f"{int((gs['z_vs_exact'].abs() <= 4).sum())} of {len(gs)} cases' Monte Carlo means agree with the "
        f"exact ones within 4 standard errors (largest |z| {gs['z_vs_exact'].abs().max():.1f})"), ())]
    medium = gs[gs["level"] == gs["level"].iloc[0]]
    var = medium.set_index(["method", "reward_offset"])["exact_total_var"]
    offsets = sorted(medium["reward_offset"].unique())
    if len(offsets) > 1 and ("none", offsets[0]) in var and ("none", offsets[1]) in var:
        a, b = offsets[:2]
        same = [style.label(m) for m in dict.fromkeys(medium["method"])
                if m != "none" and (m, a) in var and (m, b) in var and abs(var[m, b] / var[m, a] - 1) < 1e-9]
        out.append(
            K.Claim(
                "offset_variance",
                (
                    f"An offset of {b - a:g} multiplies no baseline's exact total variance by "
                    f"{var['none', b] / var['none', a]:.1f} ({var['none', a]:.3f} → {var['none', b]:.3f}) "
                    f"and leaves it unchanged for {', '.join(same)}"
                ),
                (),
            )
        )
    grpo = gs[(gs["method"] == "grpo") & (gs["reward_offset"] == 0)].copy()
    if len(grpo) > 1:
        grpo["order"] = grpo["level"].map(LEVELS.index)
        out.append(K.Claim("grpo_overshoot", "GRPO's exact mean over the true gradient: " + ", ".join(
            f"{F.LEVEL_LABELS[r.level]} probe (p = {r.p_correct:.3f}) {r.exact_mean_over_true:.2f}×"
            for r in grpo.sort_values("order").itertuples()), ()))
    exact = frames.get("exact")
    if exact is not None and {"grpo", "batch_std"} <= set(exact["method"]):
        from ..exact import bias_curve

        G, p0, tiny = int(exact["G"].iloc[0]), exact["p"].min(), 0.002

        def at(method, p):  # E[ĝ_0] / ∇J exactly (it depends on π only through p)
            return float(bias_curve(method, G, 2, 0.0, [p])[0][0])

        start = exact[(exact["method"] == "batch_std") & (exact["p"] == p0)]["mean_over_true"].iloc[0]
        out.append(K.Claim("small_p", (
            f"As p → 0 GRPO's exact overshoot levels off at √(G − 1) = {np.sqrt(G - 1):.2f} for G = {G} "
            f"({at('grpo', tiny):.2f} at p = {tiny:g}), while dividing by the batch std follows "
            f"(G − 1)/G / √(p(1 − p)): {at('batch_std', tiny):.1f}× at p = {tiny:g} (the figure's grid "
            f"starts at p = {p0:.4f}, where it is {start:.1f}×)"
            + (f", and REINFORCE++'s baseline {at('reinforce_pp_baseline', tiny):.1f}×"
               if "reinforce_pp_baseline" in set(exact["method"]) else "")), ()))
    return out


def gradient_estimators(gs):
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    # the probe level with the most methods (any config: one method, one level, missing cases)
    level = gs.groupby("level", sort=False)["method"].nunique().idxmax()
    probe = gs[gs["level"] == level]
    methods = list(dict.fromkeys(probe["method"]))
    offsets = sorted(probe["reward_offset"].unique())
    row = {m: i for i, m in enumerate(methods)}  # one row per method, its offsets paired in it
    fig, axes = F.subplots(1, 2, height=1.1 + 0.22 * len(methods) * len(offsets) ** 0.5, sharey=True)
    ax_mean, ax_std = axes[0]
    h = 0.8 / len(offsets)
    hatches = ["", "////", "....", "xxxx"]
    for k, off in enumerate(offsets):  # the first offset solid, the others hatched and paler
        sub = probe[probe["reward_offset"] == off]
        y = np.array([row[m] for m in sub["method"]]) - 0.4 + h * (k + 0.5)
        look = {"height": h, "hatch": hatches[k % 4], "lw": 0.6,
                "color": [(*to_rgb(style.colour(m)), 1.0 if k == 0 else 0.35) for m in sub["method"]],
                "edgecolor": [style.colour(m) for m in sub["method"]]}
        bars = [ax_mean.barh(y, sub["grad_mean"], xerr=1.96 * sub["grad_mean_se"],
                             error_kw={"ecolor": "black", "lw": 0.7, "capsize": 1.5}, **look),
                ax_std.barh(y, sub["grad_std"], **look)]
        for patches in bars:
            for patch, m in zip(patches, sub["method"]):
                F.gid([patch], m)
    true = probe["true_grad"].iloc[0]
    ax_mean.axvline(true, color="black", ls=":", lw=1)
    ax_mean.set_yticks(range(len(methods)), [style.label(m) for m in methods])
    ax_mean.invert_yaxis()
    ax_mean.set_xlabel("mean of ĝ (95% CI)")
    ax_std.set_xlabel("standard deviation of ĝ")
    for ax in (ax_mean, ax_std):
        ax.grid(axis="y", visible=False)
    G, n, p = int(probe["G"].iloc[0]), int(probe["n_reps"].iloc[0]), probe["p_correct"].iloc[0]
    fig.suptitle(f"ĝ = gradient along the correct logit from one group, on a {F.LEVEL_LABELS[level]} prompt "
                 f"(π(correct) = {p:.2f}), G = {G}, {n} repetitions", fontsize="medium")
    grey = [Patch(facecolor=(0.4, 0.4, 0.4, 1.0 if k == 0 else 0.35), edgecolor="0.4", hatch=hatches[k % 4],
                  label=f"reward offset {off:g}") for k, off in enumerate(offsets)]
    F.legend_below(fig, grey + [Line2D([], [], color="black", ls=":", lw=1, label="true gradient π(1−π)")],
                  ncol=len(offsets) + 1)
    return fig


def bias_vs_p(exact, gs):
    import textwrap

    from matplotlib.ticker import NullFormatter

    # one panel with its legend beside it: most of a page wide, every label whole
    fig = F.figure(figsize=(0.85 * style.PAGE, 3.4), layout="constrained")
    axes = fig.subplots(squeeze=False)
    ax = axes[0, 0]
    curves = {m: s.sort_values("p") for m, s in exact.groupby("method", sort=False)}
    # estimators with the same exact curve (the unbiased ones, all at 1) are one grey line that
    # names them; their colours are their Monte Carlo points'
    same = {}
    for m, s in curves.items():
        same.setdefault(tuple(s["mean_over_true"].round(6)), []).append(m)
    shared = set()
    for members in same.values():
        m = members[0]
        if len(members) == 1:
            ax.plot(curves[m]["p"], curves[m]["mean_over_true"], label=style.label(m), **F.tag(m))
        else:
            names = textwrap.fill(", ".join(style.label(x) for x in members), 38)
            ax.plot(curves[m]["p"], curves[m]["mean_over_true"], color="0.6", lw=2.5, alpha=0.6,
                    label=f"exact, one line for\n{names}\n(their Monte Carlo points below)")
            shared |= set(members)
    # demo 2's Monte Carlo estimates at their probe's p; where several share a prompt, hollow
    # circles of decreasing size, so that each one shows
    mc, labelled = gs[gs["reward_offset"] == 0], set(curves) - shared
    # a method without a line whose function is one with a line (Dr. GRPO is group mean's) says so
    same_fn = {m: next((c for c in curves if ESTIMATORS[c].fn is ESTIMATORS[m].fn), None)
               for m in set(mc["method"]) - set(curves) if m in ESTIMATORS}
    for _, probe in mc.groupby("level", sort=False):
        for i, r in enumerate(probe.itertuples()):
            line = same_fn.get(r.method)
            also = f";\nits exact line: {style.label(line)}'s, the same function" if line else ""
            bars = ax.errorbar(r.p_correct, r.mean_over_true, yerr=1.96 * r.grad_mean_se / r.true_grad,
                               fmt="o", ms=max(7 - 1.2 * i, 2), mfc="none", mew=0.9, capsize=0, lw=0.8,
                               **F.tag(r.method), label=None if r.method in labelled
                               else f"{style.label(r.method)} (Monte Carlo{also})")
            labelled.add(r.method)  # a method without a curve of its own: a legend entry for its points
            F.gid(bars.get_children(), r.method)
    G = int(exact["G"].iloc[0])
    p = np.sort(exact["p"].unique())
    formula = (G - 1) / G / np.sqrt(p * (1 - p))
    # a curve the formula's line hides is named in its label, with how close (computed here)
    close = {m: np.max(np.abs(np.interp(p, s["p"], s["mean_over_true"]) / formula - 1))
             for m, s in curves.items()}
    under = [f"{style.label(m)}'s, to {gap:.0e}" for m, gap in close.items() if gap < 1e-3]
    ax.plot(p, formula, "k:", lw=1,
            label=r"$(G - 1)\,/\,(G\sqrt{p(1 - p)})$" + (f" ({'; '.join(under)})" if under else ""))
    ax.set_xscale("logit")
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()  # 1-2-5 ticks in every decade; powers of ten alone if that is too many
    decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
    ticks = [t for t in (m * 10.0**e for e in decades for m in (1, 2, 5)) if lo <= t <= hi]
    if len(ticks) > 9:
        ticks = [t for t in ticks if np.isclose(np.log10(t), round(np.log10(t)))]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("π(correct) = p")
    ax.set_ylabel("E[ĝ] / ∇J  (1 = unbiased)")
    ax.set_title(f"Exact E[ĝ] / ∇J along the correct logit, G = {G} (lines);\n"
                 "Monte Carlo, 95% CI (points)")
    fig.legend(loc="outside right upper", ncol=1, handlelength=2.2)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "gradient_estimators": (lambda f: gradient_estimators(f["gradstats"]), ('gradstats',)),
    "bias_vs_p": (lambda f: bias_vs_p(f["exact"], f["gradstats"]), ('exact', 'gradstats')),
}
