"""The network in the pipeline (issue 35): its config, its jobs' files, the same bits however run.

A micro network (1 layer, d 16) on the tiny task: the base of 20 steps is far from the toy's
reference, which these tests do not need; what they check is that the files are what the
pipeline promises and that a row's numbers depend on its spec alone.
"""

import numpy as np
import pyarrow as pa
import pytest
import yaml
from conftest import PYTHON, REPO, run, same_table

from rlvr import config as C
from rlvr import io
from rlvr.net.specs import BASE, BASE_PROMPTS, NET_FILES
from rlvr.specs import to_json
from rlvr.task import make_task

TINY = REPO / "config" / "test.yaml"
MICRO = {"enabled": True, "model": {"n_layer": 1, "d_model": 16, "n_head": 2},
         "base": {"steps": 20, "batch": 32}, "steps": 4, "prompts_per_step": 4, "G": 4, "eval_every": 2,
         "seeds": [0, 1],
         "rows": [{"method": ["grpo", "none"], "lr": 0.01}]}


def micro_config(tmp_path, **network):
    """config/test.yaml with the micro network on (network: its keys over MICRO's): the path."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg["network"] = {**MICRO, **network}
    path = tmp_path / "network.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_config_asks_for_a_base_and_a_job_a_row_and_bad_rows_are_refused(tmp_path):
    base, rows = C.network_jobs(C.load_config(micro_config(tmp_path)))
    assert (base.n_layer, base.d_model, base.n_head, base.steps) == (1, 16, 2, 20)
    agg = "seq-mean-token-sum-norm"
    assert [(r.method, r.seeds, r.optimizer, r.loss_agg) for r in rows] == \
        [("grpo", (0, 1), "adam", agg), ("none", (0, 1), "adam", agg)]
    assert len({r.path for r in rows}) == 2 and all(r.path.startswith("network/") for r in rows)
    assert C.network_jobs(C.load_config(TINY)) == (None, [])  # off: nothing planned
    for rows, key, message in (
            ([{"method": "learned", "lr": 0.01}], "network.rows[0].method", "'learned' needs baseline"),
            ([{"method": "grpo", "lr": 0.01, "optimizer": "rmsprop"}], "network.rows[0].optimizer",
             "rmsprop"),
            ([{"method": "grpo", "lr": 0.01}, {"method": "grpo", "lr": 0.01}], "network.rows[1]",
             "duplicates"),
            ([{"method": "grpo", "lr": -1}], "network.rows[0].lr", "")):
        with pytest.raises(C.ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")) as err:
            C.load_config(micro_config(tmp_path, rows=rows))
        assert message in str(err.value)
    with pytest.raises(C.ConfigError, match="network.model.d_model"):
        C.load_config(micro_config(tmp_path, model={"n_layer": 1, "d_model": 10, "n_head": 4}))


def test_a_rows_numbers_are_the_same_bits_alone_packed_and_rerun():
    """Seed 1 trained beside seed 0 or alone: every file's rows of seed 1 the same bits; and a
    second run of the pair, the same bits again (one torch thread)."""
    from rlvr.net import base as net
    from rlvr.net.results import row_columns

    task = make_task(P=8, M=4, seed=0)
    cfg = C.validate_config({**yaml.safe_load(TINY.read_text()), "network": MICRO})
    base_spec, rows = C.network_jobs(cfg)
    params, prompts = net.base_columns(task, base_spec)
    assert len(prompts["p_correct"]) == 8 and np.all(prompts["mass_on_candidates"] <= 1 + 1e-6)
    start = net.params_from_columns(params["name"], params["value"], net.model_of(base_spec))
    row = rows[0]
    pair, _ = row_columns(task, row, start)
    again, _ = row_columns(task, row, start)
    alone, _ = row_columns(task, row.__class__(**{**row.__dict__, "seeds": (1,)}), start)
    for kind in NET_FILES:
        a, b = pa.table(pair[kind]), pa.table(again[kind])
        assert same_table(a, b), kind
        one = a.filter(pa.compute.equal(a["seed"], 1))
        assert one.num_rows and same_table(one, pa.table(alone[kind])), kind


def test_the_pipeline_writes_the_in_process_files_and_refuses_a_foreign_base(tmp_path):
    """Snakemake's network jobs and `python -m rlvr all` write the same files, bound to the same
    identities; a base of another config is refused by the training job, naming the file."""
    config = micro_config(tmp_path)
    work = tmp_path / "work"
    targets = [f"results/{io.RESULT_FILES[key]}" for key in ("net_base", *io.NET_PARTS)]
    run([PYTHON, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--configfile", str(config),
         "--directory", str(work), "-c2", *targets])
    out = tmp_path / "in_process"
    run([PYTHON, "-m", "rlvr", "all", "--config", str(config), "--results", str(out)])
    for target in targets:
        name = target.removeprefix("results/")
        assert (work / target).read_bytes() == (out / name).read_bytes(), name
    from test_render import check_declared_reads

    from rlvr.compute import read_results
    from rlvr.demos import DEMOS, network

    frames = read_results(out)  # demo 17 reads only what its FRAMES declare
    check_declared_reads(frames, [demo for demo in DEMOS if demo.module is network], tmp_path / "tables")
    assert {c.key for c in network.claims(frames)} <= set(network.CLAIMS)
    rows = io.read_arrow(work / f"results/{io.RESULT_FILES['net_curves']}").to_pandas()
    assert set(rows["method"]) == {"grpo", "none"} and set(rows["seed"]) == {0, 1}
    assert set(rows["level"]) == {"very_hard", "hard", "medium", "easy", "all"}
    assert ((rows["pass1"] >= 0) & (rows["pass1"] <= 1)).all()
    # a base made for another model, put in place of this one: refused before training
    _, jobs = C.network_jobs(C.load_config(config))
    other = micro_config(tmp_path, model={"n_layer": 1, "d_model": 8, "n_head": 2})
    spec_other = C.network_jobs(C.load_config(other))[0]
    from rlvr.net.base import base_columns

    params, _ = base_columns(make_task(P=8, M=4, seed=0), spec_other)
    foreign = tmp_path / "other" / f"{BASE}.parquet"
    io.write_table(foreign, params, io.bound(BASE, "0" * 32))
    proc = run([PYTHON, "-m", "rlvr", "net_train", "--spec", to_json(jobs[0]),
                "--task", str(work / "results/task.parquet"), "--base", str(foreign),
                "--results", str(tmp_path / "foreign")], check=False)
    assert proc.returncode == 2 and "base.parquet: the base of another model" in proc.stderr, proc.stderr
    assert not (tmp_path / "foreign").exists()
    assert BASE_PROMPTS == io.RESULT_FILES["net_base"].removesuffix(".parquet")


def test_a_network_too_long_for_max_hours_is_refused_naming_its_key(tmp_path):
    config = micro_config(tmp_path, steps=10**8)
    with pytest.raises(C.ConfigError, match=r"config key network\.steps: 100,000,000 would make the config "):
        C.load_config(config)
