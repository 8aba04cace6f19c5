"""Command line: one subcommand per pipeline stage, plus `all` to run everything in-process.

    python -m rlvr all --config my.yaml --results out/ --figures out/figures   # no Snakemake
    python -m rlvr train --spec '{"experiment": "training", ...}' --task ... --results ...

A pipeline stage's command parses its arguments here and runs rlvr/jobs/<stage>.py, which this
module imports only for that stage: its import closure is the job's code (rlvr/codeversion.py),
and this module, which computes nothing, is no job's code. A job gets its spec as JSON
(rlvr/specs.py; what Snakemake records as the job's parameters) and `--code`, the hash of the
rlvr code it runs; it refuses to run if the code on disk is no longer that. Every file it writes
carries its identity, from its spec, its code and its inputs' identities (rlvr/binding.py).
Compute stages import only numpy and pyarrow; `tables`, `figures` and `all` use pandas and
matplotlib.
"""

import argparse
import json
import os
import re
import sys
import time
from importlib import import_module

from . import io, runlock
from .jobs import FRAMES, log  # every job runs rlvr/jobs/__init__.py anyway

STARTED = time.perf_counter()  # a job's wall time counts from here (Python's start and first imports before)


def run_stage(a):
    """Run a pipeline stage: rlvr/jobs/<stage>.py's run; its log's last line says what the job
    cost (where a run's time goes, job by job: bench/run.py sums these lines)."""
    from .numerics import check

    job = import_module(f".jobs.{a.command}", __package__)
    check(f"the {a.command} job")  # the platform rlvr pinned at import, or no work (rlvr/numerics.py)
    job.run(a)
    log(job_cost())


def job_cost():
    """"done in W s (C s CPU, peak M MB)": the wall time since STARTED, the CPU time of the
    process and of the processes it waited for (user and system, Python's start and the imports
    included) and its peak resident memory."""
    import resource

    cpu, wall = os.times(), time.perf_counter() - STARTED
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    used = cpu.user + cpu.system + cpu.children_user + cpu.children_system
    return f"done in {wall:.2f} s ({used:.2f} s CPU, peak {peak:.0f} MB)"


JOB_COST = re.compile(r"\] done in [\d.]+ s \(([\d.]+) s CPU")  # job_cost's line in a log, its CPU
# a job's kind by its log's path under logs/ (the rules' log: directives); any other: "other"
JOB_KINDS = {"train/": "training", "network/": "network", "gradient_stats/": "gradient statistics",
             "aggregate_": "aggregation", "render": "rendering"}


def jobs_cost(logs, since):
    """{kind: (jobs, CPU seconds)}, the kinds most costly first, of the jobs whose logs under
    `logs` were written since `since` (a time.time()), from the line each ends with (job_cost)."""
    from pathlib import Path

    costs = {}
    for path in Path(logs).rglob("*.log"):
        said = JOB_COST.findall(path.read_text(errors="replace")) if path.stat().st_mtime >= since else []
        if said:
            path = path.relative_to(logs).as_posix()
            kind = next((k for prefix, k in JOB_KINDS.items() if path.startswith(prefix)), "other")
            jobs, cpu = costs.get(kind, (0, 0.0))
            costs[kind] = (jobs + 1, cpu + float(said[-1]))
    return dict(sorted(costs.items(), key=lambda item: -item[1][1]))


def by_kind(costs):
    """jobs_cost's as words: "training 6.8 s (3 jobs), rendering 3.5 s (2 jobs), ..."."""
    return ", ".join(f"{kind} {cpu:.1f} s ({jobs} job{'s' * (jobs != 1)})"
                     for kind, (jobs, cpu) in costs.items())


