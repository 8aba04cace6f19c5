"""Command line: one subcommand per pipeline stage, plus `all` to run everything in-process.

    python -m rlvr all --config config/config.yaml        # every table, no Snakemake
    python -m rlvr all --figures figures/                 # ... and the figures
    python -m rlvr train --task results/task.parquet ...  # one job, as the rules call it

Compute subcommands import only numpy and pyarrow; `tables`, `figures` and `all` use
pandas and matplotlib.
"""

import argparse
import sys
import time
from pathlib import Path

from . import config as C
from . import io


def _log(msg):
    print(f"[rlvr {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _task(path):
    from .stages import task_from_columns

    return task_from_columns(io.read_table(path, required=("level", "logit_0", "logit_1")))


def cmd_task(a):
    from .stages import task_columns

    cols = task_columns({"P": a.P, "M": a.M, "seed": a.seed, "level_logodds": a.level_logodds,
                         "logodds_spread": a.spread})
    io.write_table(a.out, cols)
    _log(f"task: {a.P} prompts x {a.M} answers -> {a.out}")


def cmd_reference(a):
    from .stages import reference_columns

    io.write_table(a.out, reference_columns(_task(a.task), a.k, a.n_samples, a.seed))
    _log(f"reference pass@k for k = {a.k} -> {a.out}")


def cmd_gradstats(a):
    from .stages import gradstat_columns

    case = C.GradStatCase(a.offset, a.method, a.level)
    cols = gradstat_columns(_task(a.task), case, a.G, a.reps, a.seed)
    io.write_table(a.out, cols)
    _log(f"gradient stats {case} x {a.reps} reps: mean {cols['grad_mean'][0]:.4f} -> {a.out}")


def cmd_train(a):
    from .stages import run_columns

    run = C.RunSpec(a.experiment, a.method, a.lr, a.offset, a.G, a.prompts_per_step, a.steps, a.seed,
                    a.max_rounds)
    summary, curve, passk = run_columns(_task(a.task), run, a.value_lr, a.eval_every, a.k)
    io.write_table(a.out_curve, curve)
    io.write_table(a.out_passk, passk)
    io.write_table(a.out_run, summary)
    _log(f"train {run}: final pass@1 {summary['final_pass1'][0]:.3f} -> {a.out_run}")


def cmd_exact(a):
    from .stages import exact_curve_columns

    io.write_table(a.out, exact_curve_columns(a.methods, a.G, a.M, a.n_points))
    _log(f"exact E[g]/grad J curves for {a.methods} -> {a.out}")


def cmd_aggregate(a):
    io.concat_files(a.inputs, a.out)
    _log(f"aggregated {len(a.inputs)} files -> {a.out}")


def cmd_tables(a):
    from .render import write_tables

    for path in write_tables(_read_frames(a), a.outdir, a.lang):
        _log(f"table -> {path}")


def cmd_figures(a):
    from .figures import write_figures

    for path in write_figures(_read_frames(a), a.outdir, a.names):  # ValueError: exit code 2
        _log(f"figure -> {path}")


def _read_frames(a):
    import pandas as pd

    frames = {}
    for name in ("reference", "gradstats", "exact", "runs", "curves", "passk"):
        path = getattr(a, name, None)
        if path:
            io.read_arrow(path)  # a clear error naming the file if it is damaged
            frames[name] = pd.read_parquet(path)
    return frames


RESULT_FILES = {"task": C.TASK_FILE, "reference": "reference_passk.parquet",
                "gradstats": "gradient_stats.parquet", "exact": C.EXACT_FILE, "runs": "runs.parquet",
                "curves": "curves.parquet", "passk": "passk_trained.parquet"}


def compute_all(cfg, log=_log):
    """Every stage of a validated config in this process: {name: pyarrow Table} as RESULT_FILES."""
    import pyarrow as pa

    from .stages import (
        exact_curve_columns,
        gradstat_columns,
        reference_columns,
        run_columns,
        task_columns,
        task_from_columns,
    )

    task_cols = task_columns(cfg["task"])
    task = task_from_columns(task_cols)
    ref = cfg["reference"]
    tables = {"task": pa.table(task_cols),
              "reference": pa.table(reference_columns(task, ref["k"], ref["n_samples"], ref["seed"]))}
    gs = cfg["gradient_stats"]
    tables["exact"] = pa.table(exact_curve_columns(gs["exact_curve"]["methods"], gs["G"], task["M"],
                                                   gs["exact_curve"]["n_points"]))
    cases = C.gradstat_cases(cfg)
    rows = []
    for i, case in enumerate(cases):
        rows.append(pa.table(gradstat_columns(task, case, gs["G"], gs["n_reps"], gs["seed"])))
        log(f"gradient stats {i + 1}/{len(cases)} {tuple(case)}")
    tables["gradstats"] = pa.concat_tables(rows)
    outs = {"runs": [], "curves": [], "passk": []}
    specs = C.training_runs(cfg)
    for i, run in enumerate(specs):
        parts = run_columns(task, run, cfg["trainer"]["value_lr"], cfg["trainer"]["eval_every"], ref["k"])
        for name, cols in zip(outs, parts):
            outs[name].append(pa.table(cols))
        if (i + 1) % 10 == 0 or i + 1 == len(specs):
            log(f"training {i + 1}/{len(specs)} runs")
    tables.update({name: pa.concat_tables(parts) for name, parts in outs.items()})
    return tables


def cmd_all(a):
    """Every stage in this process: print the tables; optionally write the Parquet files and
    the figures."""
    from .render import render_text

    cfg = C.load_config(a.config)
    t0 = time.perf_counter()
    tables = compute_all(cfg)
    _log(f"computed in {time.perf_counter() - t0:.1f} s")
    if a.results:
        for key, name in RESULT_FILES.items():
            io.write_arrow(Path(a.results) / name, tables[key])
        _log(f"wrote Parquet files to {a.results}/")
    frames = {k: v.to_pandas() for k, v in tables.items() if k != "task"}
    print(render_text(frames, cfg["lang"]))
    if a.figures:
        from .figures import write_figures

        for path in write_figures(frames, a.figures):
            _log(f"figure -> {path}")


def build_parser():
    p = argparse.ArgumentParser(prog="python -m rlvr", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("all", help="run every stage in this process and print the tables")
    s.add_argument("--config", default="config/config.yaml")
    s.add_argument("--results", help="also write the Parquet results to this directory")
    s.add_argument("--figures", help="also write the report figures (PNG) to this directory")
    s.set_defaults(fn=cmd_all)

    s = sub.add_parser("task", help="generate the task")
    s.add_argument("--P", type=int, required=True)
    s.add_argument("--M", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--level-logodds", type=float, nargs="+", required=True)
    s.add_argument("--spread", type=float, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_task, compute=True)

    s = sub.add_parser("reference", help="exact pass@k of the reference policy")
    s.add_argument("--task", required=True)
    s.add_argument("--k", type=int, nargs="+", required=True)
    s.add_argument("--n-samples", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_reference, compute=True)

    s = sub.add_parser("exact", help="exact E[g]/grad J against p for some estimators")
    s.add_argument("--methods", nargs="+", required=True)
    s.add_argument("--G", type=int, required=True)
    s.add_argument("--M", type=int, required=True)
    s.add_argument("--n-points", type=int, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_exact, compute=True)

    s = sub.add_parser("gradstats", help="Monte Carlo moments of one estimator on one prompt")
    s.add_argument("--task", required=True)
    s.add_argument("--offset", type=float, required=True)
    s.add_argument("--method", required=True)
    s.add_argument("--level", choices=C.LEVELS, required=True)
    s.add_argument("--G", type=int, required=True)
    s.add_argument("--reps", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_gradstats, compute=True)

    s = sub.add_parser("train", help="one training run")
    s.add_argument("--task", required=True)
    s.add_argument("--experiment", required=True)
    s.add_argument("--method", required=True)
    s.add_argument("--lr", type=float, required=True)
    s.add_argument("--offset", type=float, required=True)
    s.add_argument("--G", type=int, required=True)
    s.add_argument("--prompts-per-step", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--value-lr", type=float, required=True)
    s.add_argument("--eval-every", type=int, required=True)
    s.add_argument("--max-rounds", type=int, default=0, help="> 0: dynamic sampling")
    s.add_argument("--k", type=int, nargs="+", required=True, help="pass@k of the trained policy")
    s.add_argument("--out-run", required=True)
    s.add_argument("--out-curve", required=True)
    s.add_argument("--out-passk", required=True)
    s.set_defaults(fn=cmd_train, compute=True)

    s = sub.add_parser("aggregate", help="concatenate per-job Parquet files")
    s.add_argument("--out", required=True)
    s.add_argument("inputs", nargs="+")
    s.set_defaults(fn=cmd_aggregate, compute=True)

    for name, fn, what in (("tables", cmd_tables, "text and Markdown tables"),
                           ("figures", cmd_figures, "matplotlib figures")):
        s = sub.add_parser(name, help=f"render the {what}")
        needed = name == "tables"  # a figure says itself which of these it needs
        s.add_argument("--reference", required=needed)
        s.add_argument("--gradstats", required=needed)
        s.add_argument("--runs", required=needed)
        s.add_argument("--exact")
        s.add_argument("--curves")
        s.add_argument("--passk")
        s.add_argument("--lang", choices=("en", "zh"), default="en")
        s.add_argument("--outdir", required=True)
        if name == "figures":
            s.add_argument("--names", nargs="+", help="draw only these figures (default: all)")
        s.set_defaults(fn=fn)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    if getattr(args, "compute", False):
        io.without_pandas()
    try:
        args.fn(args)
    except (C.ConfigError, io.InputError, ValueError) as err:
        print(f"rlvr {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0
