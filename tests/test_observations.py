"""What FINDINGS.md says of the default config's results, demo by demo (test_demoN_...): the
lecture's eight observations and the later demos' claims.

Computed in-process (the same functions the pipeline's jobs call; test_pipeline checks
that both give identical files). Statistical claims use standard errors over Monte Carlo
repetitions or seeds, with the tolerance stated at each assertion.
"""

import numpy as np
import pytest
from conftest import REPO

from rlvr import claims as K
from rlvr import report
from rlvr.demos import DEMOS

# an ordering over seeds: resolved by the claims' rule (rlvr/claims.py) at any number of seeds from
# its least, 5 (|d| > t(4)·s.e. = 4.60 s.e.; more seeds lower the critical value, never raise it)
T5 = K.t_quantile(K.MIN_SEEDS - 1)


def _gs(res, offset, method, level="medium"):
    gs = res["gradstats"]
    row = gs[(gs["reward_offset"] == offset) & (gs["method"] == method) & (gs["level"] == level)]
    assert len(row) == 1
    return row.iloc[0]


def _final(res, method, lr, offset, col="final_pass1"):
    runs = res["runs"]
    sub = runs[(runs["experiment"] == "training") & (runs["method"] == method) & (runs["lr"] == lr)
               & (runs["reward_offset"] == offset)]
    assert len(sub) == 5
    return sub[col].to_numpy()


def _diff_se(a, b):
    """Difference of seed means and its standard error (independent seeds' spread)."""
    return a.mean() - b.mean(), np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))


def test_demo1_very_hard_pass1_one_percent_pass64_near_half(default_results):
    ref = default_results["reference"].set_index(["level", "k"])["pass_at_k"]
    assert 0.005 <= ref[("very_hard", 1)] <= 0.02
    assert 0.4 <= ref[("very_hard", 64)] <= 0.6
    for k in (1, 8, 64):  # the other levels increasingly easy
        values = [ref[(lv, k)] for lv in ("very_hard", "hard", "medium", "easy")]
        assert values == sorted(values)


@pytest.mark.parametrize("method", ["none", "rloo"])
def test_demo2_none_and_rloo_unbiased(default_results, method):
    row = _gs(default_results, 0.0, method)
    assert abs(row["grad_mean"] - row["true_grad"]) < 3 * row["grad_mean_se"]  # 3 s.e.


def test_demo2_group_mean_shrunk_by_seven_eighths(default_results):
    row = _gs(default_results, 0.0, "group")
    assert abs(row["grad_mean"] - 7 / 8 * row["true_grad"]) < 3 * row["grad_mean_se"]  # 3 s.e.
    assert row["true_grad"] - row["grad_mean"] > 3 * row["grad_mean_se"]  # and clearly below


def test_demo2_variance_and_the_offset(default_results):
    v = {(off, m): _gs(default_results, off, m)["total_var"]
         for off in (0.0, 1.0) for m in ("none", "rloo", "group", "grpo")}
    # offset 0: with or without a baseline, the variance differs little (within 30%)
    assert 0.7 < v[(0.0, "none")] / v[(0.0, "rloo")] < 1.3
    # +1 offset: no baseline's variance grows about tenfold (between 5x and 20x) ...
    assert 5 < v[(1.0, "none")] / v[(0.0, "none")] < 20
    # ... while the baselined methods are unaffected (within 10%: Monte Carlo noise only)
    for m in ("rloo", "group", "grpo"):
        assert 0.9 < v[(1.0, m)] / v[(0.0, m)] < 1.1, m


def test_demo2_grpo_overshoots_every_level_most_on_very_hard(default_results):
    ratio, se = {}, {}
    for level in ("very_hard", "hard", "medium", "easy"):
        row = _gs(default_results, 0.0, "grpo", level)
        ratio[level] = row["grad_mean"] / row["true_grad"]
        se[level] = row["grad_mean_se"] / row["true_grad"]
        assert ratio[level] - 1 > 3 * se[level], level  # exceeds the true gradient (resolved)
    gap = ratio["very_hard"] - ratio["medium"]
    assert gap > 3 * np.hypot(se["very_hard"], se["medium"])


def test_demo3_same_lr_none_learned_rloo_equal_grpo_higher(default_results):
    r = default_results
    base = {m: _final(r, m, 2.0, 0.0) for m in ("none", "learned", "rloo")}
    for a in base:
        for b in base:
            d, se = _diff_se(base[a], base[b])
            assert abs(d) < 0.02 + 3 * se, (a, b)  # nearly equal: within 0.02 + 3 s.e.
    grpo = _final(r, "grpo", 2.0, 0.0)
    for m, x in base.items():
        d, se = _diff_se(grpo, x)
        assert d > 0.05 and d > 5 * se, m  # clearly higher
    gains = {lv: _final(r, "grpo", 2.0, 0.0, f"final_pass1_{lv}").mean()
             - _final(r, "rloo", 2.0, 0.0, f"final_pass1_{lv}").mean()
             for lv in ("very_hard", "hard", "medium", "easy")}
    assert max(gains, key=gains.get) == "very_hard"


