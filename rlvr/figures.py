"""The report figures, from the aggregated results (pandas DataFrames)."""

from io import BytesIO
from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator, PercentFormatter
from matplotlib.transforms import ScaledTranslation

from . import io, style
from .estimators import FAMILIES
from .task import LEVEL_KEYS as LEVELS

LEVEL_LABELS = {"very_hard": "very hard", "hard": "hard", "medium": "medium", "easy": "easy",
                "all": "all prompts"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # files only, no screen
    import matplotlib.pyplot as plt

    plt.rcParams.update(style.RC)
    return plt


FORMATS = ("png", "pdf")  # PNG for the report and screens, PDF (vector) for papers


def _save(fig, outdir, name):
    """Write fig as name.png and name.pdf, each drawn into memory and then written atomically:
    a figure is complete under its name or absent. No dates in the PDF: same bytes every run."""
    import matplotlib.pyplot as plt

    paths = []
    for fmt in FORMATS:
        buffer = BytesIO()
        metadata = {"CreationDate": None} if fmt == "pdf" else {}
        fig.savefig(buffer, format=fmt, metadata=metadata)
        fig.set_layout_engine("none")  # laid out once: the next format reuses the positions
        paths.append(Path(outdir) / f"{name}.{fmt}")
        io.write_bytes(paths[-1], buffer.getvalue())
    plt.close(fig)
    return paths


# --- shared helpers: one look for every figure (sizes and fonts from rlvr/style.py) ---

def _subplots(nrows=1, ncols=1, height=2.4, **kw):
    """A figure printed at its size in a paper: a column wide for one panel, a page wide for more."""
    width = style.COLUMN if nrows * ncols == 1 else style.PAGE
    return _plt().subplots(nrows, ncols, figsize=(width, height), layout="constrained", squeeze=False, **kw)


def _tag(method):
    """Colour and gid of whatever is drawn for a method (the tests find methods by the gid)."""
    return {"color": style.colour(method), "gid": f"method:{method}"}


def _gid(artists, method):
    """Tag the parts of a container (bars, error bars), which plotting calls do not tag."""
    for artist in artists:
        artist.set_gid(f"method:{method}")


def _over_seeds(frame, by, value):
    """Mean over seeds per `by`, and the half-width of its 95% interval (NaN with one seed)."""
    out = frame.groupby(by)[value].agg(mean="mean", sd="std", n="count")
    out["ci"] = 1.96 * out["sd"] / np.sqrt(out["n"])
    return out


def _line(ax, x, s, method=None, **kw):
    """The line s["mean"] and its 95% band s["ci"] (no band where it is undefined: one seed)."""
    kw = {**(_tag(method) if method else {}), **kw}
    line, = ax.plot(x, s["mean"], **kw)
    if np.isfinite(s["ci"]).any():  # a paler line (_variant) has a paler band
        ax.fill_between(x, s["mean"] - s["ci"], s["mean"] + s["ci"], color=line.get_color(),
                        alpha=0.2 * (line.get_alpha() or 1), lw=0, gid=line.get_gid())
    return line


def _variant(i, n):
    """The i-th of n ordered settings of one method (say ε_high or β, small to large): the method's
    colour, paler for the smaller settings (opacity, so the hue stays the method's: the tests check
    it), and a line style too (the largest solid, then dashed, dotted), so that print in grey tells
    them apart."""
    rank = n - 1 - i  # 0: the largest setting
    return {"alpha": 1 - 0.55 * rank / max(n - 1, 1), "ls": ("-", "--", ":", "-.")[rank % 4]}


def _paired(frame, base, value, on=("seed", "step")):
    """frame with value minus the value of base (one run's rows) at the same seed and step: the
    paired difference, which the spread over seeds hides less than the difference of means."""
    out = frame.merge(base[[*on, value]], on=list(on), suffixes=("", "_base"))
    out[value] = out[value] - out.pop(f"{value}_base")
    return out


def _log_ticks(ax, values, base=2, most=5):
    """Plain-number ticks at the values on a log axis, thinned so that no labels touch."""
    values = sorted(set(values))
    values = values[::-(-len(values) // most)]
    ax.set_xscale("log", base=base)
    ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.xaxis.set_minor_locator(NullLocator())


def _legend_below(fig, handles=None, ncol=2):
    """The legend under the panels, never on the data (none if nothing is labelled)."""
    handles = handles or fig.axes[0].get_legend_handles_labels()[0]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=max(1, min(ncol, len(handles))))


def _row_style(lr, offset, base_lr):
    """Training rows of one method differ by line style: dotted with a reward offset, dash-dot at
    another learning rate (dashed is the step-0 policy). Offset rows carry hollow markers too: a
    row that the offset does not change (RLOO, GRPO) lies on its offset-0 row and must still show."""
    ls = "-." if lr != base_lr else (":" if offset else "-")
    return {"ls": ls, "lw": 1.1} | ({"marker": "o", "ms": 3, "mfc": "white", "markevery": 0.12} if offset else {})


def _row_label(method, lr, offset, base_lr):
    return (style.label(method) + (f", lr {lr:g}" if lr != base_lr else "")
            + (f", offset {offset:g}" if offset else ""))


def _training_rows(tr):
    """The usual lr (rows at another one are dash-dot), the training rows as (method, lr, offset),
    a method's rows together, and the estimator families among them, in FAMILIES' order."""
    base_lr = tr["lr"].mode().iloc[0]
    order = {m: i for i, m in enumerate(dict.fromkeys(tr["method"]))}
    rows = sorted(dict.fromkeys(zip(tr["method"], tr["lr"], tr["reward_offset"])),
                  key=lambda r: (order[r[0]], r[2] != 0, r[1] != base_lr))
    families = [f for f in FAMILIES if any(style.family(m) == f for m, _, _ in rows)]
    return base_lr, rows, families


def _training_grid(tr, levels, x, y, ylabel, xlabel, extra=None):
    """Small multiples of the training rows: a column per estimator family (its methods differ in
    shade of one hue), a row per level, line style = offset / lr, 95% band over seeds. extra(ax,
    level, first) draws what every panel shares (the step-0 policy)."""
    base_lr, rows, families = _training_rows(tr)
    n_legend = max(sum(style.family(m) == f for m, _, _ in rows) for f in families) + (extra is not None)
    fig, axes = _subplots(len(levels), len(families), height=1.55 * len(levels) + 0.55 + 0.13 * n_legend,
                          sharex=True, sharey="row")
    for i, level in enumerate(levels):
        groups = dict(list(tr[tr["level"] == level].groupby(["method", "lr", "reward_offset"])))
        for j, family in enumerate(families):
            ax = axes[i, j]
            if extra:
                extra(ax, level, first=j == 0)
            for m, lr, off in rows:
                if style.family(m) == family and (m, lr, off) in groups:
                    s = _over_seeds(groups[m, lr, off], x, y)
                    _line(ax, s.index, s, m, **_row_style(lr, off, base_lr), label=_row_label(m, lr, off, base_lr))
            if i == 0:
                ax.set_title(family)
        axes[i, 0].set_ylabel(ylabel.format(LEVEL_LABELS[level]))
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), handlelength=1.8)  # under its column
    return fig, axes


