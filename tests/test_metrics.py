"""pass@k, exact and estimated (rlvr/metrics.py)."""

from math import comb

import numpy as np
import pytest

from rlvr.metrics import pass_at_k, pass_at_k_unbiased


def test_chen_estimator_formula_and_unbiasedness():
    for n, c, k in [(10, 3, 2), (256, 1, 64), (20, 0, 5), (5, 5, 3), (20, 2, 19)]:
        assert pass_at_k_unbiased(n, c, k)[0] == pytest.approx(1 - comb(n - c, k) / comb(n, k))
    # 20,000 replicate draws of c ~ Binomial(n, p): mean within 4 s.e. of the exact pass@k
    rng = np.random.default_rng(0)
    n, k, p = 32, 8, 0.05
    est = pass_at_k_unbiased(n, rng.binomial(n, p, size=20_000), k)
    assert abs(est.mean() - pass_at_k(p, k)) < 4 * est.std() / np.sqrt(len(est))
