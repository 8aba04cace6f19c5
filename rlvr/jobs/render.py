"""Render one demo: its tables, its claims and its figures (rlvr/report.py's write_demo)."""

from .. import io
from ..report import write_demo
from . import log
from ._frames import read_frames, sources


def run(a):
    paths = write_demo(a.demo, read_frames(a), a.tables, a.figures, a.lang)
    for path in paths:
        log(f"{a.demo} -> {path}")
    io.write_checksums(a.checksums, paths, sources(a))