# --- the figures ---

def passk_by_level(ref):
    fig, axes = _subplots(height=2.3)
    ax = axes[0, 0]
    levels = [lv for lv in LEVELS if lv in set(ref["level"])]
    shades = _plt().cm.viridis(np.linspace(0, 0.8, len(levels)))  # levels are ordered: a sequential map
    for level, colour in zip([*levels, "all"], [*shades, "0.45"]):
        sub = ref[ref["level"] == level].sort_values("k")
        ax.plot(sub["k"], sub["pass_at_k"], marker="o", ms=2.5, color=colour,
                ls="--" if level == "all" else "-", label=LEVEL_LABELS[level])
    _log_ticks(ax, ref["k"], most=6)
    ax.set_xlabel("k (answers drawn per prompt)")
    ax.set_ylabel("exact pass@k (mean over prompts)")
    ax.set_title("Reference model: pass@k = $1 - (1 - p)^k$")
    handles = ax.get_legend_handles_labels()[0]
    ax.legend(handles=[*handles[-2::-1], handles[-1]], loc="center left", bbox_to_anchor=(1.0, 0.5),
              handlelength=1.8)  # top to bottom as the curves are
    return fig


def gradient_estimators(gs):
    # the probe level with the most methods (any config: one method, one level, missing cases)
    level = gs.groupby("level", sort=False)["method"].nunique().idxmax()
    probe = gs[gs["level"] == level]
    methods = list(dict.fromkeys(probe["method"]))
    offsets = sorted(probe["reward_offset"].unique())
    row = {m: i for i, m in enumerate(methods)}  # one row per method, its offsets paired in it
    fig, axes = _subplots(1, 2, height=1.1 + 0.22 * len(methods) * len(offsets) ** 0.5, sharey=True)
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
                _gid([patch], m)
    true = probe["true_grad"].iloc[0]
    ax_mean.axvline(true, color="black", ls=":", lw=1)
    ax_mean.set_yticks(range(len(methods)), [style.label(m) for m in methods])
    ax_mean.invert_yaxis()
    ax_mean.set_xlabel("mean of ĝ (95% CI)")
    ax_std.set_xlabel("standard deviation of ĝ")
    for ax in (ax_mean, ax_std):
        ax.grid(axis="y", visible=False)
    G, n, p = int(probe["G"].iloc[0]), int(probe["n_reps"].iloc[0]), probe["p_correct"].iloc[0]
    fig.suptitle(f"ĝ = gradient along the correct logit from one group, on a {LEVEL_LABELS[level]} prompt "
                 f"(π(correct) = {p:.2f}), G = {G}, {n} repetitions", fontsize="medium")
    grey = [Patch(facecolor=(0.4, 0.4, 0.4, 1.0 if k == 0 else 0.35), edgecolor="0.4", hatch=hatches[k % 4],
                  label=f"reward offset {off:g}") for k, off in enumerate(offsets)]
    _legend_below(fig, grey + [Line2D([], [], color="black", ls=":", lw=1, label="true gradient π(1−π)")],
                  ncol=len(offsets) + 1)
    return fig