def cmd_claims(a):
    """Print every demo's claims computed from a results directory; with --doc, rewrite the
    claims a Markdown file quotes (or, with --check, say which differ and fail)."""
    from pathlib import Path

    from .claims import markdown, quoted, requote
    from .compute import read_results
    from .report import by_key, every_claim

    frames = read_results(a.results)
    if not a.doc:
        print(markdown(every_claim(frames)))
        return
    claims, text = by_key(frames), Path(a.doc).read_text()
    try:
        new = requote(text, claims)
    except KeyError as err:
        raise ValueError(f"{a.doc}: {err.args[0]}") from None
    stale = [key for key, sentence in quoted(text).items() if sentence != " ".join(claims[key].text.split())]
    if a.check:
        if stale:
            raise ValueError(f"{a.doc} quotes {len(stale)} claims that differ from the results: "
                             f"{', '.join(stale)}")
        print(f"{a.doc}: its {len(quoted(text))} claims are the results' own")
    elif new != text:
        io.write_bytes(a.doc, new.encode())
        print(f"{a.doc}: rewrote {len(stale)} claims ({', '.join(stale)})")
    else:
        print(f"{a.doc}: its {len(quoted(text))} claims are the results' own; nothing to rewrite")


def cmd_plot(a):
    """Plot a sweep of the runs a config trained (rlvr/sweep.py) as <out>.png and <out>.pdf."""
    from pathlib import Path

    from .compute import load_rows
    from .figures import save
    from .sweep import plot_sweep

    runs = load_rows(a.results, a.config, a.experiment)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for path in save(plot_sweep(runs, a.x, a.y, a.by, a.panel), out.parent, out.name):
        print(path)


def cmd_compare(a):
    """Two configs' runs side by side (rlvr/compare.py), from the files their runs kept."""
    from . import config as C
    from .compare import compare, latex, report, seed_values

    configs = [C.load_config(path) for path in (a.a, a.b)]  # both checked before anything is read
    # each config's runs where it put them (its `results:` key), unless --results says otherwise
    a_values = seed_values(a.results or configs[0]["results"], configs[0], a.y)
    b_values = seed_values(a.results_b or a.results or configs[1]["results"], configs[1], a.y)
    c = compare(a_values, b_values, a.y)
    print("\n".join(latex(c, a.a, a.b) if a.latex else report(c, a.a, a.b)))


def cmd_config(a):
    """Check a config and say what it asks for, computing nothing."""
    from . import config as C

    if a.schema:
        import yaml

        print(yaml.safe_dump(C.schema(), sort_keys=False, allow_unicode=True, width=100))
        return
    edits = []
    cfg = C.load_config(a.config, edits=edits)  # ConfigError names the file and line, or the key
    print("\n".join(C.summary(cfg)))
    if edits:  # what each `change:` and `add:` did, so that an edit that did not do what was meant shows
        print("change: and add: made these rows (knobs at their defaults left out):", *edits, sep="\n  ")
    print(f"{a.config or C.DEFAULT_CONFIG}: valid; nothing was computed")


