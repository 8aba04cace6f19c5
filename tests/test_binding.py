"""Every file bound to everything that made it (rlvr/binding.py; issue 33): a file's identity
chains its stage, spec, code and inputs' identities; a file replaced behind Snakemake's back
(another task's per-job file, another project's aggregate, a task rewritten by `rlvr all` from
another directory) is set aside and made again, so the tables show this config's numbers; and
no command writes into results a live run holds, from any directory, whatever its flags."""

import os
import shutil
import subprocess

import pytest
from conftest import PYTHON, REPO, same_table
from test_pipeline import TINY, small_config, snakemake, snapshot
from test_runlock import hold_in_child, no_run_env  # noqa: F401  (the fixture, for this file too)

from rlvr import binding, io, runlock
from rlvr import config as C
from rlvr.codeversion import code_version
from rlvr.specs import to_json


def identities(cfg, results=None):
    steps = binding.plan(cfg, C.train_jobs(C.train_rows(cfg), results), C.gradstat_jobs(cfg),
                         C.gradstat_cases(cfg), lambda stage, methods=(): code_version(stage, tuple(methods)))
    return binding.identities(steps)


def test_an_identity_chains_the_inputs_and_is_the_same_on_any_machine():
    """Two configs that differ only in the task's seed name the same files, but every file made
    from the task carries another identity (the exact bias curve reads no task: the same); the
    same config planned twice (another machine, another directory) gives the same identities."""
    base = C.load_config(TINY)
    other = C.validate_config(C.merge(base, {"task": {"seed": base["task"]["seed"] + 1}}))
    a, b = identities(base), identities(other)
    assert a.keys() == b.keys() and len(a) > 20
    assert [name for name in a if a[name] == b[name]] == [binding.NAMES["exact"]]
    assert identities(C.load_config(TINY)) == a


def test_a_finished_run_carries_the_identities_its_config_plans(tiny_run):
    """What each job computes from its inputs is what the parse planned, file by file."""
    results = tiny_run / "results"
    planned = identities(C.load_config(TINY), results)
    assert {name: binding.carried(results / f"{name}.parquet") for name in planned} == planned
    assert binding.foreign(results, planned, []) == []


def test_carried_reads_the_identity_off_the_footer_and_nothing_else(tmp_path):
    path = tmp_path / "x.parquet"
    io.write_table(path, {"x": [1.0, 2.0]}, io.bound("x", "0123456789abcdef" * 2))
    assert binding.carried(path) == "0123456789abcdef" * 2
    io.write_table(path, {"rlvr_job": ["fedcba9876543210" * 2]})  # in the data, not the metadata
    assert binding.carried(path) == ""
    (tmp_path / "y.parquet").write_bytes(b"not parquet at all")
    assert binding.carried(tmp_path / "y.parquet") == "" == binding.carried(tmp_path / "missing.parquet")


def test_a_noted_file_is_left_to_snakemake_and_a_replaced_one_is_read(tmp_path):
    results = tmp_path / "results"
    ids = {"task": "a" * 32, "runs": "b" * 32}
    task, runs = results / "task.parquet", results / "runs.parquet"
    io.write_table(task, {"x": [1]}, io.bound("task", "a" * 32))
    io.write_table(runs, {"x": [1]}, io.bound("runs", "b" * 32))
    assert binding.note(results, ids, []) == ([task.as_posix(), runs.as_posix()], [])
    assert binding.foreign(results, ids, []) == []  # as the last run left them: Snakemake judges
    assert binding.note(results, ids, []) == ([], [])  # nothing changed, nothing read
    io.write_table(runs, {"x": [2]}, io.bound("runs", "d" * 32))  # copied in
    assert binding.foreign(results, ids, []) == [runs.as_posix()]
    io.write_table(runs, {"x": [2]}, io.bound("runs", "b" * 32))  # merged: the same job's
    assert binding.foreign(results, ids, []) == []


def test_a_file_replaced_during_a_run_is_not_vouched_for_by_its_end(tmp_path):
    """The end of a run notes only files that carry their planned identity: one replaced after
    the last job that reads it checked it is left unnoted and read again by the next parse,
    however many runs end in between; a checksum file listing another source, likewise."""
    results = tmp_path / "results"
    ids = {"task": "a" * 32, "runs": "b" * 32}
    runs, manifest = results / "runs.parquet", results / "checksums" / "render.sha256"
    io.write_table(results / "task.parquet", {"x": [1]}, io.bound("task", "a" * 32))
    io.write_table(runs, {"x": [1]}, io.bound("runs", "b" * 32))
    manifest.parent.mkdir()
    manifest.write_text(f"{binding.SOURCE}runs {'b' * 32}\n")
    binding.note(results, ids, [manifest])
    io.write_table(runs, {"x": [2]}, io.bound("runs", "c" * 32))  # swapped in mid-run
    manifest.write_text(f"{binding.SOURCE}runs {'c' * 32}\n")  # rendered from it
    for _ in range(2):  # this run's end, and the next's if the parse did not set them aside
        assert binding.note(results, ids, [manifest]) == ([], [runs.as_posix(), manifest.as_posix()])
        assert binding.foreign(results, ids, [manifest]) == [runs.as_posix(), manifest.as_posix()]


