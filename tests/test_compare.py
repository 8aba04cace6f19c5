"""Two configs' runs side by side (rlvr/compare.py, `python -m rlvr compare`)."""

import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import PYTHON, run
from test_pipeline import TINY

from rlvr import config as C
from rlvr.compare import compare, difference, seed_values
from rlvr.specs import TrainRow, to_json


def row(experiment="training", method="grpo", lr=2.0, **knobs):
    return TrainRow(experiment=experiment, method=method, lr=lr, reward_offset=0.0, G=8, prompts_per_step=16,
                    steps=300, max_rounds=0, seeds=(), value_lr=0.2, eval_every=5, k=(1,), **knobs)


def values(seeds, rng):
    return pd.Series(rng.random(len(seeds)), index=list(seeds))


def test_rows_are_shared_paired_with_the_nearest_or_left_alone():
    rng = np.random.default_rng(0)
    same, grpo2, sweep = row(method="none"), row(), row("lr_sweep")
    grpo4, far, kl = row(lr=4.0), row(method="rloo", lr=8.0, kl_beta=0.1), row("kl_penalty")
    a = {same: values(range(5), rng), grpo2: values(range(5), rng), sweep: values(range(3), rng)}
    b = {same: a[same], far: values(range(5), rng), grpo4: values(range(1, 6), rng),
         kl: values(range(2), rng)}
    c = compare(a, b, "final_pass1")
    assert c.shared == [same] and c.only_a == [sweep] and c.only_b == [far, kl]
    (line,) = c.pairs.itertuples(index=False)  # grpo lr 2 with grpo lr 4 (one setting), not rloo (three)
    assert line.differs == "lr 2 → 4" and line.row == "grpo, lr 2"
    d = (b[grpo4] - a[grpo2]).dropna()  # the seeds both ran: 1 .. 4
    assert line.seeds == 4 and line.paired
    assert line.difference == pytest.approx(d.mean(), abs=1e-15)
    assert line.se == pytest.approx(d.std(ddof=1) / 2, abs=1e-15)
    assert not line.resolved  # 4 seeds: fewer than the 5 any ordering needs, whatever the difference


def test_each_line_names_its_row_by_method_lr_and_what_tells_it_from_the_others():
    """A sweep compared at G 8 and G 16: every line says G 8 → 16, and names A's row by its method,
    its lr and the settings in which it differs from A's other rows of its experiment (issue 56:
    ten identical "lr_sweep G 8 → 16" lines said nothing of which row was which)."""
    from dataclasses import replace

    from rlvr.compare import report

    rng = np.random.default_rng(1)
    a_rows = [row("lr_sweep", m, lr) for m in ("grpo", "rloo") for lr in (1.0, 2.0)]
    a_rows.append(row("lr_sweep", "grpo", 2.0, kl_beta=0.1))
    a = {r: values(range(5), rng) for r in a_rows}
    b = {replace(r, G=16): values(range(5), rng) for r in a_rows}
    c = compare(a, b, "final_pass1")
    assert set(c.pairs["differs"]) == {"G 8 → 16"}
    assert list(c.pairs["row"]) == ["grpo, lr 1, kl_beta 0", "grpo, lr 2, kl_beta 0", "rloo, lr 1, kl_beta 0",
                                    "rloo, lr 2, kl_beta 0", "grpo, lr 2, kl_beta 0.1"]
    lines = [line.split() for line in report(c, "a.yaml", "b.yaml") if line.startswith("  lr_sweep")]
    assert [" ".join(words[1:10]) for words in lines][2] == "rloo, lr 1, kl_beta 0 G 8 → 16", lines


def test_a_difference_is_resolved_by_the_t_test_at_its_seeds_degrees_of_freedom():
    """At 5 seeds (4 dof) the two-sided 1% critical value is 4.604 s.e. (a printed t table), at 10
    seeds 3.250: a paired difference just beyond it is resolved, just within it is not."""
    for n, t in ((5, 4.604), (10, 3.250)):
        for factor, expected in ((1.001, True), (0.999, False)):
            noise = np.resize([1.0, -1.0], n) * (1.0 if n % 2 == 0 else np.sqrt(n / (n - 1)))
            noise -= noise.mean()  # mean 0; its s.e. is then noise.std(ddof=1) / √n
            se = noise.std(ddof=1) / np.sqrt(n)
            a = pd.Series(np.zeros(n))
            b = pd.Series(noise + factor * t * se)
            assert difference(a, b)[4] == expected, (n, factor)
    few = pd.Series([0.0, 0.0, 0.0, 0.0]), pd.Series([1.0, 1.001, 0.999, 1.0])  # 4 seeds: never
    assert not difference(*few)[4]


def test_rows_with_fewer_than_two_seeds_in_common_are_compared_unpaired():
    a, b = pd.Series([0.1, 0.3, 0.2], index=[0, 1, 2]), pd.Series([0.6, 0.4], index=[2, 7])
    mean, se, n, paired, resolved = difference(a, b)
    assert not paired and n == 2 and not resolved
    assert mean == pytest.approx(0.5 - 0.2) and se == pytest.approx(np.sqrt(0.01 / 3 + 0.02 / 2))