def cmd_clean(a):
    """Delete the per-job files (and their logs) that no kept config names: rows or seed
    blocks no longer asked for (the network's rows too), a method dropped from the gradient
    statistics. Without --config
    every config a run recorded (rlvr/config.py record_config) is kept, and the default; with
    --config only those, after a confirmation if files of a recorded config would go. A file
    is a config's only where it carries the identity that config plans for it (another
    config's file at the same path, or one made by other code, is not). An
    aggregate that holds rows of a deleted file is deleted too: the next run makes it again
    rather than trusting it. A training pack goes whole or not at all. Say each file, and remove
    the directories this empties."""
    from pathlib import Path

    from . import binding, packs, specs
    from . import config as C

    results, logs = Path(a.results), Path(a.logs)
    recorded = C.recorded_configs(results)  # ConfigError names a recorded file it cannot read
    latest = C.latest_config(results)
    ran = [(f"{path}{' (the latest run)' if path.name == latest else ''}", cfg) for path, cfg in recorded]
    ran.append((f"{C.DEFAULT_CONFIG.relative_to(C.REPO)} (the default)", C.load_config(None)))
    kept = ran if not a.config else [(config, C.load_config(config)) for config in a.config]
    files = [p for part in ("runs", "gradient_stats", "network")
             for p in sorted((results / part).rglob("*.parquet"))]
    names = {p.relative_to(results).as_posix() for p in files}
    keep = set()
    for name, cfg in kept:  # a file a config names is its own only if it carries its identity
        planned = _planned_files(cfg, results)
        named = planned.keys() & names
        own = {n for n in named if binding.carried(results / n) == planned[n]}
        keep |= own
        other = len(named - own)
        print(f"{name} keeps {len(own)} result files"
              + (f" (it names {other} more, made by another config or other code)" if other else ""))
    # a training pack (rlvr/packs.py) is kept whole while a config names one of its jobs: a run
    # keeps it as it ran, and would train it all again to make a file deleted here; a pack none
    # of whose jobs a config names goes whole, its manifest and log too
    held, manifests = set(), []
    for name, entries in packs.read_manifests(results).items():
        pack = {f"{path}.{kind}.parquet" for path, _, _ in entries for kind in specs.JOB_FILES} & names
        if pack & keep:
            held |= pack - keep
        else:
            manifests.append(results / specs.PACKS_DIR / f"{name}.json")
    if held:
        print(f"{len(held)} result files no config names are kept with their packs, which hold files "
              "that configs name")
    keep |= held
    stale = [p for p in files if p.relative_to(results).as_posix() not in keep]
    logs_of = {}  # a gradient-statistics job's log is named by its job, a network row's by its row
    for path in stale:  # (a training pack's by its pack: below)
        name = path.relative_to(results).as_posix().removesuffix(".parquet")
        if name.startswith("network/base/"):  # a base's two files share its log (network/base/seed<s>.log)
            logs_of.setdefault(logs / f"{name.removesuffix('_prompts')}.log", None)
        elif name.startswith("network/"):  # a row's files share its log
            logs_of.setdefault(logs / f"{name.rpartition('.')[0]}.log", None)
        elif not name.startswith("runs/"):
            logs_of.setdefault(logs / f"{name}.log", None)
    for manifest in manifests:
        logs_of.setdefault(logs / "train" / f"{manifest.stem}.log", None)
    doomed = stale + manifests + [p for p in logs_of if p.exists()]
    aggregates = _aggregates_holding(results, stale)
    if stale and not a.dry_run and (a.config or not recorded):
        _confirm(a, C, results, recorded, ran, stale)
    for path in doomed + aggregates:
        if not a.dry_run:
            path.unlink()
        why = " (it holds rows of the files above; the next run makes it again)" if path in aggregates else ""
        print(f"{'would delete' if a.dry_run else 'deleted'} {path}{why}")
    if not a.dry_run:
        for root in (results, logs):
            _remove_emptied(root, [p.parent for p in doomed if p.is_relative_to(root)])
    print(f"{len(stale)} result files, {len(manifests)} pack manifests, "
          f"{len(doomed) - len(stale) - len(manifests)} logs and {len(aggregates)} aggregates "
          f"{'would be ' if a.dry_run else ''}deleted; {len(files) - len(stale)} result files kept")


def _planned_files(cfg, results):
    """{file under results/: the identity a run of the validated cfg plans for it}: every file it
    writes, its per-job files and its aggregates (rlvr/binding.py plan)."""
    from .compute import planned_identities

    return {f"{name}.parquet": ident for name, ident in planned_identities(cfg, results).items()}


def _confirm(a, C, results, recorded, ran, stale):
    """Before deleting a file that a run may have used: say how many such files, by config, and
    go on only with --yes or a "y" typed at a terminal. Without a recorded config (results older
    than the records), any file may be a run's."""
    stale = {p.relative_to(results).as_posix() for p in stale}
    if recorded:
        named = {name: _planned_files(cfg, results).keys() & stale for name, cfg in ran}
        used = len(set().union(*named.values()))
        lines = [f"  {name}: {len(files)}" for name, files in named.items() if files]
        if not used:
            return
        print(f"{used} of the {len(stale)} result files to delete are named by configs that runs used:")
        print("\n".join(lines))
    else:
        print(f"no run has recorded its config under {results / C.CONFIGS_DIR}/ (results made before rlvr "
              f"recorded them): any of the {len(stale)} result files to delete may be one that a run used")
    if a.yes:
        return
    if not sys.stdin.isatty():
        raise ValueError("nothing deleted: files that runs used would go, and there is no terminal to "
                         "confirm at; add --yes to delete them (--dry-run lists them)")
    if input("delete them? [y/N] ").strip().lower() not in ("y", "yes"):
        raise ValueError("nothing deleted (not confirmed)")


