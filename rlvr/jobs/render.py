"""Render the demos in one process: each demo's tables, claims and figures (rlvr/report.py's
write_demo), then every text table joined into all.txt and every demo's claims into claims.md.

One process pays the imports of pandas, pyarrow and matplotlib once (~0.8-1.3 s, about what a
demo's drawing takes: config/test.yaml's 17 demos take ~16 s) and draws the demos in --threads
processes forked from it. A demo is drawn again
only where something it shows changed: its stamp, a hash of the rows it reads (Demo.frames), the
estimators' looks in them, the language and the rendering code, is recorded in the checksum
file, and a demo whose stamp and files are as recorded is kept, its files touched (Snakemake
reruns a job whose outputs are older than an input). A file edited by hand is not as recorded:
its demo is drawn again.
"""

import hashlib
import os
from pathlib import Path

from .. import binding, codeversion, io, runlock
from ..claims import joined
from ..report import CLAIMS, demo_named, demo_table, write_demo
from . import FRAMES, log

STAMP = "# demo "  # a checksum file's line: a demo and the stamp its files were drawn with
DRAWN = "# drawn "  # ... and a demo this job drew (the others it kept)


def run(a):
    demos = [demo_named(name) for name in a.demo]
    paths = {frame: getattr(a, frame) for frame in FRAMES if getattr(a, frame, None)}
    results = read_frames(paths)
    code = a.code or codeversion.code_version("render")
    before = recorded(a.checksums)
    stamps, tables = {}, {}
    for demo in demos:  # a demo's own rows are a copy: one demo's at a time
        frames = demo.frames(results)
        stamps[demo.name] = stamp(demo, frames, a.lang, code)
        if not as_recorded(demo, stamps[demo.name], before, a.tables, a.figures):
            # its table made before any file is written: a demo without its data is refused first
            tables[demo.name] = demo_table(demo, frames, a.lang)
    drawn = [demo for demo in demos if demo.name in tables]
    kept = [demo for demo in demos if demo.name not in tables]
    draw(drawn, results, tables, a, min(a.threads, len(drawn)))
    for demo in kept:  # newer than the inputs, as Snakemake asks of a finished job's outputs
        for path in outputs(demo, a.tables, a.figures):
            os.utime(path)
    for demo in demos:
        log(f"{demo.name}: {'drawn' if demo in drawn else 'kept (as the last rendering drew it)'}")
    texts = [Path(a.tables) / f"{demo.table_name}.txt" for demo in demos]
    claims = [Path(a.tables) / f"{demo.table_name}{CLAIMS}" for demo in demos]
    io.write_bytes(a.all, ("\n".join(p.read_text() for p in texts) + "\n").encode())
    io.write_bytes(a.claims, joined(p.read_text() for p in claims).encode())
    log(f"{len(drawn)} of {len(demos)} demos drawn; {len(demos)} -> {a.all}, {a.claims}")
    for path in a.drop or ():
        if os.path.exists(path):
            with runlock.guard():  # a job whose run has ended (an orphan) deletes nothing
                os.remove(path)
            log(f"deleted {path} (its demo is not asked for)")
    files = [p for demo in demos for p in outputs(demo, a.tables, a.figures)] + [a.all, a.claims]
    notes = ([f"{STAMP}{name} {value}\n" for name, value in stamps.items()]
             + [f"{DRAWN}{demo.name}\n" for demo in drawn])
    io.write_checksums(a.checksums, files, binding.sources(paths.values()) + notes)


def read_frames(paths):
    """{frame: DataFrame} of the files given ({frame: path}). In a run, each file must carry
    the identity the run planned for it: one replaced during the run is refused by name."""
    planned = runlock.planned_jobs()
    return {frame: io.read_arrow(path, planned=planned).to_pandas() for frame, path in paths.items()}


def stamp(demo, frames, lang, code):
    """What a demo's files are drawn from, as one hash: its frames' columns and values, how the
    estimators in them look (rlvr/codeversion.py display_version), the language and the code."""
    h = hashlib.sha256(f"{demo.name}\0{lang}\0{code}\0".encode())
    methods = set()
    for name in sorted(frames):
        frame = frames[name]
        h.update(f"{name}\0{len(frame)}\0".encode())
        for column in frame.columns:
            h.update(f"{column}\0{frame[column].dtype}\0".encode())
            h.update(_column_digest(frame[column]))
        if "method" in frame.columns:
            methods |= set(frame["method"].dropna().unique())
    h.update(codeversion.display_version(tuple(sorted(methods))).encode())
    return h.hexdigest()[:32]


def _column_digest(column):
    """A column's values as bytes to hash: pandas' own row hashes where it can make them (numbers,
    strings), else each value's bytes (an array in a cell) or repr."""
    import numpy as np
    import pandas as pd

    try:
        return pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes()
    except TypeError:
        return b"\0".join(v.tobytes() if isinstance(v, np.ndarray) else repr(v).encode() for v in column)


def outputs(demo, tables, figures):
    """The files a demo's rendering writes (report.write_demo), as the rule names them."""
    from ..render import TABLE_FORMATS

    paths = [Path(tables) / f"{demo.table_name}{suffix}" for suffix in (*TABLE_FORMATS, CLAIMS)]
    paths += [Path(figures) / f"{name}.{fmt}" for name in demo.figures for fmt in ("png", "pdf")]
    return [os.path.relpath(p) for p in paths]


def drawn_demos(manifest):
    """The demos a rendering job drew, as its checksum file says (the run's summary reads it)."""
    return [line.removeprefix(DRAWN) for line in Path(manifest).read_text().splitlines()
            if line.startswith(DRAWN)]


def recorded(manifest):
    """What the last rendering recorded: ({path: sha256}, {demo: stamp}); empty where none."""
    digests, stamps = {}, {}
    if not os.path.exists(manifest):
        return digests, stamps
    for line in Path(manifest).read_text().splitlines():
        if line.startswith(STAMP):
            name, _, value = line.removeprefix(STAMP).partition(" ")
            stamps[name] = value
        elif not line.startswith("#"):
            digest, _, path = line.partition("  ")
            digests[path] = digest
    return digests, stamps


def as_recorded(demo, new_stamp, before, tables, figures):
    """Whether a demo's files are those the last rendering drew from what it would draw now: the
    same stamp, and every file there with the hash recorded (none edited by hand or missing)."""
    digests, stamps = before
    if stamps.get(demo.name) != new_stamp:
        return False
    return all(digests.get(p) is not None and os.path.exists(p) and io.file_sha256(p) == digests[p]
               for p in outputs(demo, tables, figures))


_TODO = {}  # what the forked drawing processes read: set before they fork


def draw(demos, results, tables, a, workers):
    """Write each demo's tables (made: tables), claims and figures from its rows of results; in
    `workers` processes forked from this one (which has pandas and matplotlib imported, and the
    results read) where more than one. Returns the paths written."""
    _TODO.update(results=results, tables=tables, a=a)
    if workers <= 1:
        return [p for demo in demos for p in _draw_one(demo.name)]
    import multiprocessing

    pool = multiprocessing.get_context("fork").Pool(workers)
    try:
        written = [p for paths in pool.imap(_draw_one, [demo.name for demo in demos]) for p in paths]
    finally:
        pool.close()  # waited for: their CPU time counts in the job's (cli.job_cost)
        pool.join()
    return written


def _draw_one(name):
    a = _TODO["a"]
    frames = demo_named(name).frames(_TODO["results"])
    paths = write_demo(name, frames, a.tables, a.figures, a.lang, _TODO["tables"][name])
    return [str(p) for p in paths]
