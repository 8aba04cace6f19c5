"""Training packs (rlvr/packs.py): which jobs one process trains, kept as they ran."""

import dataclasses
import json

from rlvr import config as C
from rlvr import io
from rlvr.packs import plan_packs
from rlvr.specs import PACKS_DIR

CFG = C.load_config(None)
P, M = CFG["task"]["P"], CFG["task"]["M"]
ROWS = C.train_rows(CFG)


def code_of(job):
    return f"code-of-{job.method}"


def plan(rows, results=None, code=code_of):
    return plan_packs(rows, C.train_jobs(rows, results), code, P, M, results)


def finish(packs, results, jobs=None):
    """What a pack's job leaves: each job's .run file (the mark of a finished job) and the manifest."""
    for pack in packs:
        for job in pack.jobs:
            if jobs is None or job.path in jobs:
                io.write_bytes(results / f"{job.path}.run.parquet", b"")
        io.write_bytes(pack.manifest(results), pack.manifest_text().encode())


def by_job(packs):
    return {job.path: pack.name for pack in packs for job in pack.jobs}


def test_every_job_is_in_one_pack_of_its_own_experiment_and_the_default_config_starts_few_processes():
    packs = plan(ROWS)
    jobs = [job.path for pack in packs for job in pack.jobs]
    assert sorted(jobs) == sorted(job.path for job in C.train_jobs(ROWS))  # each job once
    assert all(len({job.experiment for job in pack.jobs}) == 1 for pack in packs)
    assert all(pack.name.startswith(f"{pack.jobs[0].experiment}_") for pack in packs)
    assert len({pack.name for pack in packs}) == len(packs)
    # a pack spans rows in a row: never more packs than experiments plus stretches of 4 s
    experiments = {row.experiment for row in ROWS}
    assert len(experiments) <= len(packs) < len(ROWS) / 4, len(packs)


def test_a_rows_pack_depends_on_the_config_not_on_the_files_present(tmp_path):
    """A cluster's re-parse, or a rerun after an interruption, must find the same packs: a pack
    whose job finished (manifest written) is kept, and the packs of the jobs left are the same."""
    cold = plan(ROWS, tmp_path)
    finish(cold[::2], tmp_path)  # every other pack finished
    again = plan(ROWS, tmp_path)
    assert {pack.name: pack.jobs for pack in again} == {pack.name: pack.jobs for pack in cold}


def test_a_changed_row_trains_alone_and_its_old_pack_is_kept_with_the_row_no_longer_asked_for(tmp_path):
    finish(plan(ROWS, tmp_path), tmp_path)
    i = next(i for i, row in enumerate(ROWS) if row.experiment == "training")
    changed = [*ROWS[:i], dataclasses.replace(ROWS[i], lr=ROWS[i].lr * 3), *ROWS[i + 1:]]
    before, after = plan(ROWS, tmp_path), plan(changed, tmp_path)
    new = [pack for pack in after if pack.name not in {p.name for p in before}]
    assert [[job.row_path for job in pack.jobs] for pack in new] == [[changed[i].row_path]]
    # the old row's pack is kept whole (its files stand, as a row's always did): nothing else trains
    assert {pack.name for pack in after} - {pack.name for pack in new} == {pack.name for pack in before}
    assert ROWS[i].row_path in {job.row_path for pack in after for job in pack.jobs}


def test_an_added_seed_is_a_new_job_in_a_new_pack(tmp_path):
    finish(plan(ROWS, tmp_path), tmp_path)
    i = next(i for i, row in enumerate(ROWS) if row.experiment == "training")
    more = [*ROWS[:i], dataclasses.replace(ROWS[i], seeds=(*ROWS[i].seeds, 99)), *ROWS[i + 1:]]
    new = set(by_job(plan(more, tmp_path))) - set(by_job(plan(ROWS, tmp_path)))
    assert [path.rsplit("_seeds", 1)[1] for path in new] == ["99"]


def test_a_pack_made_with_other_code_or_without_its_manifest_is_planned_again(tmp_path):
    cold = plan(ROWS, tmp_path)
    finish(cold, tmp_path)
    changed = plan(ROWS, tmp_path, code=lambda job: "other code" if job.method == "grpo" else code_of(job))
    stale = {pack.name for pack in cold if any(job.method == "grpo" for job in pack.jobs)}
    # the same jobs, so the same packs, now with the code that will train them
    assert by_job(changed) == by_job(cold)
    assert all(("other code" in pack.codes) == (pack.name in stale) for pack in changed)
    (tmp_path / PACKS_DIR / f"{cold[0].name}.json").unlink()
    assert by_job(plan(ROWS, tmp_path)) == by_job(cold)  # planned again as it was (its files: Snakemake's)


def test_a_damaged_manifest_is_not_trusted(tmp_path):
    cold = plan(ROWS, tmp_path)
    finish(cold, tmp_path)
    (tmp_path / PACKS_DIR / f"{cold[0].name}.json").write_text("{not json")
    assert by_job(plan(ROWS, tmp_path)) == by_job(cold)


def test_a_manifest_this_version_cannot_read_a_job_of_is_planned_again(tmp_path):
    """A kept pack's job that the config no longer asks for is read off its spec in the manifest;
    one that this version cannot read (a knob since removed, an estimator unknown) makes the pack
    planned again, not the parse fail."""
    cold = plan(ROWS, tmp_path)
    finish(cold, tmp_path)
    manifest = tmp_path / PACKS_DIR / f"{cold[0].name}.json"
    entries = json.loads(manifest.read_text())["jobs"]
    entries.append(["runs/gone/row_seeds0", '{"experiment": "gone", "no_such_knob": 1}', "code"])
    manifest.write_text(json.dumps({"jobs": entries}))
    assert by_job(plan(ROWS, tmp_path)) == by_job(cold)
