"""Two configs' runs side by side, from the files their runs kept (nothing is trained again):
the rows both name (the same files, so the same numbers), and each row only one names, paired
with the other config's nearest row (the same experiment, the fewest settings different) and
the difference of a value of the runs, B − A, over the seeds both ran (paired), or over all the
seeds of each where they share fewer than two (unpaired).

    python -m rlvr compare A.yaml B.yaml --y final_pass1
"""

from dataclasses import fields, replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from . import claims as K
from . import config as C
from . import io
from .compute import job_files, planned_identities
from .specs import TrainRow

IGNORED = ("seeds", "settings_id")  # a row is its settings whatever its seeds (the id: of the rest)
KEYS = (*TrainRow.COLUMNS, "seed", "steps")  # the columns of the runs that are no value of them


def seed_values(results, cfg, y):
    """{row (a TrainRow without seeds): Series of the value y of each of its seeds, by seed} of
    every toy row a validated config trains, from its jobs' run files under results/ (a row at a
    time: the shared settings a file holds are in its name, not its columns); FileNotFoundError
    naming a file not there, io.InputError naming one another config made, ValueError naming y if
    it is no value of the runs."""
    out, identities = {}, planned_identities(cfg, results)
    for row in C.train_rows(cfg):
        runs = io.read_concat(job_files(results, C.train_jobs([row], results), "run", identities)).to_pandas()
        values = [c for c in runs.columns if c not in KEYS and runs[c].dtype.kind in "fiu"]
        if y not in values:
            raise ValueError(f"--y {y}: not a value of the runs; the values: {', '.join(values)}")
        out[replace(row, seeds=())] = runs.set_index("seed")[y].loc[list(row.seeds)]
    return out


def differs(a, b):
    """What two rows' settings differ in, as "name a → b"."""
    return [f"{f.name} {_show(getattr(a, f.name))} → {_show(getattr(b, f.name))}" for f in fields(a)
            if f.name not in IGNORED and getattr(a, f.name) != getattr(b, f.name)]


def difference(a, b):
    """B − A of two rows' values by seed (Series indexed by seed): (mean, s.e., seeds, paired,
    resolved). Paired over the seeds both ran where they share at least two (n − 1 degrees of
    freedom); else unpaired, each row's mean over all its seeds, s.e. from both rows' spread (NaN
    where a row has one seed) at Welch-Satterthwaite's degrees of freedom. Resolved by the one
    rule of every claim (rlvr/claims.py resolved)."""
    common = a.index.intersection(b.index)
    if len(common) >= 2:
        d = b[common].to_numpy() - a[common].to_numpy()
        mean, se, n = d.mean(), d.std(ddof=1) / np.sqrt(len(d)), len(d)
        return mean, se, n, True, K.resolved(mean, se, n)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se, n = np.sqrt(va + vb), min(len(a), len(b))
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 and n > 1 else n - 1
    return b.mean() - a.mean(), se, n, False, K.resolved(b.mean() - a.mean(), se, n, dof)


class Comparison(NamedTuple):
    shared: list  # [row] both name
    # a line per pair of rows: experiment, A's row (its method, lr and the settings that tell it
    # from A's other rows of the experiment), what differs, mean of A and of B, their difference
    # B − A and its standard error se, seeds, paired or not, resolved (rlvr/claims.py resolved)
    pairs: pd.DataFrame
    only_a: list  # [row] left without a partner
    only_b: list
    y: str  # the value compared
    seeds_a: dict  # {row: its seeds}
    seeds_b: dict


def compare(a, b, y):
    """The Comparison of two configs' seed_values in the value y."""
    shared = [row for row in a if row in b]
    only_a, only_b = [row for row in a if row not in b], [row for row in b if row not in a]
    lines = []
    for row_a in list(only_a):  # in A's order, each with the row of B that differs in the fewest settings
        candidates = [row for row in only_b if row.experiment == row_a.experiment]
        if not candidates:
            continue
        row_b = min(candidates, key=lambda row: len(differs(row_a, row)))
        only_a.remove(row_a)
        only_b.remove(row_b)
        mean, se, n, paired, resolved = difference(a[row_a], b[row_b])
        lines.append({"experiment": row_a.experiment, "row": name(row_a, a),
                      "differs": ", ".join(differs(row_a, row_b)),
                      "A": a[row_a].mean(), "B": b[row_b].mean(), "difference": mean, "se": se,
                      "seeds": n, "paired": paired, "resolved": bool(resolved)})
    columns = ["experiment", "row", "differs", "A", "B", "difference", "se", "seeds", "paired", "resolved"]
    seeds = [{row: list(values.index) for row, values in side.items()} for side in (a, b)]
    return Comparison(shared, pd.DataFrame(lines, columns=columns), only_a, only_b, y, *seeds)