def _aggregates_holding(results, stale):
    """The aggregated files under results/ that hold a row of a stale per-job file: the runs and
    what is aggregated beside them from the same training jobs, or the gradient statistics.
    Snakemake checks a per-job file only when a job that reads it runs, so an aggregate left
    standing would never be made again by a run of the config that made it."""
    import pyarrow.parquet as pq

    def rows(path):
        return {repr(row) for row in zip(*pq.read_table(path).to_pydict().values())}

    def holds(aggregate, parts):
        if not parts or not aggregate.is_file():
            return False
        try:
            held = rows(aggregate)
            return any(not rows(part).isdisjoint(held) for part in parts)
        except Exception:  # an unreadable file: made again rather than trusted
            return True

    runs = [p for p in stale if p.name.endswith(".run.parquet")]
    gradstats = [p for p in stale if p.relative_to(results).parts[0] == "gradient_stats"]
    network = [p for p in stale
               if p.name.endswith(".curve.parquet") and p.relative_to(results).parts[0] == "network"]
    doomed = []
    if holds(results / io.RESULT_FILES["runs"], runs):
        doomed += [results / io.RESULT_FILES[name] for name in io.JOB_PARTS]
    if holds(results / io.RESULT_FILES["net_curves"], network):
        doomed += [results / io.RESULT_FILES[name] for name in io.NET_PARTS]
    if holds(results / io.RESULT_FILES["gradstats"], gradstats):
        doomed.append(results / io.RESULT_FILES["gradstats"])
    return [p for p in doomed if p.is_file()]


def _remove_emptied(root, folders):
    """Remove each of these folders under root that is now empty, and its parents up to root."""
    for folder in sorted(set(folders), key=lambda f: len(f.parts), reverse=True):
        while folder != root and folder.is_relative_to(root):
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): its parents are not empty either
                break
            print(f"removed the empty directory {folder}")
            folder = folder.parent


def cmd_all(a):
    """Every stage in this process: print the tables; optionally write the Parquet files and
    the figures, exactly as the pipeline would."""
    from . import config as C
    from .compute import compute_all, write_results
    from .numerics import check
    from .report import render_text

    cfg = C.load_config(a.config)
    check("python -m rlvr all")  # the platform rlvr pinned at import, or no work (rlvr/numerics.py)
    if a.results:  # a run of its own, refused while another holds the directory, before any work;
        # the lock is held until this process exits (take() leaves its file descriptor open)
        runlock.take(runlock.state_of(a.results), what="python -m rlvr all")
    t0 = time.perf_counter()
    tables = compute_all(cfg, log)
    log(f"computed in {time.perf_counter() - t0:.1f} s")
    if a.results:
        write_results(tables, a.results, cfg)
        log(f"wrote Parquet files to {a.results}/; their config: {C.record_config(cfg, a.results)}")
    frames = {k: v.to_pandas() for k, v in tables.items()}
    print(render_text(frames, cfg["lang"]))
    if a.figures:
        from .report import write_figures

        names = [name for demo in C.asked(cfg) for name in demo.figures]
        for path in write_figures(frames, a.figures, names):
            log(f"figure -> {path}")


