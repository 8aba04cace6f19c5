"""Every demo's tables, claims and figures: the loops over the demos' registry (rlvr/demos/).

They sit above the registry, the helpers the demos draw and word with below it (render.py,
claims.py, figures.py), so no module imports one that imports it.
"""

from pathlib import Path

from . import io
from .claims import section
from .demos import DEMOS
from .figures import save
from .render import TABLE_FORMATS, render_text_one


def demo_tables(frames, lang="en"):
    """[(name, title, [(subtitle, head, rows)], footer lines)] for each demo the results hold."""
    return [t for t in (demo.make_table(frames, lang) for demo in DEMOS) if t is not None]


def render_text(frames, lang="en"):
    """The demos as the lecture prints them."""
    return "\n".join(render_text_one(demo) for demo in demo_tables(frames, lang))

def every_claim(frames):
    """[(demo heading, [Claim])] of every demo, from the results' DataFrames."""
    return [(heading(demo), demo.claims(frames)) for demo in DEMOS]


def heading(demo):
    """A demo's heading in results/claims.md."""
    return f"Demo {demo.number}: {demo.module.TITLE}"


def by_key(frames):
    """{key: Claim} of every demo."""
    return {c.key: c for _, claims in every_claim(frames) for c in claims}

def figures():
    """{figure name: (draw(frames) -> Figure, the frames it needs)} of every demo, in order."""
    return {name: entry for demo in DEMOS for name, entry in demo.figures.items()}


def draw_figure(name, frames):
    """The named report figure as a matplotlib Figure (not saved; close it when done)."""
    return figures()[name][0](frames)


def demo_named(name):
    """The demo of that name; ValueError naming the demos if there is none."""
    demo = next((d for d in DEMOS if d.name == name), None)
    if demo is None:
        raise ValueError(f"no demo {name!r}; the demos: {', '.join(d.name for d in DEMOS)}")
    return demo


def demo_table(demo, frames, lang="en"):
    """A demo's table (Demo.make_table); ValueError if the results hold none of its data."""
    table = demo.make_table(frames, lang)
    if table is None:
        raise ValueError(f"the results given hold no data for demo {demo.number} ({demo.name})")
    return table


def write_demo(name, frames, tables, figures=None, lang="en", table=None):
    """Write one demo's tables (each of TABLE_FORMATS; table: demo_table's, made here if None)
    and its claims (<table>.claims.md, its section of claims.md) under tables, and its figures
    under figures (None: none); return the paths written. ValueError if the results hold none
    of its data."""
    demo = demo_named(name)
    table = demo_table(demo, frames, lang) if table is None else table
    Path(tables).mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, render in TABLE_FORMATS.items():
        paths.append(Path(tables) / f"{demo.table_name}{suffix}")
        io.write_bytes(paths[-1], render(table).encode())
    paths.append(Path(tables) / f"{demo.table_name}{CLAIMS}")
    io.write_bytes(paths[-1], section(heading(demo), demo.claims(frames)).encode())
    return paths + (write_figures(frames, figures, list(demo.figures)) if figures and demo.figures else [])


CLAIMS = ".claims.md"  # a demo's section of results/claims.md, beside its tables


def write_figures(frames, outdir, names=None):
    """Write the named report figures (default: all) as PNG and PDF under outdir; return the
    paths written."""
    every = figures()
    names = list(every) if names is None else names
    for name in names:
        if name not in every:
            raise ValueError(f"unknown figure {name!r}; the figures are: {', '.join(every)}")
        missing = [k for k in every[name][1] if k not in frames]
        if missing:
            raise ValueError(f"figure {name!r} needs " + ", ".join(f"--{k}" for k in missing))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        paths += save(every[name][0](frames), outdir, name)
    return paths
