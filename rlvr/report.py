"""Every demo's tables, claims and figures: the loops over the demos' registry (rlvr/demos/).

They sit above the registry, the helpers the demos draw and word with below it (render.py,
claims.py, figures.py), so no module imports one that imports it.
"""

from pathlib import Path

from . import io
from .demos import DEMOS
from .figures import save
from .render import TABLE_FORMATS, render_text_one


def demo_tables(frames, lang="en"):
    """[(name, title, [(subtitle, head, rows)], footer lines)] for each demo the results hold."""
    return [t for t in (demo.make_table(frames, lang) for demo in DEMOS) if t is not None]


def render_text(frames, lang="en"):
    """The demos as the lecture prints them."""
    return "\n".join(render_text_one(demo) for demo in demo_tables(frames, lang))

def write_tables(frames, outdir, lang="en", names=None):
    """Write the named demos (default: every demo the results hold) in each of TABLE_FORMATS under
    outdir, plus all.txt with them; remove the files of demos not named, so that a demo the
    config no longer asks for leaves no table behind. Returns the paths written."""
    every = [demo.table for demo in DEMOS]
    demos = {demo[0]: demo for demo in demo_tables(frames, lang)}
    names = list(demos) if names is None else list(names)
    unknown = [n for n in names if n not in every]
    if unknown:
        raise ValueError(f"unknown tables {unknown}; the tables are: {', '.join(every)}")
    missing = [n for n in names if n not in demos]
    if missing:
        raise ValueError(f"the results hold no data for the tables {missing}")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in every:
        for suffix, render in TABLE_FORMATS.items():
            path = outdir / f"{name}{suffix}"
            if name in names:
                io.write_bytes(path, render(demos[name]).encode())
                paths.append(path)
            else:
                path.unlink(missing_ok=True)
    path = outdir / "all.txt"
    io.write_bytes(path, ("\n".join(render_text_one(demos[n]) for n in names) + "\n").encode())
    return paths + [path]

def every_claim(frames):
    """[(demo heading, [Claim])] of every demo, from the results' DataFrames."""
    return [(f"Demo {demo.number}: {demo.module.TITLE}", demo.claims(frames)) for demo in DEMOS]


def by_key(frames):
    """{key: Claim} of every demo."""
    return {c.key: c for _, claims in every_claim(frames) for c in claims}

def figures():
    """{figure name: (draw(frames) -> Figure, the frames it needs)} of every demo, in order."""
    return {name: entry for demo in DEMOS for name, entry in demo.figures.items()}


def draw_figure(name, frames):
    """The named report figure as a matplotlib Figure (not saved; close it when done)."""
    return figures()[name][0](frames)


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