def learning_curves(curves):
    tr = curves[curves["experiment"] == "training"]
    levels = [lv for lv in ("all", "very_hard") if lv in set(tr["level"])]
    fig, _ = _training_grid(tr, levels, "step", "pass1", "exact pass@1, {}", "training step")
    return fig


def group_size(runs):
    gz = runs[runs["experiment"] == "group_size"]
    fig, axes = _subplots(1, 2, height=2.5, sharex=True)
    ax_p, ax_z = axes[0]
    for m, sub in gz.groupby("method", sort=False):
        p, z = _over_seeds(sub, "G", "final_pass1"), _over_seeds(sub, "G", "zero_signal_frac")
        for ax, s, fmt in ((ax_p, p, "o-"), (ax_z, z, "o")):
            _gid(ax.errorbar(s.index, s["mean"], yerr=s["ci"].fillna(0), fmt=fmt, capsize=2, ms=3.5,
                             label="observed (mean over seeds, 95% CI)", **_tag(m)).get_children(), m)
        # predicted from the policy at each step: a group has no signal when its G rewards are equal
        pred = sub.groupby("G")["zero_signal_pred_frac"].mean()
        ax_z.plot(pred.index, pred, ls="--", lw=1, **_tag(m),
                  label="predicted: mean over the groups drawn of $p^G + (1 - p)^G$")
    _log_ticks(ax_p, gz["G"], most=8)
    for ax, title, ylabel in ((ax_p, "pass@1 after training", "final exact pass@1, all prompts"),
                              (ax_z, "groups with all-equal rewards (no signal)", "share of groups")):
        ax.set(title=title, ylabel=ylabel, xlabel="group size G")
    answers = int(gz["G"].iloc[0] * gz["prompts_per_step"].iloc[0])
    n = gz["seed"].nunique()
    fig.suptitle(f"{', '.join(map(style.label, gz['method'].unique()))} at {answers} answers per step "
                 f"({n} seed{'s' * (n > 1)})", fontsize="medium")
    _legend_below(fig, ax_z.get_legend_handles_labels()[0][::-1], ncol=2)
    return fig


def bias_vs_p(exact, gs):
    fig, axes = _subplots(height=4.0)
    ax = axes[0, 0]
    curves = {m: s.sort_values("p") for m, s in exact.groupby("method", sort=False)}
    # estimators with the same curve (the unbiased ones all at 1) take turns along it: each is
    # dashed, its dashes shifted, so that every colour shows
    same = {}
    for m, s in curves.items():
        same.setdefault(tuple(s["mean_over_true"].round(6)), []).append(m)
    for members in same.values():
        for i, m in enumerate(members):
            n = len(members)
            ax.plot(curves[m]["p"], curves[m]["mean_over_true"], label=style.label(m), **_tag(m),
                    ls="-" if n == 1 else (2.5 * i, (2.5, 2.5 * (n - 1))))
    unbiased = next((ms for key, ms in same.items() if len(ms) > 1 and np.allclose(key, 1)), [])
    if unbiased:
        ax.annotate(f"{len(unbiased)} unbiased estimators, all = 1", (0.5, 1.0), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=7)
    # demo 2's Monte Carlo estimates, spread sideways (in logit) where several share a prompt
    mc, labelled = gs[gs["reward_offset"] == 0], set(curves)
    for _, probe in mc.groupby("level", sort=False):
        shift = (np.arange(len(probe)) - (len(probe) - 1) / 2) * 0.12
        x = 1 / (1 + (1 / probe["p_correct"] - 1) * np.exp(-shift))
        for xi, r in zip(x, probe.itertuples()):
            bars = ax.errorbar(xi, r.mean_over_true, yerr=1.96 * r.grad_mean_se / r.true_grad, fmt="o",
                               ms=2.5, capsize=1.5, mec="white", mew=0.3, **_tag(r.method),
                               label=None if r.method in labelled else style.label(r.method) + " (Monte Carlo)")
            labelled.add(r.method)  # a method without a curve: a legend entry for its points
            _gid(bars.get_children(), r.method)
    G = int(exact["G"].iloc[0])
    p = np.sort(exact["p"].unique())
    ax.plot(p, (G - 1) / G / np.sqrt(p * (1 - p)), "k:", lw=1, label=r"$(G - 1)\,/\,(G\sqrt{p(1 - p)})$")
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
    fig.legend(loc="outside lower center", ncol=2, handlelength=2.8)
    return fig


