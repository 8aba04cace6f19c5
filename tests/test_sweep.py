"""Your own sweep plotted (rlvr/sweep.py, `python -m rlvr plot`) from the runs a config trained."""

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import PYTHON, run

from rlvr.compute import load_rows
from rlvr.sweep import sweep_table


def test_a_sweep_is_the_mean_and_standard_error_over_seeds_of_the_configs_runs(tiny_run):
    results = tiny_run / "results"
    runs = load_rows(results, experiment="lr_sweep")
    table = sweep_table(runs, "lr", "final_pass1", by="method")
    every = pq.read_table(results / "runs.parquet").to_pandas().query("experiment == 'lr_sweep'")
    assert {b for _, b in table} == set(every["method"]) and len(table) > 1
    for (_, method), stats in table.items():
        for lr, row in stats.iterrows():
            seeds = every[(every["method"] == method) & (every["lr"] == lr)]["final_pass1"].to_numpy()
            assert row["n"] == len(seeds) > 1
            assert row["mean"] == pytest.approx(seeds.mean(), abs=1e-12)
            assert row["se"] == pytest.approx(seeds.std(ddof=1) / np.sqrt(len(seeds)), abs=1e-12)


@pytest.mark.slow
def test_a_sweep_names_what_it_cannot_plot_before_drawing(tiny_run, tmp_path):
    runs = load_rows(tiny_run / "results", experiment="lr_sweep")
    with pytest.raises(ValueError, match="--x learning_rate: not a key of the runs; the keys: experiment"):
        sweep_table(runs, "learning_rate", "final_pass1")
    with pytest.raises(ValueError, match="--y pass1: not a value of the runs; the values: .*final_pass1"):
        sweep_table(runs, "lr", "pass1", by="method")
    with pytest.raises(ValueError, match="the runs differ in method, which the sweep does not name"):
        sweep_table(runs, "lr", "final_pass1")
    out = tmp_path / "figs" / "lr"
    proc = run([PYTHON, "-m", "rlvr", "plot", "--results", str(tiny_run / "results"), "--experiment",
                "lr_sweep", "--x", "lr", "--by", "method", "--out", str(out)])
    assert proc.stdout.split() == [f"{out}.png", f"{out}.pdf"]
    assert (tmp_path / "figs" / "lr.png").stat().st_size > 0
    proc = run([PYTHON, "-m", "rlvr", "plot", "--results", str(tiny_run / "results"), "--x", "lr",
                "--out", str(tmp_path / "bad")], check=False)
    assert proc.returncode == 2 and "the runs differ in" in proc.stderr and not list(tmp_path.glob("bad*"))
