"""What tables, figures, claims and tests compute from the aggregated results (pandas DataFrames):
row selection, a configuration's runs, paired differences over seeds and their standard errors,
a value read off a run's curve where its pass@1 reaches a target.

A run is identified by TrainRow.COLUMNS (rlvr/specs.py) and its seed.
"""

import numpy as np

from .specs import TrainRow


def se(x):
    """Standard error of the mean of x over seeds (0 for a single seed)."""
    x = np.asarray(x, float)
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def pm(x, digits=3):
    """'mean ± s.e.' over seeds."""
    return f"{np.mean(x):.{digits}f} ± {se(x):.{digits}f}"


def over_seeds(frame, by, value):
    """Mean over seeds per `by`, and the half-width of its 95% interval (NaN with one seed)."""
    out = frame.groupby(by)[value].agg(mean="mean", sd="std", n="count")
    out["ci"] = 1.96 * out["sd"] / np.sqrt(out["n"])
    return out


def select_rows(df, **values):
    """The rows of df whose columns have these values (None: any value)."""
    keep = np.ones(len(df), bool)
    for column, value in values.items():
        if value is not None:
            keep &= (df[column] == value).to_numpy()
    return df[keep]


def paired(frame, base, value, on=("seed", "step")):
    """frame with value minus the value of base (one configuration's rows) at the same `on`
    (seed, and step for curves): the paired difference, which the spread over seeds hides less
    than the difference of means. Rows of frame without a partner in base are dropped."""
    out = frame.merge(base[[*on, value]], on=list(on), suffixes=("", "_base"))
    out[value] = out[value] - out.pop(f"{value}_base")
    return out


def trained_passk(passk, experiment):
    """The pass@k rows of an experiment's trained policies: without its step-0 ("reference") rows."""
    return passk[(passk["experiment"] == experiment) & (passk["method"] != "reference")]


def passk_and_reference(frames, experiment):
    """An experiment's trained policies' pass@k over all prompts, the reference's pass@k by k, and
    its runs; None where the results hold none of its runs (or no pass@k)."""
    runs, passk, ref = frames["runs"], frames.get("passk"), frames["reference"]
    if passk is None or "shared_lr" not in runs or not (runs["experiment"] == experiment).any():
        return None
    top = trained_passk(passk, experiment)
    return (top[top["level"] == "all"], ref[ref["level"] == "all"].set_index("k")["pass_at_k"],
            runs[runs["experiment"] == experiment])


def final_by_run(curves, experiment, column, level="all"):
    """The last recorded value of a curves column (or of a list of them) per run: a DataFrame of
    the identifying columns, seed and the value(s)."""
    c = curves[(curves["experiment"] == experiment) & (curves["level"] == level)]
    keys = [k for k in TrainRow.COLUMNS if k in c] + ["seed"]
    return c.loc[c.groupby(keys, sort=False)["step"].idxmax(), keys + ([column] if isinstance(column, str)
                                                                      else list(column))]


def experiment_runs(frames, experiment, columns):
    """The runs of an experiment, with columns of the final curves record joined on (None if the
    results hold none)."""
    runs, curves = frames["runs"], frames.get("curves")
    if curves is None or "epochs" not in runs or not (runs["experiment"] == experiment).any():
        return None
    out = runs[runs["experiment"] == experiment]
    keys = [k for k in TrainRow.COLUMNS if k in out] + ["seed"]
    for column in columns:
        out = out.merge(final_by_run(curves, experiment, column), on=keys, how="left")
    return out


def _setting(column, value):
    return f"{column} {value:g}" if isinstance(value, float) else f"{column} {value}"


def configurations(runs, shown):
    """Group the runs of one experiment by configuration (every identifying column): yields
    (cfg dict, its runs, what else sets it apart: "kl_beta 0.3, ..." for the identifying columns
    outside `shown` that vary within the experiment, else "")."""
    keys = [k for k in TrainRow.COLUMNS if k in runs and k != "experiment"]
    others = [k for k in keys if k not in shown and runs[k].nunique() > 1]
    for key, g in runs.groupby(keys, sort=False):
        cfg = dict(zip(keys, key))
        yield cfg, g, ", ".join(_setting(k, cfg[k]) for k in others)


def focus(frame, knobs):
    """The rows of frame whose identifying columns outside `knobs` take their first value, and a
    note naming those values when more than one was there ("" if none): a figure lays out its own
    knobs; a grid that also varies others is drawn at the first of each (the table shows all,
    through `configurations`)."""
    note = []
    for column in TrainRow.COLUMNS:
        if column in frame and column not in knobs and column != "experiment" and frame[column].nunique() > 1:
            value = frame[column].iloc[0]
            frame = frame[frame[column] == value]
            note.append(_setting(column, value))
    return frame, (f"; at {', '.join(note)}" if note else "")


def where_first_reached(x, v, target):
    """v where x first reaches target, linear between the two records around it (x, v: [records]
    in step order): v[0] if x starts there, NaN if it never does."""
    hit = np.flatnonzero(np.asarray(x) >= target)
    if not len(hit):
        return np.nan
    i = hit[0]
    if i == 0:
        return v[0]
    return v[i - 1] + (target - x[i - 1]) / (x[i] - x[i - 1]) * (v[i] - v[i - 1])


def value_at_pass1(curves, experiment, column, target):
    """Per run of an experiment: column where the run's exact pass@1 (all prompts) first reaches
    target, linear between two evaluations (NaN if it never does): a DataFrame of the identifying
    columns, seed and the value."""
    import pandas as pd

    c = curves[(curves["experiment"] == experiment) & (curves["level"] == "all")]
    keys = [k for k in TrainRow.COLUMNS if k in c] + ["seed"]
    rows = []
    for key, run in c.groupby(keys, sort=False):
        run = run.sort_values("step")
        value = where_first_reached(run["pass1"].to_numpy(), run[column].to_numpy(), target)
        rows.append(dict(zip(keys, key), **{column: value}))
    return pd.DataFrame(rows, columns=keys + [column])
