"""Training packs: the training jobs that one process trains, one after another.

A run trains its new training jobs (the blocks of a row's seeds that no file holds:
rlvr/config.py's train_jobs) in packs, so that a cold run or a sweep starts a few processes
rather than one a row: a pack is the new jobs of one experiment whose rows fall in the same
stretch of PACK_SECONDS of estimated CPU (rlvr/budget.py) along the config's rows. Where a row
falls depends on the config alone, not on which files exist, so a cluster's re-parse, or a
rerun after an interruption, finds the same packs; a changed row or an added seed is a new
job of its own, and its neighbours' files are left alone. Each job's files and their identity
(rlvr/binding.py) are the same whatever it was packed with.

A pack's job writes a manifest last, `packs/<name>.json` under results/ (rlvr/specs.py Pack, which
the job reads, without this module's planning and its estimates): its jobs' paths,
specs and code versions. A later run keeps that pack as it was, with the params it ran with,
so Snakemake sees no change, even when the config no longer asks for some of its jobs (their
files stay, as a row's always did); a pack whose code or specs are no longer what this run
would give them is not kept, and the jobs of it the config asks for are new jobs again.
"""

import json
from pathlib import Path

from . import budget
from .specs import PACKS_DIR, Pack, TrainRow, from_json, pack_name, to_json

PACK_SECONDS = 4.0  # estimated CPU seconds of the rows a pack spans (estimates run ~2x high)
def read_manifests(results):
    """{name: [(path, spec, code)]} of every readable manifest under results/packs/ (a damaged
    one is left out: its jobs become new jobs again)."""
    found = {}
    for path in sorted(Path(results, PACKS_DIR).glob("*.json")):
        try:
            found[path.stem] = [tuple(entry) for entry in json.loads(path.read_text())["jobs"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def plan_packs(rows, jobs, code_of, P, M, results=None):
    """The packs that hold these training jobs (train_jobs of rows, on a task of P prompts and M
    answers): the kept packs of results/ (read_manifests) that hold a job asked for and whose
    every job has the spec and code this run gives it, then the rest of the jobs, packed by
    experiment and stretch of PACK_SECONDS along rows. code_of(job): its code version."""
    wanted = {job.path: job for job in jobs}
    packs, claimed = [], set()
    for name, entries in (read_manifests(results) if results else {}).items():
        paths = [path for path, _, _ in entries]
        if claimed.isdisjoint(paths) and any(path in wanted for path in paths):
            try:  # a job no longer asked for is read off its spec, which another version may not read
                members = [wanted.get(path) or from_json(TrainRow, spec) for path, spec, _ in entries]
                current = all(to_json(job) == spec and code_of(job) == code
                              for job, (_, spec, code) in zip(members, entries))
            except (ValueError, TypeError, KeyError):
                current = False
            if current:
                packs.append(Pack(name, tuple(members), *(tuple(x) for x in list(zip(*entries))[1:])))
                claimed.update(paths)
    stretch, spent = {}, {}
    for row in rows:  # the config's order: a row's stretch does not depend on the files present
        stretch[row.row_path] = int(spent.get(row.experiment, 0.0) // PACK_SECONDS)
        spent[row.experiment] = spent.get(row.experiment, 0.0) + budget.train_seconds(row, P, M) - budget.JOB
    new = {}
    for job in jobs:
        if job.path not in claimed:
            new.setdefault((job.experiment, stretch[job.row_path]), []).append(job)
    for (experiment, _), members in new.items():
        packs.append(Pack(pack_name(experiment, [job.path for job in members]), tuple(members),
                          tuple(to_json(job) for job in members), tuple(code_of(job) for job in members)))
    return packs
