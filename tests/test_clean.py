"""`python -m rlvr clean` (issue 33): runs record their configs; clean keeps what any of them
names unless told otherwise, asks before deleting it, and deletes the aggregates that hold rows
of what it deleted, so that the next run makes them again."""

import json
import shutil
import subprocess

import numpy as np
import pytest
import yaml
from conftest import PYTHON, REPO

from rlvr import config as C
from rlvr import io, specs
from rlvr.specs import PACKS_DIR, pack_name

TINY = REPO / "config" / "test.yaml"


def clean(directory, *args, check=True):
    """`rlvr clean` on directory's results/ and logs/, with no terminal to confirm at."""
    proc = subprocess.run([PYTHON, "-m", "rlvr", "clean", *args], cwd=directory, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    if check and proc.returncode:
        raise AssertionError(f"clean {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def tiny_with(tmp_path, name):
    """config/test.yaml with demo 3's rows replaced by one of an estimator it does not train, as a file."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["rows"] = [{"method": "rloo", "lr": 2.0}]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg))
    return path


def files_of(config, results):
    """The per-job files a config names, under results/ (the jobs of a results directory with none)."""
    cfg = C.load_config(config)
    runs = {f"{job.path}.{kind}.parquet" for job in C.train_jobs(C.train_rows(cfg), results)
            for kind in specs.JOB_FILES}
    return runs | {job.path for job in C.gradstat_jobs(cfg)}


def job_of(name):
    """A training job's path, from the name of one of its files: <path>.<kind>.parquet."""
    return name.removesuffix(".parquet").rsplit(".", 1)[0]


def made_by(name):
    """What wrote a per-job file, as paths under the project: a gradient-statistics job's log
    (logs/ mirrors results/), or a training job's pack's manifest and log, as if each training
    job were a pack of its own (rlvr/packs.py)."""
    if not name.startswith("runs/"):
        return [f"logs/{name.removesuffix('.parquet')}.log"]
    job = job_of(name)
    pack = pack_name(job.split("/")[1], [job])
    return [f"results/{PACKS_DIR}/{pack}.json", f"logs/train/{pack}.log"]


def plant(directory, names, *configs):
    """Each per-job file (a stand-in: clean reads names, manifests' paths, .run files' rows and
    the identity a file carries: that which the first of configs naming it plans, none for a
    file none of them names), and what made it (made_by)."""
    from rlvr.compute import planned_identities

    ids = {}
    for config in configs:
        for name, ident in planned_identities(C.load_config(config), directory / "results").items():
            ids.setdefault(name, ident)
    for name in names:
        made = {path: "" for path in made_by(name)}
        for path in made:
            if path.endswith(".json"):
                made[path] = json.dumps({"jobs": [[job_of(name), "", ""]]})
        for path, text in made.items():
            (directory / path).parent.mkdir(parents=True, exist_ok=True)
            (directory / path).write_text(text)
        stem = name.removesuffix(".parquet")
        io.write_table(directory / "results" / name, {"seed": np.array([0])},
                       io.bound(stem, ids.get(stem, "")))


def everything(directory):
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*"))


def test_a_run_records_its_config_and_clean_keeps_what_it_names(tmp_path, tiny_in_process):
    """`rlvr all --results` records the validated config it ran as results/configs/<hash>.yaml with
    latest naming it; clean without --config keeps every recorded config's files, says which
    config keeps how many, and deletes only what no config names."""
    latest = (tiny_in_process / "configs" / "latest").read_text().strip()
    recorded = C.recorded_configs(tiny_in_process)
    assert [path.name for path, _ in recorded] == [latest]
    assert recorded[0][1] == C.load_config(TINY)

    results = tmp_path / "results"
    first, second = TINY, tiny_with(tmp_path, "rloo.yaml")
    for config in (first, second):
        C.record_config(C.load_config(config), results)
    assert C.latest_config(results) == C.record_config(C.load_config(second), results).name
    stray = ["runs/training/grpo/lr9.0_off0.0_G4_n4_s20_dyn0_seeds0-1.run.parquet"]
    planted = files_of(first, results) | files_of(second, results)
    plant(tmp_path, planted | set(stray), first, second)
    before = everything(tmp_path)
    out = clean(tmp_path).stdout
    n_first, n_second = len(files_of(first, results)), len(files_of(second, results))
    # the default names the gradient statistics' files of its methods, which the tiny task made
    n_default = len(files_of(None, results) & planted)
    assert f"configs/{C.latest_config(results)} (the latest run) keeps {n_second} result files\n" in out, out
    assert f"yaml keeps {n_first} result files\n" in out, out
    assert n_default and ("config/config.yaml (the default) keeps 0 result files (it names "
                          f"{n_default} more, made by another config or other code)") in out, out
    gone = sorted(set(before) - set(everything(tmp_path)))
    assert gone == sorted([*made_by(stray[0]), f"results/{stray[0]}"])


@pytest.mark.slow
def test_clean_with_config_asks_before_deleting_a_recorded_configs_files(tmp_path):
    """--config keeps only the configs given: it says how many files of recorded configs would go,
    refuses without a terminal unless --yes (deleting nothing), and with --yes deletes them and the
    directories it empties. --dry-run never asks."""
    results = tmp_path / "results"
    kept, dropped = TINY, tiny_with(tmp_path, "rloo.yaml")
    for config in (kept, dropped):
        C.record_config(C.load_config(config), results)
    plant(tmp_path, files_of(kept, results) | files_of(dropped, results), kept, dropped)
    only_dropped = files_of(dropped, results) - files_of(kept, results)
    assert len(only_dropped) == len(specs.JOB_FILES)  # the rloo row's
    before = everything(tmp_path)

    refused = clean(tmp_path, "--config", str(kept), check=False)
    assert refused.returncode == 2, refused
    assert f"{len(only_dropped)} of the {len(only_dropped)} result files to delete are named by configs" \
        in refused.stdout, refused.stdout
    assert "add --yes to delete them" in refused.stderr, refused.stderr
    assert everything(tmp_path) == before

    listed = clean(tmp_path, "--config", str(kept), "--dry-run").stdout
    made = sorted({path for name in only_dropped for path in made_by(name)})  # its pack's manifest and log
    assert listed.count("would delete ") == len(only_dropped) + len(made) and everything(tmp_path) == before

    out = clean(tmp_path, "--config", str(kept), "--yes").stdout
    after = everything(tmp_path)
    assert sorted(set(before) - set(after)) == sorted(
        [f"results/{name}" for name in only_dropped] + made + ["results/runs/training/rloo"])
    assert "removed the empty directory results/runs/training/rloo" in out, out
    assert (results / "runs").is_dir() and (results / "configs").is_dir()


@pytest.mark.slow
def test_clean_deletes_an_aggregate_that_holds_rows_of_what_it_deleted(tmp_path):
    """Snakemake checks a per-job file only when a job reading it runs: with runs.parquet standing,
    a run of the config whose files were deleted said "Nothing to be done". An aggregate holding a
    deleted file's rows goes too (and those aggregated beside it); one that does not is kept."""
    results = tmp_path / "results"
    kept, dropped = TINY, tiny_with(tmp_path, "rloo.yaml")
    plant(tmp_path, files_of(kept, results) | files_of(dropped, results), kept, dropped)
    only_dropped = sorted(files_of(dropped, results) - files_of(kept, results))

    def rows(seeds, values):
        return {"seed": np.array(seeds), "final_pass1": np.array(values)}

    def plant_dropped():
        plant(tmp_path, only_dropped, kept, dropped)
        for name in only_dropped:
            if name.endswith(".run.parquet"):
                io.write_table(results / name, rows([0, 1], [0.25, 0.25]))

    aggregated = [results / io.RESULT_FILES[name] for name in io.JOB_PARTS]
    plant_dropped()
    for path in aggregated:
        io.write_table(path, rows([0, 1], [0.5, 0.5]))  # a kept file's rows only
    clean(tmp_path, "--config", str(kept), "--yes")
    assert all(path.is_file() for path in aggregated)

    plant_dropped()
    io.write_table(aggregated[0], rows([0, 1, 0, 1], [0.5, 0.5, 0.25, 0.25]))  # a dropped file's rows too
    out = clean(tmp_path, "--config", str(kept), "--yes").stdout
    assert not any(path.exists() for path in aggregated), out
    assert f"deleted {aggregated[0].relative_to(tmp_path)} (it holds rows of the files above" in out, out


def test_after_clean_the_next_run_makes_again_what_it_deleted(tiny_run, tmp_path):
    """Issue 33: after clean deleted a run's per-job files, a dry run of its config said "Nothing to
    be done": Snakemake checks an intermediate file only when a job downstream of it runs. Now
    clean deletes the aggregates that held their rows, and every per-job file is a target of the
    run, so one deleted by hand is made again too (here a logits file, which nothing reads)."""
    from test_pipeline import job_counts, snakemake

    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    recorded = C.recorded_configs(tmp_path / "results")
    assert [cfg for _, cfg in recorded] == [C.load_config(TINY)]  # the run's, by `onstart`
    out = clean(tmp_path, "--config", str(tiny_with(tmp_path, "rloo.yaml")), "--yes").stdout
    assert "deleted results/runs.parquet (it holds rows of the files above" in out, out
    logits = sorted((tmp_path / "results" / "runs" / "lr_sweep").rglob("*.logits.parquet"))[0]
    logits.unlink()
    counts = job_counts(snakemake(tmp_path, "-n").stdout)
    # demo 3's two rows in a new pack; the sweep's pack, one of whose files went
    assert counts["train"] == 2 and counts["aggregate_training"] == 1, counts


@pytest.mark.slow
def test_a_pack_goes_whole_or_not_at_all(tmp_path):
    """A run keeps a training pack as it ran (rlvr/packs.py) and trains it all again to make one
    of its files: clean keeps every file of a pack one of whose jobs a kept config names, and
    deletes a pack none of whose jobs it names, manifest and log too."""
    results = tmp_path / "results"
    kept, dropped = TINY, tiny_with(tmp_path, "rloo.yaml")
    C.record_config(C.load_config(kept), results)
    named = files_of(kept, results)
    plant(tmp_path, named, kept)
    rloo = sorted(files_of(dropped, results) - named)  # one job's files, which no kept config names
    plant(tmp_path, rloo, dropped)
    named_job = job_of(next(name for name in sorted(named) if name.startswith("runs/training/")))
    together = pack_name("training", [named_job, job_of(rloo[0])])
    (results / PACKS_DIR / f"{together}.json").write_text(
        json.dumps({"jobs": [[named_job, "", ""], [job_of(rloo[0]), "", ""]]}))
    out = clean(tmp_path, "--config", str(kept), "--yes").stdout
    assert f"{len(rloo)} result files no config names are kept with their packs" in out, out
    assert all((results / name).exists() for name in rloo), out
    assert (results / PACKS_DIR / f"{together}.json").exists(), out
    (results / PACKS_DIR / f"{together}.json").unlink()
    plant(tmp_path, rloo, dropped)  # now the rloo job is in a pack of its own
    before = everything(tmp_path)
    clean(tmp_path, "--config", str(kept), "--yes")
    gone = sorted(set(before) - set(everything(tmp_path)))
    rloo_dir = "results/runs/training/rloo"
    assert gone == sorted([f"results/{name}" for name in rloo] + made_by(rloo[0]) + [rloo_dir])
