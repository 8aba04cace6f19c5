"""A demo's claims: sentences whose numbers and wording are computed from the results.

A demo module's `claims(frames)` returns Claims. A difference between two configurations is
paired over seeds (the same seed draws the same first batch) and worded by `change`: a direction
("raises ... by x ± s.e.") only where it is more than 3 standard errors from 0, "not resolved"
otherwise, so a sentence cannot say more than its data. The pipeline writes every claim to
results/claims.md; FINDINGS.md quotes them between `<!-- claim KEY -->` and `<!-- /claim -->`
(`python -m rlvr claims --doc FINDINGS.md` rewrites those spans from the results, and a test
fails if they differ). Outside such a span, never write the opening comment itself.
"""

import re
from typing import NamedTuple

import numpy as np

from . import analysis as A

RESOLVED = 3.0  # an ordering is stated only beyond this many standard errors


class Difference(NamedTuple):
    """A mean over seeds of per-seed differences (or of values), its standard error, the seeds."""

    mean: float
    se: float
    seeds: int

    @property
    def resolved(self):
        return abs(self.mean) > RESOLVED * self.se


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


def signed(d, digits=3):
    """A paired difference as a signed number: "+x ± s", with "(not resolved)" within 3 s.e."""
    digits = _digits(d, digits)
    return f"{d.mean:+.{digits}f} ± {d.se:.{digits}f}" + ("" if d.resolved else " (not resolved)")


def change(d, what, digits=3, unit="", up="raises", down="lowers"):
    """A paired difference in words: "raises <what> by x ± s<unit>" beyond 3 s.e., else "changes
    <what> by +x ± s<unit> (not resolved)"."""
    if not d.resolved:
        return f"changes {what} by {signed(d, digits).removesuffix(' (not resolved)')}{unit} (not resolved)"
    return f"{up if d.mean > 0 else down} {what} by {number(d, digits)}{unit}"


def section(title, claims):
    """One demo's part of results/claims.md: its heading and a line per claim ("" if none)."""
    lines = [f"## {title}", ""] + [f"- `{c.key}`: {c.text}" for c in claims] + [""]
    return "\n".join(lines) if claims else ""


def joined(sections):
    """results/claims.md: its header, then each demo's section (section's text)."""
    out = ["# Claims computed from these results", "",
           "Each sentence is computed by its demo's `claims` (rlvr/demos/); ± one standard error over",
           f"seeds; an ordering is stated only beyond {RESOLVED:g} standard errors, else 'not resolved'.", ""]
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
