"""A demo's claims: sentences whose numbers and wording are computed from the results.

A demo module's `claims(frames)` returns Claims. A difference between two configurations is
paired over seeds (the same seed draws the same first batch) and worded by `change`: a direction
("raises ... by x ± s.e.") only where `resolved` says so, "not resolved" otherwise, so a sentence
cannot say more than its data. `resolved` is the one rule of every claim, table, verdict and
`rlvr compare`: a two-sided t test of "no difference" at α = 0.01 for the seeds' own degrees of
freedom (|mean| > t(n − 1)·s.e.: 4.60 s.e. at 5 seeds, 3.25 at 10, 2.86 at 20), on at least 5
seeds, so that a stated ordering arises by chance at most one time in a hundred. The pipeline
writes every claim to results/claims.md; FINDINGS.md quotes them between `<!-- claim KEY -->`
and `<!-- /claim -->` (`python -m rlvr claims --doc FINDINGS.md` rewrites those spans from the
results, and a test fails if they differ). Outside such a span, never write the opening comment itself.
"""

import math
import re
from functools import cache
from typing import NamedTuple

import numpy as np

from . import analysis as A

ALPHA = 0.01  # an ordering is stated only where a two-sided t test rejects "no difference" at this level
MIN_SEEDS = 5  # ... and never on fewer seeds


def _two_sided_p(t, dof):
    """P(|T| > t) for Student's t with an integer dof ≥ 1, in closed form (Abramowitz & Stegun
    26.7.3-4: a finite series in cos θ, θ = atan(t/√dof))."""
    theta = math.atan(abs(t) / math.sqrt(dof))
    c2, term = math.cos(theta) ** 2, 1.0
    if dof % 2:  # odd: (2/π)(θ + sin θ cos θ (1 + 2/3 cos²θ + ... ))
        total = 1.0 if dof > 1 else 0.0
        for j in range(3, dof - 1, 2):
            term *= (j - 1) / j * c2
            total += term
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    else:  # even: sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + ...)
        total = 1.0
        for j in range(2, dof - 1, 2):
            term *= (j - 1) / j * c2
            total += term
        inside = math.sin(theta) * total
    return 1.0 - inside


@cache  # a claim asks at its seeds' dof, many claims at the same few
def t_quantile(dof, alpha=ALPHA):
    """The critical value t of a two-sided test: P(|T_dof| > t) = alpha, for an integer dof ≥ 1
    (by bisection on _two_sided_p, to 1e-12)."""
    lo, hi = 0.0, 1.0
    while _two_sided_p(hi, dof) > alpha:
        hi *= 2
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _two_sided_p(mid, dof) > alpha else (lo, mid)
    return hi


def resolved(mean, se, seeds, dof=None):
    """Whether a difference `mean` ± `se` over `seeds` seeds is resolved: at least MIN_SEEDS
    seeds and |mean| > t_quantile(dof)·se, dof = seeds − 1 for a paired difference (or the
    Welch-Satterthwaite dof of an unpaired one)."""
    dof = seeds - 1 if dof is None else dof
    return bool(seeds >= MIN_SEEDS and abs(mean) > t_quantile(max(1, math.floor(dof))) * se)


def rule_in_words():
    """The rule as a sentence, for a table's or a file's note."""
    return (f"an ordering is stated only where a two-sided t test at the seeds' n − 1 degrees of freedom "
            f"rejects 'no difference' at α = {ALPHA:g} (|difference| > {t_quantile(MIN_SEEDS - 1):.2f} s.e. "
            f"at {MIN_SEEDS} seeds, {t_quantile(9):.2f} at 10), on at least {MIN_SEEDS} seeds; "
            "else 'not resolved'")


class Difference(NamedTuple):
    """A mean over seeds of per-seed differences (or of values), its standard error, the seeds."""

    mean: float
    se: float
    seeds: int

    @property
    def resolved(self):
        return resolved(self.mean, self.se, self.seeds)


