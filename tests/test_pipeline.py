"""The Snakemake pipeline end to end on the tiny config, in temporary directories."""

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import PYTHON, REPO, run, run_snakemake

from rlvr import config as C
from rlvr import io, specs
from rlvr.demos import DEMOS
from rlvr.task import read_task
from rlvr.training import row_columns

pytestmark = pytest.mark.slow  # every test here runs the pipeline or trains many configs

TINY = REPO / "config" / "test.yaml"
ONE_ROW = [{"method": "grpo", "lr": 2.0}]


def small_config(path, keep=(), rows=ONE_ROW, **task):
    """config/test.yaml with every demo off but demo 3 (always on) and those named in keep, demo
    3 with `rows` (None: the tiny config's), task keys changed by `task`; written to path. What
    is written where, when and how is the same for every demo, and each job costs a process."""
    cfg = yaml.safe_load(TINY.read_text())
    for demo in DEMOS:
        if demo.section and demo.name not in keep:
            cfg.setdefault(demo.section, {})["enabled"] = False
    if rows is not None:
        cfg["training"]["rows"] = rows
    cfg["task"] = {**cfg.get("task", {}), **task}
    path.write_text(yaml.safe_dump(cfg))
    return path
CONTRACT = {
    "reference_passk.parquet": ["level", "n_prompts", "k", "pass_at_k"],
    "gradient_stats.parquet": ["reward_offset", "method", "level", "prompt", "p_correct", "G", "n_reps",
                               "true_grad", "grad_mean", "grad_std", "total_var"],
    "runs.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "steps", "seed",
                     "final_pass1", "final_pass1_very_hard", "final_pass1_hard", "final_pass1_medium",
                     "final_pass1_easy", "zero_signal_frac"],
    "curves.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "seed", "step",
                       "level", "pass1", "entropy", "kl_ref", "clip_frac", "length_correct", "length_wrong",
                       "epochs", "clip_low", "clip_high", "clip_c", "kl_beta", "kl_estimator", "kl_placement",
                       "loss_agg"],
    "kl_gradients.parquet": ["experiment", "method", "seed", "kl_beta", "estimator", "placement",
                             "cos_reverse", "cos_forward", "norm_ratio_reverse", "norm_ratio_forward"],
    "passk_trained.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "seed",
                              "level", "k", "pass_at_k"],
    "exact_bias.parquet": ["method", "G", "p", "mean_over_true", "exact_grad_std"],
}


def snakemake(workdir, *args, config=TINY, check=True, snakefile=REPO / "Snakefile", timeout=300):
    return run_snakemake("-s", snakefile, "--configfile", config, "--directory", workdir, *args, check=check,
                         timeout=timeout)


def copy_workflow(dest):
    """A private copy of the workflow and library, so a test may edit its code."""
    for name in ("Snakefile", "workflow", "rlvr", "config"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return dest / "Snakefile"


def job_counts(dry_run_output):
    """{rule: count} from the job stats of a dry run ({} if nothing is to be done): the few lines
    of rlvr's terminal (profiles/default: "Job stats (8 jobs): train 2, tables 1,\n  all 1"), or
    Snakemake's table where no profile is found (a copied workflow)."""
    if "Nothing to be done" in dry_run_output:
        return {}
    stats = dry_run_output.split("Job stats")[1]
    if stats.startswith(" ("):  # rlvr's: the first line and those indented below it
        first, *rest = stats.split("\n")
        lines = [first.split(": ", 1)[1], *itertools.takewhile(lambda line: line.startswith("  "), rest)]
        pairs = [item.split() for line in lines for item in line.split(",") if item.strip()]
        counts = {rule: int(count) for rule, count in pairs if count.isdigit()}
        assert len(counts) == len(pairs), lines
        return counts
    table, counts = stats.split("\n\n")[0], {}
    for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M):
        if m.group(1) != "total":  # a training pack's rule, train_<pack>, counts as "train" (as rlvr's does)
            rule = "train" if m.group(1).startswith("train_") else m.group(1)
            counts[rule] = counts.get(rule, 0) + int(m.group(2))
    return counts


