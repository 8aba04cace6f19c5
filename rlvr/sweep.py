"""Your own sweep, plotted: a value of the runs (final pass@1, ...) against one knob, a line per
value of another, small multiples over a third; mean over seeds ± one standard error. The rows
are those a config names (rlvr/compute.py's load_rows), in the colours of every figure.

    python -m rlvr plot --experiment lr_sweep --x lr --y final_pass1 --by method --panel optimizer --out sweep
"""

import numpy as np

from . import figures as F
from . import style
from .specs import TrainRow

KEYS = TrainRow.COLUMNS  # what tells runs apart (besides the seed): the axes a sweep may use


def sweep_table(runs, x, y, by=None, panel=None):
    """{(panel value, by value): DataFrame indexed by x with columns mean, se, n} of y over seeds,
    the runs ([seed rows], load_rows' "run") grouped by the keys named; ValueError naming a key
    or value that is not a column, or runs that differ in a key the sweep does not name (their
    seeds would be averaged together)."""
    numeric = [c for c in runs.columns if c not in KEYS and c != "seed" and runs[c].dtype.kind in "fiu"]
    named = {"x": x, "by": by, "panel": panel}
    for what, key in named.items():
        if key is not None and key not in KEYS:
            raise ValueError(f"--{what} {key}: not a key of the runs; the keys: {', '.join(KEYS)}")
    if y not in numeric:
        raise ValueError(f"--y {y}: not a value of the runs; the values: {', '.join(numeric)}")
    used = [k for k in named.values() if k]
    mixed = [k for k in KEYS if k not in used and runs[k].nunique(dropna=False) > 1]
    if mixed:
        raise ValueError(f"the runs differ in {', '.join(mixed)}, which the sweep does not name: give "
                         "one as --by or --panel, or pick the runs with --experiment")
    out = {}
    frame = runs.assign(_panel=runs[panel] if panel else "", _by=runs[by] if by else "")
    for keys, group in frame.groupby(["_panel", "_by"], sort=True):
        stats = group.groupby(x)[y].agg(mean="mean", sd="std", n="count")
        stats["se"] = (stats["sd"] / np.sqrt(stats["n"])).fillna(0.0)
        out[keys] = stats[["mean", "se", "n"]]
    return out


def plot_sweep(runs, x, y, by=None, panel=None):
    """The figure of sweep_table: a panel per value of `panel`, a line per value of `by` (a
    method's own colour where `by` is the method), error bars of one standard error."""
    table = sweep_table(runs, x, y, by, panel)
    panels = list(dict.fromkeys(p for p, _ in table))
    values = list(dict.fromkeys(b for _, b in table))  # of `by`: a value keeps its shape in every panel
    fig, axes = F.subplots(1, len(panels), sharey=True)
    for ax, p in zip(axes[0], panels):
        for (q, b), stats in table.items():
            if q != p:
                continue
            # a method's colour and shape (style.py); any other key a shape per value: lines that
            # coincide still show each hollow marker
            look = ({**F.tag(b), "marker": style.marker(b)} if by == "method"
                    else {"marker": style.MARKERS[values.index(b) % len(style.MARKERS)]})
            label = style.label(b) if by == "method" else (f"{by} = {b}" if by else None)
            ax.errorbar(stats.index, stats["mean"], yerr=stats["se"], ms=4, mfc="none", capsize=2,
                        label=label, **look)
        if runs[x].dtype.kind in "f" and (runs[x] > 0).all() and runs[x].max() / runs[x].min() >= 8:
            F.log_ticks(ax, runs[x])
        ax.set_xlabel(x)
        if panel:
            ax.set_title(f"{panel} = {p}")
    axes[0, 0].set_ylabel(y)
    fig.suptitle(f"mean ± one s.e. over {runs['seed'].nunique()} seeds", fontsize="small")
    if by:
        F.legend_below(fig, ncol=2)
    return fig
