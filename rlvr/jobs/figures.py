"""Render the matplotlib figures."""

from .. import io
from ..report import write_figures
from . import log
from ._frames import read_frames, sources


def run(a):
    paths = write_figures(read_frames(a), a.outdir, a.names)  # ValueError: exit 2
    for path in paths:
        log(f"figure -> {path}")
    if a.checksums:
        io.write_checksums(a.checksums, paths, sources(a))