def test_demo3_offset_hurts_none_badly_learned_some_group_baselines_not(default_results):
    r = default_results
    drop = {m: _final(r, m, 2.0, 0.0).mean() - _final(r, m, 2.0, 5.0).mean()
            for m in ("none", "learned", "rloo", "grpo")}
    assert drop["none"] > 0.2  # badly hurt
    assert 0.05 < drop["learned"] < drop["none"]  # hurt, less than none
    for m in ("rloo", "grpo"):
        d, se = _diff_se(_final(r, m, 2.0, 0.0), _final(r, m, 2.0, 5.0))
        assert abs(d) < 3 * se + 1e-9, m  # unaffected: within 3 s.e.


def test_demo3_none_at_lr8_close_to_grpo_at_lr4(default_results):
    d, se = _diff_se(_final(default_results, "none", 8.0, 0.0), _final(default_results, "grpo", 4.0, 0.0))
    assert abs(d) < 0.03  # close: within 0.03 pass@1 (s.e. of the difference is about 0.006)
    assert se < 0.01


def test_demo4_smaller_groups_end_higher_with_more_zero_signal(default_results):
    """At 128 answers a step, each halving of G ends higher resolved (40 seeds: at 5
    the G = 2 / G = 4 gap, about 0.01, is within one s.e.) and leaves more groups without signal."""
    gz = default_results["runs"]
    gz = gz[gz["experiment"] == "group_size"]
    final = {G: sub["final_pass1"].to_numpy() for G, sub in gz.groupby("G")}
    assert list(final) == [2, 4, 8, 16, 32] and all(len(v) == 40 for v in final.values())
    for small, large in zip(list(final)[:-1], list(final)[1:]):
        d, se = _diff_se(final[small], final[large])
        assert d > 0 and K.resolved(d, se, 40), (small, large, d, se)  # smaller G ends higher: resolved
    zero = gz.groupby("G")["zero_signal_frac"].mean()
    assert zero.is_monotonic_decreasing  # and has more groups with no signal
    assert (gz.groupby("G")["prompts_per_step"].first() * zero.index == 128).all()


def test_every_monte_carlo_row_agrees_with_its_exact_value(default_results):
    gs = default_results["gradstats"]
    assert len(gs) == 23
    # within 4 s.e.
    assert (gs["z_vs_exact"].abs() < 4).all(), gs[["method", "reward_offset", "level", "z_vs_exact"]]


def test_passk_trained_holds_the_step_0_policy_of_every_experiment(default_results):
    """Issue 13: "before" and "after" from one file. Each experiment's method "reference" rows are
    the reference policy's exact pass@k (every level and k), with no training settings or seed."""
    ref, pk = default_results["reference"], default_results["passk"]
    before = pk[pk["method"] == "reference"]
    assert set(before["experiment"]) == set(pk["experiment"]) == set(default_results["runs"]["experiment"])
    for experiment, rows in before.groupby("experiment"):
        assert rows[["level", "n_prompts", "k", "pass_at_k"]].reset_index(drop=True).equals(
            ref[["level", "n_prompts", "k", "pass_at_k"]]), experiment
        assert rows[["lr", "seed", "G", "shared_lr"]].isna().all().all(), experiment
    # the reference rows come after the rest
    assert (pk.index[pk["method"] == "reference"] >= (pk["method"] != "reference").sum()).all()


def test_pass_at_k_rises_at_every_k_after_training_at_offset_zero(default_results):
    ref = default_results["reference"].set_index(["level", "k"])["pass_at_k"]
    pk = default_results["passk"]
    tr = pk[(pk["experiment"] == "training") & (pk["reward_offset"] == 0)]
    after = tr.groupby(["method", "lr", "level", "k"])["pass_at_k"].mean()
    for (m, lr, level, k), value in after.items():
        assert value >= ref[(level, k)] - 1e-9, (m, lr, level, k)


def test_demo7_once_the_lr_is_tuned_the_estimators_end_alike(default_results):
    """The lecture's "once the learning rate is tuned the difference is much smaller", over the
    lr sweep (4 estimators x 9 lrs x 5 seeds): at lr 2 GRPO leads no baseline by more than 10
    s.e.; at each estimator's best lr their means are within 3 s.e. of one another."""
    runs = default_results["runs"]
    sweep = runs[(runs["experiment"] == "lr_sweep") & (runs["optimizer"] == "sgd")]
    final = {key: sub["final_pass1"].to_numpy() for key, sub in sweep.groupby(["method", "lr"])}
    d, se = _diff_se(final[("grpo", 2.0)], final[("none", 2.0)])
    assert d > 10 * se and d > 0.1
    best = {m: max((v for (m2, _), v in final.items() if m2 == m), key=np.mean)
            for m in ("none", "learned", "rloo", "grpo")}
    for m in ("none", "learned", "rloo"):
        d, se = _diff_se(best["grpo"], best[m])
        assert abs(d) < 3 * se + 1e-9, (m, d, se)


