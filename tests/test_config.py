"""Bad configs are refused with a message naming the key, before any work is done."""

import copy
import math
import re
from collections import Counter

import pandas as pd
import pytest
import yaml

from rlvr.config import (
    ConfigError,
    gradstat_cases,
    gradstat_jobs,
    load_config,
    merge,
    train_rows,
    validate_config,
    values_problems,
)
from rlvr.demos import DEMOS
from rlvr.objective import Objective

ROW = {"method": "rloo", "lr": 2.0}

# (config, key the message must name, a phrase saying what is allowed or wrong)
BAD = [
    ({"training": {"rows": [{"method": "ppo", "lr": 1.0}]}}, "training.rows[0].method", "allowed: none"),
    # issue 26: a near miss is named
    ({"training": {"rows": [{"method": "dr-grpo", "lr": 1.0}]}}, "training.rows[0].method",
     "unknown method 'dr-grpo' (did you mean 'dr_grpo'?)"),
    ({"training": {"rows": [{"method": "grpo", "lr": 1.0, "reward_ofset": 1.0}]}}, "training.rows[0]",
     "unknown key 'reward_ofset' (did you mean 'reward_offset'?)"),
    ({"lang": "zn"}, "lang", "'zn' is not one of 'en', 'zh'"),
    ({"training": {"rows": [{"method": "rloo", "lr": -1.0}]}}, "training.rows[0].lr",
     "-1.0 is not allowed: it must be > 0"),
    ({"training": {"rows": [{"method": "rloo", "lr": 0}]}}, "training.rows[0].lr",
     "0 is not allowed: it must be > 0"),
    ({"training": {"G": 1, "rows": [ROW]}}, "training.G", "rloo needs G >= 2"),
    ({"group_size": {"G": [2, 256], "answers_per_step": 128}}, "group_size.G[1]", "must divide"),
    ({"group_size": {"G": [3]}}, "group_size.G[0]", "must divide"),
    ({"training": {"seeds": [0, 1.5]}}, "training.seeds[1]", "integer"),
    ({"training": {"seeds": [0, 1.0]}}, "training.seeds[1]", "integer"),
    ({"training": {"rows": [{"lr": 1.0}]}}, "training.rows[0]", "'method' is a required property"),
    ({"trainingg": {}}, "(top level)",
     "unknown key 'trainingg' (did you mean 'training'?); the keys here are: lang, task"),
    ({"training": {"step": 300}}, "training", "unknown key 'step' (did you mean 'steps'?)"),
    ({"training": {"steps": "300"}}, "training.steps", "'300' is not an integer"),
    ({"training": {"rows": []}}, "training.rows", "is empty; give at least one value"),
    ({"training": {"seeds": []}}, "training.seeds", "is empty"),
    ({"gradient_stats": {"n_reps": 0}}, "gradient_stats.n_reps", "it must be >= 1"),
    ({"training": {"rows": [{"method": "none", "lr": 1.0, "reward_offset": "five"}]}},
     "training.rows[0].reward_offset", "'five' is not a number"),
    ({"training": {"rows": [{"method": "none", "lr": 1.0, "reward_offset": math.inf}]}},
     "training.rows[0].reward_offset", "not a finite number"),
    ({"training": {"rows": [ROW, {"method": "rloo", "lr": 2}]}},
     "training.rows[1]", "duplicates training.rows[0]"),
    ({"task": {"P": 201}}, "task.P", "multiple of the number of levels"),
    ({"task": {"M": 1}}, "task.M", "it must be >= 2"),
    ({"training": {"prompts_per_step": 500}}, "training.prompts_per_step", "exceeds the number of prompts"),
    ({"task": {"P": 8}, "group_size": {"G": [2]}}, "group_size.G[0]", "more than task.P = 8"),
    ({"lang": "fr"}, "lang", "'en', 'zh'"),
    ({"gradient_stats": {"cases": [{"reward_offsets": [0], "methods": ["grpo"], "levels": ["trivial"]}]}},
     "gradient_stats.cases[0].levels[0]", "very_hard"),
    ({"gradient_stats": {"G": 8, "cases": [{"reward_offsets": [0], "methods": ["nope"],
                                            "levels": ["easy"]}]}},
     "gradient_stats.cases[0].methods[0]", "unknown method"),
    ({"trainer": {"value_lr": 1.5}}, "trainer.value_lr", "1.5 is not allowed: it must be <= 1"),
    ({"training": {"G": 1}}, "training.G", "G = 1 is too small: rloo, grpo"),
    ({"dynamic_sampling": {"G": 1}}, "dynamic_sampling.G", "grpo needs G >= 2"),
    ({"training": {"seeds": [-1]}}, "training.seeds[0]", "it must be >= 0"),
    ({"training": {"seeds": [1, 1]}}, "training.seeds", "non-unique"),
    ({"task": {"answer_length": [500, 100]}}, "task.answer_length", "min <= max"),
    ({"task": {"answer_length": [0, 100]}}, "task.answer_length[0]", "it must be >= 1"),
    ({"training": {"rows": [dict(ROW, epochs=0)]}}, "training.rows[0].epochs", "it must be >= 1"),
    ({"training": {"rows": [dict(ROW, epochs=[1, 2.5])]}},
     "training.rows[0].epochs[1]", "2.5 is not an integer"),
    ({"training": {"rows": [dict(ROW, clip_low=1.0)]}}, "training.rows[0].clip_low", "it must be < 1"),
    ({"training": {"rows": [dict(ROW, clip_c=1.0)]}}, "training.rows[0].clip_c", "it must be > 1"),
    ({"training": {"rows": [dict(ROW, kl_beta=-1)]}}, "training.rows[0].kl_beta", "it must be >= 0"),
    ({"training": {"rows": [dict(ROW, kl_beta=math.nan)]}},
     "training.rows[0].kl_beta", "not a finite number"),
    ({"training": {"rows": [dict(ROW, kl_estimator="k4")]}},
     "training.rows[0].kl_estimator", "'k1', 'k2', 'k3'"),
    ({"training": {"rows": [dict(ROW, kl_placement=["loss", "advantage"])]}},
     "training.rows[0].kl_placement[1]", "'loss', 'reward'"),
    ({"training": {"rows": [dict(ROW, loss_agg="token-sum")]}}, "training.rows[0].loss_agg", "'token-mean'"),
    ({"training": {"rows": [ROW, dict(ROW, epochs=1)]}}, "training.rows[1]", "duplicates training.rows[0]"),
    ({"training": {"rows": [dict(ROW, shared_lr=-0.1)]}}, "training.rows[0].shared_lr", "it must be >= 0"),
    ({"training": {"rows": [dict(ROW, method="nsr", kl_beta=0.1, kl_placement="reward")]}},
     "training.rows[0]", "reads each answer's correctness off its reward"),
    # issue 26: edits of single rows
    ({"training": {"change": [{"where": {"method": "grpo"}, "set": {"lr": 1.0}}]}},
     "training.change[0].where", "picks 3 rows (training.rows[3], training.rows[7], training.rows[9])"),
    ({"training": {"change": [{"where": {"methd": "none"}, "set": {"lr": 1.0}}]}}, "training.change[0]",
     "unknown knob 'methd' (did you mean 'method'?)"),
    ({"training": {"change": [{"where": {"method": "none", "lr": 8.0}, "set": {"lr": -1}}]}},
     "training.rows[8].lr", "-1 is not allowed: it must be > 0"),
    ({"training": {"add": [{"method": "nope", "lr": 1.0}]}}, "training.rows[16].method", "unknown method"),
    ({"task": {"minority": {"levels": ["impossible"]}}}, "task.minority.levels[0]", "very_hard"),
    ({"task": {"minority": {"share": 1.5}}}, "task.minority.share", "it must be <= 1"),
    # issue 23: what used to be accepted and fail after computing
    ({"task": {"seed": 2**63}}, "task.seed", "beyond the 64-bit integers"),
    ({"training": {"seeds": [0, 2**64]}}, "training.seeds[1]", "beyond the 64-bit integers"),
    ({"reference": {"k": [1, 2**63]}}, "reference.k[1]", "beyond the 64-bit integers"),
    ({"task": {"P": 400_000_000}}, "task.P, task.M", "more than this machine's"),
    ({"task": {"M": 100_000_000}}, "task.P, task.M", "more than this machine's"),
    ({"task": {"M": 1000}, "training": {"seeds": list(range(20_000))}}, "training.seeds",
     "fewer seeds per row"),
    # a stale sampler keeps lag + 1 copies of every seed's policy, as many as its steps (16 MB
    # each here; the same rows without the lag fit, and so does the lag over 300 steps)
    ({"task": {"M": 1000}, "off_policy": {"steps": 5000, "rows": [
        {"method": "grpo", "lr": 2.0}, {"method": "grpo", "lr": 2.0, "sampler_lag": [4, 5000]}]}},
     "off_policy.seeds", "a smaller sampler_lag"),
]


