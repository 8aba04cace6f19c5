"""A row's knobs are declared once (rlvr/knobs.py): the schema's row, the spec, the objective,
the checks and the paths all come from that table."""

import math
from dataclasses import fields

import pytest

from rlvr.config import ConfigError, schema, train_rows, validate_config
from rlvr.kl import KL_ESTIMATORS
from rlvr.knobs import KNOBS, OBJECTIVE, OPTIONAL, REQUIRED, ROW_KNOBS, bounds
from rlvr.objective import LOSS_AGGREGATIONS, Objective
from rlvr.specs import TrainRow


def test_every_knob_reaches_the_schema_the_spec_and_the_objective():
    row = schema()["$defs"]["row"]
    assert list(row["properties"]) == [k.name for k in ROW_KNOBS]
    assert row["required"] == [k.name for k in ROW_KNOBS if k.default == REQUIRED] == ["method", "lr"]
    names = [f.name for f in fields(TrainRow)]
    assert names[-len(OPTIONAL):] == [k.name for k in OPTIONAL]
    assert Objective._fields == OBJECTIVE
    assert Objective() == tuple(KNOBS[name].spec_default for name in OBJECTIVE)
    # the choices come from the registries that act on them
    assert row["properties"]["kl_estimator"]["items"]["enum"] == list(KL_ESTIMATORS)
    assert row["properties"]["loss_agg"]["items"]["enum"] == list(LOSS_AGGREGATIONS)


def test_a_knobs_default_is_allowed_and_its_bounds_are_said_in_words():
    for knob in ROW_KNOBS:
        if knob.default != REQUIRED:
            assert knob.problem(knob.spec_default) is None, knob.name
    assert bounds(KNOBS["epochs"]) == "a whole number >= 1"
    assert bounds(KNOBS["clip_low"]) == "in (0, 1) (or null: no lower clip)"
    assert bounds(KNOBS["clip_c"]) == "> 1 (or 0: no dual clip)"
    assert KNOBS["kl_beta"].problem(-0.5) == "kl_beta = -0.5 must be >= 0"
    assert KNOBS["shared_lr"].problem(math.nan) == "shared_lr = nan must be a finite number"


def test_a_row_at_the_defaults_keeps_the_lectures_path_and_a_changed_knob_names_itself():
    cfg = validate_config({"training": {"rows": [{"method": "grpo", "lr": 2.0},
                                                 {"method": "grpo", "lr": 2.0, "clip_c": 3,
                                                  "correct_answers": 2}]}})
    plain, changed = (r for r in train_rows(cfg) if r.experiment == "training")
    assert plain.row_path == "runs/training/grpo/lr2.0_off0.0_G8_n16_s300_dyn0"
    assert changed.row_path == plain.row_path + "_clip_c3.0_correct2"
    assert changed.clip_c == 3.0 and plain.clip_c == 0.0  # null: no dual clip


@pytest.mark.parametrize("knob", [k.name for k in ROW_KNOBS if k.kind == "number"])
def test_a_non_finite_number_in_any_knob_is_refused_naming_it(knob):
    row = {"method": "grpo", "lr": 2.0, knob: math.nan}
    with pytest.raises(ConfigError, match=rf"training.rows\[0\].{knob}: nan is not a finite number"):
        validate_config({"training": {"rows": [row]}})


def test_a_null_clip_never_binds():
    """clip_low / clip_high null are ε = 1 and ε = ∞: no ratio (> 0) is clipped on that side, where
    ε 0.999 / 1000 still clip the ratios beyond them."""
    import numpy as np

    from rlvr.objective import clipped_surrogate_weights

    low, high = KNOBS["clip_low"].cast(None), KNOBS["clip_high"].cast(None)
    assert (low, high) == (1.0, float("inf"))
    ratio = np.array([[1e-12, 1e-4, 0.5, 2.0, 1e4, 1e12]])
    for A in (np.ones_like(ratio), -np.ones_like(ratio)):
        _, clipped = clipped_surrogate_weights(A, ratio, low, high)
        assert not clipped.any()
        _, clipped = clipped_surrogate_weights(A, ratio, 0.999, 1000.0)
        assert clipped.any()


# Each knob's default as it was declared (add a line with a new knob). A row at a knob's default
# leaves it out of its spec and its path (rlvr/specs.py), so a changed default would change what
# those rows compute with no change the cache sees: their old results would stand. A row that
# wants another value sets it in config/config.yaml instead.
DECLARED_DEFAULTS = {
    "method": REQUIRED, "lr": REQUIRED, "reward_offset": 0.0, "shared_lr": 0.0, "correct_answers": 1,
    "reward": "verifier", "sampler_lag": 0, "sampler_noise": 0.0, "is_correction": "none", "is_cap": 2.0,
    "is_cap_low": None,
    "epochs": 1, "clip_low": 0.2, "clip_high": 0.2, "clip_c": None, "kl_beta": 0.0, "kl_estimator": "k3",
    "kl_placement": "loss", "loss_agg": "seq-mean-token-sum-norm",
    "policy_loss": "ppo", "minibatches": 1, "ratio_tokens": "one", "optimizer": "sgd",
}


def test_no_knobs_default_changed_since_it_was_declared():
    changed = {k.name: (DECLARED_DEFAULTS.get(k.name, "(not declared here)"), k.default) for k in ROW_KNOBS
               if k.name not in DECLARED_DEFAULTS or k.default != DECLARED_DEFAULTS[k.name]}
    assert not changed, (f"{changed}: a knob's default is never changed (rows at it keep results made with "
                         "the old one); set the value in the config's rows, or add a new knob to this table")


def test_a_spec_leaves_knobs_at_their_default_out_and_reads_them_back():
    from rlvr.specs import from_json, to_json

    lecture, clipped = (TrainRow("training", "grpo", 2.0, 0.0, 8, 16, 10, 0, (0,), 0.2, 5, (1,), **knobs)
                        for knobs in ({}, {"clip_high": 0.28, "kl_beta": 0.0}))
    assert not {k.name for k in OPTIONAL} & set(__import__("json").loads(to_json(lecture)))
    assert '"clip_high":0.28' in to_json(clipped) and "kl_beta" not in to_json(clipped)
    for row in (lecture, clipped):
        assert from_json(TrainRow, to_json(row)) == row


def test_every_spec_of_the_shipped_configs_reads_back_as_it_was_written():
    """Every training and network row of the shipped configs is the same row after to_json and
    from_json: a knob left out at the toy's default comes back at it, also where a network
    knob of that name has another default (optimizer: the toy's sgd, the network's adam)."""
    from rlvr import config as C
    from rlvr.net.specs import NetRow
    from rlvr.specs import from_json, to_json

    for name in ("config.yaml", "network.yaml"):
        cfg = C.load_config(f"config/{name}")
        rows = [*C.train_rows(cfg), *C.network_jobs(cfg)[1]]
        assert any(getattr(row, "optimizer", None) == "sgd" for row in rows if isinstance(row, NetRow))
        for row in rows:
            assert from_json(type(row), to_json(row)) == row, row
