"""Issue 16: every config the schema accepts runs end to end: computed, tabled and drawn.

Hypothesis draws small valid configs (any task seed, any subset of methods, levels, offsets, k
(beyond n_samples too), G, seeds (long lists, the largest int64), lrs, answer lengths, the
objective's knobs, demos on or off) and runs each in-process, as
`python -m rlvr all --results --figures` does, with the claims the tables job writes.
The same 8 examples on every run (derandomize), so CI is reproducible; a failure prints the config.
"""

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.compute import compute_all
from rlvr.config import LEVELS, ROW_EXPERIMENTS, asked, validate_config
from rlvr.demos import DEMOS
from rlvr.estimators import ESTIMATORS
from rlvr.knobs import expand_rows
from rlvr.report import CLAIMS, draw_figure, write_demo

pytestmark = pytest.mark.slow  # every test here runs the pipeline or trains many configs

METHODS = sorted(ESTIMATORS)
EXACT = [m for m in METHODS if "logp" not in ESTIMATORS[m].needs]  # what demo 2's exact moments cover


def some(values, max_size=None):
    return st.lists(st.sampled_from(values), min_size=1, max_size=max_size or len(values), unique=True)


@st.composite
def configs(draw):
    G = draw(st.integers(2, 4))
    M = draw(st.integers(2, 5))
    usable = [m for m in METHODS if ESTIMATORS[m].min_G <= G]  # the check refuses the others
    methods = draw(some(usable, 4))
    offsets = draw(some([0.0, 1.0, -0.5], 2))
    # seeds: a few small ones, a long list, or the largest int64 (the edges of issue 23)
    seeds = draw(st.one_of(some(list(range(6)), 2), st.just(list(range(40))), st.just([2**63 - 1])))
    train = {"G": G, "steps": draw(st.integers(1, 8)), "prompts_per_step": draw(st.sampled_from([1, 4, 8])),
             "seeds": seeds,
             "rows": [{"method": m, "lr": draw(st.sampled_from([0.5, 4.0])),
                       "reward_offset": draw(st.sampled_from(offsets))} for m in methods]}
    sweep = {**train, "enabled": draw(st.booleans()),
             "rows": [{"method": methods, "lr": draw(some([0.5, 2.0, 8.0], 2))}]}
    def row(grid):  # one value of every objective knob, a list (a grid) for the experiment's own
        method = draw(st.sampled_from(methods))
        # the config refuses a KL in the reward to an estimator that reads correctness off the reward
        placements = ["loss"] if "correctness" in ESTIMATORS[method].needs else ["loss", "reward"]
        loss = grid.get("policy_loss", draw(st.sampled_from(["ppo", "cispo"] if "loss_agg" in grid
                                                            else ["ppo", "gspo", "cispo"])))
        # the config refuses gspo without seq-mean-token-mean, and a dual clip but with ppo
        aggregations = ["seq-mean-token-mean"] if "gspo" in loss else ["seq-mean-token-sum-norm",
                                                                      "seq-mean-token-mean", "token-mean"]
        return {"method": method, "lr": draw(st.sampled_from([0.5, 4.0])),
                "epochs": draw(st.sampled_from([1, 2, 3])),
                "minibatches": draw(st.sampled_from([1, 2])),  # at most G (>= 2 here)
                "policy_loss": loss,
                "clip_low": draw(st.sampled_from([0.1, 0.2, None])),  # null: no clip on that side
                "clip_high": draw(st.sampled_from([0.2, 0.28, 5.0, None])),
                "clip_c": draw(st.sampled_from([None, 3.0])) if loss == "ppo" else None,
                "kl_beta": draw(st.sampled_from([0.0, 0.3, 3.0])),
                "kl_estimator": draw(st.sampled_from(["k1", "k2", "k3"])),
                "kl_placement": draw(st.sampled_from(placements)),
                "loss_agg": draw(st.sampled_from(aggregations)),
                **grid}

    objective = {  # demos 8-10: a row may set the rest of the objective, a list making a grid
        "clipping": {**train, "enabled": draw(st.booleans()),
                     "rows": [row({"epochs": draw(some([1, 2, 3], 2))})]},
        "kl_penalty": {**train, "enabled": draw(st.booleans()),
                       "rows": [row({"kl_beta": draw(some([0.0, 0.3, 3.0], 2)),
                                     "kl_estimator": draw(some(["k1", "k2", "k3"], 2))})]},
        "loss_aggregation": {**train, "enabled": draw(st.booleans()),
                             "rows": [row({"loss_agg": draw(some(["seq-mean-token-sum-norm",
                                                                  "seq-mean-token-mean",
                                                                  "token-mean"], 2))})]}}
    objective["rank_bias"] = {**train, "enabled": draw(st.booleans()),  # several correct answers
                              "rows": [row({"correct_answers": draw(some(list(range(1, M)), 2))})]}
    # shared weights: one update a batch
    objective["shared_policy"] = {**train, "enabled": draw(st.booleans()),
                                  "rows": [{"method": methods, "lr": draw(st.sampled_from([0.5, 4.0])),
                                            "shared_lr": draw(some([0.0, 0.05, 1.0], 2)),
                                            "epochs": draw(st.sampled_from([1, 2]))}]}
    objective["negative_samples"] = {**train, "enabled": draw(st.booleans()),  # one sign of sample
                                     "rows": [{"method": draw(some(["psr", "nsr", "w_reinforce"], 2)),
                                               "lr": draw(st.sampled_from([0.5, 4.0])),
                                               "shared_lr": draw(some([0.0, 0.05], 2))}]}
    objective["narrowing_remedies"] = {**train, "enabled": draw(st.booleans()),  # shared weights' remedies
                                       "rows": [row({"shared_lr": draw(some([0.0, 0.05], 2)),
                                                     "kl_beta": draw(some([0.0, 0.3], 2))})]}
    corrections = ["none", "full", "truncated", "masked"]
    stale = row({"sampler_lag": draw(some([1, 3], 2)), "sampler_noise": draw(some([0.0, 0.5], 2)),
                 "is_correction": draw(some(corrections, 2)), "is_cap": draw(st.sampled_from([1.5, 2.0]))})
    on_policy = {k: v for k, v in stale.items() if k not in ("sampler_lag", "sampler_noise")}  # its partner
    objective["off_policy"] = {**train, "enabled": draw(st.booleans()),  # a sampler other than the policy
                               "rows": [stale, {**on_policy, "is_correction": "none"}]}
    rewards = ["verifier", "random_half", "random_mean"]
    objective["spurious_rewards"] = {**train, "enabled": draw(st.booleans()),  # rewards ignoring the answer
                                     "rows": [row({"reward": draw(some(rewards, 2))})]}
    objective["policy_losses"] = {**train, "enabled": draw(st.booleans()),  # the policy loss
                                  "rows": [row({"policy_loss": draw(some(["ppo", "gspo", "cispo"], 2))})]}
    logodds = sorted(draw(st.lists(st.sampled_from([-30.0, -4.5, -1.0, 0.0, 2.0, 30.0]),
                                   min_size=4, max_size=4)))
    return {
        "lang": draw(st.sampled_from(["en", "zh"])),
        "task": {"P": 8, "M": M, "level_logodds": logodds,
                 # any task seed: on some no seed's pass@k crosses the reference's (issue 33)
                 "seed": draw(st.one_of(st.sampled_from([0, 1, 3, 9, 2**63 - 1]), st.integers(0, 2**63 - 1))),
                 "answer_length": draw(st.sampled_from([[1, 1], [100, 1000], [7, 9]])),
                 "minority": {"levels": draw(st.lists(st.sampled_from(list(LEVELS)),
                                                      max_size=2, unique=True)),
                              "share": draw(st.sampled_from([0.0, 0.5, 1.0])),
                              "wrong_share": draw(st.sampled_from([0.0, 0.5, 1.0]))}},
        # k beyond n_samples: exact pass@k, no estimate
        "reference": {"enabled": draw(st.booleans()), "k": draw(some([1, 2, 4, 8, 64, 128, 512], 3)),
                      "n_samples": 64},
        "gradient_stats": {
            "enabled": draw(st.booleans()), "G": G, "n_reps": 20, "seed": 0,
            "cases": [{"reward_offsets": offsets, "methods": draw(some([m for m in usable if m in EXACT], 3)),
                       "levels": draw(some(list(LEVELS)))} for _ in range(draw(st.integers(1, 2)))],
            "exact_curve": {"methods": [m for m in methods if m in EXACT] or ["none"], "n_points": 5}},
        "trainer": {"value_lr": 0.2, "eval_every": draw(st.integers(1, 5))},
        # a demo this strategy does not name (one just added) runs its module's rows at this size
        "demo_defaults": {key: train[key] for key in ("steps", "prompts_per_step", "G", "seeds")},
        "training": train,
        "lr_sweep": sweep,
        "passk_after_training": {"enabled": draw(st.booleans())},
        "group_size": {"enabled": draw(st.booleans()),
                       "method": methods[0] if ESTIMATORS[methods[0]].min_G <= 2 else "grpo",
                       "lr": 2.0, "steps": 3, "answers_per_step": 8, "seeds": seeds,
                       "G": draw(some([2, 4, 8], 3))},
        "dynamic_sampling": {"enabled": draw(st.booleans()), "method": "grpo", "G": G, "prompts_per_step": 4,
                             "steps": 3, "max_rounds": draw(st.integers(1, 3)), "seeds": seeds[:1]},
        **objective,
        "network": {"enabled": False},  # its configs and results: tests/test_network.py (torch is seconds)
    }