def snapshot(directory):
    return {str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_outputs_and_column_contract(tiny_run):
    results = tiny_run / "results"
    for name, columns in CONTRACT.items():
        table = pq.read_table(results / name)
        assert set(columns) <= set(table.column_names), name
        assert table.num_rows > 0
    runs = pq.read_table(results / "runs.parquet")
    assert runs.num_rows == sum(len(row.seeds) for row in C.train_rows(C.load_config(TINY)))  # a run per seed
    asked = C.asked(C.load_config(TINY))  # every demo but the network's (tests/test_network.py)
    assert [demo.name for demo in DEMOS if demo not in asked] == ["network"]
    for name in [name for demo in asked for name in demo.figures]:
        assert (results / "figures" / f"{name}.png").stat().st_size > 10_000
        assert (results / "figures" / f"{name}.pdf").read_bytes().startswith(b"%PDF")
    text = (results / "tables" / "all.txt").read_text()
    for demo in asked:
        assert f"Demo {demo.number}:" in text
    assert (tiny_run / "logs" / "task.log").exists()


def test_results_readme_names_every_column_and_experiment_the_run_writes(tiny_run):
    """results/README.md is the column contract's documentation: every column of every
    aggregated Parquet file a run writes is named there (in backquotes), every figure, and every
    demo's experiment (the network's files: tests/test_network.py's run; its columns are listed the
    same way)."""
    text = (REPO / "results" / "README.md").read_text()
    results = tiny_run / "results"
    for key, name in io.RESULT_FILES.items():  # the task's M logit_ and length_ columns: as ranges
        if key != "task" and (results / name).exists():
            missing = [c for c in pq.read_schema(results / name).names if f"`{c}`" not in text]
            assert not missing, (name, missing)
    experiments = {row.experiment for row in C.train_rows(C.validate_config({}))}  # the default's, all
    assert len(experiments) > 10 and [e for e in experiments if f"`{e}`" not in text] == []
    figures = [name for demo in DEMOS for name in demo.figures]  # every demo's, the network's too
    assert len(figures) > 20 and [f for f in figures if f"`{f}.png`" not in text] == []


def test_the_terminal_shows_the_config_summary_and_progress_not_every_job(tiny_run):
    """profiles/default selects snakemake_logger_plugin_rlvr: a summary of what the config asks
    for, a progress line every few seconds, failures in full (tests/test_reliability.py)."""
    lines = (tiny_run / "logs" / "terminal.txt").read_text().splitlines()
    text = "\n".join(lines)
    assert "rlvr: this config asks for" in text
    assert "training               2 rows x  2 seeds =    4 runs  1 of 1 jobs to run" in text, text  # a pack
    assert re.search(r"\] (\d+) of \1 jobs done", text), text  # the last job's line is always shown
    assert "Select jobs to execute" not in text and "localrule" not in text
    # a line per job would grow with the jobs; the summary grows with the experiments (a line each,
    # and a note where a --configfile replaced its rows) and progress lines with the time taken
    # (one every few seconds), so only the others are counted: none depends on the machine's speed
    summary = [line for line in lines if " rows x " in line or "note: " in line]
    assert len(summary) <= 2 * len(DEMOS), text
    # what the run wrote, said at its end: a line per experiment, the files under results/, the demos
    end = lines.index("rlvr: this run wrote")
    wrote = list(itertools.takewhile(lambda line: line.startswith("  "), lines[end + 1:]))
    assert len(wrote) <= len(DEMOS) + 3, text
    assert wrote[-1].startswith("  the tables and figures of demos 1, 2, 3,"), text
    # and what its jobs took of CPU by kind, summed from the line each job's log ends with
    cost = next(line for line in lines if line.startswith("rlvr: its jobs took "))
    total, parts = re.fullmatch(r"rlvr: its jobs took ([\d.]+) s of CPU: (.*)", cost).groups()
    kinds = dict(re.findall(r"([a-z][a-z ]*) ([\d.]+) s \(\d+ jobs?\)", parts))
    assert {"training", "rendering", "aggregation"} <= set(kinds), cost
    assert abs(sum(map(float, kinds.values())) - float(total)) <= 0.05 * len(kinds), cost
    for log in (tiny_run / "logs").rglob("*.log"):
        assert re.search(r"\] done in [\d.]+ s \([\d.]+ s CPU, peak \d+ MB\)\n\Z", log.read_text()), log
    progress = [line for line in lines if re.search(r"\] \d+ of \d+ jobs done", line)]
    other = [line for line in lines if line not in progress + summary + wrote + [cost]]
    assert len(other) < 8, text


def test_the_progress_line_names_the_running_jobs_and_a_quiet_terminal_hears_from_them():
    """Issue 26: the progress line names the longest-running jobs and how long each has run, and
    while a long job runs a line comes every QUIET_FOR seconds. Fed records by hand, on a fake
    clock: what is printed does not depend on the machine's speed."""
    import io as stdio
    import logging
    from types import SimpleNamespace

    from snakemake_interface_logger_plugins.common import LogEvent

    import snakemake_logger_plugin_rlvr as plugin

    out = stdio.StringIO()
    settings = SimpleNamespace(stdout=True, dryrun=False, printshellcmds=False, nocolor=True, quiet=None,
                               debug_dag=False, verbose=False, show_failed_logs=True)
    handler = plugin.LogHandler(settings, None)
    handler.stream, now = out, [100.0]
    handler.clock = lambda: now[0]
    handler.start_heartbeat = lambda: None  # the thread is not this test's: beat once, by hand

    def record(event, msg="", **fields):
        r = logging.LogRecord("snakemake", logging.INFO, "", 0, msg, None, None)
        r.__dict__.update(event=event, **fields)
        handler.handle(r)

    record(LogEvent.JOB_INFO, jobid=1, rule_name="render_clipping", wildcards={})
    now[0] = 110.0
    record(LogEvent.JOB_INFO, jobid=2, rule_name="train_clipping_3fa2c1d0e9", wildcards={})  # a pack
    now[0] = 112.0
    record(LogEvent.PROGRESS, done=3, total=10)
    assert out.getvalue().splitlines()[-1].endswith(
        "] 3 of 10 jobs done; running: render_clipping (12 s), train clipping (2 s)"), out.getvalue()
    record(LogEvent.JOB_FINISHED, job_id=1)
    now[0] = 113.0
    record(LogEvent.PROGRESS, done=4, total=10)  # within PROGRESS_EVERY of the last line: not shown
    assert len(out.getvalue().splitlines()) == 1
    now[0] = 112.0 + plugin.QUIET_FOR - 1
    handler.beat_once()  # the heartbeat, a second before QUIET_FOR without a line: quiet
    assert len(out.getvalue().splitlines()) == 1
    now[0] = 112.0 + plugin.QUIET_FOR
    handler.beat_once()
    last = out.getvalue().splitlines()[-1]
    assert last.endswith("] 4 of 10 jobs done; running: train clipping (32 s)"), last


def test_the_progress_line_counts_the_runs_jobs_before_the_first_ends():
    """The first progress lines of a run whose first jobs are long ("0 of ? jobs done" before a
    job had ended): the total comes from the run's job stats, logged before any job starts."""
    import io as stdio
    import logging
    from types import SimpleNamespace

    from snakemake_interface_logger_plugins.common import LogEvent

    import snakemake_logger_plugin_rlvr as plugin

    out = stdio.StringIO()
    settings = SimpleNamespace(stdout=True, dryrun=False, printshellcmds=False, nocolor=True, quiet=None,
                               debug_dag=False, verbose=False, show_failed_logs=True)
    handler = plugin.LogHandler(settings, None)
    handler.stream, handler.clock, handler.start_heartbeat = out, lambda: 100.0, lambda: None
    for event, fields in ((LogEvent.RUN_INFO, {"stats": {"network": 38, "all": 1, "total": 39}}),
                          (LogEvent.JOB_INFO, {"jobid": 1, "rule_name": "network_0123456789",
                                               "wildcards": {}})):
        r = logging.LogRecord("snakemake", logging.INFO, "", 0, "", None, None)
        r.__dict__.update(event=event, **fields)
        handler.handle(r)
    handler.clock = lambda: 100.0 + plugin.QUIET_FOR
    handler.beat_once()
    want = f"] 0 of 39 jobs done; running: network ({plugin.QUIET_FOR:.0f} s)"
    assert out.getvalue().splitlines()[-1].endswith(want), out.getvalue()


def test_no_temporary_files_are_left(tiny_run):
    assert not [p for p in (tiny_run / "results").rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name]


def test_the_html_report_builds_with_every_demos_figures(tiny_run, tmp_path):
    """`snakemake --report` (README) on a finished project: every figure of every demo asked for
    is in it, with its caption, and nothing under results/ changes."""
    from rlvr.config import asked, load_config

    before = snapshot(tiny_run / "results")
    out = tmp_path / "report.html"
    # the profile's report-metadata path is the project's, relative: absolute here, as --directory moves
    snakemake(tiny_run, "--report", str(out), "--report-metadata",
              str(REPO / "profiles" / "default" / "report_metadata.yaml"))
    html = out.read_text(errors="replace")
    for demo in asked(load_config(TINY)):
        for name in demo.figures:
            assert f"{name}.png" in html, name
    assert snapshot(tiny_run / "results") == before


def test_second_run_does_nothing(tiny_run):
    """... and imports no pandas (0.3 s of a no-op: Snakemake's params comparison would)."""
    before = snapshot(tiny_run / "results")
    out = subprocess.run([PYTHON, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--configfile", str(TINY),
                          "--directory", str(tiny_run), "-c2"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Nothing to be done" in out.stdout + out.stderr
    assert snapshot(tiny_run / "results") == before
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:")}
    assert "snakemake.persistence" in imported and "pandas" not in imported


def test_a_forked_snakemake_past_its_timeout_is_killed_and_the_next_runs(tmp_path):
    """The tests' run_snakemake (tests/snakemake_server.py) kills a run past its timeout and says
    so, and serves the next run."""
    with pytest.raises(subprocess.TimeoutExpired):
        snakemake(tmp_path, "-n", timeout=0.01)
    version = run([PYTHON, "-m", "snakemake", "--version"]).stdout
    assert run_snakemake("--version").stdout == version


def test_how_snakemake_is_started_is_not_a_change(tiny_run):
    """`snakemake` (the console script) after `python -m snakemake`: still nothing to do."""
    console = Path(PYTHON).parent / "snakemake"
    out = run([str(console), "-s", str(REPO / "Snakefile"), "--configfile", str(TINY),
               "--directory", str(tiny_run), "-n"])
    assert "Nothing to be done" in out.stdout + out.stderr
    summary = "  training               2 rows x  2 seeds =    4 runs  0 of 1 jobs to run"
    assert summary in out.stdout


def test_pipeline_equals_in_process_run(tiny_run, tiny_in_process):
    """`python -m rlvr all --results` writes the pipeline's files byte for byte: the same columns,
    and the same identities (rlvr/binding.py), so a later run accepts them."""
    tmp_path = tiny_in_process
    for name in [*CONTRACT, "task.parquet", "exact_bias.parquet"]:
        assert (tiny_run / "results" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    pipeline_figures = sorted((tiny_run / "results" / "figures").iterdir())
    assert [p.name for p in pipeline_figures] == sorted(p.name for p in (tmp_path / "figures").iterdir())
    for path in pipeline_figures:  # the same data drawn the same way: the same pixels, the same PDF
        assert path.read_bytes() == (tmp_path / "figures" / path.name).read_bytes(), path.name


def test_a_demo_without_its_results_is_refused_before_drawing(tiny_run, tmp_path):
    ref = tiny_run / "results" / "reference_passk.parquet"
    for demo, message in (("group_size", "the results given hold no data for demo 4 (group_size)"),
                          ("no_such_demo", "no demo 'no_such_demo'; the demos: reference, gradients")):
        out = run([PYTHON, "-m", "rlvr", "render", "--demo", "reference", demo, "--reference", str(ref),
                   "--tables", str(tmp_path / "tables"), "--figures", str(tmp_path / "figs"), "--all",
                   str(tmp_path / "all.txt"), "--claims", str(tmp_path / "claims.md"), "--checksums",
                   str(tmp_path / "sums")], check=False)
        assert out.returncode == 2 and message in out.stderr, out.stderr
    # nothing written: the demos are read and checked before any is drawn
    assert not (tmp_path / "figs").exists() and not (tmp_path / "sums").exists()


# what follows a changed row of demo 3: its aggregates and the rendering job (which draws the
# demos that read demo 3's rows, 3 and 6, and keeps the others: test_an_added_seed_...)
TRAINING_TAIL = {"aggregate_training": 1, "aggregate_passk": 1, "render": 1, "all": 1}
def tiny_packs():
    """The training packs of the tiny config in a project that has none (rlvr/packs.py)."""
    from rlvr.packs import plan_packs

    cfg = C.load_config(TINY)
    rows = C.train_rows(cfg)
    return plan_packs(rows, C.train_jobs(rows), lambda job: "", cfg["task"]["P"], cfg["task"]["M"])


def test_changed_lr_reruns_only_that_rows_job(tiny_run, tmp_path):
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["rows"][0]["lr"] = 3.0
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    assert job_counts(snakemake(tiny_run, "-n", config=changed).stdout) == {"train": 1, **TRAINING_TAIL}


def test_one_row_changed_or_added_by_a_second_configfile_reruns_that_row_alone(tiny_run, tmp_path):
    """Issue 26: a --configfile that changes one row (`change`) and adds one (`add`) without
    copying the rows list, merged by Snakemake over the config before it: two training jobs.
    Issue 38: its dry run (profiles/default) prints what a run prints at its start, per
    experiment rows x seeds and the jobs that would run, each training job where they are few,
    and the jobs per rule on a few lines, not a block per job; `--workflow-profile none` prints
    Snakemake's own dry run, a block per job."""
    edit = tmp_path / "edit.yaml"
    edit.write_text("training:\n  change: [{where: {method: grpo}, set: {lr: 3.0}}]\n"
                    "  add: [{method: rloo, lr: 2.0}]\n")
    args = ["-s", REPO / "Snakefile", "--configfile", TINY, edit, "--directory", tiny_run, "-n"]
    proc = run_snakemake(*args)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len(lines) < 40, proc.stdout
    out = proc.stdout
    assert "rlvr: this config asks for (a dry run: nothing runs, nothing is recorded)" in out, out
    # the two new rows train in one new pack (rlvr/packs.py); the pack of the rows left is kept
    assert "\n  training               3 rows x  2 seeds =    6 runs  1 of 2 jobs to run\n" in out, out
    assert "\n  gradient_stats         4 cases of  2 methods           0 of 2 jobs to run\n" in out, out
    assert "\n  5 jobs to run in all (a training job: a pack of rows, one after another)\n" in out, out
    trained = [line.split("trains ")[1] for line in lines if line.startswith("  trains ")]
    assert [path.split("_off")[0] for path in trained] == ["results/runs/training/grpo/lr3.0",
                                                           "results/runs/training/rloo/lr2.0"], out
    assert job_counts(out) == {"train": 1, **TRAINING_TAIL}, out
    assert "Job stats (5 jobs): train 1, " in out and "rule train_" not in out and "Group job" not in out
    assert "This was a dry-run" in out
    raw = run_snakemake(*args, "--workflow-profile", "none").stdout
    assert "rlvr: this config asks for" not in raw and raw.count("rule train_training_") == 1, raw[-2000:]
    assert job_counts(raw) == job_counts(out)


def test_an_estimator_added_to_one_demo_redraws_that_demos_figures_only(tiny_run, tmp_path):
    """Issue 34: Dr. GRPO, which the tiny config shows nowhere, added to demo 3's rows trains one
    row and redraws demo 3's figures (and those of the demo that reads its rows), not the figures
    of every demo."""
    from rlvr.config import gradstat_jobs, load_config, train_rows

    cfg = load_config(TINY)
    shown = ({row.method for row in train_rows(cfg)} | {job.method for job in gradstat_jobs(cfg)}
             | set(cfg["gradient_stats"]["exact_curve"]["methods"]))
    assert "dr_grpo" not in shown
    edit = tmp_path / "edit.yaml"
    edit.write_text(yaml.safe_dump({"training": {"add": [{"method": "dr_grpo", "lr": 2.0}]}}))
    proc = run_snakemake("-s", REPO / "Snakefile", "--configfile", TINY, edit, "--directory", tiny_run, "-n")
    assert job_counts(proc.stdout) == {"train": 1, **TRAINING_TAIL}, proc.stdout[-2000:]


def test_an_added_seed_trains_alone_and_a_config_asked_for_again_trains_nothing(tiny_run, tmp_path):
    """Issue 26: a seed added to a row trains in a job of its own (the row's first seeds keep their
    file and their numbers, bit for bit), and the run says so at its end; going back to the
    config before plans no training job, nor does asking for the added seed again; `clean` then
    deletes the added seed's files only."""
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["seeds"] = [*C.load_config(TINY)["training"]["seeds"], 7]  # (from its demo_defaults)
    more = tmp_path / "seeds.yaml"
    more.write_text(yaml.safe_dump(cfg))
    dry = snakemake(tmp_path, "-n", config=more).stdout
    assert job_counts(dry) == {"train": 1, **TRAINING_TAIL}  # the two rows of demo 3, seed 7 alone, one pack
    trained = re.findall(r"^  trains results/(\S+)$", dry, re.M)  # the dry run names a few training jobs
    assert len(trained) == 2 and all(row.endswith("_seeds7") for row in trained), trained
    ran = snakemake(tmp_path, "-c1", config=more)
    # what it wrote, said at its end: seed 7 of two rows, demo 3's aggregates, demos 3 and 6 (the
    # rendering job drew those two and kept the others, their files as they were)
    said = (ran.stdout + ran.stderr).split("rlvr: this run wrote\n")[1].splitlines()
    assert said[:3] == ["  training: 2 rows",
                        "  runs, curves, kl_gradients, passk_trained (results/*.parquet)",
                        "  the tables and figures of demos 3, 6"], said
    before = pq.read_table(tiny_run / "results/runs.parquet").to_pandas()
    after = pq.read_table(tmp_path / "results/runs.parquet").to_pandas()
    added = (after["experiment"] == "training") & (after["seed"] == 7)
    assert added.sum() == 2 and after[~added].reset_index(drop=True).equals(before)
    # demo 3's rows trained in one job each give the same numbers (rlvr/training.py: seed by seed)
    rows = C.rows_by_demo(C.load_config(more))["training"]
    task = read_task(tmp_path / "results/task.parquet")
    one_job = pa.concat_tables([pa.table(row_columns(task, row)[0]) for row in rows]).to_pandas()
    assert after[after["experiment"] == "training"].reset_index(drop=True).equals(one_job)
    for config in (TINY, more):  # back, and forth again: the files of both are there
        assert "train" not in job_counts(snakemake(tmp_path, "-n", config=config).stdout)
    # the run of `more` recorded its config: clean asks before deleting its files (tests/test_clean.py)
    out = run([PYTHON, "-m", "rlvr", "clean", "--config", str(TINY), "--yes"], cwd=tmp_path).stdout
    deleted = [line.split()[1] for line in out.splitlines() if line.startswith("deleted ")]
    aggregated = [f"results/{io.RESULT_FILES[name]}" for name in io.JOB_PARTS]  # they hold seed 7's rows
    # two rows' files, their pack's manifest and log (rlvr/packs.py), the aggregates
    assert len(deleted) == 2 * len(specs.JOB_FILES) + 2 + len(aggregated), out
    pack = [path for path in deleted if path.startswith(("results/packs/", "logs/train/"))]
    assert [Path(path).stem for path in pack] == [Path(pack[0]).stem] * 2, out
    assert all("_seeds7." in path for path in deleted if path not in aggregated + pack), out
    assert sorted(deleted[-len(aggregated):]) == sorted(aggregated), out
    counts = job_counts(snakemake(tmp_path, "-n").stdout)  # what TINY names is all kept
    assert "train" not in counts and counts["aggregate_training"] == 1, counts


def test_a_declared_output_that_is_deleted_is_made_again(tiny_run, tmp_path):
    for name in ("results", "logs", ".snakemake"):  # a private copy of a finished run
        shutil.copytree(tiny_run / name, tmp_path / name)
    (tmp_path / "results" / "tables" / "demo5_dynamic_sampling.md").unlink()
    planned = job_counts(snakemake(tmp_path, "-n").stdout)
    assert planned == {"render": 1, "all": 1}


def test_a_disabled_demo_leaves_no_table_or_figure_behind(tiny_run, tmp_path):
    """Demos 1, 2, 5 and 7 turned off in a finished project: none of their tables, figures or
    checksums is left, no job of theirs runs (demo 2's statistics and exact curve: none), and
    the reference's pass@k, which other demos read, stays (tests/test_config.py: the plan)."""
    for name in ("results", "logs", ".snakemake"):
        shutil.copytree(tiny_run / name, tmp_path / name)
    cfg = yaml.safe_load(TINY.read_text())
    off = [demo for demo in DEMOS if demo.name in ("reference", "gradients", "dynamic_sampling", "lr_sweep")]
    for demo in off:
        cfg[demo.section] = {**cfg.get(demo.section, {}), "enabled": False}
    config = tmp_path / "off.yaml"
    config.write_text(yaml.safe_dump(cfg))
    stats = sorted((tmp_path / "results" / "gradient_stats").iterdir())
    stamps = {p: p.stat().st_mtime_ns for p in [*stats, tmp_path / "results" / "reference_passk.parquet"]}
    ran = snakemake(tmp_path, "-c2", config=config).stderr
    assert "gradient_stats       off" in ran, ran
    assert "not made from this config" not in ran, ran  # a copied project's files are its own (cp -a)
    names = {p.name for p in (tmp_path / "results" / "tables").iterdir()}
    names |= {p.name for p in (tmp_path / "results" / "figures").iterdir()}
    gone = tuple(demo.table_name for demo in off) + tuple(name for demo in off for name in demo.figures)
    assert gone and not [n for n in names if n.startswith(gone)], names
    sums = {p.name for p in (tmp_path / "results" / "checksums").iterdir()}
    assert sums == {"render.sha256"}
    listed = (tmp_path / "results" / "checksums" / "render.sha256").read_text()
    assert not [name for name in gone if name in listed]  # it vouches for no file of theirs
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing of demo 2 ran; the reference stands
    runs = pq.read_table(tmp_path / "results" / "runs.parquet").column("experiment").to_pylist()
    assert set(runs) == {row.experiment for row in C.train_rows(C.load_config(config))}
    assert set(runs).isdisjoint({"lr_sweep", "dynamic"})
    assert "Nothing to be done" in snakemake(tmp_path, "-n", config=config).stdout


def test_a_sweep_with_its_own_results_directory_leaves_the_defaults_untouched(tiny_run, tmp_path):
    """A config that names its own `results:` and turns every demo but demo 3 off, run in a
    finished project: every file under results/ keeps its bytes (no table or figure of the
    demos it turned off is deleted), its own directory holds demo 3's table and its runs, its
    jobs' logs are under logs/<it>/, and `rlvr compare` finds each config's runs where it put
    them."""
    for name in ("results", "logs", ".snakemake"):
        shutil.copytree(tiny_run / name, tmp_path / name)
    cfg = yaml.safe_load(TINY.read_text())
    cfg["results"] = "results_sweep"
    for demo in DEMOS:
        if demo.section and demo.section != "training":
            cfg[demo.section] = {**cfg.get(demo.section, {}), "enabled": False}
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump(cfg))
    before = snapshot(tmp_path / "results")
    snakemake(tmp_path, "-c2", config=config)
    assert snapshot(tmp_path / "results") == before
    own = tmp_path / "results_sweep"
    assert {p.name for p in (own / "tables").iterdir()} >= {"demo3_training.txt", "all.txt"}
    assert not (own / "tables" / "demo1_reference.txt").exists()
    assert (tmp_path / "logs" / "results_sweep" / "render.log").exists()
    out = run([PYTHON, "-m", "rlvr", "compare", str(TINY), str(config), "--y", "final_pass1"], cwd=tmp_path)
    assert "in both: 2 rows" in out.stdout, out.stdout  # demo 3's rows, read from each directory
    bad = dict(cfg, results="../elsewhere")
    config.write_text(yaml.safe_dump(bad))
    refused = snakemake(tmp_path, "-n", config=config, check=False)
    assert refused.returncode != 0 and "config key results" in refused.stderr, refused.stderr[-2000:]


def test_cache_follows_the_code_it_ran_with_and_nothing_else(tiny_run, tmp_path):
    """A finished project copied elsewhere (code, results and Snakemake's records, mtimes kept)
    is up to date; a comment line, a docstring or anything in cli.py is no change; a new estimator
    reruns nothing, nor a knob appended at its default; a relabelled estimator redraws tables and
    figures and retrains nothing; an edit of metrics.py reruns what uses it; of training.py only
    training."""

    moved = tmp_path / "b"
    moved.mkdir()
    snakefile = copy_workflow(moved)
    for name in ("results", "logs", ".snakemake"):
        shutil.copytree(tiny_run / name, moved / name)  # copy2: modification times kept, as cp -a
    assert "Nothing to be done" in snakemake(moved, "-n", snakefile=snakefile).stdout

    def edit(module, text):
        with open(moved / "rlvr" / module, "a") as f:
            f.write(text)
        return job_counts(snakemake(moved, "-n", snakefile=snakefile).stdout)

    with open(moved / "rlvr" / "training.py", "a") as f:
        f.write("\n# a comment line is no change of the code\n")
    new_estimator = ('\n\n@estimator("my_baseline", min_G=2)\ndef my_baseline(r, ctx):\n'
                     '    return r - np.median(r, axis=1, keepdims=True)\n')
    assert edit("estimators.py", new_estimator) == {}  # no config names it

    def replace(module, old, new):
        path = moved / "rlvr" / module
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))

    def planned():
        return job_counts(snakemake(moved, "-n", snakefile=snakefile).stdout)

    replace("objective.py", '"""The rest of', '"""The whole rest of')  # a docstring
    replace("cli.py", 'help="generate the task"', 'help="generate the toy task"')  # a help text
    assert planned() == {}
    # a new option of a subcommand: cli.py parses, and is no job's code
    claims = "    s.set_defaults(fn=cmd_claims)"
    replace("cli.py", claims, '    s.add_argument("--new")\n' + claims)
    assert planned() == {}
    replace("estimators.py", 'label="GRPO",', 'label="GRPO, relabelled",')
    # the rendering job, to draw the demos that show GRPO (rlvr/jobs/render.py: a demo's stamp
    # holds the look of the estimators in its rows)
    assert planned() == {"render": 1, "all": 1}
    replace("estimators.py", 'label="GRPO, relabelled",', 'label="GRPO",')  # as it was
    # a knob appended at its default (issue 34): every spec and path leaves it out, no job's code counts it
    knob = '\n    Knob("my_knob", 0.0, "mine", {"type": "number"}, token="mine"),\n)\nKNOBS ='
    replace("knobs.py", "\n)\nKNOBS =", knob)
    assert planned() == {}
    counts = edit("training.py", "\nEDITED = True\n")
    assert counts == {"train": len(tiny_packs()), "aggregate_training": 1,  # every row, in its packs
                      "aggregate_passk": 1, "render": 1, "all": 1}
    # ... and with a row dropped too, demo 3's row left forms a pack of another name, whose files
    # (an older pack's, older code) stand: it trains all the same, as its manifest is asked for
    fewer = yaml.safe_load(TINY.read_text())
    fewer["training"]["rows"] = fewer["training"]["rows"][1:]
    (tmp_path / "fewer.yaml").write_text(yaml.safe_dump(fewer))
    counts = job_counts(snakemake(moved, "-n", config=tmp_path / "fewer.yaml", snakefile=snakefile).stdout)
    assert counts["train"] == len(tiny_packs()), counts
    counts = edit("objective.py", "\nEDITED = True\n")  # no task, reference or gradient job (issue 34)
    assert "train" in counts
    assert not {"task", "reference_passk", "gradient_stats", "exact_curve"} & set(counts)
    counts = edit("metrics.py", "\nEDITED = True\n")  # pass@k: training, reference, gradient stats
    assert {"train", "reference_passk", "gradient_stats", "exact_curve"} <= set(counts)
    assert "task" not in counts


def test_a_job_refuses_code_other_than_the_version_it_was_planned_with(tiny_run, tmp_path):
    from rlvr import specs
    from rlvr.codeversion import code_version
    from rlvr.config import load_config, train_rows

    row = train_rows(load_config(TINY))[0]
    argv = [PYTHON, "-m", "rlvr", "train", "--spec", specs.to_json(row), "--task",
            str(tiny_run / "results" / "task.parquet"), "--results", str(tmp_path)]
    proc = run([*argv, "--code", "0123456789abcdef"], check=False)
    assert proc.returncode == 2 and "changed since it was planned" in proc.stderr
    assert not list(tmp_path.iterdir())
    run([*argv, "--code", code_version("train", (row.method,))])
    assert (tmp_path / f"{row.path}.run.parquet").exists()


@pytest.mark.parametrize("stage", ["task", "train", "gradstats", "aggregate", "render"])
def test_a_job_imports_no_rlvr_module_outside_its_derived_code(tiny_run, tmp_path, stage):
    """The code a job depends on is read off the source (rlvr/codeversion.py); check it against
    the rlvr modules a real job of that stage has loaded when it ends (tests/test_codeversion.py:
    an edit of each module replans exactly the stages whose closure holds it)."""
    from rlvr import specs
    from rlvr.codeversion import job_modules
    from rlvr.config import gradstat_jobs, load_config, train_rows

    cfg, results = load_config(TINY), tiny_run / "results"
    task = str(results / "task.parquet")
    argv = {
        "task": ["--spec", json.dumps(cfg["task"]), "--out", str(tmp_path / "t.parquet")],
        "train": ["--spec", specs.to_json(train_rows(cfg)[0]), "--task", task, "--results", str(tmp_path)],
        "gradstats": ["--spec", specs.to_json(gradstat_jobs(cfg)[0]), "--task", task,
                      "--out", str(tmp_path / "g")],
        "aggregate": ["--out", str(tmp_path / "a"), "--in", str(results / "runs.parquet")],
        "render": ["--demo", "training", "--reference", str(results / "reference_passk.parquet"),
                   "--runs", str(results / "runs.parquet"), "--curves", str(results / "curves.parquet"),
                   "--tables", str(tmp_path / "tables"), "--figures", str(tmp_path / "figures"),
                   "--all", str(tmp_path / "all.txt"), "--claims", str(tmp_path / "claims.md"),
                   "--checksums", str(tmp_path / "sums")],
    }[stage]
    code = ("import atexit, sys, runpy\n"
            "atexit.register(lambda: print('LOADED', sorted(m.partition('.')[2] for m in sys.modules"
            " if m.startswith('rlvr.'))))\n"
            f"sys.argv = ['rlvr', {stage!r}, *{argv!r}]\n"
            "runpy.run_module('rlvr', run_name='__main__')\n")
    out = run([PYTHON, "-c", code]).stdout
    loaded = set(out.split("LOADED ")[1].strip().strip("[]").replace("'", "").split(", "))  # "demos.clipping"
    # the command line, which parses the arguments and calls the stage, is no job's code
    assert loaded - {"__main__", "cli"} <= set(job_modules(stage)), loaded - set(job_modules(stage))


@pytest.mark.slow
def test_the_readme_counts_what_a_fresh_clone_runs(tmp_path, monkeypatch):
    """The README's numbers for the default config in a fresh clone (no results yet): the jobs
    and training packs of a cold run, the summary lines it prints before the first progress
    line, and the lines of `snakemake -n`, are what a dry run there prints."""
    readme = " ".join((REPO / "README.md").read_text().split())  # its sentences, line breaks ignored
    copy_workflow(tmp_path)
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    monkeypatch.chdir(tmp_path)  # `snakemake -n` as typed in the clone
    dry = run_snakemake("-n")
    lines = dry.stderr.splitlines() + dry.stdout.splitlines()  # the terminal: the profile's line first
    jobs = int(re.search(r"^  (\d+) jobs to run in all", "\n".join(lines), re.M)[1])
    summary = 1 + next(i for i, line in enumerate(lines) if "jobs to run in all" in line)  # from the first
    packs = re.search(r"\btrain (\d+),", "\n".join(lines))[1]
    assert f"A cold run of the default config ({jobs} jobs: {packs} training packs," in readme
    assert f"prints what it will run, {summary} lines" in readme
    assert f"{len(lines)} lines for the default config in a fresh clone" in readme


def test_the_readme_snippets_run_on_the_results(tiny_run, capsys, monkeypatch):
    """The 'Inspect the results' and 'Use it from Python' snippets, as a user pastes them in the
    project directory: each prints what it says."""
    readme = (REPO / "README.md").read_text()

    def snippets(heading):
        section = readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
        return re.findall(r"```python\n(.*?)```", section, re.S)

    inspect, api = snippets("Inspect the results"), snippets("Use it from Python")
    assert len(inspect) == 2 and len(api) == 2
    monkeypatch.chdir(tiny_run)
    exec(inspect[0], {})
    shown = capsys.readouterr().out
    rows = pq.read_table(tiny_run / "results" / "runs.parquet").to_pandas().query("experiment == 'training'")
    for method in set(rows["method"]):  # one line per training row, with its seed count
        assert re.search(rf"^{method}\s.*\s{rows['seed'].nunique()}$", shown, re.M), shown
    exec(inspect[1], {})
    shown = capsys.readouterr().out
    assert "grad_mean" in shown and "exact" in shown and "true_grad" in shown and "…" not in shown
    exec(api[0], {})
    seeds = eval(capsys.readouterr().out)
    assert len(seeds) == 2 and all(0.24 < p < 1 for p in seeds)  # above the reference's 0.241
    exec(api[1], {})  # a trained policy read back: its pass@8 from its logits = the pipeline's own
    shown = capsys.readouterr().out
    passk = pq.read_table(tiny_run / "results" / "passk_trained.parquet").to_pandas().query(
        "experiment == 'training' and method == 'grpo' and k == 8 and level == 'all'")
    printed = {(float(lr), float(offset), int(seed)): float(v) for lr, offset, seed, v in
               re.findall(r"^\d+\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)$", shown, re.M)}
    assert len(printed) == len(passk) > 0, shown
    for _, row in passk.iterrows():  # the same exact pass@8, to the 6 decimals printed
        key = (row["lr"], row["reward_offset"], row["seed"])
        assert abs(printed[key] - row["pass_at_k"]) < 1e-6, (shown, row)


def test_load_policies_reads_the_rows_a_config_names_and_no_others(tiny_run, tmp_path):
    """Issue 38: the policies of the last run's config (a file of another config beside them is
    not read), of one experiment, or of another config; a config not trained yet is named."""
    from rlvr import load_policies

    results = tiny_run / "results"
    rows = C.train_rows(C.load_config(TINY))
    every = load_policies(results)
    assert len(every) == sum(len(row.seeds) for row in rows) * read_task(results / "task.parquet")["P"]
    assert set(zip(every["experiment"], every["method"], every["lr"])) == \
        {(row.experiment, row.method, row.lr) for row in rows}
    training = load_policies(results, experiment="training")
    assert set(training["experiment"]) == {"training"} and 0 < len(training) < len(every)
    assert load_policies(results, config=TINY).equals(every)
    with pytest.raises(ValueError, match="no rows of experiment 'nothing'; its experiments: "):
        load_policies(results, experiment="nothing")
    more = tmp_path / "more.yaml"
    more.write_text(yaml.safe_dump({**yaml.safe_load(TINY.read_text()), "training": {"seeds": [0, 1, 7]}}))
    with pytest.raises(FileNotFoundError, match="run snakemake with that config first"):
        load_policies(results, config=more, experiment="training")
