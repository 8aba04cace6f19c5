"""Join the demos' text tables into all.txt and their claims into claims.md, each read only if
it is what its rendering job wrote (its checksum file's line); delete the tables and figures of
demos the config no longer asks for."""

import os
from pathlib import Path

from .. import io, runlock
from ..claims import joined
from . import log


def run(a):
    edited = [(path, manifest) for manifest in a.manifests for path in io.edited_files(manifest)
              if path in {os.path.relpath(p) for p in (*a.texts, *a.claim_files)}]
    if edited:  # a hand-edited number never reaches all.txt, nor a checksum that vouches for it
        path, manifest = edited[0]
        raise io.InputError(f"{path}: not what rlvr rendered (its sha256 is not the one {manifest} lists: "
                            f"edited by hand?); run snakemake with `--forcerun {Path(manifest).stem}` to "
                            "write it again")
    io.write_bytes(a.all, ("\n".join(Path(p).read_text() for p in a.texts) + "\n").encode())
    io.write_bytes(a.claims, joined(Path(p).read_text() for p in a.claim_files).encode())
    log(f"{len(a.texts)} demos -> {a.all}, {a.claims}")
    for path in a.drop or ():
        if os.path.exists(path):
            with runlock.guard():  # a job whose run has ended (an orphan) deletes nothing
                os.remove(path)
            log(f"deleted {path} (its demo is not asked for)")
    io.write_checksums(a.checksums, [a.all, a.claims])
