"""`rlvr predict` (rlvr/predict.py): a dataset's counts in, the toy's exact predictions out.

Each formula is held against its closed form or a Monte Carlo of its own assumptions (fixed
seeds, tolerances in standard errors); bad tables are refused by file, line and column before any
work; and on a dataset whose true pass rates are known (the toy's reference, 16 answers sampled
a prompt) the zero-signal prediction lands on the truth within its stated uncertainty.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rlvr import predict as P
from rlvr.policy import softmax
from rlvr.task import make_task


def test_lgamma_and_the_beta_moments_are_their_closed_forms():
    x = np.array([1e-3, 0.3, 1.0, 2.5, 7.9, 40.0, 1e4])
    np.testing.assert_allclose(P._lgamma(x), [math.lgamma(v) for v in x], rtol=1e-14, atol=1e-13)
    a, b = np.array([0.5, 3.0, 17.5]), np.array([16.5, 2.0, 0.5])
    for j, k in ((1, 0), (0, 3), (8, 0), (2, 5)):
        # E[p^j (1 − p)^k] = Π_{i<j} (a + i) Π_{i<k} (b + i) / Π_{i<j+k} (a + b + i)
        want = [np.prod([ai + i for i in range(j)]) * np.prod([bi + i for i in range(k)])
                / np.prod([ai + bi + i for i in range(j + k)]) for ai, bi in zip(a, b)]
        np.testing.assert_allclose(P.beta_moment(a, b, j, k), want, rtol=1e-11)


def test_with_many_samples_the_posterior_predictions_are_the_pass_rates_own():
    """n = 10^6 answers a prompt: the posterior sits on c/n, so the zero-signal share is
    mean p^G + (1 − p)^G and pass@k mean 1 − (1 − p)^k, to 1e-4, with s.d. near 0."""
    p = np.array([0.01, 0.2, 0.5, 0.9])
    n = np.full(4, 10**6)
    a, b, _ = P.posterior(n, np.round(p * n), P.JEFFREYS)
    z, sd = P.zero_signal(a, b, 8)
    assert z == pytest.approx((p**8 + (1 - p) ** 8).mean(), abs=1e-4) and sd < 1e-3
    mean, sd = P.pass_at_k(a, b, (1, 16))
    np.testing.assert_allclose(mean, [p.mean(), (1 - (1 - p) ** 16).mean()], atol=1e-4)


def test_dynamic_samplings_expected_draws_match_a_simulation_of_its_rounds():
    """DAPO's rounds simulated (20,000 steps, seed 0): each round n groups, each with a signal with
    probability s; stop once n are kept or after max_rounds. The exact expectations lie within 4
    standard errors of the simulation's means."""
    rng = np.random.default_rng(0)
    for s, n, rounds in ((0.3, 8, 3), (0.55, 32, 4), (0.9, 16, 2)):
        drawn, kept = np.zeros(20_000), np.zeros(20_000)
        for t in range(20_000):
            got = 0
            for _ in range(rounds):
                drawn[t] += n
                got += rng.binomial(n, s)
                if got >= n:
                    break
            kept[t] = min(got, n)
        want_drawn, want_kept = P.dynamic_sampling(s, n, rounds)
        for sim, want in ((drawn, want_drawn), (kept, want_kept)):
            se = sim.std(ddof=1) / np.sqrt(len(sim))
            assert abs(sim.mean() - want) < 4 * se + 1e-6, (s, n, rounds, sim.mean(), want)


def test_the_fitted_prior_recovers_the_prior_the_pass_rates_were_drawn_from():
    """2,000 prompts, p ~ Beta(2, 6), 16 answers each (seed 1): the fitted prior's mean is within 4
    standard errors of the true 0.25 (the s.e. of the prompts' mean c/n), and its strength a + b
    within a factor 1.6 of the true 8."""
    rng = np.random.default_rng(1)
    p = rng.beta(2, 6, 2000)
    c = rng.binomial(16, p)
    a, b = P.fit_prior(np.full(2000, 16), c)
    se = (c / 16).std(ddof=1) / np.sqrt(2000)
    assert abs(a / (a + b) - 0.25) < 4 * se
    assert 8 / 1.6 < a + b < 8 * 1.6


def test_on_known_pass_rates_the_zero_signal_prediction_covers_the_truth():
    """The toy's reference pass rates (make_task's 200 prompts) with 16 answers sampled a prompt
    (seeds 0–4): the predicted zero-signal share at G = 4, 8, 16 lies within 3 posterior s.d. of the
    true mean p^G + (1 − p)^G, under the fitted prior, on every seed."""
    p = softmax(make_task()["logits"])[:, 0]
    for seed in range(5):
        c = np.random.default_rng(seed).binomial(16, p)
        a, b, _ = P.posterior(np.full(200, 16), c)
        for G in (4, 8, 16):
            z, sd = P.zero_signal(a, b, G)
            assert abs(z - (p**G + (1 - p) ** G).mean()) < 3 * sd, (seed, G)


