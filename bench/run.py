#!/usr/bin/env python
"""Benchmarks of the rlvr pipeline against the project's performance targets.

    python bench/run.py                # all six measurements
    python bench/run.py --only 3 4     # some of them
    python bench/run.py --quick        # one pair everywhere (a smoke test)
    python bench/run.py --full         # more pairs

The machine may be shared and noisy, so every comparison is a ratio of paired runs measured
here: A then B, repeated; we report the median of the per-pair ratios and the median times.
The code measured is a snapshot of the repo taken at start-up; every pipeline run happens in a
fresh copy of it (Snakefile, workflow/, rlvr/, config/, profiles/), as `python -m snakemake -c2`
with that copy as the working directory, so profiles/default applies. The summary is printed
as Markdown and written to bench/out/summary.md.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
PY = sys.executable
PIPELINE = ("Snakefile", "workflow", "rlvr", "config", "profiles")
TMP = Path(tempfile.mkdtemp(prefix="rlvr-bench-"))
SNAP = TMP / "snapshot"  # the code measured: the repo as it was when the bench started
ENV = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"} | {"PYTHONPATH": str(SNAP)}
SNAKEMAKE = [PY, "-m", "snakemake", "-c2"]
SUMMARY = []  # (measurement, result, target, met, command), one per line of the summary


def copy_files(src, dst, names=PIPELINE):
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (src / name).is_dir():
            shutil.copytree(src / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src / name, dst / name)
    return dst


def fresh_copy():
    """A new temporary copy of the snapshot's pipeline files, without results."""
    return copy_files(SNAP, Path(tempfile.mkdtemp(dir=TMP, prefix="copy-")))


class Run(NamedTuple):
    wall: float  # seconds
    rss: float  # the child's peak RSS in MB: ru_maxrss of its own rusage (os.wait4)
    cpu: float  # user + system seconds of the child and of every process it waited for
    said: str  # its standard error


