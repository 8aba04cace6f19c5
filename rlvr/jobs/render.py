"""Render one demo: its tables, its claims and its figures (rlvr/report.py's write_demo)."""

from .. import binding, io, runlock
from ..report import write_demo
from . import FRAMES, JOB_FRAMES, log


def run(a):
    paths = write_demo(a.demo, read_frames(a), a.tables, a.figures, a.lang)
    for path in paths:
        log(f"{a.demo} -> {path}")
    io.write_checksums(a.checksums, paths, sources(a))


def read_frames(a):
    """{frame: DataFrame} of the files given; with --from-jobs the trained frames are training
    jobs' files, concatenated as the aggregate job does (pass@k with the reference's rows). In a
    run, each file must carry the identity the run planned for it: one replaced during the run
    is refused by name, never drawn."""
    frames, planned = {}, runlock.planned_jobs()
    for frame in FRAMES:
        paths = getattr(a, frame, None) or []
        if len(paths) > 1 and not (a.from_jobs and frame in JOB_FRAMES):
            raise ValueError(f"--{frame}: one aggregated file, not {len(paths)} (--from-jobs: jobs' files)")
        if a.from_jobs and frame in JOB_FRAMES and paths:
            if frame == "passk" and not a.reference:
                raise ValueError("--from-jobs --passk needs --reference: the pass@k before training")
            reference = a.reference[0] if frame == "passk" else None
            frames[frame] = io.read_concat(paths, reference=reference, planned=planned).to_pandas()
        elif paths:
            frames[frame] = io.read_arrow(paths[0], planned=planned).to_pandas()
    return frames


def sources(a):
    """The checksum file's lines naming the files a rendering job read, with their identities."""
    return binding.sources([path for frame in FRAMES for path in (getattr(a, frame, None) or [])])