def test_demo7_under_adam_reinforce_leads_grpo_at_equal_lr(default_results):
    """Adam divides each logit's step by its gradient's running size: GRPO's larger step at equal
    lr is gone. At Adam lr 0.03 (demo 17's toy side) REINFORCE (no baseline) ends above GRPO,
    paired by seed, resolved by the claims' rule (a t test at α = 0.01 on the 5 seeds' 4 dof);
    RLOO and GRPO end within 0.002 at every Adam lr (FINDINGS.md)."""
    runs = default_results["runs"]
    adam = runs[(runs["experiment"] == "lr_sweep") & (runs["optimizer"] == "adam")]
    d = K.paired(adam[adam["lr"] == 0.03], "final_pass1", {"method": "grpo"}, {"method": "none"})
    assert d.seeds == 5 and d.resolved and d.mean < -0.05, d
    means = adam.groupby(["lr", "method"])["final_pass1"].mean().unstack()
    assert len(means) == 6 and (means["rloo"] - means["grpo"]).abs().max() < 0.002, means


def test_tables_render_in_both_languages(default_results):
    from rlvr.report import render_text

    en, zh = render_text(default_results, "en"), render_text(default_results, "zh")
    for n in range(1, 8):
        assert f"Demo {n}" in en and f"演示 {n}" in zh
    assert "留一法基线（RLOO）" in zh and "leave-one-out (RLOO)" in en


def test_plain_grpo_needs_fewer_answers_than_dynamic_sampling_to_reach_0_8_and_0_9(default_results):
    """Demo 5 (20 seeds): to reach pass@1 0.8 and 0.9, plain GRPO draws fewer answers than
    dynamic sampling, resolved (α = 0.01); both reach every target."""
    from rlvr.demos.dynamic_sampling import answers_to_reach

    curves = default_results["curves"]
    reach = answers_to_reach(curves[curves["experiment"] == "dynamic"], (0.8, 0.9, 0.95))
    dyn, plain = reach[reach["max_rounds"] > 0], reach[reach["max_rounds"] == 0]
    assert len(dyn) == len(plain) == 20 and not reach.isna().any().any()
    for target in (0.8, 0.9):
        d, se = _diff_se(dyn[target].to_numpy(), plain[target].to_numpy())
        assert d > 0 and K.resolved(d, se, 20), (target, d, se)  # 20 seeds


# --- demos 8-10: the rest of GRPO's objective (README "The rest of GRPO's objective") ---------


def _final_curves(res, experiment, **where):
    """The last record (level all) of each run of an experiment matching `where`, indexed by seed."""
    c = res["curves"]
    c = c[(c["experiment"] == experiment) & (c["level"] == "all")]
    for column, value in where.items():
        c = c[c[column] == value]
    last = c[c["step"] == c["step"].max()].set_index("seed")
    assert len(last) >= 5 and last.index.is_unique, (experiment, where)
    return last


def _paired(a, b):
    """Mean and standard error of the per-seed difference a - b (Series indexed by seed)."""
    d = (a - b).dropna()
    return d.mean(), d.std(ddof=1) / np.sqrt(len(d))


def test_demo8_clipping_never_binds_at_one_update_and_more_updates_help_a_little(default_results):
    one = [_final_curves(default_results, "clipping", epochs=1, clip_high=eh) for eh in (0.2, 0.28, 0.4)]
    for other in one[1:]:  # μ = 1: the clip never binds, so ε_high changes nothing (by construction)
        assert other["pass1"].equals(one[0]["pass1"]) and other["entropy"].equals(one[0]["entropy"])
    c = default_results["curves"]
    clip = c[(c["experiment"] == "clipping") & (c["level"] == "all")]
    assert (clip.loc[clip["epochs"] == 1, "clip_frac"] == 0).all()
    gains = []
    for mu in (2, 4):
        runs = _final_curves(default_results, "clipping", epochs=mu, clip_high=0.2)
        gain, se = _paired(runs["pass1"], one[0]["pass1"])
        assert gain > T5 * se, (mu, gain, se)  # more updates per batch: higher, resolved (paired)
        drop, se = _paired(runs["entropy"], one[0]["entropy"])
        assert drop < -T5 * se, (mu, drop, se)  # and lower entropy
        share = clip.loc[(clip["epochs"] == mu) & (clip["step"] > 0), "clip_frac"].mean()
        assert 0.03 < share < 0.15, share  # the README's "5-10%"
        gains.append(gain)
    assert gains[1] > gains[0]


def test_demo8_clip_higher_lowers_entropy_in_this_toy(default_results):
    low = _final_curves(default_results, "clipping", epochs=4, clip_high=0.2)
    high = _final_curves(default_results, "clipping", epochs=4, clip_high=0.4)
    d, se = _paired(high["entropy"], low["entropy"])
    assert d < -T5 * se, (d, se)  # resolved lower, paired
    d, se = _paired(high["pass1"], low["pass1"])
    assert d > T5 * se, (d, se)


def test_demo9_kl_penalty_orders_by_estimator_and_placement(default_results):
    kl = {(est, place): _final_curves(default_results, "kl_penalty", kl_beta=1.0, kl_estimator=est,
                                      kl_placement=place)["kl_ref"]
          for est in ("k1", "k2", "k3") for place in ("loss", "reward")}
    none = _final_curves(default_results, "kl_penalty", kl_beta=0.0)["kl_ref"]
    order = [("k1", "reward"), ("k2", "loss"), ("k3", "loss"), ("k2", "reward"), ("k3", "reward")]
    values = [kl[key] for key in order] + [none]
    for a, b in zip(values, values[1:]):  # each adjacent pair resolved apart (independent s.e.)
        diff, se = _diff_se(b.to_numpy(), a.to_numpy())
        assert diff > T5 * se, (diff, se)
    # k1 as a loss has zero expected gradient: it moves the final KL by under 5% at every β
    for beta in (0.1, 0.3, 1.0):
        k1 = _final_curves(default_results, "kl_penalty", kl_beta=beta, kl_estimator="k1",
                           kl_placement="loss")
        d, _ = _paired(k1["kl_ref"], none)
        assert abs(d) < 0.05 * none.mean(), (beta, d)


