"""Join the demos' text tables into all.txt and their claims into claims.md; delete the tables
and figures of demos the config no longer asks for."""

import os
from pathlib import Path

from .. import io, runlock
from ..claims import joined
from . import log


def run(a):
    io.write_bytes(a.all, ("\n".join(Path(p).read_text() for p in a.texts) + "\n").encode())
    io.write_bytes(a.claims, joined(Path(p).read_text() for p in a.claim_files).encode())
    log(f"{len(a.texts)} demos -> {a.all}, {a.claims}")
    for path in a.drop or ():
        if os.path.exists(path):
            with runlock.guard():  # a job whose run has ended (an orphan) deletes nothing
                os.remove(path)
            log(f"deleted {path} (its demo is not asked for)")
    io.write_checksums(a.checksums, [a.all, a.claims])