@pytest.mark.slow
def test_the_cli_compares_two_configs_from_the_files_they_kept(tiny_run, tmp_path):
    """B is the tiny config with demo 3's GRPO row at lr 4; its one new row is trained by the
    training job's own command (what Snakemake would run), then compared without training."""
    results = tmp_path / "results"
    shutil.copytree(tiny_run / "results", results)
    cfg = yaml.safe_load(TINY.read_text())
    cfg["training"]["rows"] = [{"method": "none", "lr": 2.0}, {"method": "grpo", "lr": 4.0}]
    config_b = tmp_path / "b.yaml"
    config_b.write_text(yaml.safe_dump(cfg))
    rlvr = [PYTHON, "-m", "rlvr", "compare", str(TINY), str(config_b), "--results", str(results)]
    refused = run(rlvr, check=False)  # B's new row is not trained yet
    assert refused.returncode != 0 and "lr4.0" in refused.stderr and "run snakemake" in refused.stderr
    (new,) = [job for job in C.train_jobs(C.train_rows(C.load_config(config_b)), results)
              if job.lr == 4.0 and job.experiment == "training"]
    from rlvr.codeversion import code_version

    run([PYTHON, "-m", "rlvr", "train", "--spec", to_json(new), "--code", code_version("train", new.methods),
         "--task", str(results / "task.parquet"), "--results", str(results)])
    out = run(rlvr).stdout.splitlines()
    n_rows = len(C.train_rows(C.load_config(TINY)))
    assert out[1].startswith(f"in both: {n_rows - 1} rows")
    assert out[2].startswith("differ: 1 row, final_pass1")
    a = seed_values(results, C.load_config(TINY), "final_pass1")
    b = seed_values(results, C.load_config(config_b), "final_pass1")
    d = b[next(r for r in b if r.lr == 4.0 and r.experiment == "training")] - \
        a[next(r for r in a if r.lr == 2.0 and r.method == "grpo" and r.experiment == "training")]
    assert f"B − A {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f}" in out[3], out[3]
    assert "lr 2 → 4" in out[3] and f"{len(d)} seeds, paired" in out[3]
    bad = run([*rlvr, "--y", "pass1"], check=False)
    assert bad.returncode == 2 and "--y pass1: not a value of the runs; the values: final_pass1" in bad.stderr


@pytest.mark.slow
def test_every_reader_refuses_another_configs_files_at_the_same_paths(tiny_run, tmp_path):
    """A config that differs from the tiny one in task.seed alone names the same files (a path
    does not carry the task; the identity a file carries does): load_rows, load_policies,
    `rlvr compare` and `rlvr plot` refuse to show the tiny config's numbers under its name,
    naming a file, and read them as the tiny config's own."""
    from rlvr import io, load_policies, load_rows

    results = tiny_run / "results"  # read, not written
    cfg = yaml.safe_load(TINY.read_text())
    cfg["task"]["seed"] = 1
    other = tmp_path / "task_seed1.yaml"
    other.write_text(yaml.safe_dump(cfg))
    paths = [{job.path for job in C.train_jobs(C.train_rows(C.load_config(c)), results)}
             for c in (TINY, other)]
    assert paths[0] == paths[1]
    assert len(load_rows(results, TINY, "training")) and len(load_policies(results, TINY, "training"))
    for read in (lambda: load_rows(results, other, "training"), lambda: load_policies(results, other)):
        with pytest.raises(io.InputError, match=r"files under .* are not this config's, e.g. "
                           r".*\.parquet: made from another task, base or spec"):
            read()
    for command in (["compare", str(TINY), str(other), "--results", str(results)],
                    ["plot", "--results", str(results), "--config", str(other), "--x", "lr",
                     "--out", str(tmp_path / "sweep")]):
        refused = run([PYTHON, "-m", "rlvr", *command], check=False)
        assert refused.returncode == 2 and "not this config's" in refused.stderr, refused.stderr
    assert not list(tmp_path.glob("sweep*"))


def test_the_latex_table_has_a_line_per_pair_escaped_and_the_resolved_in_bold():
    """`rlvr compare --latex`: a booktabs tabular, a line per paired row with its numbers, TeX's
    special characters escaped (reward_offset), a resolved difference in bold and an unpaired one
    marked."""
    from rlvr.compare import latex

    seeds = range(6)
    a = {row(): pd.Series(np.linspace(0.5, 0.51, 6), index=seeds),
         row(method="rloo"): pd.Series([0.3], index=[0])}
    b = {row(lr=4.0): pd.Series(np.linspace(0.6, 0.61, 6) + [0, 1e-4, 0, 0, 1e-4, 0], index=seeds),
         row(method="rloo", lr=8.0): pd.Series([0.4], index=[1])}
    c = compare(a, b, "final_pass1")
    lines = latex(c, "a_1.yaml", "b.yaml")
    assert lines[0].startswith(r"\begin{tabular}") and lines[-2] == r"\end{tabular}"
    body = [line for line in lines if line.startswith("training")]
    assert len(body) == 2
    grpo, rloo = body
    assert r"\textbf{+0.1000" in grpo and grpo.endswith(r"& 6 \\")  # resolved: 6 seeds, near-constant
    assert r"\textbf" not in rloo and "(unpaired)" in rloo and r"lr 2 $\to$ 8" in rloo
    assert r"a\_1.yaml" in lines[-1] and "_" not in lines[-1].replace(r"\_", "")
