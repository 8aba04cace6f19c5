"""Claims (rlvr/claims.py): sentences computed with their numbers by the demos, worded to their
standard errors. That every claim of the default config is worded to its standard errors and
that the README quotes exactly them is in tests/test_observations.py (which computes the default
config's results once)."""

import re

import pytest
from conftest import PYTHON, run

from rlvr import claims as K
from rlvr import report
from rlvr.compute import read_results


def test_a_difference_is_worded_by_its_standard_error():
    """20 seeds: resolved beyond t(19) = 2.861 s.e. (a printed t table), not within it."""
    up, down, flat = K.Difference(0.29, 0.1, 20), K.Difference(-0.29, 0.1, 20), K.Difference(0.28, 0.1, 20)
    assert K.change(up, "pass@1") == "raises pass@1 by 0.290 ± 0.100"
    assert K.change(down, "pass@1") == "lowers pass@1 by 0.290 ± 0.100"
    assert K.change(flat, "pass@1", unit=" nats") == "changes pass@1 by +0.280 ± 0.100 nats (not resolved)"
    assert K.signed(down) == "-0.290 ± 0.100" and K.signed(flat) == "+0.280 ± 0.100 (not resolved)"
    assert K.signed(flat, note=False) == "+0.280 ± 0.100"
    tiny = K.Difference(-1.5e-6, 1.7e-7, 5)  # a resolved difference never reads "0.000 ± 0.000"
    assert K.signed(tiny) == "-0.0000015 ± 0.0000002"
    assert K.over_seeds([1.0, 2.0, 3.0]) == K.Difference(2.0, pytest.approx(0.57735, abs=1e-5), 3)
    few = K.Difference(0.9, 0.01, 4)  # 90 s.e., but 4 seeds: no ordering is stated on fewer than 5
    assert not few.resolved and K.signed(few) == "+0.900 ± 0.010 (not resolved: 4 seeds, fewer than 5)"


def test_the_critical_values_are_students_t_at_the_seeds_degrees_of_freedom():
    """Two-sided α = 0.01, against a printed t table (3 decimals), and the p-value at the
    critical value is α."""
    table = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 9: 3.250, 19: 2.861, 29: 2.756, 120: 2.617}
    for dof, t in table.items():
        assert K.t_quantile(dof) == pytest.approx(t, abs=5e-4), dof
        assert K._two_sided_p(K.t_quantile(dof), dof) == pytest.approx(0.01, abs=1e-9)
    assert K.resolved(4.61, 1.0, 5) and not K.resolved(4.60, 1.0, 5)
    assert K.resolved(-3.26, 1.0, 10) and not K.resolved(3.24, 1.0, 10)


def test_a_crossing_k_shows_its_standard_error():
    """A mean k over seeds printed with 0 decimals would read "88 ± 0" for an s.e. of 0.4: the
    claims and demo 14's table show as many decimals as keep the s.e. from rounding to 0."""
    from rlvr import render as R

    crossed = [88, 89, 88, 90, 88, 87, 89, 88, 88, 89]
    assert K.number(K.over_seeds(crossed), 0) == "88.4 ± 0.3"
    assert R.crossover(__import__("pandas").DataFrame({"crossover_k": crossed}), {}) == "88.4 ± 0.3"
    assert K.number(K.over_seeds([200, 222, 240]), 0) == "221 ± 12"  # a large s.e. keeps 0 decimals


@pytest.mark.slow
def test_the_cli_rewrites_a_stale_quote_and_check_refuses_it(tiny_run, tmp_path):
    results = tiny_run / "results"
    made = report.by_key(read_results(results))
    key = next(iter(made))
    readme = tmp_path / "README.md"
    readme.write_text(f"Before. <!-- claim {key} -->an old number 0.123<!-- /claim --> After.\n")
    check = run([PYTHON, "-m", "rlvr", "claims", "--results", str(results), "--doc", str(readme),
                 "--check"], check=False)
    assert check.returncode == 2 and key in check.stderr
    run([PYTHON, "-m", "rlvr", "claims", "--results", str(results), "--doc", str(readme)])
    assert readme.read_text() == f"Before. <!-- claim {key} -->{made[key].text}<!-- /claim --> After.\n"
    readme.write_text("<!-- claim no_demo.makes_this -->x<!-- /claim -->")
    bad = run([PYTHON, "-m", "rlvr", "claims", "--results", str(results), "--doc", str(readme)],
              check=False)
    assert bad.returncode == 2 and "no demo makes the claim 'no_demo.makes_this'" in bad.stderr


def test_the_pipeline_writes_every_claim(tiny_run):
    text = (tiny_run / "results" / "claims.md").read_text()
    made = report.by_key(read_results(tiny_run / "results"))
    assert made and re.findall(r"^- `([\w.]+)`", text, re.M) == list(made)