class Claim(NamedTuple):
    key: str  # "<demo>.<name>": what FINDINGS.md quotes
    text: str  # the sentence
    differences: tuple  # the Differences whose direction the sentence states


def over_seeds(values):
    """Difference of an array of per-seed values (or paired differences): [n] -> Difference."""
    values = np.asarray(values, float)
    return Difference(float(values.mean()), A.se(values), len(values))


def paired(runs, column, this, base):
    """this minus base in a column, paired by seed: runs, a DataFrame of runs; this, base: the
    column values that select each configuration (A.select_rows) -> Difference."""
    a, b = A.select_rows(runs, **this), A.select_rows(runs, **base)
    return over_seeds(A.paired(a, b, column, on=("seed",))[column])


def _digits(d, digits):
    """At least `digits` decimals, more where the standard error would otherwise show as 0."""
    if d.se > 0 and round(d.se, digits) == 0:
        digits = min(int(np.ceil(-np.log10(d.se))), 12)
    return digits


def number(d, digits):
    digits = _digits(d, digits)
    return f"{abs(d.mean):.{digits}f} ± {d.se:.{digits}f}"


def unresolved(d):
    """Why a Difference is not resolved, as a parenthesis ("" where it is): "(not resolved)", or
    "(not resolved: 3 seeds, fewer than 5)"."""
    if d.resolved:
        return ""
    if d.seeds < MIN_SEEDS:
        return f"(not resolved: {d.seeds} seed{'s' * (d.seeds != 1)}, fewer than {MIN_SEEDS})"
    return "(not resolved)"


def signed(d, digits=3, note=True):
    """A paired difference as a signed number: "+x ± s", followed by `unresolved`'s parenthesis
    where it is not resolved (unless note=False)."""
    digits = _digits(d, digits)
    why = unresolved(d) if note else ""
    return f"{d.mean:+.{digits}f} ± {d.se:.{digits}f}" + (f" {why}" if why else "")


def change(d, what, digits=3, unit="", up="raises", down="lowers"):
    """A paired difference in words: "raises <what> by x ± s<unit>" where resolved, else "changes
    <what> by +x ± s<unit> (not resolved)"."""
    if not d.resolved:
        return f"changes {what} by {signed(d, digits, note=False)}{unit} {unresolved(d)}"
    return f"{up if d.mean > 0 else down} {what} by {number(d, digits)}{unit}"


def section(title, claims):
    """One demo's part of results/claims.md: its heading and a line per claim ("" if none)."""
    lines = [f"## {title}", ""] + [f"- `{c.key}`: {c.text}" for c in claims] + [""]
    return "\n".join(lines) if claims else ""


def joined(sections):
    """results/claims.md: its header, then each demo's section (section's text)."""
    out = ["# Claims computed from these results", "",
           "Each sentence is computed by its demo's `claims` (rlvr/demos/); ± one standard error over",
           f"seeds; {rule_in_words()}.", ""]
    return "\n".join(out + [line for text in sections if text for line in text.split("\n")])


def markdown(claims_by_demo):
    """results/claims.md: [(demo heading, [Claim])] -> text."""
    return joined(section(title, claims) for title, claims in claims_by_demo)


QUOTE = re.compile(r"<!-- claim (?P<key>[\w.]+) -->(?P<text>.*?)<!-- /claim -->", re.S)


def quoted(text):
    """{key: the quoted sentence} of every `<!-- claim KEY -->...<!-- /claim -->` span in text."""
    return {m["key"]: " ".join(m["text"].split()) for m in QUOTE.finditer(text)}


def requote(text, claims):
    """text with every quoted claim replaced by the claim of that key ({key: Claim}); KeyError
    naming a key no demo claims."""
    def one(m):
        if m["key"] not in claims:
            raise KeyError(f"no demo makes the claim {m['key']!r}; the claims are: {', '.join(claims)}")
        return f"<!-- claim {m['key']} -->{claims[m['key']].text}<!-- /claim -->"

    return QUOTE.sub(one, text)
