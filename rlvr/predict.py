"""Your data: what the toy's exact formulas predict for a dataset's own pass rates, before a GPU-hour
is spent (`python -m rlvr predict DATA`, or `predict(read_data(path))` from Python).

The input is what any eval harness can write: per prompt, answers sampled n and correct c. A
prompt's pass rate is not c/n but a posterior, p ~ Beta(a + c, b + n − c) from the prior Beta(a, b)
(Jeffreys' ½, ½ by default, a knob): with 16 samples a 0/16 prompt is hard, not certainly hopeless.
Every prediction is an expectation over these posteriors, prompt by prompt, exact wherever it is
a Beta moment, E[p^j (1 − p)^k] = B(a + j, b + k) / B(a, b), and each assumes what the toy
assumes: a prompt's answers are i.i.d. given the prompt, each correct with probability p.

- zero_signal: the share of groups of G answers whose rewards are all equal, E[p^G + (1 − p)^G]
  averaged over prompts (demo 4's p^G + (1 − p)^G, over the posterior), and its posterior s.d.;
- dynamic_sampling: DAPO's refill (demo 5, rlvr/training.py dynamic_rounds): the prompts it draws
  a step for max_rounds 1–4 and the groups with a signal it keeps, prompts drawn independently
  (a dataset much larger than a step's prompts);
- pass_at_k: 1 − E[(1 − p)^k] averaged over prompts, to k = 256, with its posterior s.d.;
- estimator_moments: each estimator's exact E[ĝ_0] and s.d. of ĝ_0 for one group on a prompt of
  pass rate p (rlvr/exact.py; the wrong answers' probability spread evenly over M − 1 others, an
  assumption the toy's own tasks do not make), averaged over the posterior and over the prompts
  of each difficulty.
A pass-rate band (the filter teams apply to their RL sets, on the observed c/n) keeps a share of
the prompts; every prediction is then made on the kept ones too.
"""

import json
import math
from pathlib import Path

import numpy as np

FIT = "fit"  # the prior fitted to the dataset's own counts (fit_prior), the default
JEFFREYS = (0.5, 0.5)
GROUP_SIZES = (2, 4, 8, 16, 32)
KS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MAX_ROUNDS = (1, 2, 3, 4)
METHODS = ("none", "rloo", "grpo", "dr_grpo")
REQUIRED = ("prompt", "n", "c")  # a table's columns; or prompt, n and pass_rate


def _where(path, i, ids, csv):
    """Row i (0-based) of a table as an error names it: its line in a CSV, its id."""
    line = f"line {i + 2}" if csv else f"row {i + 1}"
    return f"{path}, {line} (prompt {ids[i]!r})"