def test_demo9_k3_in_the_reward_points_away_from_both_kls_on_trained_policies(default_results):
    g = default_results["klgrad"]
    g = g[(g["experiment"] == "kl_penalty") & (g["kl_beta"] == 0)]

    def cos(est, place, kind):
        x = g[(g["estimator"] == est) & (g["placement"] == place)][f"cos_{kind}"].to_numpy()
        assert len(x) >= 5
        return x.mean(), x.std(ddof=1) / np.sqrt(len(x))

    m, se = cos("k3", "reward", "reverse")
    assert m < -T5 * se, (m, se)
    m, se = cos("k3", "reward", "forward")
    assert m < -0.9 and m + T5 * se < -0.9 + 0.05
    m, se = cos("k2", "reward", "reverse")
    assert m > 0.8
    for est, place, kind in (("k2", "loss", "reverse"), ("k1", "reward", "reverse"),
                             ("k3", "loss", "forward")):
        assert abs(cos(est, place, kind)[0] - 1) < 1e-9  # the exact identities


@pytest.mark.parametrize("method", ["grpo", "dr_grpo"])
def test_demo10_averaging_an_answers_tokens_lengthens_wrong_answers_and_shortens_correct_ones(default_results,
                                                                                           method):
    runs = {agg: _final_curves(default_results, "loss_aggregation", method=method, loss_agg=agg)
            for agg in ("seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean")}
    base = runs["seq-mean-token-sum-norm"]
    d, se = _paired(runs["seq-mean-token-mean"]["length_wrong"], base["length_wrong"])
    assert d > T5 * se and d > 10, (d, se)  # wrong answers longer (resolved) (about 20 tokens)
    d, se = _paired(runs["seq-mean-token-mean"]["length_correct"], base["length_correct"])
    assert d < -T5 * se and d < -10, (d, se)  # correct answers shorter
    d, se = _paired(runs["seq-mean-token-mean"]["pass1"], base["pass1"])  # its larger mean step:
    assert (d > 3 * se) if method == "dr_grpo" else (abs(d) < 3 * se), (d, se)  # resolved for Dr. GRPO only
    for column in ("length_wrong", "length_correct"):  # token-mean: under a token either way
        d, _ = _paired(runs["token-mean"][column], base[column])
        assert abs(d) < 1, (column, d)


def test_entropy_against_pass1_is_nearly_one_curve_for_every_estimator(default_results):
    """README "Entropy against pass@1": demo 3's rows at offset 0, means over seeds, entropy read
    off each row's curve at equal pass@1 (linear between evaluations)."""
    c = default_results["curves"]
    t = c[(c["experiment"] == "training") & (c["level"] == "all") & (c["reward_offset"] == 0)]
    grid = [0.3, 0.4, 0.5, 0.6, 0.7]
    at = {}
    for key, g in t.groupby(["method", "lr"]):
        mean = g.groupby("step")[["pass1", "entropy"]].mean()
        assert mean["pass1"].is_monotonic_increasing  # so entropy is a function of pass@1 along the run
        at[key] = np.interp(grid, mean["pass1"], mean["entropy"])
    at = np.array(list(at.values()))  # [rows, points]
    assert len(at) >= 10
    assert (at.max(axis=0) - at.min(axis=0)).max() < 0.06  # at most 0.05 nats apart
    assert at.mean(axis=0)[0] - at.mean(axis=0)[-1] > 1.0  # while it falls by 1.1 nats


# --- demo 11: shared weights, RL narrows pass@k (README "Shared weights") ---------------------


def _shared(res, method, shared_lr, level, k):
    p = res["passk"]
    sub = p[(p["experiment"] == "shared_policy") & (p["method"] == method) & (p["shared_lr"] == shared_lr)
            & (p["level"] == level) & (p["k"] == k)]
    assert len(sub) == 10
    return sub.set_index("seed")["pass_at_k"]


def _ref(res, level, k):
    r = res["reference"]
    return float(r[(r["level"] == level) & (r["k"] == k)]["pass_at_k"].iloc[0])


def _mean_se(x):
    return x.mean(), x.std(ddof=1) / np.sqrt(len(x))


@pytest.mark.parametrize("shared_lr", [0.01, 0.05])
@pytest.mark.parametrize("method", ["none", "rloo", "grpo", "dr_grpo", "unlikeliness"])
def test_demo11_shared_weights_raise_pass1_and_lower_pass256_below_the_reference(default_results, method,
                                                                             shared_lr):
    m, se = _mean_se(_shared(default_results, method, shared_lr, "all", 1))
    assert m - _ref(default_results, "all", 1) > T5 * se
    m, se = _mean_se(_shared(default_results, method, shared_lr, "all", 256))
    assert _ref(default_results, "all", 256) - m > T5 * se, (m, se)
    m, _ = _mean_se(_shared(default_results, method, shared_lr, "minority", 256))
    assert m < _ref(default_results, "minority", 256) - 0.2  # the minority prompts pay
    runs = default_results["runs"]
    cross = runs[(runs["experiment"] == "shared_policy") & (runs["method"] == method)
                 & (runs["shared_lr"] == shared_lr)]["crossover_k"]
    assert (cross > 0).all() and cross.max() <= 256


