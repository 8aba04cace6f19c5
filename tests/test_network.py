"""The network in the pipeline (issue 35): its config, its jobs' files, the same bits however run.

A micro network (1 layer, d 16) on the tiny task: the base of 20 steps is far from the toy's
reference, which these tests do not need; what they check is that the files are what the
pipeline promises and that a row's numbers depend on its spec alone.
"""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch
import yaml
from conftest import REPO, run_snakemake, same_table

from rlvr import config as C
from rlvr import io
from rlvr.net.specs import NET_FILES, base_files
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


def test_a_config_asks_for_a_base_a_seed_and_a_job_a_row_and_bad_rows_are_refused(tmp_path):
    bases, rows = C.network_jobs(C.load_config(micro_config(tmp_path)))
    assert [(b.n_layer, b.d_model, b.n_head, b.steps, b.seed) for b in bases] == \
        [(1, 16, 2, 20, s) for s in (0, 1)]
    agg = "seq-mean-token-sum-norm"
    assert [(r.method, r.seeds, r.optimizer, r.loss_agg) for r in rows] == \
        [("grpo", (0, 1), "adam", agg), ("none", (0, 1), "adam", agg)]
    assert len({r.path for r in rows}) == 2 and all(r.path.startswith("network/") for r in rows)
    assert C.network_jobs(C.load_config(TINY)) == ([], [])  # off: nothing planned
    # a row's own G and prompts a step (the same answers a step in other groups), in its path
    _, (own,) = C.network_jobs(C.load_config(micro_config(tmp_path, rows=[
        {"method": "grpo", "lr": 0.01, "G": 2, "prompts_per_step": 8}])))
    assert (own.G, own.prompts_per_step) == (2, 8) and "_G2_n8_" in own.path
    for rows, key, message in (
            ([{"method": "learned", "lr": 0.01}], "network.rows[0].method", "'learned' needs baseline"),
            ([{"method": "grpo", "lr": 0.01, "optimizer": "rmsprop"}], "network.rows[0].optimizer",
             "rmsprop"),
            ([{"method": "grpo", "lr": 0.01}, {"method": "grpo", "lr": 0.01}], "network.rows[1]",
             "duplicates"),
            ([{"method": "grpo", "lr": -1}], "network.rows[0].lr", ""),
            ([{"method": "grpo", "lr": 0.01, "G": 1}], "network.rows[0].G", "G = 1 is too small"),
            ([{"method": "grpo", "lr": 0.01, "sampler_lag": 2**63 - 1}], "network.rows[0].sampler_lag",
             "exceeds network.steps = 4"),
            ([{"method": "grpo", "lr": 0.01, "prompts_per_step": 500}], "network.rows[0].prompts_per_step",
             "exceeds the number of prompts"),
            ([{"method": "grpo", "lr": 0.01}, {"method": "grpo", "lr": 0.01, "G": 4}], "network.rows[1]",
             "duplicates")):  # G 4 is the section's: the same row
        with pytest.raises(C.ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")) as err:
            C.load_config(micro_config(tmp_path, rows=rows))
        assert message in str(err.value)
    with pytest.raises(C.ConfigError, match="network.model.d_model"):
        C.load_config(micro_config(tmp_path, model={"n_layer": 1, "d_model": 10, "n_head": 4}))
    with pytest.raises(C.ConfigError, match=r"network\.max_len: 6 is shorter than the longest candidate"):
        C.load_config(micro_config(tmp_path, max_len=6))
    # one base for every seed is gone: a seed's base is its own, and the error says so
    with pytest.raises(C.ConfigError, match=r"network\.base: 'seed' is gone: network seed s starts from"):
        C.load_config(micro_config(tmp_path, base={"steps": 20, "seed": 0}))


def test_a_network_row_takes_exactly_the_objective_knobs_its_trainer_reads():
    """NET_OBJECTIVE (rlvr/net/specs.py) is what rlvr/net/objective.py and rlvr/net/train.py read off
    the Objective: a knob the trainer does not read is no network row's (tests/test_recipe.py adds
    one and sees a network row that sets it refused by name)."""
    import re

    from rlvr.knobs import OBJECTIVE
    from rlvr.net.specs import NET_OBJECTIVE

    source = "".join((REPO / "rlvr" / "net" / f).read_text() for f in ("objective.py", "train.py"))
    read = set(re.findall(r"\bobj\.(\w+)", source)) & set(OBJECTIVE)
    assert read == set(NET_OBJECTIVE), (read ^ set(NET_OBJECTIVE))


def test_a_rows_numbers_are_the_same_bits_alone_packed_and_rerun():
    """Seed 1 trained beside seed 0 or alone (each from its own base): every file's rows of seed
    1 the same bits; and a second run of the pair, the same bits again (one torch thread). The
    two bases differ: a seed's base is a draw of its own."""
    from rlvr.net import base as net
    from rlvr.net.results import row_columns

    task = make_task(P=8, M=4, seed=0)
    cfg = C.validate_config({**yaml.safe_load(TINY.read_text()), "network": MICRO})
    base_specs, rows = C.network_jobs(cfg)
    made = [net.base_columns(task, spec) for spec in base_specs]
    for spec, (_, prompts) in zip(base_specs, made):
        assert len(prompts["p_correct"]) == 8 and np.all(prompts["mass_on_candidates"] <= 1 + 1e-6)
        assert set(prompts["seed"]) == {spec.seed}
    assert not np.array_equal(made[0][1]["p_correct"], made[1][1]["p_correct"])
    cfg_of = net.model_of(base_specs[0])
    start = net.stack_bases([params for params, _ in made], cfg_of, ["seed 0", "seed 1"])
    row = rows[0]
    pair, _ = row_columns(task, row, start)
    again, _ = row_columns(task, row, start)
    alone, _ = row_columns(task, row.__class__(**{**row.__dict__, "seeds": (1,)}),
                           net.stack_bases([made[1][0]], cfg_of, ["seed 1"]))
    for kind in NET_FILES:
        a, b = pa.table(pair[kind]), pa.table(again[kind])
        assert same_table(a, b), kind
        one = a.filter(pa.compute.equal(a["seed"], 1))
        assert one.num_rows and same_table(one, pa.table(alone[kind])), kind


@pytest.mark.slow
def test_the_pipeline_writes_the_in_process_numbers_bound_as_planned_and_refuses_a_foreign_base(
        tmp_path, capsys):
    """Snakemake's network jobs write what the network's functions compute in this process, each
    file bound to the identity the plan gives it; a base of another model is refused by the
    training job, naming the file, before anything is written."""
    from rlvr import binding, codeversion
    from rlvr.net.base import base_columns, model_of, stack_bases
    from rlvr.net.results import row_columns
    from rlvr.net.specs import plan_steps
    from rlvr.task import read_task

    config = micro_config(tmp_path)
    work = tmp_path / "work"
    targets = [f"results/{io.RESULT_FILES[key]}" for key in ("net_base", *io.NET_PARTS)]
    run_snakemake("-s", REPO / "Snakefile", "--configfile", config, "--directory", work, "-c2", *targets)
    results = work / "results"
    cfg = C.load_config(config)
    task = read_task(results / "task.parquet")
    base_specs, jobs = C.network_jobs(cfg)
    made = {spec.seed: base_columns(task, spec) for spec in base_specs}
    for seed, (params, prompts) in made.items():
        names = base_files(seed)
        assert same_table(io.read_arrow(results / f"{names[0]}.parquet"), pa.table(params))
        assert same_table(io.read_arrow(results / f"{names[1]}.parquet"), pa.table(prompts))
    assert same_table(io.read_arrow(results / io.RESULT_FILES["net_base"]),
                      pa.concat_tables([pa.table(made[seed][1]) for seed in sorted(made)]))
    for job in jobs:
        start = stack_bases([made[seed][0] for seed in job.seeds], model_of(base_specs[0]), job.seeds)
        tables, _ = row_columns(task, job, start)
        for kind in NET_FILES:
            assert same_table(io.read_arrow(results / f"{job.path}.{kind}.parquet"), pa.table(tables[kind]))
        assert set(tables["batch"]["reward"]) == {job.reward}  # the row's reward function, not a statistic
    code = lambda stage, methods=(): codeversion.code_version(stage, tuple(methods))  # noqa: E731
    steps = binding.plan(cfg, [], [], [], code) | plan_steps(base_specs, jobs, code)
    ids = binding.identities(steps)
    for name in [*(name for seed in made for name in base_files(seed)),
                 *(f"{job.path}.{kind}" for job in jobs for kind in NET_FILES),
                 *(binding.NAMES[key] for key in ("net_base", *io.NET_PARTS))]:
        assert binding.carried(results / f"{name}.parquet") == ids[name], name
    rows = io.read_arrow(results / f"{io.RESULT_FILES['net_curves']}").to_pandas()
    assert set(rows["method"]) == {"grpo", "none"} and set(rows["seed"]) == {0, 1}
    assert set(rows["level"]) == {"very_hard", "hard", "medium", "easy", "all"}
    # rlvr.load_rows reads a config's network rows from their own files: what the aggregate holds
    from rlvr import load_rows

    loaded = load_rows(results, config, experiment="network", kind="curve")
    pd.testing.assert_frame_equal(loaded.reset_index(drop=True), rows.reset_index(drop=True))
    with pytest.raises(ValueError, match="kinds a network training job writes: batch, curve, passk, prompts"):
        load_rows(results, config, experiment="network", kind="run")
    # a base made for another model, put in place of this one: refused before training
    other = C.network_jobs(C.load_config(micro_config(tmp_path, model={"n_layer": 1, "d_model": 8,
                                                                        "n_head": 2})))[0]
    foreign = tmp_path / "other" / f"{base_files(1)[0]}.parquet"
    io.write_table(foreign, base_columns(task, other[1])[0], io.bound(base_files(1)[0], "0" * 32))
    from rlvr.cli import main

    code = main(["net_train", "--spec", to_json(jobs[0]), "--task", str(results / "task.parquet"),
                 "--bases", str(results / f"{base_files(0)[0]}.parquet"), str(foreign),
                 "--results", str(tmp_path / "foreign")])
    assert code == 2 and "seed1.parquet: the base of another model" in capsys.readouterr().err
    assert not (tmp_path / "foreign").exists()
    code = main(["net_train", "--spec", to_json(jobs[0]), "--task", str(results / "task.parquet"),
                 "--bases", str(foreign), "--results", str(tmp_path / "foreign")])  # a base short
    assert code == 2 and "--bases: 1 files for the 2 seeds [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "foreign").exists()
    # a seed added: each row trains the new seed alone, its first seeds' files are kept
    more = micro_config(tmp_path, seeds=[0, 1, 2])
    assert [job.seeds for job in C.network_jobs(C.load_config(more), results)[1]] == [(0, 1), (2,)] * 2
    from test_pipeline import job_counts, snakemake

    planned = job_counts(snakemake(work, "-n", config=more).stdout)
    assert planned.get("network") == 2 and planned.get("network_base") == 1, planned  # seed 2's alone
    # `rlvr clean` with a config that no longer has the REINFORCE row: its files, its log and the
    # aggregates that hold its rows go; GRPO's row and the base stay
    fewer = micro_config(tmp_path, rows=[{"method": "grpo", "lr": 0.01}])
    dropped = next(job for job in jobs if job.method == "none")
    assert (work / "logs" / f"{dropped.path}.log").exists()
    assert main(["clean", "--results", str(results), "--logs", str(work / "logs"), "--config", str(fewer),
                 "--yes"]) == 0
    assert not list(results.glob(f"{dropped.path}.*"))
    assert not (work / "logs" / f"{dropped.path}.log").exists()
    kept = next(job for job in jobs if job.method == "grpo")
    assert all((results / f"{kept.path}.{kind}.parquet").exists() for kind in NET_FILES)
    assert all((results / f"{name}.parquet").exists() for seed in made for name in base_files(seed))
    assert not (results / io.RESULT_FILES["net_curves"]).exists()
    assert (results / io.RESULT_FILES["net_base"]).exists()  # an aggregate under network/, the config's own


def test_the_network_demo_is_given_the_toy_rows_it_reads_alone(tmp_path):
    """Demo 17 reads the toy rows its `reads` takes (of the demos it READS) and no other
    (Demo.frames): a change of another toy row leaves its stamp, and so its files, as they were
    (rlvr/jobs/render.py); a change of one it reads draws it again."""
    import dataclasses

    import pandas as pd

    from rlvr.demos import DEMOS, network
    from rlvr.jobs.render import stamp

    rows = C.train_rows(C.load_config(micro_config(tmp_path)))
    runs = pd.DataFrame([{k: v for k, v in dataclasses.asdict(row).items() if not isinstance(v, tuple)}
                         for row in rows]).assign(seed=0, final_pass1=0.5)
    demo = next(d for d in DEMOS if d.module is network)
    given = demo.frames({"runs": runs})["runs"]
    read = [row for row in rows if row.experiment in network.READS and network.reads(row)]
    assert 0 < len(read) < len([row for row in rows if row.experiment in network.READS])
    assert sorted(zip(given["experiment"], given["method"], given["lr"])) == \
        sorted((row.experiment, row.method, row.lr) for row in read)
    before = stamp(demo, demo.frames({"runs": runs}), "en", "code")
    other = next(i for i, row in enumerate(rows) if row not in read)
    taken = next(i for i, row in enumerate(rows) if row in read)
    for i, same in ((other, True), (taken, False)):
        changed = runs.copy()
        changed.loc[i, "final_pass1"] = 0.75
        assert (stamp(demo, demo.frames({"runs": changed}), "en", "code") == before) is same


def test_a_network_too_long_for_max_hours_is_refused_naming_the_key_that_grew_it(tmp_path):
    """The refusal names the knob that made the estimate large, each of those it grows with."""
    for network, key in (({"steps": 10**8}, "network.steps: 100,000,000"),
                         ({"base": {"steps": 10**9, "batch": 32}}, "network.base.steps")):
        with pytest.raises(C.ConfigError) as err:
            C.load_config(micro_config(tmp_path, **network))
        assert f"config key {key}" in str(err.value) and "would make the config run" in str(err.value)


def test_a_network_too_large_for_the_machines_memory_is_refused_naming_the_knob_that_grew_it(tmp_path):
    """The network configs that crashed with an allocator's traceback: refused at parse, each
    naming its knob (rlvr/budget.py network_mb: above every peak measured, by 14-35%). (d_model
    4096, whose base Arrow could not write while it was a row per value, is a tensor a row now,
    and accepted: its base peaked at 11 GB, estimated 21.5 GiB.)"""
    for network, key in (({"model": {"n_layer": 2, "d_model": 16384, "n_head": 2}}, "network.model.d_model"),
                         ({"model": {"n_layer": 2, "d_model": 8192, "n_head": 2}}, "network.model.d_model"),
                         ({"model": {"n_layer": 10**9, "d_model": 16, "n_head": 2}}, "network.model.n_layer"),
                         ({"base": {"steps": 20, "batch": 3_000_000}}, "network.base.batch"),
                         ({"G": 2_000_000}, "network.G")):
        with pytest.raises(C.ConfigError) as err:
            C.load_config(micro_config(tmp_path, **network))
        assert f"config key {key}: " in str(err.value) and "GiB, more than this machine's" in str(err.value)


def test_psrs_pass_at_k_is_read_where_its_pass1_reaches_a_target_linearly_between_records():
    """demo 17's NSR − PSR at equal pass@1 reads PSR's pass@k where its curve first reaches NSR's
    final pass@1: by hand on a synthetic row, records at steps 0, 10, 20."""
    from rlvr.demos import network as N

    row = {**N._net("psr"), "G": 8, "prompts_per_step": 32, "lr": 1e-4}
    steps, p1 = [0, 10, 20], {0: [0.2, 0.4, 0.6], 1: [0.2, 0.3, 0.5]}
    pk = {0: [0.9, 0.8, 0.7], 1: [0.9, 0.85, 0.6]}
    curves = pd.DataFrame([{**row, "seed": s, "step": t, "level": "all", "pass1": p1[s][i]}
                           for s in p1 for i, t in enumerate(steps)])
    passk = pd.DataFrame([{**row, "seed": s, "step": t, "k": 256, "pass_at_k": pk[s][i]}
                          for s in pk for i, t in enumerate(steps)])
    frames = {"net_curves": curves, "net_passk": passk}
    psr = {**N._net("psr"), "lr": 1e-4}
    got = N._at_pass1(frames, psr, 256, pd.Series([0.5, 0.7], index=[0, 1]))
    # seed 0: 0.5 is halfway from 0.4 (step 10) to 0.6 (step 20): pass@k halfway from 0.8 to 0.7
    assert got[0] == pytest.approx(0.75) and np.isnan(got[1])  # seed 1 never reaches 0.7
    assert N._at_pass1(frames, psr, 256, pd.Series([0.1], index=[1]))[0] == 0.9  # reached at the start


def test_a_verdict_on_ten_seeds_is_stated_only_where_both_sets_of_five_agree():
    """seed_sets splits 10 seeds (each its own base) into 0-4 and 5-9, and 9 into none (a half of
    4 is below the 5 seeds a verdict needs); the verdict is the sets' where they agree, else
    'not replicated', whatever the difference over all ten says."""
    from rlvr import claims as K
    from rlvr.demos import network as N

    def frames(seeds):
        return {"net_passk": pd.DataFrame({"seed": seeds}), "runs": pd.DataFrame({"seed": [0]})}

    assert N.seed_sets(frames(list(range(9, -1, -1)))) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert N.seed_sets(frames(list(range(9)))) == [list(range(9))]
    f = frames([0, 7, 3])
    assert list(N._on_seeds(f, [0, 3])["net_passk"]["seed"]) == [0, 3]
    assert N._on_seeds(f, [0])["runs"] is f["runs"]  # the toy's rows untouched
    L = {**N.TEXT["en"]}
    toy = K.Difference(0.1, 0.001, 10)
    up, down, flat = K.Difference(0.05, 0.001, 5), K.Difference(-0.05, 0.001, 5), K.Difference(0.05, 0.1, 5)
    both = K.Difference(0.05, 0.001, 10)
    assert N.verdict(toy, both, L, [(up, [0]), (up, [1])]) == L["transfers"]
    assert N.verdict(toy, both, L, [(down, [0]), (down, [1])]) == L["fails"]
    assert N.verdict(toy, both, L, [(up, [0]), (flat, [1])]) == L["unreplicated"]
    assert N.verdict(toy, both, L, [(up, [0]), (down, [1])]) == L["unreplicated"]
    assert N.verdict(toy, both, L, [(flat, [0]), (flat, [1])]) == L["unresolved"]
    assert N.verdict(toy, both, L) == L["transfers"]  # one set: the difference over all seeds
    assert N.verdict(toy, both, L, [(up, [0]), (N._NO_SEEDS, [1])]) == L["unreplicated"]  # rows lack a set


def test_each_prediction_is_judged_at_every_lr_its_rows_share_and_the_table_names_the_largest(monkeypatch):
    """A prediction whose rows the results hold at two lrs is judged at each (the scan); one at a
    single lr is not repeated there; the main verdict reads the largest lr."""
    from rlvr import claims as K
    from rlvr.demos import network as N

    seeds = np.tile(np.arange(5), 2)
    lr = np.repeat([1e-4, 3e-4], 5)
    frames = {"net_passk": pd.DataFrame({"seed": seeds, "lr": lr, "v": 1.0 + lr * 1e4 + seeds * 0.01})}

    def at_largest(f):
        here = f["net_passk"]
        if not len(here):
            return None
        top = here[here["lr"] == here["lr"].max()]
        return K.over_seeds(top["v"]), f"Adam lr {top['lr'].iloc[0]:g}: x"

    def only_3e4(f):
        here = f["net_passk"]
        return at_largest(f) if (here["lr"] == 3e-4).any() else None

    toy = lambda f: (K.Difference(1.0, 0.01, 5), "toy")  # noqa: E731
    monkeypatch.setattr(N, "PREDICTIONS", (N.Prediction("two", {"en": "two"}, toy, at_largest),
                                           N.Prediction("one", {"en": "one"}, toy, only_3e4)))
    monkeypatch.setattr(N, "_LAST", [None, (), None])
    out, by_lr = N._verdicts(frames)
    assert [(p.key, net[1]) for p, _, net, _ in out] == \
        [("two", "Adam lr 0.0003: x"), ("one", "Adam lr 0.0003: x")]
    assert [(p.key, net[1], round(net[0].mean, 6)) for p, _, net, _ in by_lr] == \
        [("two", "Adam lr 0.0001: x", 2.02), ("two", "Adam lr 0.0003: x", 4.02)]


def test_a_diverged_network_or_base_is_an_error_naming_its_row_and_seed():
    """lr 1e9 makes the network's parameters non-finite within a few steps: the row stops with
    'training diverged at step N (seed s)', named by its row, as the toy's does (its job then
    exits 2 before writing, as every job on a FloatingPointError); a base whose lr overflows its
    parameters stops the same way, naming network.base.lr."""
    from rlvr.net import base as net
    from rlvr.net.results import row_columns

    task = make_task(P=8, M=4, seed=0)
    cfg = C.validate_config({**yaml.safe_load(TINY.read_text()), "network": MICRO})
    (base_spec, _), rows = C.network_jobs(cfg)
    params, _ = net.base_columns(task, base_spec)
    start = net.params_from_columns(params, net.model_of(base_spec))  # seed 0's base, for both seeds
    none = next(row for row in rows if row.method == "none")  # an offset: every answer moves it
    for optimizer in ("adam", "sgd"):
        row = none.__class__(**{**none.__dict__, "lr": 1e9, "optimizer": optimizer, "reward_offset": 1.0})
        with pytest.raises(FloatingPointError, match=r"network row network/none/lr1000000000\.0_.*: training "
                           r"diverged at step \d+ \(seed [01]\): .* lower lr"):
            row_columns(task, row, start)
    with pytest.raises(FloatingPointError, match=r"the base diverged at step \d+ \(seed 0\).*base\.lr"):
        net.base_columns(task, base_spec.__class__(**{**base_spec.__dict__, "lr": 1e30}))


def test_a_row_whose_mass_leaves_the_candidates_is_named_a_collapse_not_a_transfer():
    """demo 17: a network row whose mass on the candidates ends below half its start's has
    collapsed, and the verdict says so whatever the signs; a row that keeps its mass is judged
    as before. Synthetic curves, two rows of 5 seeds."""
    from rlvr import claims as K
    from rlvr.demos import network as N

    def row(offset, final_mass):
        knobs = {**N._net("none", "sgd"), "G": 8, "prompts_per_step": 32, "lr": 0.03, "reward_offset": offset}
        return [{**knobs, "seed": s, "step": t, "level": "all", "mass_on_candidates": m}
                for s in range(5) for t, m in ((0, 0.9), (60, final_mass))]

    frames = {"net_curves": pd.DataFrame(row(5.0, 0.1) + row(0.0, 0.85))}
    offset5 = {**N._net("none", "sgd"), "lr": 0.03, "reward_offset": 5.0}
    kept = {**N._net("none", "sgd"), "lr": 0.03}
    assert N._collapsed(frames, kept) == ""
    named = N._collapsed(frames, offset5, kept)
    assert "offset 5" in named and "0.900 → 0.100" in named and "offset 0" not in named
    L = {**N.TEXT["en"]}
    toy, net = K.Difference(-0.4, 0.01, 5), K.Difference(-0.5, 0.01, 5)
    assert N.verdict(toy, net, L) == L["transfers"]
    assert N.verdict(toy, net, L, collapsed=named) == L["collapse"].format(what=named)


def test_the_answers_sampled_at_a_record_are_the_policys_and_leave_training_alone(monkeypatch):
    """At each record the trainer samples 4 answers a prompt on a stream of its own: the share of
    them off the candidates agrees with the exact mass off them (1 − the candidates' summed
    probability) within 4 standard errors (binomial over the 800 answers of a model, fixed seeds),
    the lengths are what sampled_stats says, and training's own bits are those of a run that
    records nothing."""
    from rlvr.net import results
    from rlvr.net import train as T
    from rlvr.net.model import Config
    from rlvr.net.tokens import make_token_task

    ttask, cfg = make_token_task(make_task()), Config(n_layer=1, d_model=16, n_head=2)
    out = T.train(cfg, ttask, [(0,), (1,)], "grpo", steps=2, n=4, G=4, lr=0.01, record_every=1)
    y, n_tok = out["sampled"], out["sampled_len"]  # [R, E, P, 4]
    assert y.shape == (3, 2, 200, T.RECORD_ANSWERS) and set(np.unique(y)) <= set(range(-1, 16))
    from rlvr import budget

    assert budget.RECORD_ANSWERS == T.RECORD_ANSWERS  # the cost estimate counts what the trainer samples
    off = 1 - out["probs"].sum(axis=-1).mean(axis=-1)  # [R, E]: exact
    share = (y < 0).mean(axis=(2, 3))
    se = np.sqrt(off * (1 - off) / (200 * T.RECORD_ANSWERS))
    assert np.all(np.abs(share - off) < 4 * se + 1e-12)
    stats = results.sampled_stats(y, n_tok.astype(float), [np.ones(200, bool)])
    wrong = y[2, 1] != 0
    assert stats["off_share"][2, 1, 0] == share[2, 1]
    assert stats["length_wrong_all"][2, 1, 0] == pytest.approx(n_tok[2, 1][wrong].mean())
    se_wrong = n_tok[2, 1][wrong].std(ddof=1) / np.sqrt(wrong.sum())
    assert stats["length_wrong_all_se"][2, 1, 0] == pytest.approx(se_wrong)

    monkeypatch.setattr(T, "record_sample", lambda *args, **kw: (np.zeros((2, 200, 4)),) * 2)
    alone = T.train(cfg, ttask, [(0,), (1,)], "grpo", steps=2, n=4, G=4, lr=0.01, record_every=1)
    for name, p in out["params"].items():
        assert torch.equal(p, alone["params"][name])
    assert np.array_equal(out["probs"], alone["probs"])