def read_data(path, id_key="prompt", reward_key="reward"):
    """A dataset's per-prompt counts from a CSV or Parquet table (a row a prompt: `prompt`, `n` and
    `c`, or `n` and `pass_rate`; optional `level`), or from JSONL of sampled answers (a line an
    answer: {id_key: ..., reward_key: 0 or 1}), as a pandas DataFrame with prompt, n, c (and level).
    Refuses bad input before any work, naming the file, row and column: a missing column, NaN, n
    not a positive integer, c outside 0..n, a pass rate whose n·rate is not a whole count, a
    prompt listed twice, a reward other than 0 or 1."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _from_jsonl(path, id_key, reward_key)
    if suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix in (".parquet", ".pq"):
        frame = pd.read_parquet(path)
    else:
        raise ValueError(f"{path}: a table is .csv or .parquet, sampled answers .jsonl; got "
                         f"{suffix or 'no suffix'!r}")
    csv = suffix == ".csv"
    if "c" not in frame and "pass_rate" in frame and "n" in frame:
        rate = frame["pass_rate"].to_numpy(float)
        counts = rate * frame["n"].to_numpy(float)
        bad = ~np.isclose(counts, np.round(counts), atol=1e-6) | ~((rate >= 0) & (rate <= 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{_where(path, i, list(frame.get('prompt', range(len(frame)))), csv)}: column "
                             f"pass_rate = {rate[i]:g} with n = {frame['n'].iloc[i]:g} is not a count of "
                             "correct answers; allowed: a rate in [0, 1] that n times is a whole number")
        frame = frame.assign(c=np.round(counts))
    missing = [col for col in REQUIRED if col not in frame]
    if missing:
        raise ValueError(f"{path}: missing column{'s' * (len(missing) > 1)} {', '.join(missing)}; a table "
                         "needs "
                         f"{', '.join(REQUIRED)} (or n and pass_rate), one row a prompt; it has "
                         f"{', '.join(map(str, frame.columns)) or 'none'}")
    ids = frame["prompt"].tolist()
    for col in ("prompt", "n", "c"):
        nan = frame[col].isna().to_numpy()
        if nan.any():
            raise ValueError(f"{_where(path, int(np.flatnonzero(nan)[0]), ids, csv)}: column {col} is empty "
                             "(NaN); every prompt needs its prompt, n and c")
    n, c = frame["n"].to_numpy(float), frame["c"].to_numpy(float)
    checks = (("n", (n < 1) | (n != np.round(n)), "a whole number of sampled answers, at least 1"),
              ("c", (c < 0) | (c > n) | (c != np.round(c)), "a whole number of correct answers, 0 <= c <= n"))
    for col, bad, allowed in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{_where(path, i, ids, csv)}: column {col} = {frame[col].iloc[i]:g} (n = "
                             f"{frame['n'].iloc[i]:g}); allowed: {allowed}")
    twice = frame["prompt"].duplicated().to_numpy()
    if twice.any():
        i = int(np.flatnonzero(twice)[0])
        first = int(np.flatnonzero((frame["prompt"] == ids[i]).to_numpy())[0])
        raise ValueError(f"{_where(path, i, ids, csv)}: column prompt repeats the prompt of "
                         f"{'line' if csv else 'row'} {first + (2 if csv else 1)}; one row a prompt")
    out = pd.DataFrame({"prompt": ids, "n": n.astype(int), "c": c.astype(int)})
    if "level" in frame:
        out["level"] = frame["level"].to_numpy()
    return out


def _from_jsonl(path, id_key, reward_key):
    """Per-prompt counts of a JSONL file of sampled answers, prompts in order of first appearance."""
    import pandas as pd

    counts = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {number}: not JSON ({err.msg})") from None
            for key in (id_key, reward_key):
                if not isinstance(record, dict) or key not in record:
                    raise ValueError(f"{path}, line {number}: no key {key!r}; each line is one sampled "
                                     "answer, "
                                     f"{{{id_key!r}: its prompt, {reward_key!r}: 0 or 1}}")
            reward = record[reward_key]
            if reward not in (0, 1):  # true and false are 1 and 0
                raise ValueError(f"{path}, line {number}: {reward_key} = {reward!r}; allowed: 0 or 1 (a "
                                 "verifier's reward)")
            n_c = counts.setdefault(record[id_key], [0, 0])
            n_c[0] += 1
            n_c[1] += int(reward)
    if not counts:
        raise ValueError(f"{path}: no sampled answers")
    return pd.DataFrame({"prompt": list(counts), "n": [v[0] for v in counts.values()],
                         "c": [v[1] for v in counts.values()]})


def sample_counts(p, n=16, seed=0):
    """What an eval harness would report for prompts of known pass rates p [N]: c [N] correct of n
    answers sampled each (Binomial(n, p), from generator (seed, n))."""
    return np.random.default_rng([seed, n]).binomial(n, np.asarray(p, float))


# --- the posterior's moments ------------------------------------------------------------------

def _lgamma(x):
    """log Γ(x) for x > 0, elementwise in numpy: Stirling's series at x + 8 (error below 1e-14),
    shifted back by log Γ(x) = log Γ(x + 8) − Σ_{j<8} log(x + j)."""
    x = np.asarray(x, float)
    z = x + 8.0
    series = (1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5) - 1 / (1680 * z**7) + 1 / (1188 * z**9)
              - 691 / (360360 * z**11))
    stirling = (z - 0.5) * np.log(z) - z + 0.5 * math.log(2 * math.pi) + series
    return stirling - np.log(x[..., None] + np.arange(8.0)).sum(axis=-1)


def fit_prior(n, c):
    """The Beta(a, b) prior under which the counts are likeliest (empirical Bayes: the maximum of
    the beta-binomial likelihood Π_i B(a + c_i, b + n_i − c_i)/B(a, b) over every prompt), on a grid
    of the prior's mean a/(a + b) and strength a + b (10^−1 to 10^4), refined once around its best."""
    pairs, weight = np.unique(np.stack([np.asarray(n, int), np.asarray(c, int)], axis=1), axis=0,
                              return_counts=True)

    def best(mu, kappa):
        a, b = (mu[:, None] * kappa[None, :]), ((1 - mu)[:, None] * kappa[None, :])  # [mu, kappa]
        ll = np.zeros(a.shape)
        for (nn, cc), w in zip(pairs, weight):
            ll += w * (_lgamma(a + cc) + _lgamma(b + nn - cc) - _lgamma(a + b + nn))
        ll -= weight.sum() * (_lgamma(a) + _lgamma(b) - _lgamma(a + b))
        i, j = np.unravel_index(np.argmax(ll), ll.shape)
        return i, j

    mu, log_kappa = np.linspace(0.005, 0.995, 100), np.linspace(-1, 4, 60)
    i, j = best(mu, 10**log_kappa)
    dm, dk = mu[1] - mu[0], log_kappa[1] - log_kappa[0]
    mu = np.clip(np.linspace(mu[i] - dm, mu[i] + dm, 41), 1e-4, 1 - 1e-4)
    log_kappa = np.linspace(log_kappa[j] - dk, log_kappa[j] + dk, 41)
    i, j = best(mu, 10**log_kappa)
    kappa = 10 ** log_kappa[j]
    return float(mu[i] * kappa), float((1 - mu[i]) * kappa)