def test_demo11_the_tabular_policy_never_falls_below_the_reference(default_results):
    runs = default_results["runs"]
    tabular = runs[(runs["experiment"] == "shared_policy") & (runs["shared_lr"] == 0)]
    assert len(tabular) == 60 and (tabular["crossover_k"] == 0).all()  # every run, every k <= 256


def test_demo11_the_unlikeliness_reward_narrows_as_grpo_does(default_results):
    """With one correct answer per prompt it has no rare correct answer to lift: paired with GRPO
    (same seeds), pass@256 is not resolved from GRPO's at shared lr 0.01 and 0.05, and pass@1 is
    lower resolved on both policies (README)."""
    def paired(shared_lr, k):
        a, b = (_shared(default_results, m, shared_lr, "all", k) for m in ("unlikeliness", "grpo"))
        d = (a - b).to_numpy()
        return d.mean(), d.std(ddof=1) / np.sqrt(len(d))

    for shared_lr in (0.01, 0.05):
        diff, se = paired(shared_lr, 256)
        assert abs(diff) < 3 * se, (shared_lr, diff, se)
    for shared_lr in (0.0, 0.01, 0.05):
        diff, se = paired(shared_lr, 1)
        assert diff < 0 and K.resolved(diff, se, 10), (shared_lr, diff, se)  # 10 seeds


def test_demo11_pkpo_narrows_least(default_results):
    pkpo, grpo = (_shared(default_results, m, 0.01, "all", 256) for m in ("pkpo_k4", "grpo"))
    diff, se = _diff_se(pkpo.to_numpy(), grpo.to_numpy())
    assert diff > 0 and K.resolved(diff, se, 10), (diff, se)  # 10 seeds
    m, se = _mean_se(pkpo)
    assert abs(m - _ref(default_results, "all", 256)) < 3 * se  # not resolved from the reference
    pkpo_m, grpo_m = (_shared(default_results, m, 0.01, "minority", 256) for m in ("pkpo_k4", "grpo"))
    diff, se = _diff_se(pkpo_m.to_numpy(), grpo_m.to_numpy())
    assert diff > 0 and K.resolved(diff, se, 10), (diff, se)
    runs = default_results["runs"]
    cross = {m: runs[(runs["experiment"] == "shared_policy") & (runs["method"] == m)
                     & (runs["shared_lr"] == 0.05)].set_index("seed")["crossover_k"]
             for m in ("pkpo_k4", "grpo")}
    later = K.over_seeds((cross["pkpo_k4"] - cross["grpo"]).dropna())  # paired by seed
    assert later.mean > 0 and later.resolved and later.seeds == 10, later  # later, at shared lr 0.05


# --- demo 12: several correct answers, the rank bias (README "Several correct answers") -------


def _rank_bias(res, column, method, epochs, clip_high, at_pass1=None):
    """Per seed, a rank_bias run's final value of a curves column, or its value where pass@1
    first reaches at_pass1."""
    from rlvr.analysis import value_at_pass1

    c = res["curves"]
    if at_pass1 is None:
        c = c[(c["experiment"] == "rank_bias") & (c["level"] == "all")]
        c = c[c["step"] == c["step"].max()]
    else:
        c = value_at_pass1(c, "rank_bias", column, at_pass1)
    run = c[(c["method"] == method) & (c["epochs"] == epochs) & (c["clip_high"] == clip_high)]
    assert len(run) == 20
    return run.set_index("seed")[column]


def _paired_se(a, b):
    d = (a - b).to_numpy()
    return d.mean(), d.std(ddof=1) / np.sqrt(len(d))


def test_demo12_grpo_concentrates_on_the_likeliest_correct_answer(default_results):
    start = default_results["curves"]
    start = start[(start["experiment"] == "rank_bias") & (start["step"] == 0)]["entropy_correct"]
    assert np.allclose(start, start.iloc[0]) and abs(start.iloc[0] - 1.137) < 5e-4  # the halves 8:4:2:1
    final = _rank_bias(default_results, "entropy_correct", "grpo", 1, 0.2)
    assert final.max() < 0.3  # from 1.137 nats: every seed


@pytest.fixture(scope="module")
def made(every_claim):
    """{key: Claim} of every demo's claims on the default config, computed once."""
    return {c.key: c for _, claims in every_claim for c in claims}


def small_finite_step():
    """A finite-step table of the default config's rows on a task of 8 prompts x 4 answers (the
    default's takes minutes): its columns and parts, not its numbers."""
    import json

    import pyarrow as pa

    from rlvr import binding
    from rlvr import config as C
    from rlvr.finite_step import finite_step_columns
    from rlvr.task import make_task

    spec = json.loads(binding.finite_step_spec(C.train_rows(C.validate_config({})), 4))
    spec["batches"]["n_groups"], spec["sample_sign"]["G"] = 20, 4
    return pa.table(finite_step_columns(make_task(P=8, M=4), spec)).to_pandas()