def passk_trained(ref, passk):
    from .render import trained_passk

    tr = trained_passk(passk, "training")
    levels = [lv for lv in ("all", "very_hard") if lv in set(tr["level"])]

    def step0(ax, level, first):
        r = ref[ref["level"] == level].sort_values("k")
        ax.plot(r["k"], r["pass_at_k"], **style.REFERENCE, lw=1, label="reference (step 0)" if first else None)

    fig, axes = _training_grid(tr, levels, "k", "pass_at_k", "exact pass@k, {}", "k", extra=step0)
    _log_ticks(axes[0, 0], tr["k"])
    return fig


def dynamic_sampling(curves):
    dyn = curves[(curves["experiment"] == "dynamic") & (curves["level"] == "all")]
    fig, axes = _subplots(height=2.6)
    ax = axes[0, 0]
    method = style.label(dyn["method"].iloc[0]) if len(dyn) else ""
    # the two runs are not estimators (the same method with or without dynamic sampling): greys
    for (rounds, sub), colour, ls in zip(dyn.groupby("max_rounds"), ("black", "0.55"), ("-", "--")):
        s = _over_seeds(sub, "step", "pass1")
        answers = sub.groupby("step")["answers"].mean()  # x: mean over seeds (rounds vary per seed)
        label = f"{method}, dynamic sampling (≤ {rounds} rounds a step)" if rounds else f"{method}, plain"
        _line(ax, answers.to_numpy(), s, color=colour, ls=ls, label=label)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v else "0"))
    ax.set_xlabel("answers sampled, kept or not")
    ax.set_ylabel("exact pass@1, all prompts")
    ax.set_title("Plain vs dynamic sampling (95% band)")
    _legend_below(fig, ncol=1)
    return fig


