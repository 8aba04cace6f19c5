"""The report figures: the look every demo's figures share, and the writer.

Each demo draws its own figures (rlvr/demos/<name>.py: FIGURES, name -> (draw(frames) -> a
matplotlib Figure, the frames it needs)); this module holds the shared pieces (sizes and fonts
from rlvr/style.py, one colour per method) and writes PNG and PDF. matplotlib is imported only
when a figure is drawn, so reading the demo registry (the Snakefile does) costs no matplotlib.
"""

from io import BytesIO
from pathlib import Path

import numpy as np

from . import analysis as A
from . import io, style
from .estimators import FAMILIES
from .render import LABELS

# the tables' English level names; a panel or legend says "all prompts" where a table's column says "all"
LEVEL_LABELS = {**LABELS["en"]["levels"], "all": "all prompts"}
FORMATS = ("png", "pdf")  # PNG for the report and screens, PDF (vector) for papers


def matplotlib():
    """matplotlib with the report's style (rlvr/style.py); figures are made without pyplot,
    whose import (a third of a second) a job that only writes files does not need."""
    import matplotlib

    matplotlib.rcParams.update(style.RC)
    return matplotlib


def figure(**kw):
    """A new matplotlib Figure (kw as Figure takes them), in the report's style."""
    matplotlib()
    from matplotlib.figure import Figure

    return Figure(**kw)


def save(fig, outdir, name):
    """Write fig as name.png and name.pdf, each drawn into memory and then written atomically:
    a figure is complete under its name or absent. No dates in the PDF: same bytes every run."""
    paths = []
    for fmt in FORMATS:
        buffer = BytesIO()
        metadata = {"CreationDate": None} if fmt == "pdf" else {}
        fig.savefig(buffer, format=fmt, metadata=metadata)
        fig.set_layout_engine("none")  # laid out once: the next format reuses the positions
        paths.append(Path(outdir) / f"{name}.{fmt}")
        io.write_bytes(paths[-1], buffer.getvalue())
    return paths


def subplots(nrows=1, ncols=1, height=2.4, **kw):
    """A figure printed at its size in a paper: a column wide for one panel, a page wide for more."""
    width = style.COLUMN if nrows * ncols == 1 else style.PAGE
    fig = figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False, **kw)


def tag(method):
    """Colour and gid of whatever is drawn for a method (the tests find methods by the gid)."""
    return {"color": style.colour(method), "gid": f"method:{method}"}


def gid(artists, method):
    """Tag the parts of a container (bars, error bars), which plotting calls do not tag."""
    for artist in artists:
        artist.set_gid(f"method:{method}")


def line(ax, x, s, method=None, **kw):
    """The line s["mean"] and its 95% band s["ci"] (no band where it is undefined: one seed)."""
    kw = {**(tag(method) if method else {}), **kw}
    line, = ax.plot(x, s["mean"], **kw)
    if np.isfinite(s["ci"]).any():  # a paler line (variant) has a paler band
        ax.fill_between(x, s["mean"] - s["ci"], s["mean"] + s["ci"], color=line.get_color(),
                        alpha=0.2 * (line.get_alpha() or 1), lw=0, gid=line.get_gid())
    return line


def variant(i, n):
    """The i-th of n ordered settings of one method (say ε_high or β, small to large): the method's
    colour, paler for the smaller settings (opacity, so the hue stays the method's: the tests check
    it), and a line style too (the largest solid, then dashed, dotted), so that print in grey tells
    them apart."""
    rank = n - 1 - i  # 0: the largest setting
    return {"alpha": 1 - 0.55 * rank / max(n - 1, 1), "ls": ("-", "--", ":", "-.")[rank % 4]}