def build_parser():
    p = argparse.ArgumentParser(prog="python -m rlvr", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("all", help="run every stage in this process and print the tables")
    s.add_argument("--config", help="YAML merged over config/config.yaml, as snakemake --configfile does")
    s.add_argument("--results", help="also write the Parquet results to this directory")
    s.add_argument("--figures", help="also write the report figures (PNG) to this directory")
    s.set_defaults(fn=cmd_all)

    s = sub.add_parser("clean", help="delete the per-job results and logs that no config a run used names")
    s.add_argument("--config", action="append",
                   help="YAML merged over config/config.yaml (repeatable): keep what these name, and not "
                   "what the configs recorded under RESULTS/configs/ name (default: keep all of those)")
    s.add_argument("--results", default="results", help="the results directory (default: results)")
    s.add_argument("--logs", default="logs", help="the jobs' log directory (default: logs)")
    s.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    s.add_argument("--yes", action="store_true",
                   help="delete files that a run's config names without asking (needed with --config, or "
                   "when no config is recorded, unless at a terminal)")
    s.set_defaults(fn=cmd_clean)

    s = sub.add_parser("config", help="check a config file and say what it asks for (nothing is computed)")
    s.add_argument("--config", help="YAML merged over config/config.yaml, as snakemake --configfile does")
    s.add_argument("--schema", action="store_true",
                   help="print the whole config schema (every key, default, range)")
    s.set_defaults(fn=cmd_config)

    def job(name, help, inputs=(), outputs=("out",), compute=True):
        s = sub.add_parser(name, help=help)
        s.add_argument("--spec", required=True,
                       help="what to compute, as JSON (rlvr/specs.py); - reads it from stdin")
        s.add_argument("--code",
                       help="refuse to run unless the rlvr code has this hash (rlvr/codeversion.py)")
        for x in inputs:
            s.add_argument(f"--{x}", required=True, help=f"input: the {x} Parquet file")
        for x in outputs:
            s.add_argument(f"--{x}", required=True, help=f"output: the {x} Parquet file to write")
        s.set_defaults(fn=run_stage, compute=compute)

    job("task", help="generate the task")
    job("reference", help="exact pass@k of the reference policy", inputs=("task",))
    job("exact", help="exact E[g]/grad J against p for some estimators")
    job("finite_step", help="exact outcomes of one finite step of the sample-sign estimators (demo 13)",
        inputs=("task",))
    job("gradstats", help="Monte Carlo and exact gradient moments of one estimator", inputs=("task",))
    s = sub.add_parser("train", help="train training jobs (each a row's block of seeds) one after another")
    s.add_argument("--spec", required=True, help="each job's spec as JSON, one a line (rlvr/specs.py); - "
                   "reads them from stdin")
    s.add_argument("--code", nargs="+", help="refuse to run unless each job's rlvr code has this hash "
                   "(rlvr/codeversion.py), one a spec")
    s.add_argument("--task", required=True, help="input: the task Parquet file")
    s.add_argument("--results", required=True,
                   help="output: write each job's files under this directory (<path>.<kind>.parquet)")
    s.add_argument("--manifest", help="output: the pack's manifest, written last (rlvr/packs.py)")
    s.set_defaults(fn=run_stage, compute=True)

    job("net_base", help="the network's base: supervised learning on the toy's reference policy",
        inputs=("task",), outputs=("out", "prompts"), compute=False)  # torch probes for pandas
    s = sub.add_parser("net_train", help="train one network job (a row's block of seeds, packed) from "
                       "their bases")
    s.add_argument("--spec", required=True, help="the row's spec as JSON (rlvr/net/specs.py)")
    s.add_argument("--code", help="refuse to run unless the rlvr code has this hash (rlvr/codeversion.py)")
    s.add_argument("--task", required=True, help="input: the task Parquet file")
    s.add_argument("--bases", nargs="+", required=True,
                   help="input: each seed's base, in the spec's seed order (network/base/seed<s>.parquet)")
    s.add_argument("--results", required=True,
                   help="output: write the row's files under this directory (<path>.<kind>.parquet)")
    s.set_defaults(fn=run_stage)  # torch probes for pandas: not refused here

    s = sub.add_parser("aggregate", help="concatenate per-job Parquet files")
    s.add_argument("--out", action="append", required=True, help="an output file (repeatable)")
    s.add_argument("--in", dest="inputs", nargs="+", action="append", required=True,
                   help="the input files of the --out at the same position (repeatable); a single "
                   "--in - reads every list from stdin, one path a line, a blank line between lists")
    s.add_argument("--order", help="JSON list of (reward_offset, method, level): sort rows into this order")
    s.add_argument("--reference", help="the reference policy's pass@k file: add its rows, as method"
                   " 'reference', for every experiment of the --out (trained policies' pass@k)")
    s.add_argument("--code", help="refuse to run unless the rlvr code has this hash")
    s.set_defaults(fn=run_stage, compute=True)

    s = sub.add_parser("render", help="render demos: their tables, claims and figures, all.txt and claims.md")
    s.add_argument("--demo", nargs="+", required=True, help="the demos' names (rlvr/demos/), in order")
    for frame in FRAMES:
        s.add_argument(f"--{frame}", help=f"input: the aggregated {frame} Parquet file")
    s.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the labels")
    s.add_argument("--tables", required=True, help="directory to write their tables and claims into")
    s.add_argument("--figures", required=True, help="directory to write their figures into")
    s.add_argument("--all", required=True, help="output: every demo's text table, joined")
    s.add_argument("--claims", required=True, help="output: every demo's claims, joined (results/claims.md)")
    s.add_argument("--checksums", required=True,
                   help="list what was written, as sha256sum does, here; a demo whose inputs and files "
                   "are as the list there records is kept, not drawn again")
    s.add_argument("--drop", nargs="+", help="delete these files (tables and figures of demos not asked for)")
    s.add_argument("--threads", type=int, default=1, help="draw the demos in this many processes")
    s.add_argument("--code", help="refuse to run unless the rlvr code has this hash")
    s.set_defaults(fn=run_stage)

    s = sub.add_parser("plot", help="plot your own sweep: a value of the runs against a knob, from the "
                       "runs a config trained")
    s.add_argument("--results", default="results", help="the results directory (default: results)")
    s.add_argument("--config", help="the config whose runs to plot (default: the last run's on --results)")
    s.add_argument("--experiment", help="only this demo's rows (default: every row of the config)")
    s.add_argument("--x", required=True, help="the knob on the x-axis (lr, G, kl_beta, ...)")
    s.add_argument("--y", default="final_pass1", help="the value of each run (default: final_pass1)")
    s.add_argument("--by", help="a line per value of this knob (method: each in its own colour)")
    s.add_argument("--panel", help="a panel per value of this knob")
    s.add_argument("--out", required=True, help="write <out>.png and <out>.pdf")
    s.set_defaults(fn=cmd_plot)

    s = sub.add_parser("compare", help="two configs' runs side by side: the rows they share, and the "
                       "difference B - A of the rows they differ in, paired over the seeds both ran")
    s.add_argument("a", help="config A: a YAML file merged over config/config.yaml, as --configfile is")
    s.add_argument("b", help="config B")
    s.add_argument("--results", help="where both configs' runs are (default: each config's `results:`, "
                   "results unless it names its own)")
    s.add_argument("--results-b", help="where B's runs are, if not there")
    s.add_argument("--y", default="final_pass1", help="the value of each run (default: final_pass1)")
    s.add_argument("--latex", action="store_true", help="the rows that differ as a LaTeX table (booktabs)")
    s.set_defaults(fn=cmd_compare)

    s = sub.add_parser("claims", help="print every demo's claims computed from a results directory")
    s.add_argument("--results", default="results",
                   help="the directory of the Parquet results (default: results)")
    s.add_argument("--doc", help="rewrite the claims this Markdown file quotes (<!-- claim KEY -->...)")
    s.add_argument("--check", action="store_true",
                   help="with --doc: fail if a quoted claim differs, change nothing")
    s.set_defaults(fn=cmd_claims)

    s = sub.add_parser("predict", help="your data: from each prompt's sampled answers n and correct c, what "
                       "the toy's exact formulas predict (groups without signal per G, dynamic sampling's "
                       "draws, pass@k, each estimator's gradient), integrated over each pass rate's "
                       "posterior")
    s.add_argument("data", help="a .csv or .parquet table (prompt, n, c; or n, pass_rate; optional level), "
                   "or .jsonl of sampled answers ({\"prompt\": id, \"reward\": 0 or 1} a line)")
    s.add_argument("--budget", type=int, default=256,
                   help="answers a step, split into groups of G (default: 256)")
    s.add_argument("--G", type=int, nargs="+", default=[2, 4, 8, 16, 32],
                   help="group sizes (default: 2 4 8 16 32)")
    s.add_argument("--band", type=float, nargs=2, metavar=("LO", "HI"),
                   help="keep the prompts whose observed c/n is in [LO, HI], and predict for them too")
    s.add_argument("--prior", nargs="+", default=["fit"],
                   help="a pass rate's Beta prior: fit (the default: the one fitted to the data's counts), "
                   "jeffreys (0.5 0.5), or A B")
    s.add_argument("--methods", nargs="+", default=["none", "rloo", "grpo", "dr_grpo"],
                   help="estimators whose exact gradient moments to give (rlvr/estimators.py)")
    s.add_argument("--id-key", default="prompt", help="the prompt's key in a .jsonl line (default: prompt)")
    s.add_argument("--reward-key", default="reward",
                   help="the reward's key in a .jsonl line (default: reward)")
    s.add_argument("--out", help="write the predictions as Parquet and one figure (predict.png, .pdf) here")
    s.set_defaults(fn=lambda a: __import__("rlvr.predict", fromlist=["run"]).run(a))

    s = sub.add_parser("row", help="your trainer's settings (a TRL GRPOConfig, a verl config) as a row of "
                       "the "
                       "toy, by the peers' own names; what has no toy counterpart is listed")
    s.add_argument("file", help="its YAML or JSON, or its command line written out (.sh, .txt)")
    s.add_argument("--from", dest="peer", required=True, choices=("trl", "verl"),
                   help="whose settings they are")
    s.set_defaults(fn=lambda a: __import__("rlvr.peers", fromlist=["run"]).run(a))

    s = sub.add_parser("lecture", help="run the lecture's script (examples/lecture_01_grpo.py) on rlvr: its "
                       "four demos, printed in Chinese as the lecture has them or in English")
    s.add_argument("--lang", choices=("zh", "en"), default="zh",
                   help="zh: the script's own output; en: each line translated (rlvr/lecture.py)")
    s.set_defaults(fn=lambda a: __import__("rlvr.lecture", fromlist=["run"]).run(a.lang))
    return p


def check_code(a):
    """Refuse to run code other than the version Snakemake recorded for this job."""
    from . import codeversion

    codeversion.use_saved()  # what the run's start read off the modules: only those changed since are read
    spec = getattr(a, "spec", None) or "{}"
    specs = spec.splitlines() if a.command == "train" else [spec]
    for text, code in zip(specs, a.code if isinstance(a.code, list) else [a.code]):
        job = json.loads(text)
        methods = tuple(job.get("methods", [job["method"]] if "method" in job else []))
        now = codeversion.code_version(a.command, methods)
        if now != code:
            raise ValueError(f"the rlvr code of this job changed since it was planned ({code} -> {now}); "
                             "run snakemake again")


# the arguments naming what a command writes (or deletes); a pipeline stage's is --out
WRITES = {"train": ("results", "manifest"), "net_base": ("out", "prompts"), "net_train": ("results",),
          "render": ("tables", "figures", "all", "claims", "checksums", "drop"),
          "all": ("results", "figures"), "clean": ("results",), "config": (), "claims": (), "predict": (),
          "row": ()}


def _written(args):
    """The paths a command writes (or deletes) under, as its arguments name them."""
    if getattr(args, "dry_run", False):  # `clean --dry-run` only lists
        return []
    values = [getattr(args, name, None) for name in WRITES.get(args.command, ("out",))]
    return [p for value in values if value for p in (value if isinstance(value, list) else [value])]


def main(argv=None):
    args = build_parser().parse_args(argv)
    if getattr(args, "spec", None) == "-":  # a spec can outgrow one argument's limit (128 KiB)
        args.spec = sys.stdin.read().strip()
    if getattr(args, "compute", False):
        io.without_pandas()
    try:
        # a job of a run that has ended (an orphan), or a command beside a run that holds the
        # results it would write, does nothing
        for governing in {runlock.state_for(path) for path in _written(args)} or {None}:
            runlock.check_current(governing)
        if getattr(args, "code", None):
            check_code(args)
        args.fn(args)
    except (io.InputError, runlock.LockError, ValueError, FloatingPointError) as err:
        # ConfigError is a ValueError; FloatingPointError: a training run diverged
        # (rlvr/training.py says where and what to lower)
        print(f"rlvr {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # disk full, permission denied, ...: written atomically, so nothing partial
        where = f"{err.filename}: " if err.filename else ""
        print(f"rlvr {args.command}: error: {where}{err.strerror or err}; nothing was left half-written",
              file=sys.stderr)
        return 2
    return 0
