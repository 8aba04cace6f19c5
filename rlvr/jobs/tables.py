"""Render the text and Markdown tables, and every demo's claims."""

import os

from .. import io, runlock
from ..claims import markdown
from ..report import every_claim, write_tables
from . import log
from ._frames import read_frames, sources


def run(a):
    frames = read_frames(a)
    paths = write_tables(frames, a.outdir, a.lang, a.names)
    for path in paths:
        log(f"table -> {path}")
    for path in a.drop or ():
        if os.path.exists(path):
            with runlock.guard():  # a job whose run has ended (an orphan) deletes nothing
                os.remove(path)
            log(f"deleted {path} (its demo is not asked for)")
    if a.claims:
        io.write_bytes(a.claims, markdown(every_claim(frames)).encode())
        paths.append(a.claims)
        log(f"claims -> {a.claims}")
    if a.checksums:
        io.write_checksums(a.checksums, paths, sources(a))