def timed(cmd, cwd):
    """Run cmd in cwd, stdout to /dev/null; return its Run."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        said = err.read().decode(errors="replace")
        if p.returncode:
            tail = "\n".join(said.splitlines()[-20:])
            raise RuntimeError(f"{' '.join(map(str, cmd))} failed (exit {p.returncode}) in {cwd}:\n{tail}")
    return Run(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, said)


def pipeline_in(copy, cmd=SNAKEMAKE):
    """Run cmd (a `snakemake -c2`) in copy; return its wall seconds, after printing where its CPU
    went (the jobs', by kind, from their logs as the run's last line sums them, and Snakemake's
    with the shells that start the jobs: the rest) and the demos it rendered."""
    from rlvr.cli import by_kind, jobs_cost  # the snapshot's

    started = time.time()
    run = timed(cmd, copy)
    costs = jobs_cost(copy / "logs", started)
    own = run.cpu - sum(cpu for _, cpu in costs.values())
    drawn = re.search(r"the tables and figures of (demos? [\d, ]+)", run.said)
    drawn = drawn[1] if drawn else "no demo"
    print(f"      {run.wall:.2f} s; CPU {run.cpu:.1f} s: {by_kind(costs)}, "
          f"Snakemake and its shells {own:.1f} s; rendered {drawn}", flush=True)
    return run.wall


def paired(a, b, n):
    """a() then b(), n times; each returns seconds. -> (median a, median b, median of a/b)."""
    ta, tb = [], []
    for i in range(n):
        ta.append(a())
        tb.append(b())
        print(f"    pair {i + 1}/{n}: {ta[-1]:.2f} s / {tb[-1]:.2f} s = {ta[-1] / tb[-1]:.2f}", flush=True)
    return statistics.median(ta), statistics.median(tb), statistics.median(x / y for x, y in zip(ta, tb))


def pipeline_run(configfile):
    """Seconds of a cold `snakemake -c2` with configfile, in a fresh copy."""
    return lambda: pipeline_in(fresh_copy(), [*SNAKEMAKE, "--configfile", str(configfile)])


def pairs(n):
    return f"{n} pair" + "s" * (n != 1)


def report(what, result, target, met, command):
    verdict = {True: "met", False: "**not met**", None: "-"}[met]
    SUMMARY.append((what, result, target, verdict, command))
    print(f"  => {what}: {result}" + (f" (target {target}: {verdict})" if met is not None else ""),
          flush=True)


def base_config():
    """The default config, validated: the rows of demo 3 and the others are their modules' (rlvr/demos/),
    not config/config.yaml's (the snapshot's code is the code imported here)."""
    from rlvr.config import load_config

    return load_config()


LECTURE = ("reference", "gradients", "training", "group_size", "passk_after_training")  # its script's demos


def demos_off(but=()):
    """Every demo switched off but those named (rlvr.demos: demo 3 has no section, it cannot be)."""
    from rlvr.demos import DEMOS

    return {demo.section: {"enabled": False} for demo in DEMOS if demo.section and demo.name not in but}


LATER_DEMOS_OFF = demos_off(but=LECTURE)  # the lecture's demos on
DEMOS_OFF = demos_off()  # demo 3 alone on


def write_config(name, cfg):
    """cfg as bench/out/<name>.yaml: what --configfile gets (merged over config/config.yaml)."""
    path = OUT / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


# --- 1. the lecture's demos: pipeline against the lecture's script ----------------------------


# the lecture's script as written (`import toy_rlvr`), on bench/toy_rlvr.py: a reference that does
# not run the code under test (on rlvr it records every step: rlvr's bookkeeping would slow both)
LECTURE_ON_TOY = f"""\
import runpy, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import toy_rlvr
sys.modules["rlvr"] = toy_rlvr  # the script imports rlvr; the lecture's own import was toy_rlvr
runpy.run_path("examples/lecture_01_grpo.py", run_name="__main__")
"""


def lecture_demos(n):
    print("\n1. cold `snakemake -c2` of the lecture's demos vs the lecture's script on toy_rlvr.py")
    base = base_config()
    cfg = write_config("lecture", {
        **LATER_DEMOS_OFF,
        "group_size": {"seeds": [0, 1, 2, 3, 4]},  # the lecture's seeds (the default has 40)
        "training": {"rows": base["training"]["rows"][:10]},
        "gradient_stats": {"cases": base["gradient_stats"]["cases"][:2],
                           "exact_curve": {"methods": ["none", "rloo", "group", "grpo"]}},
    })
    script = [PY, "-c", LECTURE_ON_TOY]
    pipe, lecture, ratio = paired(pipeline_run(cfg), lambda: timed(script, SNAP).wall, n)
    stretch = "met" if ratio <= 1.0 else "not met"
    report("1. lecture's demos: cold pipeline / lecture script",
           f"{pipe:.1f} s / {lecture:.1f} s = **{ratio:.2f}x** (median of {pairs(n)}; stretch {stretch})",
           "<= 1.5x (stretch <= 1.0x)", ratio <= 1.5,
           "`python -m snakemake -c2 --configfile bench/out/lecture.yaml` vs "
           "the lecture's script on `bench/toy_rlvr.py` (run.py's LECTURE_ON_TOY); "
           "`python bench/run.py --only 1`")


# --- 2. a 450-run sweep: pipeline against a plain single-process loop --------------------------

LOOP = f"""\
# the 450 runs of bench/out/sweep450.yaml, one `train` call each, on the pinned reference kernel
# bench/toy_rlvr.py, not the code under test (written by bench/run.py)
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import toy_rlvr as rlvr
task = rlvr.make_task()
for method, steps, pps, G, lr, offset, seeds in json.load(open(sys.argv[1])):
    for seed in seeds:
        rlvr.train(task, method, steps, pps, G, lr, seed, reward_offset=offset, eval_every=5)
