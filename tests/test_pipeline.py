"""The Snakemake pipeline end to end on the tiny config, in temporary directories."""

import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from conftest import PYTHON, REPO, run

TINY = REPO / "config" / "test.yaml"
CONTRACT = {
    "reference_passk.parquet": ["level", "n_prompts", "k", "pass_at_k"],
    "gradient_stats.parquet": ["reward_offset", "method", "level", "prompt", "p_correct", "G", "n_reps",
                               "true_grad", "grad_mean", "grad_std", "total_var"],
    "runs.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "steps", "seed",
                     "final_pass1", "final_pass1_very_hard", "final_pass1_hard", "final_pass1_medium",
                     "final_pass1_easy", "zero_signal_frac"],
    "curves.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "seed", "step",
                       "level", "pass1"],
    "passk_trained.parquet": ["experiment", "method", "lr", "reward_offset", "G", "prompts_per_step", "seed",
                              "level", "k", "pass_at_k"],
    "exact_bias.parquet": ["method", "G", "p", "mean_over_true", "exact_grad_std"],
}


def snakemake(workdir, *args, config=TINY, check=True, snakefile=REPO / "Snakefile"):
    return run([PYTHON, "-m", "snakemake", "-s", str(snakefile), "--configfile", str(config),
                "--directory", str(workdir), *args], check=check)


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
    """{rule: count} from the 'Job stats' table of a dry run."""
    table = dry_run_output.split("Job stats:")[1].split("\n\n")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)
            if m.group(1) != "total"}


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
    # training rows x seeds + group sizes x seeds + (dynamic, plain) x seeds
    assert runs.num_rows == 2 * 2 + 2 * 1 + 2 * 1
    for name in ("passk_by_level", "gradient_estimators", "learning_curves", "group_size", "bias_vs_p",
                 "passk_trained", "dynamic_sampling"):
        assert (results / "figures" / f"{name}.png").stat().st_size > 10_000
    text = (results / "tables" / "all.txt").read_text()
    for title in ("Demo 1", "Demo 2", "Demo 3", "Demo 4", "Demo 5", "Demo 6"):
        assert title in text
    assert (tiny_run / "logs" / "task.log").exists()


def test_no_temporary_files_are_left(tiny_run):
    assert not [p for p in (tiny_run / "results").rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name]


def test_second_run_does_nothing(tiny_run):
    before = snapshot(tiny_run / "results")
    out = snakemake(tiny_run, "-c2")
    assert "Nothing to be done" in out.stdout + out.stderr
    assert snapshot(tiny_run / "results") == before


def test_how_snakemake_is_started_is_not_a_change(tiny_run):
    """`snakemake` (the console script) after `python -m snakemake`: still nothing to do."""
    console = Path(PYTHON).parent / "snakemake"
    out = run([str(console), "-s", str(REPO / "Snakefile"), "--configfile", str(TINY),
               "--directory", str(tiny_run), "-n"])
    assert "Nothing to be done" in out.stdout + out.stderr


def test_pipeline_equals_in_process_run(tiny_run, tmp_path):
    run([PYTHON, "-m", "rlvr", "all", "--config", str(TINY), "--results", str(tmp_path),
         "--figures", str(tmp_path / "figures")])
    for name in CONTRACT:
        a, b = pq.read_table(tiny_run / "results" / name), pq.read_table(tmp_path / name)
        assert a.equals(b), name
    pipeline_figures = sorted((tiny_run / "results" / "figures").glob("*.png"))
    assert [p.name for p in pipeline_figures] == sorted(p.name for p in (tmp_path / "figures").iterdir())
    for path in pipeline_figures:  # the same data drawn the same way: the same pixels
        assert path.read_bytes() == (tmp_path / "figures" / path.name).read_bytes(), path.name


def test_a_figure_without_its_input_is_refused_before_drawing(tiny_run, tmp_path):
    ref = tiny_run / "results" / "reference_passk.parquet"
    for names, message in ((["group_size"], "figure 'group_size' needs --runs"),
                           (["no_such_figure"], "unknown figure 'no_such_figure'; the figures are: ")):
        out = run([PYTHON, "-m", "rlvr", "figures", "--names", *names, "--reference", str(ref),
                   "--outdir", str(tmp_path / "figs")], check=False)
        assert out.returncode == 2 and message in out.stderr
    assert not (tmp_path / "figs").exists()


def test_changed_lr_reruns_only_that_rows_seeds(tiny_run, tmp_path):
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["rows"][0]["lr"] = 3.0
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    counts = job_counts(snakemake(tiny_run, "-n", config=changed).stdout)
    assert counts == {"train": 2, "aggregate_runs": 1, "aggregate_curves": 1, "aggregate_passk": 1,
                      "tables": 1, "figures_training": 1, "all": 1}


def test_added_seed_runs_only_the_new_seeds_jobs(tiny_run, tmp_path):
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["seeds"].append(7)
    changed = tmp_path / "seeds.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    counts = job_counts(snakemake(tiny_run, "-n", config=changed).stdout)
    assert counts == {"train": 2, "aggregate_runs": 1, "aggregate_curves": 1, "aggregate_passk": 1,
                      "tables": 1, "figures_training": 1, "all": 1}  # one new seed x two rows


def test_changed_training_code_reruns_training_not_task_or_gradients(tmp_path):
    snakefile = copy_workflow(tmp_path)
    snakemake(tmp_path, "-c2", snakefile=snakefile)
    with open(tmp_path / "rlvr" / "training.py", "a") as f:
        f.write("\n# an edit\n")  # Snakemake compares content, so a touch would not do
    counts = job_counts(snakemake(tmp_path, "-n", snakefile=snakefile).stdout)
    assert counts["train"] == 8
    assert not {"task", "reference_passk", "gradient_stat", "aggregate_gradient_stats", "exact_curve"} & set(counts)


def test_bad_config_is_refused_before_any_job(tiny_run, tmp_path):
    before = snapshot(tiny_run / "results")
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["rows"][1]["lr"] = -1
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tiny_run, "-c2", config=bad, check=False)
    assert proc.returncode != 0
    assert "config key training.rows[1].lr" in proc.stdout + proc.stderr
    assert snapshot(tiny_run / "results") == before


def test_single_core_run_gives_identical_files(tiny_run, tmp_path):
    snakemake(tmp_path, "-c1")
    files = sorted(p.relative_to(tiny_run) for p in (tiny_run / "results").rglob("*.parquet"))
    assert files == sorted(p.relative_to(tmp_path) for p in (tmp_path / "results").rglob("*.parquet"))
    for f in files:
        assert pq.read_table(tiny_run / f).equals(pq.read_table(tmp_path / f)), f