def posterior(n, c, prior=FIT):
    """Each prompt's Beta posterior (a [N], b [N]) from counts n, c [N] and the prior: (a, b), or
    FIT for the one fitted to these counts (fit_prior). Returns (a, b, the prior's (a, b))."""
    n, c = np.asarray(n, float), np.asarray(c, float)
    a0, b0 = fit_prior(n, c) if prior == FIT else prior
    if not (a0 > 0 and b0 > 0):
        raise ValueError(f"prior = {list(prior)}: a Beta prior's two parameters must be positive")
    return a0 + c, b0 + n - c, (a0, b0)


def beta_moment(a, b, j, k):
    """E[p^j (1 − p)^k] under Beta(a, b), elementwise: [N]."""
    return np.exp(_lgamma(a + j) + _lgamma(b + k) - _lgamma(a + b + j + k)
                  - _lgamma(a) - _lgamma(b) + _lgamma(a + b))


def zero_signal(a, b, G):
    """The share of groups of G answers with all rewards equal, over the prompts [N] (a prompt
    drawn uniformly): (mean, its posterior s.d.) with z_i = E[p^G + (1 − p)^G]."""
    z = beta_moment(a, b, G, 0) + beta_moment(a, b, 0, G)
    z2 = beta_moment(a, b, 2 * G, 0) + 2 * beta_moment(a, b, G, G) + beta_moment(a, b, 0, 2 * G)
    return float(z.mean()), float(np.sqrt(np.clip(z2 - z**2, 0, None).sum()) / len(z))


def pass_at_k(a, b, ks=KS):
    """pass@k averaged over the prompts for each k: (mean [K], posterior s.d. [K]), with
    pass@k_i = 1 − E[(1 − p)^k]."""
    out = [(1 - beta_moment(a, b, 0, k), beta_moment(a, b, 0, 2 * k) - beta_moment(a, b, 0, k) ** 2)
           for k in ks]
    return (np.array([m.mean() for m, _ in out]),
            np.array([np.sqrt(np.clip(v, 0, None).sum()) / len(a) for _, v in out]))


def _binom_pmf(N, s):
    """P(Binomial(N, s) = i) for i = 0 .. N: [N + 1]."""
    i = np.arange(N + 1)
    if not 0 < s < 1:
        return (i == (N if s >= 1 else 0)).astype(float)
    return np.exp(_lgamma(N + 1.0) - _lgamma(i + 1.0) - _lgamma(N - i + 1.0)
                  + i * math.log(s) + (N - i) * math.log1p(-s))


def dynamic_sampling(signal, n, max_rounds):
    """DAPO's refill (rlvr/training.py dynamic_rounds) with n prompts a step, each group drawn with
    a signal with probability `signal` independently: (expected prompts drawn a step, expected
    groups with a signal kept, at most n). Round r + 1 is drawn iff the r·n groups before it hold
    fewer than n with a signal."""
    drawn = sum(n * _binom_pmf(r * n, signal)[:n].sum() for r in range(1, max_rounds)) + n
    N = max_rounds * n
    # rounds stop once n are kept, so what is kept is min(n, all the rounds' groups with a signal)
    return float(drawn), float((np.minimum(np.arange(N + 1), n) * _binom_pmf(N, signal)).sum())