def test_a_stale_sampler_is_charged_only_the_copies_its_steps_keep():
    """A lag longer than the run keeps one copy a step, not lag + 1 (the issue's 477 GiB for a
    lag of 1e9 over 10 steps)."""
    rows = [{"method": "grpo", "lr": 2.0}, {"method": "grpo", "lr": 2.0, "sampler_lag": 10**9}]
    assert validate_config({"task": {"M": 1000}, "off_policy": {"steps": 10, "rows": rows}})
    with pytest.raises(ConfigError, match="a smaller sampler_lag"):
        validate_config({"task": {"M": 1000}, "off_policy": {"steps": 5000, "rows": rows}})


@pytest.mark.parametrize("cfg,key,phrase", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_config_names_the_key(cfg, key, phrase):
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    message = str(err.value)
    assert f"config key {key}:" in message, message
    assert phrase in message, message


def test_empty_config_gets_the_lecture_defaults():
    cfg = validate_config({})
    assert cfg["task"] == {"P": 200, "M": 16, "seed": 0, "level_logodds": [-4.5, -3.0, -1.1, 0.6],
                           "logodds_spread": 0.3, "answer_length": [100, 1000],
                           "minority": {"levels": ["very_hard"], "share": 0.5, "wrong_share": 0.5}}
    assert len(cfg["training"]["rows"]) == 16 and cfg["group_size"]["G"] == [2, 4, 8, 16, 32]
    # every demo with a `rows:` list runs its module's rows (a grid counts its combinations) on its
    # module's seeds (rlvr/demos/); demo 4 its 5 group sizes on 40 seeds, dynamic sampling a dynamic
    # and a plain run on 20 (their sections: workflow/schemas/config.schema.yaml)
    rows = train_rows(cfg)
    modules = {demo.name: demo.module.CONFIG for demo in DEMOS if demo.module.ROWS}
    assert Counter(row.experiment for row in rows) == {
        **{name: sum(math.prod(len(v) if isinstance(v, list) else 1 for v in row.values())
                     for row in config["rows"]) for name, config in modules.items()},
        "group_size": 5, "dynamic": 2}
    assert {row.experiment: row.seeds for row in rows} == {
        **{name: tuple(config["seeds"]) for name, config in modules.items()},
        "group_size": tuple(range(40)), "dynamic": tuple(range(20))}
    assert len({row.path for row in rows}) == len(rows)
    # the lecture's rows keep their paths: only an objective other than the default names itself
    assert all(row.row_path.endswith(f"_dyn{row.max_rounds}") for row in rows
               if Objective.of(row) == Objective() and not row.shared_lr and row.correct_answers == 1
               and row.reward == "verifier" and not row.sampler_lag and not row.sampler_noise
               and row.is_correction == "none" and row.optimizer == "sgd")
    # 4 methods x 2 offsets on medium, grpo on the 3 other levels (medium is shared),
    # 6 further estimators x 2 offsets on medium
    assert len(gradstat_cases(cfg)) == 4 * 2 + 3 + 6 * 2
    jobs = gradstat_jobs(cfg)  # one per method, its cases in the config's order
    assert [job.method for job in jobs] == list(dict.fromkeys(case.method for case in gradstat_cases(cfg)))
    assert sum(len(job.cases) for job in jobs) == len(gradstat_cases(cfg))


def test_shipped_config_equals_the_schema_defaults():
    from conftest import REPO

    assert load_config(REPO / "config" / "config.yaml") == validate_config({})
    assert load_config() == validate_config({})  # no file: config/config.yaml alone


def test_the_schema_reads_the_same_with_libyaml_as_with_pure_python():
    """schema() loads the schema file with libyaml's loader where PyYAML has it (faster)."""
    import yaml

    from rlvr.config import SCHEMA_PATH

    text = SCHEMA_PATH.read_text()
    fast = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert fast == yaml.safe_load(text) and "properties" in fast


def test_a_grid_row_expands_to_every_combination_in_order():
    cfg = validate_config({"training": {"rows": [{"method": ["none", "grpo"], "lr": [1.0, 4.0]},
                                                 {"method": "rloo", "lr": 2.0,
                                                  "reward_offset": [0.0, 5.0]}]}})
    rows = [(r.method, r.lr, r.reward_offset) for r in train_rows(cfg) if r.experiment == "training"]
    assert rows == [("none", 1.0, 0.0), ("none", 4.0, 0.0), ("grpo", 1.0, 0.0), ("grpo", 4.0, 0.0),
                    ("rloo", 2.0, 0.0), ("rloo", 2.0, 5.0)]
    with pytest.raises(ConfigError, match=r"config key training.rows\[0\].lr\[1\]: -1"):
        validate_config({"training": {"rows": [{"method": "none", "lr": [1.0, -1]}]}})
    with pytest.raises(ConfigError, match=r"config key training.rows\[0\].method\[1\]: unknown method 'ppo'"):
        validate_config({"training": {"rows": [{"method": ["none", "ppo"], "lr": 1.0}]}})
    with pytest.raises(ConfigError, match=r"config key training.rows\[0\]: duplicates training.rows\[0\]"):
        validate_config({"training": {"rows": [{"method": "none", "lr": [1.0, 1]}]}})


def test_a_disabled_lr_sweep_asks_for_no_runs_tables_or_figures():
    from rlvr.config import asked

    cfg = validate_config({"lr_sweep": {"enabled": False}, "dynamic_sampling": {"enabled": False}})
    assert not [r for r in train_rows(cfg) if r.experiment in ("lr_sweep", "dynamic")]
    assert {d.name for d in DEMOS} - {d.name for d in asked(cfg)} == {"lr_sweep", "dynamic_sampling"}


def test_every_demo_but_demo_3_can_be_turned_off_and_then_plans_nothing_of_its_own():
    """Demo 2 off plans neither its statistics nor its exact curve; demo 1 off keeps the
    reference's pass@k (the trained demos read it) with the same spec, so nothing reruns; demo 4
    off trains none of its rows; the budget counts none of it."""
    from rlvr.budget import parts
    from rlvr.compute import _plan
    from rlvr.config import asked, summary

    every = validate_config({})
    off = validate_config({demo.section: {"enabled": False} for demo in DEMOS if demo.section})
    assert [d.name for d in asked(off)] == ["training"]
    assert [d.name for d in DEMOS if d.section is None] == ["training"]
    plans = {name: _plan(cfg, code=lambda stage, methods=(): "")
             for name, cfg in (("on", every), ("off", off))}
    assert {"exact_bias", "gradient_stats"} <= plans["on"].keys()
    assert not [name for name in plans["off"] if name.startswith(("gradient_stats", "exact_bias"))]
    assert not gradstat_jobs(off) and gradstat_jobs(every)
    assert plans["off"]["reference_passk"] == plans["on"]["reference_passk"]
    assert {r.experiment for r in train_rows(off)} == {"training"}
    described = [p.what for p in parts(off, every, [])]
    assert not [what for what in described if "gradient" in what or "exact" in what], described
    assert [line.split() for line in summary(off)][0] == ["gradient_stats", "off"]

def test_a_config_file_is_merged_over_the_shipped_one_as_snakemake_does(tmp_path):
    """`rlvr all --config f` and `snakemake --configfile f` run the same experiment: mappings
    merge key by key, lists are replaced."""
    from conftest import REPO

    mine = tmp_path / "mine.yaml"
    mine.write_text("training:\n  steps: 7\n  rows: [{method: grpo, lr: 3.0}]\n")
    cfg = load_config(mine)
    (row,) = cfg["training"]["rows"]  # the user's list, the default list gone; defaults filled in
    assert cfg["training"]["steps"] == 7 and row["method"] == "grpo" and row["lr"] == 3.0
    assert row["reward_offset"] == 0.0 and row["epochs"] == 1 and row["kl_beta"] == 0.0
    assert cfg["training"]["seeds"] == [0, 1, 2, 3, 4]  # from demo 3's module
    assert merge({"a": {"b": [1, 2], "c": 1}}, {"a": {"b": [3]}}) == {"a": {"b": [3], "c": 1}}
    shipped = tmp_path / "shipped.yaml"
    shipped.write_text("training:\n  seeds: [9]\n")
    assert load_config(mine, base=shipped)["training"]["seeds"] == [9]
    assert load_config(REPO / "config" / "test.yaml")["gradient_stats"]["exact_curve"]["n_points"] == 61


def numbers(x, path=()):
    """(path, value) of every number in a config, lists and mappings walked."""
    if isinstance(x, dict):
        return [n for k, v in x.items() for n in numbers(v, (*path, k))]
    if isinstance(x, list):
        return [n for i, v in enumerate(x) for n in numbers(v, (*path, i))]
    return [(path, x)] if isinstance(x, (int, float)) and not isinstance(x, bool) else []


def key_of(path):
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def test_a_non_finite_value_is_refused_in_every_numeric_key():
    """Issue 23: .nan or .inf anywhere (task.logodds_spread, trainer.value_lr, task.minority.share
    were accepted) is refused by key, before the schema or any job sees it."""
    full = validate_config({"training": {"rows": [dict(ROW, clip_c=3.0)]}})
    paths = [path for path, _ in numbers(full)]
    assert len(paths) > 60
    for i, path in enumerate(paths):
        for bad in (math.nan, -math.inf):
            cfg = copy.deepcopy(full)
            *parent, last = path
            node = cfg
            for p in parent:
                node = node[p]
            node[last] = bad
            message = rf"config key {re.escape(key_of(path))}: .* is not a finite"
            if i % 20 == 0:  # through the whole check now and then (values_problems runs first in it)
                with pytest.raises(ConfigError, match=message):
                    validate_config(cfg)
            assert re.search(message, "\n".join(values_problems(cfg))), path


def test_a_huge_grid_and_a_yaml_alias_bomb_are_refused_at_once():
    """Issue 23: one row with seven 10-value lists (10^7 rows) ran the check into a MemoryError; a
    352-byte alias bomb made 226 MB of error text."""
    lists = {k: [v * (i + 1) for i in range(10)] for k, v in
             (("lr", 0.1), ("reward_offset", 0.1), ("kl_beta", 0.1), ("clip_high", 0.01), ("clip_low", 0.01),
              ("shared_lr", 0.1))}
    with pytest.raises(ConfigError, match=r"invalid config: 1,000,\d{3} training rows, five files each "
                                          r"\(training "
                                          r"1,000,000, .*at most 10,000"):
        validate_config({"training": {"rows": [dict(ROW, epochs=1, **lists)]}})
    levels = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi")]
    bomb = yaml.safe_load("\n".join(levels) + "\ntraining: {seeds: *i}\n")
    with pytest.raises(ConfigError) as err:
        validate_config(bomb)
    assert "once its YAML aliases (*name) are expanded" in str(err.value) and len(str(err.value)) < 200


def test_k_beyond_n_samples_gets_exact_pass_at_k_and_no_estimate():
    """Issue 23: reference k above n_samples crashed the tables job; the schema allows it (the
    estimate needs k <= n_samples, the exact value does not)."""
    from rlvr.demos import DEMOS
    from rlvr.metrics import reference_columns
    from rlvr.task import make_task

    ref = pd.DataFrame(reference_columns(make_task(P=8, M=4), [512], n_samples=256))
    assert ref["pass_at_k"].notna().all() and ref["pass_at_k_estimate"].isna().all()
    _, title, parts, _ = DEMOS[0].make_table({"reference": ref}, "en")
    assert len(parts) == 1 and "pass@512" in parts[0][1]


def test_validation_does_not_change_its_input():
    raw = {"training": {"rows": [ROW]}}
    validate_config(raw)
    assert raw == {"training": {"rows": [ROW]}}


def test_config_file_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("training: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad.yaml is not valid YAML(.|\n)*line 1, column"):
        load_config(bad)
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(bad)
    bad.write_text("# nothing\n")  # Snakemake refuses an empty --configfile: so does the check
    with pytest.raises(ConfigError, match=r"bad.yaml is empty; write \{\} in it"):
        load_config(bad)
    with pytest.raises(ConfigError, match="is a directory, not a YAML file"):
        load_config(tmp_path)


def test_every_demo_module_is_complete_and_wired_through_its_config_section():
    """The demo registry (rlvr/demos/) is the one list: each demo there has its table's text in
    both languages, a caption per figure, no figure name taken twice, and a config section that
    matches what it declares (`enabled` where it can be switched off, `rows:` where it has rows)."""
    import yaml
    from conftest import REPO

    from rlvr.config import DEFAULT_CONFIG, schema

    sections, shipped = schema()["properties"], yaml.safe_load(DEFAULT_CONFIG.read_text())
    figures = [name for demo in DEMOS for name in demo.figures]
    assert len(set(figures)) == len(figures)
    for demo in DEMOS:
        assert (set(demo.module.TEXT) == {"en", "zh"}
                and set(demo.module.TEXT["en"]) == set(demo.module.TEXT["zh"]))
        for name in demo.figures:
            assert (REPO / "workflow" / "report" / f"{name}.rst").is_file(), name
        if demo.section:
            assert "enabled" in sections[demo.section]["properties"], demo.name
        if demo.module.ROWS:  # its section is built from its CONFIG, which the shipped config does not copy
            assert sections[demo.name]["properties"]["rows"]["default"] == demo.module.CONFIG["rows"]
            assert sections[demo.name]["properties"]["seeds"]["default"] == demo.module.CONFIG["seeds"]
            assert demo.name not in shipped, f"{demo.name}: its rows and seeds are its module's alone"


def test_one_wrong_G_is_one_error_naming_the_G():
    with pytest.raises(ConfigError) as err:
        validate_config({"training": {"G": 1}})
    assert str(err.value).count("config key") == 1, err.value


def test_the_summary_shows_a_row_list_a_configfile_replaced(tmp_path):
    """Snakemake replaces a list from --configfile: the summary printed at start says so."""
    from rlvr.config import summary

    one_row = tmp_path / "one.yaml"
    one_row.write_text("training:\n  rows: [{method: grpo, lr: 2.0}]\nlr_sweep: {enabled: false}\n")
    lines = summary(load_config(one_row), {"training": 1}, n_jobs={"training": 1})
    text = "\n".join(lines)
    assert "training               1 rows x  5 seeds =    5 runs  1 of 1 jobs to run" in text, text
    assert "config.yaml has 16 rows here: a list in --configfile replaces the default list" in text
    assert "lr_sweep             off" in text
    assert "note" not in "\n".join(summary(load_config()))  # the default config: nothing to point out


def test_every_command_line_flag_has_a_help_text():
    import argparse

    from rlvr.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in commands.choices.items():
        for action in parser._actions:
            assert action.help, (name, action.option_strings)


def test_rlvr_config_checks_a_file_and_names_the_line_of_a_yaml_error(tmp_path, capsys):
    from rlvr.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  G: [1\n  lr: 2\n")
    assert main(["config", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml is not valid YAML" in err and "line 2" in err
    good = tmp_path / "good.yaml"
    good.write_text("lr_sweep: {enabled: false}\n")
    assert main(["config", "--config", str(good)]) == 0
    out = capsys.readouterr().out
    # no job count: a training job is a pack of rows, planned with the files present (rlvr/packs.py)
    assert ("training              16 rows x  5 seeds =   80 runs\n" in out
            and "lr_sweep             off" in out)


def test_change_and_add_edit_single_rows_and_leave_the_others():
    """Issue 26: `change` sets knobs of the one row `where` picks, `add` appends rows; both keys
    are gone from the validated config, and every other row is the default's, in its place."""
    default = validate_config({})["training"]["rows"]
    edit = {"change": [{"where": {"method": "none", "lr": 8.0}, "set": {"lr": 16.0}}],
            "add": [{"method": "rloo", "lr": 4.0}]}
    cfg = validate_config({"training": edit})
    rows = cfg["training"]["rows"]
    assert "change" not in cfg["training"] and "add" not in cfg["training"]
    assert len(rows) == len(default) + 1
    changed = [i for i, (a, b) in enumerate(zip(rows, default)) if a != b]
    assert changed == [8] and rows[8] == {**default[8], "lr": 16.0}
    assert (rows[-1]["method"], rows[-1]["lr"], rows[-1]["epochs"]) == ("rloo", 4.0, 1)  # defaults filled


def test_rlvr_config_names_the_rows_a_change_and_an_add_made(tmp_path, capsys):
    """Issue 38: `rlvr config --config my.yaml` says which row each `change` picked and what it
    set, and each row an `add` appended (a grid's size too), so an edit that did something else
    than meant shows before any run; a file without either says nothing of the kind."""
    from rlvr.cli import main

    edit = tmp_path / "edit.yaml"
    edit.write_text("training:\n"
                    "  change: [{where: {method: none, lr: 8.0}, set: {lr: 16.0, kl_beta: 0.1}}]\n"
                    "  add: [{method: rloo, lr: 4.0}, {method: [grpo, dr_grpo], lr: [0.5, 1.0]}]\n")
    assert main(["config", "--config", str(edit)]) == 0
    out = capsys.readouterr().out.splitlines()
    n = len(validate_config({})["training"]["rows"])
    heading = out.index("change: and add: made these rows (knobs at their defaults left out):")
    assert out[heading + 1:heading + 4] == [
        "  training.rows[8] {method: none, lr: 8.0}: changed lr 8.0 -> 16.0, kl_beta 0.0 -> 0.1",
        f"  training.rows[{n}] added: {{method: rloo, lr: 4.0}}",
        f"  training.rows[{n + 1}] added: {{method: [grpo, dr_grpo], lr: [0.5, 1.0]}} (a grid of 4 rows)"]
    assert f"training              {n + 5} rows x  5 seeds" in "\n".join(out)
    plain = tmp_path / "plain.yaml"
    plain.write_text("training: {seeds: [0]}\n")
    assert main(["config", "--config", str(plain)]) == 0
    assert "made these rows" not in capsys.readouterr().out


def test_other_shared_settings_name_their_own_files_and_the_defaults_none():
    """Issue 26: results kept per configuration. A training job's path names its trainer
    settings and reference k only where they differ from the defaults, so the default config's
    paths stay as they were and a config with other settings writes beside it, not over it."""
    default = train_rows(validate_config({}))
    assert all("_set" not in row.path for row in default)
    paths = set()
    for change in ({"trainer": {"eval_every": 10}}, {"trainer": {"value_lr": 0.5}},
                   {"reference": {"k": [1, 2, 4]}}, {"trainer": {"eval_every": 10, "value_lr": 0.5}}):
        rows = train_rows(validate_config(change))
        assert [r.row_path.rsplit("_set", 1)[0] for r in rows] == [r.row_path for r in default]
        assert len({r.settings_id for r in rows}) == 1 and rows[0].settings_id  # one id, not ""
        paths |= {rows[0].path}
    assert len(paths) == 4  # each setting its own files


# Issue 33: a config too large for this machine, in memory or in time, is refused before any job,
# by the key that makes it so. Over config/test.yaml, as `python -m rlvr config --config X.yaml` reads it.
def _over_test(over):
    from conftest import REPO

    from rlvr.config import DEFAULT_CONFIG, merge, read_yaml

    return merge(merge(read_yaml(DEFAULT_CONFIG), read_yaml(REPO / "config" / "test.yaml")), over)


@pytest.mark.parametrize("over, key, words", [
    ({"gradient_stats": {"G": 100_000_000}}, "gradient_stats.G", "a gradient-statistics job"),
    ({"gradient_stats": {"G": 100_000_000}}, "gradient_stats.G", "the exact curve job"),
    ({"gradient_stats": {"exact_curve": {"n_points": 10**9}}}, "gradient_stats.exact_curve.n_points",
     "the exact curve job"),
    ({"reference": {"n_samples": 10**15}}, "reference.n_samples", "the reference job"),
    ({"training": {"G": 10**9}}, "training.G", "a training job's batch"),
    ({"training": {"steps": 10**12}}, "training.steps", "a training job's curves"),
    ({"training": {"steps": 10**7}}, "training.steps", "the aggregate job"),
    ({"training": {"steps": 10**7}}, "training.steps", "the rendering job"),
    ({"dynamic_sampling": {"max_rounds": 10**12}}, "dynamic_sampling.max_rounds", "a training job's curves"),
])
def test_a_job_too_large_for_memory_is_refused_by_its_key(over, key, words):
    with pytest.raises(ConfigError) as err:
        validate_config(_over_test(over))
    line = next(line for line in str(err.value).splitlines() if words in line)
    assert line.strip().startswith(f"config key {key}: ") and "GiB, more than this machine's" in line


@pytest.mark.parametrize("over, key", [
    ({"training": {"rows": [{"method": "grpo", "lr": 2.0, "epochs": 10**9}]}}, "training.rows[0].epochs"),
    ({"gradient_stats": {"n_reps": 10**14}}, "gradient_stats.n_reps"),
    ({"training": {"steps": 10**9, "seeds": [0]}, "trainer": {"eval_every": 10**9}}, "training.steps"),
    ({"group_size": {"steps": 10**9}, "trainer": {"eval_every": 10**9}}, "group_size.steps"),
    ({"dynamic_sampling": {"max_rounds": 10**8}, "trainer": {"eval_every": 10**9}},
     "dynamic_sampling.max_rounds"),
])
def test_a_config_that_would_run_for_days_is_refused_by_its_key_unless_max_hours_allows(over, key):
    with pytest.raises(ConfigError) as err:
        validate_config(_over_test(over))
    message = str(err.value)
    assert f"config key {key}: " in message and "more than max_hours = 24 allows" in message
    need = int(message.split("set max_hours: ")[1].split(" ")[0].replace(",", ""))
    validate_config(_over_test({**over, "max_hours": need}))  # asked for on purpose: accepted


def test_the_shipped_configs_are_well_within_the_time_limit():
    from conftest import REPO

    from rlvr import budget
    from rlvr.config import _defaults, _training_keys, load_config, rows_by_demo

    for path in (None, REPO / "config" / "test.yaml"):
        cfg = load_config(path)
        training = [(name, rows, _training_keys(cfg, name, rows)) for name, rows in rows_by_demo(cfg).items()]
        seconds = sum(part.seconds for part in budget.parts(cfg, _defaults(), training))
        assert cfg["max_hours"] == 24 and seconds / budget.cores() < 0.05 * 24 * 3600
        assert budget.check_time(cfg, budget.parts(cfg, _defaults(), training), n_cores=1) is None


def test_the_network_study_and_replication_keep_the_default_config_but_their_network_keys():
    """config/network.yaml (the bridge's full study) is valid; merged over the default config it
    changes the network's steps, seeds and rows only (its 10 seeds hold the default's 5: two
    sets of 5, demo 17's replication), and every row of the default's network is one of its rows
    (so demo 17's predictions all read rows it trains). config/network_replication.yaml changes
    the default's seeds alone, to the same 10."""
    from conftest import REPO

    from rlvr.config import load_config, network_jobs
    from rlvr.demos.network import seed_sets

    default, study = load_config(None), load_config(REPO / "config" / "network.yaml")
    replication = load_config(REPO / "config" / "network_replication.yaml")
    for cfg in (study, replication):
        assert {k: v for k, v in cfg.items() if k != "network"} == {k: v for k, v in default.items()
                                                                     if k != "network"}
    assert {k for k in study["network"] if study["network"][k] != default["network"][k]} == \
        {"steps", "seeds", "rows"}
    net = replication["network"]
    assert {k for k in net if net[k] != default["network"][k]} == {"seeds"}
    import pandas as pd

    for cfg in (study, replication):
        sets = seed_sets({"net_passk": pd.DataFrame({"seed": cfg["network"]["seeds"]})})
        assert sets[0] == sorted(default["network"]["seeds"]) and len(sets) == 2
    paths = {job.row_path.replace(f"_s{study['network']['steps']}_", "_s") for job in network_jobs(study)[1]}
    assert {job.row_path.replace(f"_s{default['network']['steps']}_", "_s")
            for job in network_jobs(default)[1]} <= paths


def test_the_guides_sweep_alone_example_turns_off_every_demo_but_demo_3_and_the_sweep():
    """GUIDE.md's "Run your own sweep alone" config names every section that has `enabled`
    (tests/test_config.py keeps it in step with rlvr/demos/) and asks for demos 3 and 7 only."""
    from rlvr.config import REPO, asked

    guide = (REPO / "GUIDE.md").read_text()
    (block,) = [b for b in guide.split("```yaml\n")[1:] if b.startswith("# sweep.yaml")]
    cfg = yaml.safe_load(block.split("```")[0])
    assert {d.section for d in DEMOS if d.section} - {"lr_sweep"} == \
        {name for name, section in cfg.items() if section == {"enabled": False}}
    assert [d.name for d in asked(validate_config(cfg))] == ["training", "lr_sweep"]


def test_the_summary_says_how_many_of_the_networks_bases_are_made_or_kept():
    from rlvr.config import network_jobs, summary

    cfg = validate_config({})
    bases, jobs = network_jobs(cfg)
    n, b = len(jobs), len(bases)
    assert b == len(cfg["network"]["seeds"])  # a base a seed
    line = lambda to_run: next(x for x in summary(cfg, to_run) if x.startswith("network "))  # noqa: E731
    assert line(None).endswith(f"{n} jobs, and its {b} bases (one a seed)")
    assert line({}).endswith(f"0 of {n} jobs to run, its {b} bases kept")
    made = line({"network": 2, "network_base": 1})
    assert made.endswith(f"2 of {n} jobs to run, 1 of its {b} bases to make")


def test_the_toy_alone_is_the_default_without_the_network_in_a_directory_of_its_own():
    """config/toy.yaml (README: the toy alone) trains every row of the default but the network's,
    with the same numbers, and writes to results_toy/, never to the default's results/."""
    from conftest import REPO

    from rlvr.config import load_config, train_rows

    default, toy = load_config(None), load_config(REPO / "config" / "toy.yaml")
    assert toy["results"] == "results_toy" and not toy["network"]["enabled"]
    assert {k: v for k, v in toy.items() if k not in ("results", "network")} == \
        {k: v for k, v in default.items() if k not in ("results", "network")}
    assert train_rows(toy) == train_rows(default)