def log_ticks(ax, values, base=2, most=5):
    """Plain-number ticks at the values on a log axis, thinned so that no labels touch."""
    from matplotlib.ticker import NullLocator

    values = sorted(set(values))
    values = values[::-(-len(values) // most)]
    ax.set_xscale("log", base=base)
    ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.xaxis.set_minor_locator(NullLocator())


def legend_below(fig, handles=None, ncol=2):
    """The legend under the panels, never on the data (none if nothing is labelled)."""
    handles = handles or fig.axes[0].get_legend_handles_labels()[0]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=max(1, min(ncol, len(handles))))


def ratio_axis(ax):
    """A log y-axis for a ratio to the reference, its ticks plain numbers around 1."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator([0.1, 0.2, 0.5, 1, 2, 5, 10]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def shared_lr_title(shared_lr):
    """A panel's title for the policies of one shared_lr (0: the tabular policy)."""
    return "tabular (shared lr 0)" if shared_lr == 0 else f"shared lr {shared_lr:g}"


def row_style(lr, offset, base_lr):
    """Training rows of one method differ by line style: dotted with a reward offset, dash-dot at
    another learning rate (dashed is the step-0 policy). Offset rows carry hollow markers too (a row
    the offset does not change, RLOO's or GRPO's, training_grid draws once: same_as_offset_zero)."""
    ls = "-." if lr != base_lr else (":" if offset else "-")
    return {"ls": ls, "lw": 1.1} | ({"marker": "o", "ms": 3, "mfc": "white", "markevery": 0.12}
                                    if offset else {})


def row_label(method, lr, offset, base_lr):
    return (style.label(method) + (f", lr {lr:g}" if lr != base_lr else "")
            + (f", offset {offset:g}" if offset else ""))


def training_rows(tr):
    """The usual lr (rows at another one are dash-dot), the training rows as (method, lr, offset),
    a method's rows together, and the estimator families among them, in FAMILIES' order."""
    base_lr = tr["lr"].mode().iloc[0]
    order = {m: i for i, m in enumerate(dict.fromkeys(tr["method"]))}
    rows = sorted(dict.fromkeys(zip(tr["method"], tr["lr"], tr["reward_offset"])),
                  key=lambda r: (order[r[0]], r[2] != 0, r[1] != base_lr))
    families = [f for f in FAMILIES if any(style.family(m) == f for m, _, _ in rows)]
    return base_lr, rows, families


COMPARE = "grpo"  # drawn thin in the "other" panel: a user's estimator beside a known one


def same_as_offset_zero(tr, rows, y):
    """{(method, lr, offset): the offset-0 row it repeats}: the offset rows whose every value of y
    equals (within 1e-9) that of the same method and lr without an offset, as RLOO's and GRPO's do
    by construction (their advantages do not see a constant). Drawn once, they are named once."""
    def values(m, lr, off):
        sub = tr[(tr["method"] == m) & (tr["lr"] == lr) & (tr["reward_offset"] == off)]
        return sub.sort_values([c for c in sub.columns if c != y])[y].to_numpy()

    same = {}
    for m, lr, off in rows:
        if off and (m, lr, 0) in rows:
            a, b = values(m, lr, off), values(m, lr, 0)
            if len(a) == len(b) and np.allclose(a, b, rtol=0, atol=1e-9):
                same[m, lr, off] = (m, lr, 0)
    return same


def training_grid(tr, levels, x, y, ylabel, xlabel, extra=None):
    """Small multiples of the training rows: a column per estimator family (its methods differ in
    shade of one hue), a row per level, line style = offset / lr, 95% band over seeds. extra(ax,
    level, first) draws what every panel shares (the step-0 policy). An offset row identical to its
    row without an offset is drawn once, its label saying so; the "other" family's panel (the
    estimators registered without a family) also draws GRPO at the usual lr, thin, to compare with."""
    base_lr, rows, families = training_rows(tr)
    shape, shapes = {}, style.MARKERS[1:]  # a marker per method within its family (squares first)
    for m, _, _ in rows:
        shape.setdefault(m, shapes[sum(style.family(o) == style.family(m) for o in shape) % len(shapes)])
    same = same_as_offset_zero(tr, rows, y)
    offsets = {}  # an offset-0 row -> the offsets that repeat it
    for row, base in same.items():
        offsets.setdefault(base, []).append(row[2])
    compare = (COMPARE, base_lr, 0) if (COMPARE, base_lr, 0) in rows and "other" in families else None
    # legend lines under the tallest column (a row drawn for several offsets takes two)
    n_legend = max(sum((style.family(m) == f and (m, lr, off) not in same) * (1 + ((m, lr, off) in offsets))
                       for m, lr, off in rows) + (f == "other" and compare is not None)
                   for f in families) + (extra is not None)
    fig, axes = subplots(len(levels), len(families), height=1.55 * len(levels) + 0.55 + 0.13 * n_legend,
                          sharex=True, sharey="row")
    for i, level in enumerate(levels):
        groups = dict(list(tr[tr["level"] == level].groupby(["method", "lr", "reward_offset"])))
        for j, family in enumerate(families):
            ax = axes[i, j]
            if extra:
                extra(ax, level, first=j == 0)
            if family == "other" and compare in groups:
                s = A.over_seeds(groups[compare], x, y)
                line(ax, s.index, s, COMPARE, lw=0.8, alpha=0.6, zorder=1,
                     label=f"{style.label(COMPARE)} (to compare)")
            for m, lr, off in rows:
                if style.family(m) == family and (m, lr, off) in groups and (m, lr, off) not in same:
                    s = A.over_seeds(groups[m, lr, off], x, y)
                    look = {"ms": 3, "markevery": 0.12} | row_style(lr, off, base_lr) | {"marker": shape[m]}
                    name = row_label(m, lr, off, base_lr)
                    if (m, lr, off) in offsets:
                        also = ", ".join(f"{o:g}" for o in [off, *offsets[m, lr, off]])
                        also = " and ".join(also.rsplit(", ", 1))
                        name += f", offset {also}:\nidentical by construction"
                    line(ax, s.index, s, m, **look, label=name)
            if i == 0:
                ax.set_title(family)
        axes[i, 0].set_ylabel(ylabel.format(LEVEL_LABELS[level]))
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), handlelength=1.8)  # under its column
    return fig, axes


def by_step(frame, value):
    s = A.over_seeds(frame, "step", value)
    return s.index, s