def name(row, rows):
    """A row by its method and lr, and every other setting in which it differs from a row of its
    experiment among rows (an iterable of rows): what tells it apart, "grpo, lr 2, kl_beta 0.1"."""
    told = [f.name for f in fields(row) if f.name not in (*IGNORED, "method", "lr")
            and any(other.experiment == row.experiment and getattr(other, f.name) != getattr(row, f.name)
                    for other in rows)]
    return ", ".join([row.method, f"lr {_show(row.lr)}", *(f"{k} {_show(getattr(row, k))}" for k in told)])


def describe(row):
    """A row as its experiment, estimator, lr and offset."""
    return f"{row.experiment}: {row.method}, lr {_show(row.lr)}, reward_offset {_show(row.reward_offset)}"


def report(c, name_a, name_b):
    """A Comparison as lines of text."""
    more = [row for row in c.shared if c.seeds_a[row] != c.seeds_b[row]]
    out = [f"A = {name_a}, B = {name_b}",
           f"in both: {_rows(len(c.shared))} (the same files: the same numbers for the seeds both ran)"]
    if more:
        out[-1] += (f"; {len(more)} of them with other seeds, e.g. {describe(more[0])}: "
                    f"A {_seeds(c.seeds_a[more[0]])}, B {_seeds(c.seeds_b[more[0]])}")
    if len(c.pairs):
        out.append(f"differ: {_rows(len(c.pairs))}, {c.y}: B − A ± one standard error "
                   f"(resolved: a two-sided t test at α = {K.ALPHA:g} for the seeds' degrees of freedom, "
                   f"on {K.MIN_SEEDS} seeds or more)")
        width = max(len(d) for d in c.pairs["differs"])
        named = max(len(r) for r in c.pairs["row"])
        for line in c.pairs.itertuples(index=False):
            out.append(f"  {line.experiment:<18} {line.row:<{named}}  {line.differs:<{width}}  "
                       f"A {line.A:.4f}  B {line.B:.4f}  "
                       f"B − A {line.difference:+.4f} ± {line.se:.4f}  {line.seeds} seeds, "
                       f"{'paired' if line.paired else 'unpaired'}{'  resolved' if line.resolved else ''}")
    for label, rows in (("only in A", c.only_a), ("only in B", c.only_b)):
        if rows:
            out.append(f"{label}: {_rows(len(rows))} (no row of its experiment left in the other to pair)")
            out += [f"  {describe(row)}" for row in rows]
    return out


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$",
                 "{": r"\{", "}": r"\}", "→": r"$\to$", "−": "--"}


def latex(c, name_a, name_b):
    """The rows a Comparison pairs as a LaTeX table (booktabs): experiment, A's row, what differs,
    A, B, B − A ± its standard error, seeds; a resolved difference in bold (rlvr/claims.py's rule)."""
    def tex(text):
        return "".join(LATEX_SPECIAL.get(ch, ch) for ch in str(text))

    lines = [r"\begin{tabular}{lllrrrr}", r"\toprule",
             "demo & row (A) & B differs in & A & B & B $-$ A & seeds \\\\",
             r"\midrule"]
    for line in c.pairs.itertuples(index=False):
        diff = f"{line.difference:+.4f} $\\pm$ {line.se:.4f}"
        cells = [tex(line.experiment), tex(line.row), tex(line.differs), f"{line.A:.4f}", f"{line.B:.4f}",
                 f"\\textbf{{{diff}}}" if line.resolved else diff,
                 f"{line.seeds}{'' if line.paired else ' (unpaired)'}"]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              f"% {tex(c.y)} of A = {tex(name_a)} and B = {tex(name_b)}, over seeds; bold: resolved (a "
              f"two-sided t test at alpha = {K.ALPHA:g} for the seeds' degrees of freedom, on {K.MIN_SEEDS} "
              "seeds or more)"]
    return lines


def _show(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def _rows(n):
    return f"{n} row{'s' * (n != 1)}"


def _seeds(seeds):
    return f"seed{'s' * (len(seeds) != 1)} {', '.join(map(str, seeds))}"