def lr_sweep(runs):
    from .render import lr_sweep_summary

    summary = lr_sweep_summary(runs).sort_values("lr", kind="stable")  # methods keep their order
    methods = list(dict.fromkeys(summary["method"]))
    ncols = max(1, min(4, len(methods)))
    nrows = -(-len(methods) // ncols)
    fig, axes = _subplots(nrows, ncols, height=0.6 + 1.7 * nrows, sharex=True, sharey=True)
    # a panel per method, the others in grey behind it: curves that coincide all stay visible
    for ax, m in zip(axes.flat, methods):
        for other, o in summary.groupby("method", sort=False):
            if other != m:
                ax.plot(o["lr"], o["mean"], color="0.8", lw=0.8, zorder=1)
        sub = summary[summary["method"] == m].set_index("lr")
        sub["ci"] = 1.96 * sub["se"]
        _line(ax, sub.index, sub, m, marker="o", ms=2.5)
        best = sub["mean"].idxmax()
        ax.plot(best, sub.loc[best, "mean"], marker="*", ms=9, ls="none", clip_on=False, **_tag(m))
        ax.set_title(style.label(m))
        _log_ticks(ax, summary["lr"])
    for ax in axes.flat[len(methods):]:
        ax.set_visible(False)
    fig.supxlabel("learning rate", fontsize="medium")
    fig.supylabel("final exact pass@1, all prompts", fontsize="medium")
    fig.suptitle("Final pass@1 against the learning rate (95% band; ★ best lr; grey: the other estimators)",
                 fontsize="medium")
    return fig


CLIP = ["clip_low", "clip_high", "clip_c"]  # a clipping setting (the default config varies ε_high)


def _focus(frame, knobs):
    """The rows of frame whose identifying columns outside `knobs` take their first value, and a
    note naming those values when more than one was there ("" if none): a figure lays out its own
    knobs; a grid that also varies others is drawn at the first of each (the table shows all)."""
    from .specs import TrainRow

    note = []
    for column in TrainRow.COLUMNS:
        if column in frame and column not in knobs and column != "experiment" and frame[column].nunique() > 1:
            value = frame[column].iloc[0]
            frame = frame[frame[column] == value]
            note.append(f"{column} {value:g}" if isinstance(value, float) else f"{column} {value}")
    return frame, (f"; at {', '.join(note)}" if note else "")


def _clip_label(setting, varies):
    lo, hi, c = setting
    same = "clip_low" not in varies and hi == lo  # the symmetric clip: say so
    return ", ".join([f"ε_high = {hi:g}" + (" = ε_low" if same else "")]
                     + ([f"ε_low = {lo:g}"] if "clip_low" in varies else [])
                     + ([f"dual clip c = {c:g}" if c else "no dual clip"] if "clip_c" in varies else []))


def clipping(curves):
    from .render import select_rows

    cl, note = _focus(curves[(curves["experiment"] == "clipping") & (curves["level"] == "all")],
                      ("method", "lr", "reward_offset", "epochs", *CLIP))
    mus = sorted(mu for mu in cl["epochs"].unique() if mu > 1)
    settings = sorted(set(zip(*(cl[c] for c in CLIP))), key=lambda t: (t[1], t[0], t[2]))
    varies = [c for c in CLIP if cl[c].nunique() > 1]
    runs = list(cl.groupby(["method", "lr", "reward_offset"], sort=False))
    quantities = (("pass1", "Δ exact pass@1\nvs μ = 1, same seed", True),
                  ("entropy", "Δ entropy (nats)\nvs μ = 1, same seed", True),
                  ("clip_frac", "(answer, update) pairs\nthe clip zeroed", False))
    fig, axes = _subplots(len(quantities), max(len(mus), 1), height=5.2, sharex=True, sharey="row")
    for (method, lr, offset), run in runs:
        # μ = 1 never clips: its rows (one per setting) are one run, the first is the baseline
        base = run[run["epochs"] == 1]
        base = select_rows(base, **base[CLIP].iloc[0].to_dict()) if len(base) else base
        name = f" ({style.label(method)}, lr {lr:g}, offset {offset:g})" if len(runs) > 1 else ""
        for j, mu in enumerate(mus):
            for k, setting in enumerate(settings):
                sub = select_rows(run, epochs=mu, **dict(zip(CLIP, setting)))
                if not len(sub):
                    continue
                look = _variant(k, len(settings)) | {"label": _clip_label(setting, varies) + name}
                for i, (value, _, paired) in enumerate(quantities):
                    if paired and not len(base):
                        continue
                    # the clip fraction at step 0 is 0 by definition (nothing updated yet)
                    d = _paired(sub, base, value) if paired else sub[sub["step"] > 0]
                    s = _over_seeds(d, "step", value)
                    _line(axes[i, j], s.index, s, method, **look)
    for j, mu in enumerate(mus):
        axes[0, j].set_title(f"μ = {mu} updates per batch")
        axes[-1, j].set_xlabel("training step")
        for i, (_, _, paired) in enumerate(quantities):
            if paired:
                axes[i, j].axhline(0, color="0.4", lw=0.8, zorder=1, label="μ = 1 (difference 0)")
    for i, (_, ylabel, _) in enumerate(quantities):
        axes[i, 0].set_ylabel(ylabel)
    axes[-1, 0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    methods = ", ".join(dict.fromkeys(style.label(m) for (m, _, _), _ in runs))
    fig.suptitle(f"{methods}: μ updates per batch with the clipped ratio, against one update "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    _legend_below(fig, handles, ncol=len(handles))
    return fig


def kl_penalty(curves):
    kl, note = _focus(curves[(curves["experiment"] == "kl_penalty") & (curves["level"] == "all")],
                      ("method", "kl_beta", "kl_estimator", "kl_placement"))
    free, pen = kl[kl["kl_beta"] == 0], kl[kl["kl_beta"] > 0]
    placements = [p for p in ("loss", "reward") if p in set(pen["kl_placement"])]
    estimators = sorted(set(pen["kl_estimator"]))
    betas = sorted(pen["kl_beta"].unique())
    several = pen["method"].nunique() > 1
    fig, axes = _subplots(max(len(placements), 1), max(len(estimators), 1), height=4.0,
                          sharex=True, sharey=True)
    for i, place in enumerate(placements):
        for j, est in enumerate(estimators):
            ax = axes[i, j]
            for method, run in free.groupby("method", sort=False):  # the same run in every panel
                _line(ax, *_by_step(run, "kl_ref"), color="0.6", zorder=1,
                      label="β = 0 (no penalty)" + (f", {style.label(method)}" if several else ""))
            here = pen[(pen["kl_placement"] == place) & (pen["kl_estimator"] == est)]
            for (method, beta), run in here.groupby(["method", "kl_beta"], sort=False):
                _line(ax, *_by_step(run, "kl_ref"), method, **_variant(betas.index(beta), len(betas)),
                      label=f"β = {beta:g}" + (f", {style.label(method)}" if several else ""))
            ax.set_title(f"{est} in the {place}")
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    fig.supylabel("exact KL(π ‖ π_ref), nats, all prompts", fontsize="medium")
    methods = ", ".join(dict.fromkeys(style.label(m) for m in kl["method"]))
    fig.suptitle(f"{methods} with a KL penalty β·k to the reference (mean over seeds, 95% band{note})",
                 fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    _legend_below(fig, handles, ncol=len(handles))
    return fig


def _by_step(frame, value):
    s = _over_seeds(frame, "step", value)
    return s.index, s


LOSS_AGG_LABELS = {"seq-mean-token-sum-norm": "seq-mean-token-sum-norm (Dr. GRPO; lecture)",
                   "seq-mean-token-mean": "seq-mean-token-mean (GRPO, TRL, verl default)",
                   "token-mean": "token-mean (DAPO)"}
LOSS_AGG_STYLES = {"seq-mean-token-sum-norm": "-", "seq-mean-token-mean": "--", "token-mean": ":"}


def loss_aggregation(curves):
    la, note = _focus(curves[(curves["experiment"] == "loss_aggregation") & (curves["level"] == "all")],
                      ("method", "loss_agg"))
    methods = list(dict.fromkeys(la["method"]))
    modes = [m for m in LOSS_AGG_LABELS if m in set(la["loss_agg"])]
    base_mode = modes[0] if modes else None  # the lecture's: every answer counted once
    fig, axes = _subplots(2, max(len(methods), 1), height=4.2, sharex=True, sharey="row")
    for j, method in enumerate(methods):
        run = la[la["method"] == method]
        base = run[run["loss_agg"] == base_mode]
        for mode in modes:
            sub = run[run["loss_agg"] == mode]
            look = {"ls": LOSS_AGG_STYLES[mode], "label": LOSS_AGG_LABELS[mode]}
            _line(axes[0, j], *_by_step(sub, "length_wrong"), method, **look)
            paired = _paired(sub, base, "length_wrong")
            _line(axes[1, j], *_by_step(paired, "length_wrong"), method, **look)
        axes[0, j].set_title(style.label(method))
        axes[1, j].set_xlabel("training step")
    axes[0, 0].set_ylabel("expected tokens of a\nwrong answer")
    axes[1, 0].set_ylabel("Δ tokens vs the solid\nline, same seed")
    fig.suptitle("Expected length of a wrong answer (all prompts) under each loss aggregation "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    # the legend in grey: the modes are line styles, the colour is the panel's method
    handles = [Line2D([], [], color="0.3", ls=LOSS_AGG_STYLES[m], label=LOSS_AGG_LABELS[m]) for m in modes]
    _legend_below(fig, handles, ncol=len(handles))
    return fig


def shared_policy(ref, passk):
    from .render import trained_passk

    sp, note = _focus(trained_passk(passk, "shared_policy"), ("method", "shared_lr"))
    shared = sorted(sp["shared_lr"].unique())
    rows = [("all", "pass@k − reference's,\nall prompts", True)]
    if (sp["level"] == "minority").any():
        rows.append(("minority", "pass@k, prompts that need\nthe minority strategy", False))
    fig, axes = _subplots(len(rows), max(len(shared), 1), height=1.9 * len(rows) + 0.9, sharex=True, sharey="row")
    for j, lr_shared in enumerate(shared):
        for i, (level, ylabel, difference) in enumerate(rows):
            ax = axes[i, j]
            r = ref[ref["level"] == level].set_index("k")["pass_at_k"]
            if difference:
                ax.axhline(0, **style.REFERENCE, lw=1, label="reference (step 0)")
            else:
                ax.plot(r.index, r.to_numpy(), **style.REFERENCE, lw=1)
            here = sp[(sp["shared_lr"] == lr_shared) & (sp["level"] == level)]
            for method, g in here.groupby("method", sort=False):
                g = g.assign(pass_at_k=g["pass_at_k"] - g["k"].map(r)) if difference else g
                s = _over_seeds(g, "k", "pass_at_k")
                _line(ax, s.index, s, method, marker="o", ms=2, label=style.label(method))
            _log_ticks(ax, sp["k"])
            if j == 0:
                ax.set_ylabel(ylabel)
        axes[0, j].set_title("tabular (shared lr 0)" if lr_shared == 0 else f"shared lr {lr_shared:g}")
        axes[-1, j].set_xlabel("k")
    fig.suptitle("Exact pass@k after training, with weights shared per answer strategy type "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    _legend_below(fig, handles, ncol=min(len(handles), 6))
    return fig


def passk_frontier(ref, passk):
    from .render import trained_passk

    sp, note = _focus(trained_passk(passk, "shared_policy").query("level == 'all'"), ("method", "shared_lr"))
    shared = sorted(sp["shared_lr"].unique())
    lo, hi = int(sp["k"].min()), int(sp["k"].max())
    r = ref[ref["level"] == "all"].set_index("k")["pass_at_k"]
    fig, axes = _subplots(1, max(len(shared), 1), height=2.7, sharex=True, sharey=True)
    for ax, lr_shared in zip(axes[0], shared):
        ax.axhline(r[hi], **style.REFERENCE, lw=1, zorder=1)
        ax.plot(r[lo], r[hi], marker="*", ms=9, ls="none", color=style.REFERENCE["color"], zorder=4,
                label="reference (step 0)")
        here = sp[sp["shared_lr"] == lr_shared]
        for method, g in here.groupby("method", sort=False):
            x, y = (g[g["k"] == k]["pass_at_k"] for k in (lo, hi))  # [seeds] each
            ci = [1.96 * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0 for v in (x, y)]
            bars = ax.errorbar(x.mean(), y.mean(), xerr=ci[0], yerr=ci[1], fmt="o", ms=4, capsize=1.5, lw=0.8,
                               label=style.label(method), **_tag(method))
            _gid(bars.get_children(), method)
        ax.set_title("tabular (shared lr 0)" if lr_shared == 0 else f"shared lr {lr_shared:g}")
        ax.set_xlabel(f"exact pass@{lo}, all prompts")
    axes[0, 0].set_ylabel(f"exact pass@{hi}, all prompts")
    fig.suptitle(f"pass@{lo} against pass@{hi} after training (mean over seeds, 95% intervals{note});\n"
                 f"above the dashed line the trained policy beats the reference at k = {hi}", fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    _legend_below(fig, handles, ncol=min(len(handles), 6))
    return fig


def entropy_vs_pass1(curves):
    tr = curves[(curves["experiment"] == "training") & (curves["level"] == "all")]
    if (tr["reward_offset"] == 0).any():  # without a reward offset: the offset is another question (demo 3)
        tr = tr[tr["reward_offset"] == 0]
    tr, note = _focus(tr, ("method", "lr", "reward_offset"))
    base_lr, rows, families = _training_rows(tr)
    groups = dict(list(tr.groupby(["method", "lr", "reward_offset"])))
    n_legend = max([sum(style.family(m) == f for m, _, _ in rows) for f in families] or [0])
    fig, axes = _subplots(1, max(len(families), 1), sharex=True, sharey=True, height=2.5 + 0.15 * n_legend)
    start = tr[tr["step"] == 0][["pass1", "entropy"]].mean()  # the reference policy: every run's step 0
    for j, (ax, family) in enumerate(zip(axes[0], families)):
        ax.plot(start["pass1"], start["entropy"], ls="none", marker="o", ms=5, mfc="white", mew=1.2,
                color=style.REFERENCE["color"], zorder=4, label="reference (step 0)" if j == 0 else None)
        for m, lr, off in rows:
            if style.family(m) != family:
                continue
            g = groups[m, lr, off]
            x, y = (_over_seeds(g, "step", v) for v in ("pass1", "entropy"))
            look = _row_style(lr, off, base_lr)
            ax.plot(x["mean"], y["mean"], **_tag(m), **look, label=_row_label(m, lr, off, base_lr))
            end = x.index.max()  # the last policy, with its 95% intervals in both directions
            bars = ax.errorbar(x.loc[end, "mean"], y.loc[end, "mean"], fmt="o", ms=3, capsize=1.5, lw=0.8,
                               xerr=np.nan_to_num(x.loc[end, "ci"]), yerr=np.nan_to_num(y.loc[end, "ci"]), **_tag(m))
            _gid(bars.get_children(), m)
        ax.set_title(family)
        ax.set_xlabel("exact pass@1, all prompts")
        # under its column, a fixed distance below the axes (below the x label at any figure height)
        below = ax.transAxes + ScaledTranslation(0, -0.42, fig.dpi_scale_trans)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, handlelength=1.8)
    axes[0, 0].set_ylabel("exact entropy (nats), all prompts")
    if note:
        fig.suptitle(f"Training rows{note}", fontsize="medium")
    return fig


def rank_bias(curves):
    from .render import pass1_every_run_reaches

    rb, note = _focus(curves[(curves["experiment"] == "rank_bias") & (curves["level"] == "all")],
                      ("method", "epochs", "clip_high"))
    configs = list(rb.groupby(["method", "epochs", "clip_high"], sort=False))
    epochs = sorted(rb["epochs"].unique())
    low = rb["clip_high"].min()
    final = rb[rb["step"] == rb["step"].max()]
    target = pass1_every_run_reaches(final["pass1"])  # where the table compares them
    fig, axes = _subplots(1, 2, height=2.9, sharey=True)
    for (method, mu, high), g in configs:
        look = {"ls": ("-", "--", ":", "-.")[epochs.index(mu) % 4], "alpha": 1.0 if high == low else 0.5}
        label = ", ".join([style.label(method)] + ([f"μ = {mu}"] if len(epochs) > 1 else [])
                          + ([f"ε_high = {high:g}"] if rb["clip_high"].nunique() > 1 else []))
        h = _over_seeds(g, "step", "entropy_correct")
        _line(axes[0, 0], h.index, h, method, label=label, **look)
        x = _over_seeds(g, "step", "pass1")
        axes[0, 1].plot(x["mean"], h["mean"], **_tag(method), **look)
    axes[0, 1].axvline(target, color="0.4", lw=0.8, ls="--", zorder=1)
    axes[0, 1].annotate(f"pass@1 = {target:g} (table)", (target, 1), xycoords=("data", "axes fraction"),
                        xytext=(-3, -3), textcoords="offset points", ha="right", va="top", fontsize="small")
    axes[0, 0].set_xlabel("training step")
    axes[0, 1].set_xlabel("exact pass@1, all prompts (mean over seeds)")
    axes[0, 0].set_ylabel("entropy among the correct\nanswers (nats), all prompts")
    C = int(rb["correct_answers"].iloc[0]) if "correct_answers" in rb and len(rb) else 0
    fig.suptitle(f"Which of {C} correct answers training concentrates on (mean over seeds, 95% band{note})",
                 fontsize="medium")
    _legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=3)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs); the pipeline draws demos 1-2 in one job
# and demos 3-7 in another, so the first can run while training still does
FIGURES = {
    "passk_by_level": (lambda f: passk_by_level(f["reference"]), ("reference",)),
    "gradient_estimators": (lambda f: gradient_estimators(f["gradstats"]), ("gradstats",)),
    "bias_vs_p": (lambda f: bias_vs_p(f["exact"], f["gradstats"]), ("exact", "gradstats")),
    "learning_curves": (lambda f: learning_curves(f["curves"]), ("curves",)),
    "group_size": (lambda f: group_size(f["runs"]), ("runs",)),
    "passk_trained": (lambda f: passk_trained(f["reference"], f["passk"]), ("reference", "passk")),
    "dynamic_sampling": (lambda f: dynamic_sampling(f["curves"]), ("curves",)),
    "lr_sweep": (lambda f: lr_sweep(f["runs"]), ("runs",)),
    "shared_policy": (lambda f: shared_policy(f["reference"], f["passk"]), ("reference", "passk")),
    "passk_frontier": (lambda f: passk_frontier(f["reference"], f["passk"]), ("reference", "passk")),
    "clipping": (lambda f: clipping(f["curves"]), ("curves",)),
    "kl_penalty": (lambda f: kl_penalty(f["curves"]), ("curves",)),
    "loss_aggregation": (lambda f: loss_aggregation(f["curves"]), ("curves",)),
    "entropy_vs_pass1": (lambda f: entropy_vs_pass1(f["curves"]), ("curves",)),
    "rank_bias": (lambda f: rank_bias(f["curves"]), ("curves",)),
}


def draw_figure(name, frames):
    """The named report figure as a matplotlib Figure (not saved; close it when done)."""
    return FIGURES[name][0](frames)


def write_figures(frames, outdir, names=None, drop=()):
    """Write the named report figures (default: all) as PNG and PDF under outdir and delete the
    figures named in drop (those of demos the config no longer asks for); return the paths written."""
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
        for fmt in FORMATS:
            (outdir / f"{name}.{fmt}").unlink(missing_ok=True)
    paths = []
    for name in names:
        paths += _save(draw_figure(name, frames), outdir, name)
    return paths