def posterior_nodes(a, b, nodes=81, width=8.0):
    """Quadrature of each prompt's posterior in log-odds x = logit(p), whose density is
    ∝ p^a (1 − p)^b: nodes evenly spaced over its mode ± width × its Laplace s.d. √(1/a + 1/b),
    weighted by that density (rows sum to 1), so a posterior narrower than any fixed grid is
    still resolved. Returns (x [N, nodes], w [N, nodes])."""
    a, b = np.asarray(a, float)[:, None], np.asarray(b, float)[:, None]
    x = np.log(a / b) + np.sqrt(1 / a + 1 / b) * np.linspace(-width, width, nodes)[None, :]
    logw = -a * np.logaddexp(0, -x) - b * np.logaddexp(0, x)  # a log p + b log(1 − p)
    w = np.exp(logw - logw.max(axis=1, keepdims=True))
    return x, w / w.sum(axis=1, keepdims=True)


def estimator_moments(a, b, methods, G, M=16):
    """Each estimator's exact moments for one group of G answers on a prompt, averaged over each
    prompt's posterior: {method: (E[ĝ_0] [N], s.d. of ĝ_0 [N])} (rlvr.exact.exact_moments with the
    wrong answers' mass spread evenly over M − 1: uniform_wrong_prompt); the s.d. over the
    posterior and the group together (the law of total variance). The moments are computed on a
    fine grid of log-odds (step 0.05) and interpolated at posterior_nodes."""
    from .exact import exact_moments, uniform_wrong_prompt

    grid = np.linspace(-14, 14, 561)
    x, w = posterior_nodes(a, b)
    out = {}
    for method in methods:
        mean, std = np.array([exact_moments(uniform_wrong_prompt(q, M), method, G)[:2]
                              for q in 1 / (1 + np.exp(-grid))]).T  # [grid]
        m = (w * np.interp(x, grid, mean)).sum(axis=1)
        second = (w * np.interp(x, grid, std**2 + mean**2)).sum(axis=1)
        out[method] = (m, np.sqrt(np.clip(second - m**2, 0, None)))
    return out


def _levels(data, a, b):
    """Each prompt's difficulty: the table's `level`, else the quartile of its posterior mean
    (hardest first)."""
    if "level" in data:
        return data["level"].astype(str).to_numpy()
    mean = a / (a + b)
    edges = np.quantile(mean, [0.25, 0.5, 0.75])
    return np.array(["q1 (hardest)", "q2", "q3", "q4 (easiest)"])[np.searchsorted(edges, mean, side="right")]