def test_estimator_moments_match_exact_moments_where_the_posterior_is_a_point():
    """With 10^6 answers at p = 0.25 the posterior average of E[ĝ_0] is exact_moments' at 0.25."""
    from rlvr.exact import exact_moments, uniform_wrong_prompt

    a, b, _ = P.posterior(np.array([10**6]), np.array([250_000]), P.JEFFREYS)
    got = P.estimator_moments(a, b, ("grpo", "rloo"), 8)
    for method in ("grpo", "rloo"):
        mean, std, _ = exact_moments(uniform_wrong_prompt(0.25, 16), method, 8)
        assert got[method][0][0] == pytest.approx(mean, rel=1e-4)
        assert got[method][1][0] == pytest.approx(std, rel=1e-3)


def _csv(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, words", [
    ("prompt,n\nq1,16\n", ["missing column c", "prompt, n, c"]),
    ("prompt,n,c\nq1,16,3\nq2,16,\n", ["line 3", "'q2'", "column c is empty"]),
    ("prompt,n,c\nq1,16,3\nq2,16,17\n", ["line 3", "column c = 17", "0 <= c <= n"]),
    ("prompt,n,c\nq1,0,0\n", ["line 2", "column n = 0", "at least 1"]),
    ("prompt,n,c\nq1,16,3\nq1,16,4\n", ["line 3", "repeats the prompt of line 2"]),
    ("prompt,n,pass_rate\nq1,16,0.3\n", ["line 2", "pass_rate = 0.3", "whole number"]),
])
def test_a_bad_table_is_refused_naming_its_line_and_column(tmp_path, text, words):
    with pytest.raises(ValueError) as err:
        P.read_data(_csv(tmp_path, text))
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    assert str(tmp_path / "data.csv") in str(err.value)


def test_pass_rates_and_sampled_answers_are_read_as_counts(tmp_path):
    rate = P.read_data(_csv(tmp_path, "prompt,n,pass_rate,level\nq1,16,0.25,hard\nq2,8,1.0,easy\n"))
    assert rate[["n", "c"]].values.tolist() == [[16, 4], [8, 8]] and list(rate["level"]) == ["hard", "easy"]
    lines = [{"id": "a", "r": 1}, {"id": "b", "r": 0}, {"id": "a", "r": 0}, {"id": "a", "r": 1}]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    got = P.read_data(path, id_key="id", reward_key="r")
    assert got.values.tolist() == [["a", 3, 2], ["b", 1, 0]]
    path.write_text('{"id": "a", "r": 0.5}\n')
    with pytest.raises(ValueError, match=r"s.jsonl, line 1: r = 0.5; allowed: 0 or 1"):
        P.read_data(path, id_key="id", reward_key="r")
    path.write_text('{"prompt": "a"}\n')
    with pytest.raises(ValueError, match=r"line 1: no key 'reward'"):
        P.read_data(path)


def test_the_command_prints_the_report_and_writes_its_files(tmp_path):
    """`rlvr predict` on a table written by hand: the report's lines, the Parquet files and the
    figure; a band that keeps nothing and a bad prior are one clear line each."""
    rows = "\n".join(f"q{i},16,{c}" for i, c in enumerate([0, 0, 1, 3, 8, 12, 16, 5]))
    path = _csv(tmp_path, "prompt,n,c\n" + rows + "\n")
    cmd = [sys.executable, "-m", "rlvr", "predict", str(path), "--band", "0.05", "0.95",
           "--out", str(tmp_path / "o")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "8 prompts, 128 sampled answers" in done.stdout and "fitted to these counts" in done.stdout
    assert "keeps 5 of 8 prompts" in done.stdout and "[kept]" in done.stdout
    for name in ("prompts", "groups", "pass_at_k", "estimators"):
        assert len(pd.read_parquet(tmp_path / "o" / f"predict_{name}.parquet"))
    assert (tmp_path / "o" / "predict.png").stat().st_size > 0
    for extra, said in ((["--band", "0.97", "0.99"], "keeps none of the 8 prompts"),
                        (["--prior", "0", "1"], "must be positive")):
        done = subprocess.run([*cmd[:5], *extra], capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


def test_the_shipped_example_is_a_table_rlvr_predict_reads():
    """examples/network_base_counts.csv (README's worked example): 200 prompts of 16 answers, the
    four levels of 50, and a report made from it."""
    from conftest import REPO

    data = P.read_data(REPO / "examples" / "network_base_counts.csv")
    assert len(data) == 200 and set(data["n"]) == {16} and data["level"].value_counts().tolist() == [50] * 4
    out = P.predict(data, band=(0.05, 0.95))
    groups = out["groups"]
    assert set(groups["subset"]) == {"all", "kept"} and groups["zero_signal"].between(0, 1).all()