def rlvr(*args, cwd):
    return subprocess.run([PYTHON, "-m", "rlvr", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.slow
def test_foreign_files_are_set_aside_and_made_again_with_this_configs_numbers(tmp_path):
    """The issue's cases, each of which reached the tables silently: (1) a training job's files
    trained on another task (same name, spec and code) and another project's aggregate, copied
    in (merged results); (2) `rlvr all --results` of another config into this project's
    results, refused while its run is live and, once idle, writing its own task and aggregates
    there. Each time the next run sets them aside, kept, and ends with this config's numbers,
    table for table; a dry run before it says so and writes nothing."""
    config, other = small_config(tmp_path / "mine.yaml"), small_config(tmp_path / "other.yaml", seed=7)
    work, results, elsewhere = tmp_path / "work", tmp_path / "work" / "results", tmp_path / "elsewhere"
    elsewhere.mkdir()
    snakemake(work, "-c2", config=config)
    mine = {name: io.read_arrow(results / name) for name in ("task.parquet", "runs.parquet",
                                                             "curves.parquet")}
    text = (results / "tables" / "all.txt").read_bytes()
    made = rlvr("all", "--config", str(other), "--results", str(elsewhere / "r"), cwd=elsewhere)
    assert made.returncode == 0, made.stderr

    def ours():  # Snakemake's own state aside (its dry runs cache file listings in .snakemake/)
        return {k: v for k, v in snapshot(work).items() if k.startswith(("results/", ".snakemake/rlvr"))}

    def run_again(replaced, kept):
        assert not same_table(io.read_arrow(results / "curves.parquet"), mine["curves.parquet"])
        before = ours()
        dry = snakemake(work, "-n", config=config)
        assert f"rlvr: {replaced} files under results/ not made from this config's" in dry.stderr
        assert ours() == before  # a dry run writes nothing (issue 34)
        assert "set aside in results/.rlvr/foreign/" in snakemake(work, "-c2", config=config).stderr
        for name, table in mine.items():
            assert same_table(io.read_arrow(results / name), table), name
        assert (results / "tables" / "all.txt").read_bytes() == text
        assert len(list((results / ".rlvr" / "foreign").rglob("*.parquet"))) == kept  # kept, not read
        assert "Nothing to be done" in snakemake(work, "-n", config=config).stdout

    # (1) merged results
    (row,) = [job for job in C.train_jobs(C.train_rows(C.load_config(config)), results)
              if job.experiment == "training"]
    trained = rlvr("train", "--spec", to_json(row), "--code", code_version("train", row.methods),
                   "--task", str(elsewhere / "r" / "task.parquet"), "--results", str(results), cwd=elsewhere)
    assert trained.returncode == 0, trained.stderr
    (results / "curves.parquet").write_bytes((elsewhere / "r" / "curves.parquet").read_bytes())
    run_again(replaced=6, kept=6)  # the row's five files and the aggregate

    # (2) `rlvr all` from elsewhere
    live = hold_in_child(runlock.state_of(results))  # a run of this project, live
    try:
        refused = rlvr("all", "--config", str(other), "--results", str(results), cwd=elsewhere)
        assert refused.returncode == 2 and f"a run holds {results}" in refused.stderr, refused.stderr
        assert f"pid {live.pid}" in refused.stderr
        assert same_table(io.read_arrow(results / "task.parquet"), mine["task.parquet"])
    finally:
        live.kill()
        live.wait()
    assert rlvr("all", "--config", str(other), "--results", str(results), cwd=elsewhere).returncode == 0
    run_again(replaced=6, kept=6 + 6)  # the task, the reference and the 4 aggregates (demo 2 is off)


def test_no_run_starts_beside_a_live_one_whatever_its_flags(tiny_run, tmp_path):
    """`--nolock --no-hooks --forcerun render` beside a live run deleted every table before its
    job refused to write; now it is refused when the Snakefile is parsed, naming the run, and
    every table is intact."""
    work = tmp_path / "w"
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, work / name)
    tables = {p: p.read_bytes() for p in (work / "results" / "tables").iterdir()}
    jobs = sorted((work / "results" / "runs").rglob("*.parquet"))
    live = hold_in_child(runlock.state_of(work / "results"))
    try:
        proc = snakemake(work, "-c1", "--nolock", "--no-hooks", "--forcerun", "render", check=False)
        assert proc.returncode != 0 and f"pid {live.pid}" in proc.stderr, proc.stdout + proc.stderr
        # nor does `rlvr clean` delete anything there, from any directory; its dry run may list
        clean = rlvr("clean", "--results", str(work / "results"), "--logs", str(work / "logs"), "--yes",
                     "--config", str(TINY), cwd=tmp_path)
        assert clean.returncode == 2 and f"pid {live.pid}" in clean.stderr, clean.stdout + clean.stderr
        assert rlvr("clean", "--results", str(work / "results"), "--dry-run", cwd=tmp_path).returncode == 0
    finally:
        live.kill()
        live.wait()
    assert {p: p.read_bytes() for p in (work / "results" / "tables").iterdir()} == tables
    assert sorted((work / "results" / "runs").rglob("*.parquet")) == jobs
