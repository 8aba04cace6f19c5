"""Issue 5: a killed run, a damaged file, a second concurrent run, extreme settings and bad
configs never leave wrong or partial results behind."""

import math
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import PYTHON, REPO, same_table
from test_pipeline import CONTRACT, TINY, small_config, snakemake, snapshot

from rlvr import config as C
from rlvr import io
from rlvr.jobs.render import drawn_demos
from rlvr.knobs import KNOBS
from rlvr.training import BATCH_CURVES

pytestmark = pytest.mark.slow  # every test here runs the pipeline or trains many configs

SNAKEMAKE = [PYTHON, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-c2"]


@pytest.fixture
def in_process(tiny_in_process):
    return tiny_in_process


def start(workdir, config=TINY):
    return subprocess.Popen([*SNAKEMAKE, "--configfile", str(config), "--directory", str(workdir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def wait_for(predicate, proc, timeout=60):
    t0 = time.monotonic()
    while not predicate():
        if proc.poll() is not None or time.monotonic() - t0 > timeout:
            return False
        time.sleep(0.05)
    return True


def descendants(pid):
    """[(pid, argv)] of every living process below pid (read from /proc): the processes a test
    started, never another run's on the same machine."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            argv = (stat.parent / "cmdline").read_bytes().decode().split("\0")[:-1]
        except (OSError, IndexError):
            continue  # ended while we looked
        children.setdefault(int(fields[1]), []).append((int(stat.parent.name), argv))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def every_parquet_is_whole(results):
    """Every file under a final name is whole (a job killed mid-write may leave its temporary
    file beside it: never trusted, and removed when the job runs again)."""
    for path in results.rglob("*.parquet"):
        io.read_arrow(path)  # raises on a partial or damaged file
    return True


def temporaries(results):
    return [str(p.relative_to(results)) for p in results.rglob("*") if ".tmp" in p.name]


def test_sigkill_at_three_points_then_rerun_gives_the_uninterrupted_results(tmp_path):
    """On the tiny config with one demo of the objective (what a kill does is the same for every
    demo, and each job costs a process): killed three times, then run to the end, it writes the
    Parquet files `python -m rlvr all` writes for that config."""
    config = small_config(tmp_path / "small.yaml", keep=("clipping",), rows=None)
    in_process = tmp_path / "in_process"
    subprocess.run([PYTHON, "-m", "rlvr", "all", "--config", str(config), "--results", str(in_process)],
                   check=True, capture_output=True)
    results = tmp_path / "results"
    points = {
        "task": lambda: (results / "task.parquet").exists(),
        "training": lambda: len(list(results.glob("runs/**/*.run.parquet"))) >= 3,
        "aggregation": lambda: (results / "runs.parquet").exists(),
    }
    for point, reached in points.items():  # each run resumes the killed one before it
        proc = start(tmp_path, config)
        ok = wait_for(reached, proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run: Snakemake and its jobs
        proc.wait()
        assert ok, f"the run ended before reaching {point}"
        assert every_parquet_is_whole(results), point
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = results / "figures" / f".no_job_writes_this.png.{dead.pid}.tmp"  # a killed writer's, of a file
    gone.parent.mkdir(exist_ok=True)  # the next run never writes (a row since removed from the config)
    gone.write_bytes(b"partial")
    snakemake(tmp_path, "-c2", config=config)  # completes despite the leftover locks and incomplete markers
    written = sorted(p.name for p in in_process.glob("*.parquet"))
    assert "runs.parquet" in written and "gradient_stats.parquet" not in written  # demo 2 off
    for name in written:
        assert same_table(pq.read_table(results / name), pq.read_table(in_process / name)), name
    assert every_parquet_is_whole(results)
    assert not temporaries(results), temporaries(results)


def test_a_job_killed_by_a_signal_says_which(tmp_path):
    cfg = yaml.safe_load(small_config(tmp_path / "small.yaml").read_text())
    cfg["training"].update(steps=1000, seeds=list(range(64)))  # one job, seconds long: found before it ends
    config = tmp_path / "long.yaml"
    config.write_text(yaml.safe_dump(cfg))
    proc = start(tmp_path, config)
    job = []

    def training_started():  # a training job's Python (not the bash that runs it), of this run only
        job[:] = [pid for pid, argv in descendants(proc.pid)
                  if argv[:4] == ["python", "-m", "rlvr", "train"]][:1]
        return bool(job)

    while True:  # a job that ended between finding it and the signal: the next one, however fast this machine
        assert wait_for(training_started, proc, timeout=120)
        try:
            os.kill(job[0], signal.SIGTERM)
            break
        except ProcessLookupError:
            continue
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "killed by signal SIGTERM (exit status 143)" in out, out[-2000:]


def test_damaged_file_is_named_and_deleting_it_recovers(tiny_run, tmp_path, in_process):
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    job = {row.method: row.path for row in C.train_rows(C.load_config(TINY)) if row.experiment == "training"}
    name = f"results/{job['grpo']}.run.parquet"
    run_file = tmp_path / name
    data = bytearray(run_file.read_bytes())
    data[100] ^= 0x10  # one bit flipped in a data page between stages
    run_file.write_bytes(data)
    proc = snakemake(tmp_path, "-c2", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"{name}: not a readable Parquet file" in out or f"{name}: damaged" in out, out[-2000:]
    run_file.unlink()
    snakemake(tmp_path, "-c2")
    for name in CONTRACT:
        assert same_table(pq.read_table(tmp_path / "results" / name), pq.read_table(in_process / name)), name
    # a whole file of another row copied over this one (issues 23, 33): it does not carry the
    # identity this run plans for that path, so the next run sets it aside and trains the row again
    other = f"{job['none']}.run.parquet"
    shutil.copy(tmp_path / "results" / other, run_file)
    dry = snakemake(tmp_path, "-n")
    copied = run_file.relative_to(tmp_path).as_posix()
    assert f"e.g. {copied}: a run would set them aside" in dry.stderr, dry.stderr[-2000:]
    assert f"e.g. {copied}: set aside in" in snakemake(tmp_path, "-c2").stderr
    runs = "results/runs.parquet"
    assert same_table(pq.read_table(tmp_path / runs), pq.read_table(in_process / "runs.parquet"))
    assert list((tmp_path / "results/.rlvr/foreign").rglob(run_file.name))  # kept, not read


def test_a_foreign_file_is_set_aside_across_file_systems_and_never_through_a_symlink(tiny_run, tmp_path):
    """results/runs on another file system (a symlink to /dev/shm, a tmpfs): a foreign run file
    is still set aside (copied, then deleted) and made again; a results/.rlvr/foreign that is a
    symlink out of the project stops the run at parse, naming it, and moves nothing."""
    import tempfile

    if os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("/dev/shm is on the same file system as the test's directory")
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    elsewhere = Path(tempfile.mkdtemp(dir="/dev/shm")) / "runs"
    try:
        shutil.move(tmp_path / "results/runs", elsewhere)
        (tmp_path / "results/runs").symlink_to(elsewhere)
        job = {row.method: f"{row.path}.run.parquet" for row in C.train_rows(C.load_config(TINY))
               if row.experiment == "training"}
        run_file = tmp_path / "results" / job["grpo"]
        outside = tmp_path / "outside"
        outside.mkdir()
        (tmp_path / "results/.rlvr/foreign").mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp_path / "results/.rlvr/foreign")
        (tmp_path / "results/.rlvr/foreign").symlink_to(outside)
        shutil.copy(tmp_path / "results" / job["none"], run_file)  # another row's file
        refused = snakemake(tmp_path, "-c2", check=False)
        assert refused.returncode != 0, refused.stderr
        assert "results/.rlvr/foreign is a symlink" in refused.stderr, refused.stderr
        assert not list(outside.iterdir()) and run_file.exists()
        (tmp_path / "results/.rlvr/foreign").unlink()
        out = snakemake(tmp_path, "-c2").stderr
        assert "set aside in" in out and list((tmp_path / "results/.rlvr/foreign").rglob(run_file.name)), out
        assert same_table(pq.read_table(run_file), pq.read_table(tiny_run / "results" / job["grpo"]))
    finally:
        shutil.rmtree(elsewhere.parent, ignore_errors=True)


def test_a_table_or_figure_edited_by_hand_is_named_and_forcerun_restores_it(tiny_run, tmp_path):
    """A number edited in a demo's table and a figure's bytes: each is named when the Snakefile is
    parsed (a dry run too) with the command that writes it again, and nothing reruns behind the
    user's back; `--forcerun render` draws the demos of the edited files again (their checksums
    no longer match) and keeps the others; all.txt never holds the edit."""
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    assert "not what rlvr wrote" not in snakemake(tmp_path, "-n").stderr  # nothing edited yet
    results = tmp_path / "results"
    table, figure = results / "tables/demo3_training.txt", results / "figures/bias_vs_p.png"
    everything = (results / "tables/all.txt").read_bytes()
    table.write_text(table.read_text().replace("0.", "0.9", 1))  # one number changed by hand
    figure.write_bytes(figure.read_bytes() + b"x")
    dry = snakemake(tmp_path, "-n")
    edited = [line for line in dry.stderr.splitlines() if "not what rlvr wrote" in line]
    assert len(edited) == 1 and "--forcerun render`" in edited[0], dry.stderr[-2000:]
    assert "results/tables/demo3_training.txt" in edited[0] and "results/figures/bias_vs_p.png" in edited[0]
    assert "Nothing to be done" in dry.stdout + dry.stderr  # reported, not rewritten behind the user's back
    assert (results / "tables/all.txt").read_bytes() == everything
    snakemake(tmp_path, "-c2", "--forcerun", "render")
    assert table.read_bytes() == (tiny_run / "results/tables/demo3_training.txt").read_bytes()
    assert figure.read_bytes() == (tiny_run / "results/figures/bias_vs_p.png").read_bytes()
    assert (results / "tables/all.txt").read_bytes() == everything
    assert sorted(drawn_demos(results / "checksums/render.sha256")) == ["gradients", "training"]
    assert "not what rlvr wrote" not in snakemake(tmp_path, "-n").stderr


def test_a_failed_render_keeps_the_tables_and_figures_it_would_have_replaced(tiny_run, tmp_path):
    """A rendering job whose input turns out damaged fails, and the earlier tables and figures
    are put back, byte for byte, with the checksum file that vouches for them (update() in
    workflow/rules/render.smk); once the input is mended, the next run finds every demo's rows
    as they were and keeps its files."""
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    rendered = {path: path.read_bytes() for pattern in ("tables/*", "figures/*", "claims.md", "checksums/*")
                for path in (tmp_path / "results").glob(pattern)}
    assert len(rendered) >= 3
    exact = tmp_path / "results" / C.EXACT_FILE
    original = exact.read_bytes()
    damaged = bytearray(original)
    damaged[100] ^= 0x10  # a data page's bit: its footer, and so its identity, intact
    exact.write_bytes(damaged)
    failed = snakemake(tmp_path, "-c2", check=False)
    assert failed.returncode != 0 and "rule render" in failed.stdout + failed.stderr, failed.stderr[-2000:]
    assert C.EXACT_FILE in (tmp_path / "logs/render.log").read_text()  # named by the job
    assert {path: path.read_bytes() for path in rendered} == rendered
    exact.write_bytes(original)
    snakemake(tmp_path, "-c2")
    drawn = {path: data for path, data in rendered.items() if "checksums" not in path.parts}
    assert {path: path.read_bytes() for path in drawn} == drawn
    assert drawn_demos(tmp_path / "results/checksums/render.sha256") == []


@pytest.mark.parametrize("change,key", [  # through Snakemake; every message: tests/test_config.py
    ({"training": {"rows": [{"method": "nope", "lr": 1.0}]}}, "training.rows[0].method"),
    ({"task": {"P": 10}}, "task.P"),
    ({"training": {"G": 1}}, "training.G"),  # the G is blamed, not each row's method
])
def test_bad_config_changes_nothing_under_results(tiny_run, tmp_path, change, key):
    before = snapshot(tiny_run / "results")
    cfg = yaml.safe_load(TINY.read_text())
    for section, values in change.items():
        cfg.setdefault(section, {}).update(values)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tiny_run, "-c2", config=bad, check=False)
    assert proc.returncode != 0 and f"config key {key}" in proc.stderr
    # the message alone: no traceback, no "WorkflowError in file", one line per key set wrong
    problems = [line for line in proc.stderr.splitlines() if line.strip().startswith("config key")]
    assert len(problems) == 1 and "Traceback" not in proc.stderr and " in file " not in proc.stderr
    assert snapshot(tiny_run / "results") == before


# the values each part of the finite-step table computes, finite on its rows
FINITE_STEP_VALUES = {
    "task": ("lr", "p_correct", "d_p_correct", "p_falls", "d_top_wrong", "d_logit_correct"),
    "map": ("lam", "spread", "lr", "p_correct", "d_p_correct", "p_falls", "d_top_wrong", "d_logit_correct"),
    "batch": ("lr", "p_correct", "d_logit_top", "d_logit_top_se", "d_p_top", "d_p_top_se"),
}


def test_extreme_settings_give_finite_results():
    from rlvr.compute import compute_all
    from rlvr.config import validate_config

    cfg = yaml.safe_load(TINY.read_text())
    cfg["task"]["level_logodds"] = [-30.0, -20.0, 20.0, 30.0]  # p from 1e-13 to 1 - 1e-13
    cfg["training"]["rows"] = [{"method": "none", "lr": 1e6, "reward_offset": 1e6},
                               {"method": "grpo", "lr": 1e6, "reward_offset": 0.0},
                               {"method": "learned", "lr": 50.0, "reward_offset": 1e6}]
    cfg["gradient_stats"]["cases"][0]["reward_offsets"] = [0.0, 1e6]
    cfg["gradient_stats"]["cases"].append({"reward_offsets": [0.0], "methods": ["grpo", "rloo"],
                                           "levels": ["very_hard", "easy"]})
    tables = compute_all(validate_config(cfg))
    for name, table in tables.items():
        for column in table.column_names:
            values = table.column(column).to_numpy(zero_copy_only=False)
            if values.dtype.kind == "f":
                allowed_nan = column.startswith("pass_at_k_estimate")
                if column == "length_correct":  # undefined only where no answer can be correct
                    allowed_nan = table.column("pass1").to_numpy() == 0
                if column == "length_wrong":  # or wrong
                    allowed_nan = table.column("pass1").to_numpy() == 1
                if column in BATCH_CURVES and "level" in table.column_names:  # on the "all" rows, step > 0
                    allowed_nan = ((table.column("level").to_numpy(zero_copy_only=False) != "all")
                                   | (table.column("step").to_numpy() == 0)  # or no group kept:
                                   | (table.column("max_rounds").to_numpy() > 0))  # dynamic sampling
                if name == "finite_step":  # a row carries only its part's columns (rlvr/finite_step.py)
                    source = table.column("source").to_numpy(zero_copy_only=False)
                    allowed_nan = ~np.isin(source, [part for part, columns in FINITE_STEP_VALUES.items()
                                                    if column in columns])
                if name == "passk" and column != "pass_at_k":  # the step-0 policy has no training settings
                    allowed_nan = ((table.column("method").to_numpy(zero_copy_only=False) == "reference")
                                   & np.asarray(table.column(column).is_null()))
                finite = np.isfinite(values) | (np.isnan(values) & allowed_nan)
                if column in KNOBS and KNOBS[column].none is not None:  # a setting's null as its spec
                    finite |= values == KNOBS[column].none[0]  # holds it (clip_high null: ε = ∞)
                assert finite.all(), (name, column)


def test_nonsensical_difficulty_is_refused():
    from rlvr.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match=r"task.level_logodds\[0\]"):
        validate_config({"task": {"level_logodds": [-800.0, -3.0, -1.0, 0.5]}})
    assert math.isfinite(validate_config({})["task"]["level_logodds"][0])


@pytest.mark.parametrize("cases", [
    [{"reward_offsets": [0.0], "methods": ["grpo"], "levels": ["very_hard", "easy"]}],
    [{"reward_offsets": [0.0, 1.0], "methods": ["none", "rloo", "group", "grpo", "dr_grpo",
                                                "grpo_unbiased_std", "batch_std", "reinforce_pp_baseline",
                                                "oracle", "optimal"],
      "levels": ["medium", "hard"]}],
], ids=["one method", "ten methods on two levels"])
def test_gradient_cases_the_schema_accepts_draw_every_figure(tmp_path, cases):
    """Both crashed the figures job once (IndexError; a shape mismatch of bars and labels)."""
    from rlvr.compute import compute_all
    from rlvr.config import validate_config
    from rlvr.report import write_demo, write_figures

    cfg = yaml.safe_load(TINY.read_text())
    cfg["gradient_stats"]["cases"] = cases
    cfg = validate_config(cfg)
    frames = {k: v.to_pandas() for k, v in compute_all(cfg).items() if k != "task"}
    names = ["gradient_estimators", "bias_vs_p"]  # the figures of the gradient cases
    written = [p.name for p in write_figures(frames, tmp_path, names)]
    assert written == [f"{n}.{fmt}" for n in names for fmt in ("png", "pdf")]
    write_demo("gradients", frames, tmp_path / "tables")