def predict(data, G=GROUP_SIZES, budget=256, band=None, prior=FIT, ks=KS, methods=METHODS, M=16,
            max_rounds=MAX_ROUNDS):
    """The predictions for a dataset (read_data's frame), as pandas frames {name: frame}:
    "prompts" (each prompt's posterior and whether the band keeps it), "groups" (per subset and G:
    the zero-signal share with its s.d., the answers a step in groups with a signal at `budget`
    answers, and per max_rounds dynamic sampling's prompts drawn and groups kept), "pass_at_k"
    (per subset and k, with its s.d.), "estimators" (per subset, method and difficulty, at the
    median G of `G`'s: exact E[ĝ_0] and its s.d.). Subsets: "all", and with band = (lo, hi) on the
    observed c/n, "kept". budget: answers a step, split into budget/G groups (G must divide it)."""
    import pandas as pd

    for g in G:
        if g < 1 or budget % g:
            raise ValueError(f"G = {g}: a group size must be a positive divisor of the budget of {budget} "
                             "answers "
                             "a step")
    a, b, prior = posterior(data["n"], data["c"], prior)
    observed = data["c"].to_numpy() / data["n"].to_numpy()
    keep = np.ones(len(data), bool)
    if band is not None:
        lo, hi = band
        if not 0 <= lo <= hi <= 1:
            raise ValueError(f"band = {list(band)}: a pass-rate band is [lo, hi] with 0 <= lo <= hi <= 1")
        keep = (observed >= lo) & (observed <= hi)
        if not keep.any():
            raise ValueError(f"band = {list(band)} keeps none of the {len(data)} prompts (their c/n: "
                             f"{observed.min():.3g} to {observed.max():.3g})")
    levels = _levels(data, a, b)
    prompts = data.assign(a=a, b=b, p_mean=a / (a + b), p_sd=np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))),
                          level=levels, kept=keep, prior_a=prior[0], prior_b=prior[1])
    subsets = [("all", np.ones(len(data), bool))] + ([("kept", keep)] if band is not None else [])
    groups, passk, moments = [], [], []
    G_mid = sorted(G)[len(G) // 2]
    for name, where in subsets:
        aa, bb = a[where], b[where]
        for g in G:
            z, z_sd = zero_signal(aa, bb, g)
            n = budget // g
            row = {"subset": name, "G": g, "prompts_per_step": n, "zero_signal": z, "zero_signal_sd": z_sd,
                   "answers_with_signal": budget * (1 - z)}
            for r in max_rounds:
                drawn, kept = dynamic_sampling(1 - z, n, r)
                row |= {f"drawn_r{r}": drawn, f"kept_r{r}": kept}
            groups.append(row)
        mean, sd = pass_at_k(aa, bb, ks)
        passk += [{"subset": name, "k": k, "pass_at_k": m, "sd": s} for k, m, s in zip(ks, mean, sd)]
        for method, (m, s) in estimator_moments(aa, bb, methods, G_mid, M).items():
            for level in dict.fromkeys(levels[where]):
                at = levels[where] == level
                moments.append({"subset": name, "method": method, "G": G_mid, "M": M, "level": level,
                                "prompts": int(at.sum()), "p_mean": float((aa / (aa + bb))[at].mean()),
                                "grad_mean": float(m[at].mean()),
                                "grad_sd": float(np.sqrt((s[at] ** 2).mean()))})
    return {"prompts": prompts, "groups": pd.DataFrame(groups), "pass_at_k": pd.DataFrame(passk),
            "estimators": pd.DataFrame(moments)}


def samples_to_halve(n, prior):
    """Answers a prompt that would halve a pass rate's posterior s.d. where n were drawn: its
    variance is p(1 − p)/(a + b + n + 1) at a fixed posterior mean, so 4(a + b + n + 1) − (a + b + 1)."""
    s = sum(prior)
    return int(math.ceil(4 * (s + n + 1) - (s + 1)))


def parse_prior(values):
    """--prior's words: ["fit"] (the default), ["jeffreys"], or two positive numbers A B."""
    if len(values) == 1 and values[0] in (FIT, "jeffreys"):
        return FIT if values[0] == FIT else JEFFREYS
    try:
        a, b = (float(v) for v in values)
    except ValueError:
        raise ValueError(f"--prior {' '.join(values)}: allowed: fit (the default: fitted to the data), "
                         "jeffreys, "
                         "or two positive numbers A B (Beta(A, B))") from None
    if not (a > 0 and b > 0):
        raise ValueError(f"--prior {a:g} {b:g}: a Beta prior's two parameters must be positive")
    return a, b


def report(data, out, budget, band, prior, source):
    """The terminal report of predict's frames `out`, as lines. prior: what was asked (FIT or (a, b))."""
    groups, passk, est = out["groups"], out["pass_at_k"], out["estimators"]
    n_median = int(np.median(data["n"]))
    used = tuple(float(out["prompts"][k].iloc[0]) for k in ("prior_a", "prior_b"))
    how = "fitted to these counts (empirical Bayes)" if prior == FIT else "as given"
    lines = [f"rlvr predict: {source}: {len(data)} prompts, {int(data['n'].sum())} sampled answers "
             f"(median {n_median} a prompt), {int(data['c'].sum())} correct",
             "assumes: a prompt's answers are i.i.d. given it, each correct with probability p;",
             f"  p ~ Beta(a + c, b + n − c) with the prior Beta({used[0]:.3g}, {used[1]:.3g}), {how};",
             "  ± is the posterior s.d. over the prompts; "
             f"{samples_to_halve(n_median, used)} answers a prompt in place of {n_median} would about halve "
             "each pass rate's posterior s.d."]
    if band is not None:
        kept = out["prompts"]["kept"]
        lines.append(f"band {band[0]:g}–{band[1]:g} on the observed c/n keeps {int(kept.sum())} of "
                     f"{len(kept)} "
                     f"prompts ({kept.mean():.1%})")
    for subset, sub in groups.groupby("subset", sort=False):
        lines += ["", f"[{subset}] at {budget} answers a step: groups with all rewards equal (no signal), "
                  "and DAPO's dynamic sampling (prompts drawn a step / groups kept, by max_rounds;",
                  "  prompts drawn independently, as from a dataset much larger than a step's draws)",
                  f"{'G':>4} {'prompts':>8} {'no signal':>16} {'answers w/ signal':>18}  "
                  + "  ".join(f"{'r=' + str(r[7:]):>13}" for r in sub.columns if r.startswith("drawn_r"))]
        for row in sub.itertuples():
            dyn = "  ".join(f"{getattr(row, c):6.1f}/{getattr(row, 'kept' + c[5:]):5.1f}"
                            for c in sub.columns if c.startswith("drawn_r"))
            lines.append(f"{row.G:>4} {row.prompts_per_step:>8} {row.zero_signal:>8.1%} ± "
                         f"{row.zero_signal_sd:5.1%} "
                         f"{row.answers_with_signal:>18.1f}  {dyn}")
        pk = passk[passk["subset"] == subset]
        lines += ["", f"[{subset}] pass@k of the sampling policy: "
                  + ", ".join(f"k={r.k} {r.pass_at_k:.3f}±{r.sd:.3f}" for r in pk.itertuples())]
        e = est[est["subset"] == subset]
        if len(e):
            lines += ["", f"[{subset}] one group of G = {int(e['G'].iloc[0])}: each estimator's exact E[ĝ_0] "
                      "(the correct answer's logit) ± its s.d., by difficulty (wrong answers' mass spread "
                      f"evenly over {int(e['M'].iloc[0]) - 1} others: an assumption)"]
            for level, by in e.groupby("level", sort=False):
                moments = [f"{r.method} {r.grad_mean:+.4f} ± {r.grad_sd:.4f}" for r in by.itertuples()]
                first = by.iloc[0]
                lines.append(f"  {level} (p ≈ {first['p_mean']:.3f}, {int(first['prompts'])} prompts): "
                             + ", ".join(moments))
    return lines


SUBSET_LABELS = {"all": "all prompts", "kept": "kept by the band"}


def figure(out, path):
    """One figure of predict's frames: the zero-signal share against G, and pass@k against k, each
    with its ±1 posterior s.d. band, a line per subset; written as <path>.png and <path>.pdf
    (rlvr/figures.py: a page wide, ticks at the values drawn)."""
    from . import figures as F

    fig, ((left, right),) = F.subplots(1, 2, height=2.6)
    for (subset, g), colour in zip(out["groups"].groupby("subset", sort=False), ("#1f77b4", "#ff7f0e")):
        z, sd = g["zero_signal"], g["zero_signal_sd"]
        left.plot(g["G"], z, "o-", color=colour, label=SUBSET_LABELS[subset], ms=3)
        left.fill_between(g["G"], z - sd, z + sd, color=colour, alpha=0.25, lw=0)
        k = out["pass_at_k"][out["pass_at_k"]["subset"] == subset]
        right.plot(k["k"], k["pass_at_k"], "o-", color=colour, ms=3)
        right.fill_between(k["k"], k["pass_at_k"] - k["sd"], k["pass_at_k"] + k["sd"], color=colour,
                           alpha=0.25, lw=0)
    left.set(xlabel="G (answers a group)", ylabel="groups without signal", title="no-signal share (±1 s.d.)")
    right.set(xlabel="k", ylabel="pass@k", title="pass@k of the sampler (±1 s.d.)")
    F.log_ticks(left, out["groups"]["G"])
    F.log_ticks(right, out["pass_at_k"]["k"])
    for ax in (left, right):
        ax.grid(alpha=0.3)
    if out["groups"]["subset"].nunique() > 1:
        left.legend(frameon=False, fontsize=8)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    F.save(fig, Path(path).parent, Path(path).name)


def run(a):
    """`rlvr predict`: read, predict, print the report; with --out, the frames as Parquet and the figure."""
    data = read_data(a.data, a.id_key, a.reward_key)
    band = tuple(a.band) if a.band else None
    prior = parse_prior(a.prior)
    out = predict(data, G=tuple(a.G), budget=a.budget, band=band, prior=prior, methods=tuple(a.methods))
    print("\n".join(report(data, out, a.budget, band, prior, a.data)))
    if a.out:
        import pyarrow as pa

        from . import io

        where = Path(a.out)
        where.mkdir(parents=True, exist_ok=True)
        for name, frame in out.items():
            table = pa.Table.from_pandas(frame, preserve_index=False)
            io.write_arrow(where / f"predict_{name}.parquet", table)
        figure(out, where / "predict")
        print(f"\nwrote {where}/predict_{{{','.join(out)}}}.parquet and {where}/predict.png, .pdf")