"""


def sweep_450(n):
    print("\n2. cold `snakemake -c2` of a 450-run sweep vs the same runs in a single-process loop")
    from rlvr import config as C

    base, seeds = base_config(), list(range(30))
    path = write_config("sweep450", {
        **DEMOS_OFF,  # the sweep is demos 3-4, as the loop is: no other demo's statistics or figures
        "group_size": {"enabled": True, "G": [2, 4, 8, 16, 32], "seeds": seeds},
        "training": {"rows": base["training"]["rows"][:10], "seeds": seeds},
    })
    cfg = C.load_config(path)
    assert cfg["trainer"]["eval_every"] == 5 and cfg["trainer"]["value_lr"] == 0.2
    rows = [(r.method, r.steps, r.prompts_per_step, r.G, r.lr, r.reward_offset, r.seeds)
            for r in C.train_rows(cfg)]
    runs = sum(len(r[-1]) for r in rows)
    assert runs == 450, runs
    (OUT / "loop450.py").write_text(LOOP)
    (OUT / "loop450.json").write_text(json.dumps(rows))
    pinned = "taskset -c 0 " if shutil.which("taskset") else ""
    loop = [*pinned.split(), PY, OUT / "loop450.py", OUT / "loop450.json"]
    pipe, plain, ratio = paired(pipeline_run(path), lambda: timed(loop, SNAP).wall, n)
    report(f"2. {runs}-run sweep: cold pipeline / single-process loop",
           f"{pipe:.1f} s / {plain:.1f} s = **{ratio:.2f}x** (median of {pairs(n)})",
           "<= 0.5x", ratio <= 0.5,
           "`python -m snakemake -c2 --configfile bench/out/sweep450.yaml` vs "
           f"`{pinned}python bench/out/loop450.py bench/out/loop450.json`; `python bench/run.py --only 2`")


# --- 3. no-op rerun -------------------------------------------------------------------------------


FINISHED = []  # the finished default project, made once a bench run (measurement 3 reruns it, 7 edits it)


def finished_copy():
    """A copy of the snapshot in which the default config has run to its end."""
    if not FINISHED:
        FINISHED.append(fresh_copy())
        print(f"    (a cold run of the default config first: {timed(SNAKEMAKE, FINISHED[0]).wall:.1f} s)")
    return FINISHED[0]


def noop_rerun(n):
    print("\n3. no-op `snakemake -c2` in a finished copy vs `snakemake --version`")
    done = finished_copy()
    noop, version, ratio = paired(lambda: timed(SNAKEMAKE, done).wall,
                                  lambda: timed([PY, "-m", "snakemake", "--version"], done).wall, n)
    report("3. no-op rerun / `snakemake --version`",
           f"{noop:.2f} s / {version:.2f} s = **{ratio:.2f}x** (medians of {pairs(n)})",
           "<= 1.5x", ratio <= 1.5,
           "`python -m snakemake -c2` (twice) vs `python -m snakemake --version`; "
           "`python bench/run.py --only 3`")


# --- 4. the batched training kernel ---------------------------------------------------------------


def batched_kernel(n):
    print("\n4. `train_seeds` (all seeds at once) vs a loop of `train` (one seed at a time), in-process")
    from rlvr.task import make_task
    from rlvr.training import make_row, train, train_seeds

    task, args = make_task(), ("grpo", 300, 16, 8, 2.0)
    for S, target in ((5, 3.0), (50, 10.0)):
        seeds, out = list(range(S)), {}

        def loop():
            t0 = time.perf_counter()
            out["loop"] = [train(task, *args, s, eval_every=5)["logits"] for s in seeds]
            return time.perf_counter() - t0

        def batched():
            t0 = time.perf_counter()
            out["batched"] = [o["logits"] for o in train_seeds(task, make_row(*args, seeds, eval_every=5))]
            return time.perf_counter() - t0

        t_loop, t_batched, speedup = paired(loop, batched, n)
        assert all(np.array_equal(a, b) for a, b in zip(out["loop"], out["batched"])), "logits differ"
        report(f"4. kernel at {S} seeds: loop of `train` / `train_seeds`",
               f"{t_loop:.2f} s / {t_batched:.2f} s = **{speedup:.1f}x** (median of {pairs(n)}; "
               "same logits)", f">= {target:g}x", speedup >= target,
               f"`train_seeds(task, make_row('grpo', 300, 16, 8, 2.0, range({S}), eval_every=5))`; "
               "`python bench/run.py --only 4`")


# --- 5. peak resident memory ----------------------------------------------------------------------


def peak_rss(n):
    print("\n5. peak RSS of one 50-seed training job and of `python -m rlvr all`")
    from rlvr import config as C
    from rlvr.specs import to_json

    cfg = C.load_config(None)
    cfg["training"]["seeds"] = list(range(50))
    row = next(r for r in C.train_rows(C.validate_config(cfg)) if r.method == "grpo")
    work = Path(tempfile.mkdtemp(dir=TMP, prefix="rss-"))
    task = work / "task.parquet"
    timed([PY, "-m", "rlvr", "task", "--spec", json.dumps(cfg["task"]), "--out", task], SNAP)
    train = [PY, "-m", "rlvr", "train", "--spec", to_json(row), "--task", task, "--results", work]
    wall, rss, *_ = timed(train, SNAP)
    report("5a. peak RSS: one training job of 50 seeds", f"**{rss:.0f} MB** ({wall:.1f} s; {row.path})",
           "report", None, "`python -m rlvr train --spec '<grpo row, 50 seeds>' --task ... --results ...`; "
           "`python bench/run.py --only 5`")
    wall, rss, *_ = timed([PY, "-m", "rlvr", "all"], SNAP)
    report("5b. peak RSS: `python -m rlvr all` (default config)", f"**{rss:.0f} MB** ({wall:.1f} s)",
           "report", None, "`python -m rlvr all > /dev/null`; `python bench/run.py --only 5`")


# --- 6. the full default config: pipeline against one process --------------------------------------


def full_default(n):
    print("\n6. cold `snakemake -c2` of the default config vs `python -m rlvr all` writing the same files")

    def in_process():
        return timed([PY, "-m", "rlvr", "all", "--results", "results", "--figures", "results/figures"],
                     fresh_copy()).wall

    pipeline, one, ratio = paired(lambda: pipeline_in(fresh_copy()), in_process, n)
    report("6. default config cold: `snakemake -c2` / `python -m rlvr all`",
           f"{pipeline:.1f} s / {one:.1f} s = **{ratio:.2f}x** (medians of {pairs(n)})", "<= 1.0x",
           ratio <= 1.0, "`python -m snakemake -c2` vs `python -m rlvr all --results results --figures "
           "results/figures`, each in a fresh copy; `python bench/run.py --only 6`")


# --- 7. an everyday change: one row edited in a finished project ------------------------------------


def one_row_changed(n):
    print("\n7. `snakemake -c2` after one row of demo 3 is edited, in a finished copy of the default config")
    from rlvr import config as C
    from rlvr.demos import network

    done = finished_copy()
    rows = [row for row in C.train_rows(base_config()) if row.experiment == "training"]
    assert len(rows) == len(base_config()["training"]["rows"])  # the config's rows, one by one
    unread = max(i for i, row in enumerate(rows) if not network.reads(row))  # demo 17 does not read it
    assert network.reads(rows[0])
    for row, readers in ((0, "3, 6 and 17"), (unread, "3 and 6")):
        times, drawn = [], []
        for i in range(n):  # a new lr each time: the row trains again, and what reads it
            cfg = base_config()["training"]
            cfg["rows"][row]["lr"] += 0.25 * (i + 1)
            edited = write_config(f"change{row}_{i}", {"training": cfg})
            print(f"    row {row}, edit {i + 1}/{n}:", flush=True)
            started = time.time()
            times.append(pipeline_in(done, [*SNAKEMAKE, "--configfile", edited]))
            drawn.append((done / "results/figures/learning_curves.pdf").stat().st_mtime - started)
            print(f"      demo 3's figures written after {drawn[-1]:.2f} s", flush=True)
        report(f"7. row {row} of demo 3 edited: `snakemake -c2`",
               f"**{statistics.median(times):.1f} s** (median of {n} edits; demo 3's figures written after "
               f"{statistics.median(drawn):.1f} s; it retrains the row, a pack of its own, its two "
               f"aggregations, and the rendering job, which draws demos {readers}, which read it)",
               "report", None,
               f"`python -m snakemake -c2 --configfile bench/out/change{row}_<i>.yaml` in a finished copy; "
               "`python bench/run.py --only 7`")


# --- main -----------------------------------------------------------------------------------------

MEASUREMENTS = {1: lecture_demos, 2: sweep_450, 3: noop_rerun, 4: batched_kernel, 5: peak_rss,
                6: full_default, 7: one_row_changed}
PAIRS = {1: (3, 5), 2: (1, 3), 3: (5, 9), 4: (3, 5), 5: (1, 1), 6: (2, 3), 7: (3, 5)}  # default, --full


def header():
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()

    from importlib.metadata import PackageNotFoundError, version

    try:  # installed, it makes every Snakemake start probe `scontrol` (seconds without a controller)
        slurm = f"slurm executor plugin {version('snakemake-executor-plugin-slurm')} installed"
    except PackageNotFoundError:
        slurm = "no slurm executor plugin"
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    return (f"{time.strftime('%Y-%m-%d %H:%M %Z')}, commit {git('rev-parse', '--short', 'HEAD')}{dirty}, "
            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}, "
            f"numpy {np.__version__}, snakemake {version('snakemake')}, {slurm}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", type=int, choices=sorted(MEASUREMENTS), help="measurements to run")
    ap.add_argument("--quick", action="store_true", help="one pair everywhere (a smoke test)")
    ap.add_argument("--full", action="store_true", help="more pairs")
    a = ap.parse_args()
    argv = " ".join(sys.argv[1:])

    OUT.mkdir(parents=True, exist_ok=True)
    head = header()
    print(f"rlvr benchmarks: python bench/run.py {argv}\n{head}; copies under {TMP}", flush=True)
    try:
        copy_files(REPO, SNAP, (*PIPELINE, "examples"))  # the code measured, fixed for the whole run
        sys.path.insert(0, str(SNAP))  # in-process measurements import the snapshot's rlvr
        for number in sorted(a.only or MEASUREMENTS):  # 3 reruns the finished project before 7 edits it
            n = 1 if a.quick else PAIRS[number][a.full]
            try:
                MEASUREMENTS[number](n)
            except Exception as err:  # report it and go on with the next measurement
                first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
                SUMMARY.append((f"{number}. {MEASUREMENTS[number].__name__}",
                                f"could not be measured: {first_line}",
                                "-", "-", f"`python bench/run.py --only {number}`"))
                print(f"  !! {err}", flush=True)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

    lines = [f"Benchmarks: `python bench/run.py {argv}`".rstrip(), "", head, "",
             "| measurement | result | target | met? | reproduce |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in SUMMARY]
    text = "\n".join(lines) + "\n"
    (OUT / "summary.md").write_text(text)
    print("\n" + text + f"(written to {OUT / 'summary.md'})")


if __name__ == "__main__":
    main()
