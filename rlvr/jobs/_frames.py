"""What the two rendering stages (tables, figures) share: the frames they read."""

from .. import binding, io

FRAMES = tuple(io.RESULT_FILES)
JOB_FRAMES = tuple(io.JOB_PARTS)  # the results a training job writes a part of


def read_frames(a):
    """{frame: DataFrame} of the files given; with --from-jobs the trained frames are training
    jobs' files, concatenated as the aggregate job does (pass@k with the reference's rows)."""
    frames = {}
    for frame in FRAMES:
        paths = getattr(a, frame, None) or []
        if len(paths) > 1 and not (a.from_jobs and frame in JOB_FRAMES):
            raise ValueError(f"--{frame}: one aggregated file, not {len(paths)} (--from-jobs: jobs' files)")
        if a.from_jobs and frame in JOB_FRAMES and paths:
            if frame == "passk" and not a.reference:
                raise ValueError("--from-jobs --passk needs --reference: the pass@k before training")
            reference = a.reference[0] if frame == "passk" else None
            frames[frame] = io.read_concat(paths, reference=reference).to_pandas()
        elif paths:
            frames[frame] = io.read_pandas(paths[0])
    return frames


def sources(a):
    """The checksum file's lines naming the files a rendering job read, with their identities."""
    return binding.sources([path for frame in FRAMES for path in (getattr(a, frame, None) or [])])