# CI: 8 fixed examples (~20 s). To hunt for more: RLVR_CONFIG_EXAMPLES=200 python -m pytest -n 0
# tests/test_any_config.py (random examples, a new draw each run; a failure prints its config)
HUNT = int(os.environ.get("RLVR_CONFIG_EXAMPLES", 0))


@settings(max_examples=HUNT or 8, derandomize=not HUNT, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(raw=configs())
def test_every_accepted_config_computes_tables_and_draws(raw, tmp_path_factory):
    cfg = validate_config(raw)  # the strategy only draws configs the schema and checks accept
    try:
        tables = compute_all(cfg)
    except FloatingPointError as err:  # a KL penalty's k2/k3 is unbounded: a large β·lr may diverge
        penalised = any(row["kl_beta"] and (row["kl_estimator"] != "k1" or row["kl_placement"] == "reward")
                        for name in ROW_EXPERIMENTS
                        for row, _ in expand_rows(cfg[name]["rows"], name))
        assert penalised and "training diverged at step" in str(err) and "lower lr or kl_beta" in str(err)
        return
    for key in ("gradstats", "exact"):  # demo 2's results: only where it is on
        assert (key in tables) == cfg["gradient_stats"]["enabled"], key
    frames = {k: v.to_pandas() for k, v in tables.items()}
    tables, written = tmp_path_factory.mktemp("tables"), []
    for demo in DEMOS:  # each demo the results hold, as its rendering job writes it (figures below)
        try:
            written += write_demo(demo.name, frames, tables, lang=cfg["lang"])
        except ValueError as err:
            assert "hold no data for demo" in str(err), err
    assert any(path.suffix == ".txt" and path.read_text().strip() for path in written)
    # the demos' sections of results/claims.md (the assembly joins them)
    claims = "".join(path.read_text() for path in written if path.name.endswith(CLAIMS))
    assert claims and not re.search(r"\b(nan|inf)\b", claims), claims  # no number a division by 0 made
    for name in (name for demo in asked(cfg) for name in demo.figures):
        fig = draw_figure(name, frames)
        # lays out every artist and runs its draw (with the renderer's output off: the real PNG and
        # PDF are tested on the tiny config's pipeline run, tests/test_pipeline.py; 1 s an example less)
        fig.draw_without_rendering()