def test_demo12_the_unlikeliness_reward_concentrates_too_less_than_grpo(default_results, made):
    """The unlikeliness reward's final correct-answer entropy is below step 0's 1.137 nats, resolved
    (it concentrates too) and above GRPO's on the same seeds; its claim says so."""
    own = _rank_bias(default_results, "entropy_correct", "unlikeliness", 1, 0.2)
    grpo = _rank_bias(default_results, "entropy_correct", "grpo", 1, 0.2)
    m, se = _mean_se(own - 1.137)
    assert -m > T5 * se and m > -0.7, (m, se)
    d, se = _mean_se(own - grpo)
    assert d > T5 * se, (d, se)
    assert "unlikeliness reward lowers its correct-answer entropy by" in made["rank_bias.unlikeliness"].text


def test_demo12_the_unlikeliness_reward_and_more_epochs_keep_correct_answers_spread(default_results):
    """At equal pass@1 (0.75), paired with GRPO μ = 1: unlikeliness > μ = 4 > μ = 2 > 0, each step
    resolved; clip-higher lowers the entropy at μ = 2 and 4; the unlikeliness reward
    costs pass@1."""
    def at(method, epochs, clip_high=0.2):
        return _rank_bias(default_results, "entropy_correct", method, epochs, clip_high, at_pass1=0.75)

    order = [at("unlikeliness", 1), at("grpo", 4), at("grpo", 2), at("grpo", 1)]
    for higher, lower in zip(order, order[1:]):
        diff, se = _paired_se(higher, lower)
        assert diff > T5 * se, (diff, se)
    for mu in (2, 4):
        diff, se = _paired_se(at("grpo", mu, 0.28), at("grpo", mu))
        assert diff < -T5 * se, (mu, diff, se)
    runs = default_results["runs"]
    rb = runs[(runs["experiment"] == "rank_bias") & (runs["clip_high"] == 0.2)]
    pass1 = {(m, mu): g.set_index("seed")["final_pass1"] for (m, mu), g in rb.groupby(["method", "epochs"])}
    diff, se = _paired_se(pass1["unlikeliness", 1], pass1["grpo", 1])
    assert diff < -T5 * se, (diff, se)
    for mu in (2, 4):  # more updates per batch raise pass@1 too
        diff, se = _paired_se(pass1["grpo", mu], pass1["grpo", 1])
        assert diff > T5 * se, (mu, diff, se)


def test_demo12_the_unlikeliness_reward_keeps_the_easy_prompts_correct_answers_most(default_results):
    """At the end, paired with GRPO per level: the easy prompts' gain is resolved and more than half
    of the four levels' summed gains (README: +0.893 of +1.365 nats)."""
    c = default_results["curves"]
    c = c[(c["experiment"] == "rank_bias") & (c["epochs"] == 1)]
    c = c[c["step"] == c["step"].max()]
    gain = {}
    for level in ("very_hard", "hard", "medium", "easy"):
        a, b = (c[(c["method"] == m) & (c["level"] == level)].set_index("seed")["entropy_correct"]
                for m in ("unlikeliness", "grpo"))
        gain[level] = _paired_se(a, b)
    assert gain["easy"][0] > 3 * gain["easy"][1] and gain["easy"][0] > 0.5 * sum(d for d, _ in gain.values())


# --- demos 13 and 14: one sign of sample; what keeps pass@k (README "One sign of sample", demo 14) --


def _passk_of(res, experiment, k, **where):
    p = res["passk"]
    sub = p[(p["experiment"] == experiment) & (p["level"] == "all") & (p["k"] == k)]
    for column, value in where.items():
        sub = sub[sub[column] == value]
    assert len(sub) == 10, where  # one per seed
    return sub.set_index("seed")["pass_at_k"]


@pytest.mark.parametrize("lr", [0.5, 2.0, 8.0])
def test_demo13_psr_stays_above_the_reference_at_256_on_the_tabular_policy(default_results, lr):
    """PSR (REINFORCE on 0/1 rewards) ends above the reference's pass@256 at every lr, (resolved)"""
    m, se = _mean_se(_passk_of(default_results, "negative_samples", 256, method="psr", lr=lr, shared_lr=0.0))
    assert m - _ref(default_results, "all", 256) > T5 * se, (m, se)


def test_demo13_nsr_falls_below_the_reference_at_256_at_the_largest_lr(default_results):
    """At lr 8 on the tabular policy NSR ends below the reference's pass@256 (resolved), and
    below PSR on the same seeds; at lr 0.5 it ends above the reference."""
    nsr = _passk_of(default_results, "negative_samples", 256, method="nsr", lr=8.0, shared_lr=0.0)
    psr = _passk_of(default_results, "negative_samples", 256, method="psr", lr=8.0, shared_lr=0.0)
    ref = _ref(default_results, "all", 256)
    m, se = _mean_se(nsr)
    assert ref - m > T5 * se, (m, se)
    d, se = _mean_se(nsr - psr)
    assert -d > T5 * se, (d, se)
    m, se = _mean_se(_passk_of(default_results, "negative_samples", 256, method="nsr", lr=0.5, shared_lr=0.0))
    assert m - ref > T5 * se, (m, se)


def test_demo14_a_kl_penalty_keeps_the_shared_policy_above_the_reference_at_every_k(default_results):
    """At shared lr 0.05, GRPO without a penalty falls below the reference at some k <= 256 in
    every seed; with k3 in the loss at any β > 0 in none."""
    runs = default_results["runs"]
    kl = runs[(runs["experiment"] == "narrowing_remedies") & (runs["correct_answers"] == 1)]
    assert (kl[kl["kl_beta"] == 0]["crossover_k"] > 0).all()
    assert len(kl[kl["kl_beta"] > 0]) == 30 and (kl[kl["kl_beta"] > 0]["crossover_k"] == 0).all()


def test_demo14_with_four_correct_answers_the_unlikeliness_reward_narrows_as_grpo_does(default_results):
    """With 4 correct answers and shared weights, the unlikeliness reward's pass@256 is within 3
    s.e. of GRPO's (paired by seed), and both end below the reference's."""
    where = {"correct_answers": 4, "shared_lr": 0.05}
    un = _passk_of(default_results, "narrowing_remedies", 256, method="unlikeliness", **where)
    gr = _passk_of(default_results, "narrowing_remedies", 256, method="grpo", **where)
    d, se = _mean_se(un - gr)
    assert abs(d) < 3 * se, (d, se)
    for x in (un, gr):
        m, se = _mean_se(x)
        assert _ref(default_results, "all", 256) - m > T5 * se, (m, se)


def _off_policy_level_gaps(res, mismatch, value, correction):
    """{level: per-seed final pass@1 of `correction` (C = 2) minus no correction} for the sampler
    with `mismatch` = value (demo 15)."""
    runs = res["runs"]
    runs = runs[(runs["experiment"] == "off_policy") & (runs[mismatch] == value)]
    this = runs[(runs["is_correction"] == correction) & (runs["is_cap"] == 2.0)].set_index("seed")
    base = runs[runs["is_correction"] == "none"].set_index("seed")
    assert len(this) == len(base) == 10
    return {lv: (this[f"final_pass1_{lv}"] - base[f"final_pass1_{lv}"]).to_numpy()
            for lv in ("easy", "medium", "hard", "very_hard")}


def test_demo15_masking_loses_most_on_the_very_hard_prompts_for_a_stale_sampler_only(default_results, made):
    """Masking at C = 2 against no correction: with a sampler 64 steps stale it loses most on the
    very hard prompts (resolved, more than on the hard ones, paired); with the perturbed sampler
    (σ = 2) it loses more on the medium prompts than on the very hard ones. The computed claim
    names the level for each."""
    stale = _off_policy_level_gaps(default_results, "sampler_lag", 64, "masked")
    d, se = _mean_se(stale["very_hard"] - stale["hard"])
    assert -d > T5 * se, (d, se)
    noisy = _off_policy_level_gaps(default_results, "sampler_noise", 2.0, "masked")
    d, se = _mean_se(noisy["medium"] - noisy["very_hard"])
    assert -d > T5 * se, (d, se)
    assert "loses most on the very hard prompts" in made["off_policy.sampler_lag_by_level"].text.split(
        "masked (C = 2)")[1]
    noise_masked = made["off_policy.sampler_noise_by_level"].text.split("masked (C = 2)")[1]
    assert "loses most on the medium" in noise_masked and "very hard prompts" not in noise_masked


def test_demo15_truncation_against_a_perturbed_sampler_costs_the_very_hard_prompts(default_results):
    """Truncation at C = 2 with the σ = 2 sampler ends below no correction on the very hard
    prompts (resolved, paired): it does not under-weight only what the policy newly learnt."""
    d, se = _mean_se(_off_policy_level_gaps(default_results, "sampler_noise", 2.0, "truncated")["very_hard"])
    assert d < 0 and K.resolved(d, se, 10), (d, se)  # 10 seeds


def test_demo16_the_clip_limits_a_drift_and_adds_no_gain_of_its_own(default_results, made):
    """On random ½ rewards no clipped μ = 4 setting ends with a higher easy-prompt pass@1 than μ = 1
    at the same lr, three of the four end lower (resolved, paired by seed, 10 seeds: the README's
    words), and every one ends higher than μ = 4 without the clip (resolved): the clip limits the
    unclipped updates' drift; no clip drift upwards is visible. The
    paper's setting (m = 8 minibatches, each answer once) with the clip ends above m = 8 without
    it and not above μ = 1 (each resolved), and the claim's verdict says so."""
    runs = default_results["runs"]
    runs = runs[runs["experiment"] == "spurious_rewards"]
    clipped = runs[((runs["epochs"] > 1) | (runs["minibatches"] > 1)) & (runs["clip_high"] < np.inf)]
    assert len(clipped) == 60 and clipped["seed"].nunique() == 10
    lower = []
    for (lr, mu, m, hi), g in clipped.groupby(["lr", "epochs", "minibatches", "clip_high"]):
        g = g.set_index("seed")["final_pass1_easy"]
        same = runs[runs["lr"] == lr]
        one = same[(same["epochs"] == 1) & (same["minibatches"] == 1)].set_index("seed")["final_pass1_easy"]
        free = same[(same["epochs"] == mu) & (same["minibatches"] == m) & (same["clip_high"] == np.inf)]
        free = free.set_index("seed")["final_pass1_easy"]
        d, se = _mean_se((g - one).to_numpy())
        assert not (d > 0 and K.resolved(d, se, 10)), (lr, mu, m, hi, d, se)
        lower += [m == 1 and d < 0 and K.resolved(d, se, 10)]
        d, se = _mean_se((g - free).to_numpy())
        assert d > 0 and K.resolved(d, se, 10), (lr, mu, m, hi, d, se)
    assert sum(lower) == 3  # of the four clipped μ = 4 settings
    assert "lowers it by" in made["spurious_rewards.trust_region"].text
    assert made["spurious_rewards.paper_setting"].text.endswith("the toy does not reproduce the paper's gain")


def test_demo18_cispo_ends_above_ppo_at_four_passes_and_gspo_with_ppo(default_results):
    """What FINDINGS says of demo 18, paired by seed: every setting with more than one update a
    batch ends above one update; at μ = 4 CISPO ends above PPO (resolved); GSPO within 3 s.e.
    of PPO at μ = 4 and at m = 4; PPO at m = 4 above PPO at μ = 4."""
    runs = default_results["runs"]
    runs = runs[runs["experiment"] == "policy_losses"]

    def final(loss, mu, m):
        sel = runs[(runs["epochs"] == mu) & (runs["minibatches"] == m) & (runs["ratio_tokens"] == "one")]
        if loss:
            sel = sel[sel["policy_loss"] == loss]
        assert sel["seed"].is_unique and len(sel) == 10
        return sel.set_index("seed")["final_pass1"]

    one = final(None, 1, 1)
    for loss in ("ppo", "gspo", "cispo"):
        for mu, m in ((4, 1), (1, 4)):
            d, se = _mean_se((final(loss, mu, m) - one).to_numpy())
            assert d > T5 * se, (loss, mu, m, d, se)
    d, se = _mean_se((final("cispo", 4, 1) - final("ppo", 4, 1)).to_numpy())
    assert d > T5 * se, (d, se)
    for mu, m in ((4, 1), (1, 4)):
        d, se = _mean_se((final("gspo", mu, m) - final("ppo", mu, m)).to_numpy())
        assert abs(d) < 3 * se, (mu, m, d, se)
    d, se = _mean_se((final("ppo", 1, 4) - final("ppo", 4, 1)).to_numpy())
    assert d > T5 * se, (d, se)


# --- the claims the demos compute (rlvr/claims.py), on the default config ---


@pytest.fixture(scope="module")
def every_claim(default_results):
    return report.every_claim(default_results)


def test_every_claim_states_only_the_orderings_its_data_resolves(every_claim):
    """One test for every demo's claims: a sentence says 'not resolved' once for each of its
    differences within 3 standard errors, and never otherwise."""
    claims = [c for _, cs in every_claim for c in cs]
    assert claims
    for claim in claims:
        unresolved = sum(not d.resolved for d in claim.differences)
        assert claim.text.count("not resolved") == unresolved, claim
        for d in claim.differences:
            assert d.seeds >= 2 and d.se > 0, claim  # paired over seeds, never a single run


DOCS = ("README.md", "FINDINGS.md", "GUIDE.md", "BENCHMARKS.md", "results/README.md")


def test_the_docs_quote_the_claims_the_results_make(made, default_results):
    """Every claim a document quotes is the sentence the demo computes from the default config's
    results (`python -m rlvr claims --doc FINDINGS.md` rewrites them); FINDINGS.md quotes some."""
    from rlvr.demos import network

    assert K.quoted((REPO / "FINDINGS.md").read_text()), "FINDINGS.md quotes no claim"
    # the network's claims need its base (minutes of CPU), which default_results leaves out: a
    # quoted one must be a claim the network demo makes; its sentence is checked against a
    # pipeline run's results by `python -m rlvr claims --doc FINDINGS.md --check` (BENCHMARKS.md)
    of_network = {f"network.{key}" for key in network.CLAIMS}
    # so do the finite-step job's (minutes of CPU too): the keys its claims take, from a small
    # finite-step table beside the default results
    with_table = {**default_results, "finite_step": small_finite_step()}
    of_finite_step = {c.key for demo in DEMOS if "finite_step" in demo.module.FRAMES
                      for c in demo.claims(with_table)} - set(made)
    assert of_finite_step, "no claim reads the finite-step table"
    for doc in DOCS:
        for key, sentence in K.quoted((REPO / doc).read_text()).items():
            if key.startswith("network."):
                assert key in of_network, f"{doc} quotes {key}, which the network demo does not make"
                continue
            if key in of_finite_step:
                continue
            assert key in made, f"{doc} quotes {key}, which no demo makes"
            assert sentence == " ".join(made[key].text.split()), (doc, key)


def test_the_readme_figure_is_the_default_configs(default_results, tmp_path):
    """docs/learning_curves.png, the README's figure, is byte for byte the figure the default
    config's results draw (the pipeline's and the in-process figures are equal: test_pipeline)."""
    from rlvr.report import write_figures

    png, _pdf = write_figures(default_results, tmp_path, ["learning_curves"])
    assert png.read_bytes() == (REPO / "docs" / "learning_curves.png").read_bytes()
