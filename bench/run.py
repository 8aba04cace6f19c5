#!/usr/bin/env python
"""Benchmarks for the rlvr pipeline's performance targets (see BENCHMARKS.md).

    python bench/run.py            # full pass, about 8-10 minutes on 2 cores
    python bench/run.py --quick    # shorter pass: fewer repeats, smaller scale test

Everything that runs Snakemake runs in a fresh temporary copy of the repo (Snakefile,
workflow/, rlvr/, config/), never in the repo itself. Timings are wall-clock medians of
several repeats; the machine may be shared and noisy, so compare the ratios measured in the
same run rather than absolute numbers across runs. Peak RSS comes from os.wait4 on each child.

Targets (one section each below):
  1 cold `snakemake -c2` <= 2x one in-process `python -m rlvr all` (stretch: <= 1x)
  2 no-op rerun <= 1.5 s
  3 incremental: one row's lr -> only its seeds' train jobs + aggregation + rendering;
    a sixth seed -> only that seed's train jobs + aggregation + rendering
  4 training kernel >= 3x a one-hot [n, G, M] implementation, same results
  5 gradient statistics at 1M reps: peak RSS <= 500 MB, linear time in n (1M, 2M, 4M)
  6 10x the seeds costs <= 1.1 x 10x the compute stages (no super-linear aggregation)
  7 compute jobs import only numpy/pyarrow; per-job overhead <= 0.15 s
and a profile of one training run (cProfile), of one whole train job, and of a no-op
Snakemake run, for whoever optimises next.
"""

import argparse
import contextlib
import cProfile
import glob
import io
import json
import os
import platform
import pstats
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable  # the real interpreter: a pyenv shim would add ~0.1 s to every process
COPIED = ("Snakefile", "workflow", "rlvr", "config", "profiles")
RESULTS = {}  # target -> dict of figures, dumped with --json


# --- helpers ------------------------------------------------------------------------------


class Run:
    """One finished child process: wall seconds, peak RSS in MB, exit code, output."""

    def __init__(self, wall, rss_mb, rc, out, err):
        self.wall, self.rss_mb, self.rc, self.out, self.err = wall, rss_mb, rc, out, err

    def check(self, what):
        if self.rc != 0:
            tail = "\n".join((self.err or self.out).strip().splitlines()[-15:])
            raise RuntimeError(f"{what} failed (exit {self.rc}):\n{tail}")
        return self


def run(cmd, cwd=None, env=None):
    """Run cmd; time it with perf_counter and take its own peak RSS from os.wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(wall, usage.ru_maxrss / 1024, p.returncode,
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def repeat(n, fn):
    """fn() n times -> list of Run (fn returns a Run)."""
    return [fn() for _ in range(n)]


def med(xs):
    return statistics.median(xs)


def fmt_runs(walls):
    return f"median {med(walls):.2f} s of {len(walls)} ({', '.join(f'{w:.2f}' for w in walls)})"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def section(title):
    print(f"\n=== {title} ", "=" * max(0, 86 - len(title)), sep="", flush=True)


def line(name, figure, target=None, ok=None):
    bits = f"  {name:<44} {figure}"
    if target is not None:
        bits += f"   target {target}"
    if ok is not None:
        bits += f"   {verdict(ok)}"
    print(bits, flush=True)


def env_with(**extra):
    env = dict(os.environ)
    env.pop("SNAKEMAKE_PROFILE", None)
    env.update(extra)
    return env


def make_copy(root, name):
    """A fresh copy of the repo's pipeline files under root/name, without results."""
    dst = Path(root) / name
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake", "results", "logs")
    for item in COPIED:
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, dst / item, ignore=skip)
        else:
            shutil.copy2(src, dst / item)
    return dst


def snakemake(copy, *args, env=None):
    return run([PY, "-m", "snakemake", *args], cwd=copy, env=env or env_with())


# `python -m snakemake ...` that prints, at exit, the CPU seconds of Snakemake's own process
# (all its threads, none of its jobs): steadier than wall time on a shared machine
SNAKEMAKE_OWN_CPU = r"""
import atexit, resource, runpy, sys
def report():
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(f"snakemake own cpu {r.ru_utime + r.ru_stime:.3f}", file=sys.__stderr__)
atexit.register(report)
sys.argv = ["snakemake", *sys.argv[1:]]
runpy.run_module("snakemake", run_name="__main__")
"""


def snakemake_own_cpu(copy, *args, env=None):
    """(Run, CPU seconds of Snakemake's own process) of `snakemake *args` in copy."""
    r = run([PY, "-c", SNAKEMAKE_OWN_CPU, *args], cwd=copy, env=env or env_with())
    m = re.search(r"snakemake own cpu ([0-9.]+)", r.err)
    return r, float(m.group(1)) if m else float("nan")


def rlvr(copy, *args, cwd=None):
    """`python -m rlvr ...` with the copy's rlvr first on the path."""
    return run([PY, "-m", "rlvr", *map(str, args)], cwd=cwd or copy,
               env=env_with(PYTHONPATH=str(copy)))


def job_stats(text):
    """The first "Job stats" table of Snakemake's output: {rule: count}."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip() == "Job stats:":
            counts = {}
            for row in lines[i + 3:]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                counts[parts[0]] = int(parts[1])
            return counts
    return {}


def dry_run_jobs(text):
    """[(rule, {wildcard: value})] of every job a dry run lists."""
    jobs, rule = [], None
    for ln in text.splitlines():
        m = re.match(r"\s*(?:local)?rule (\w+):\s*$", ln)
        if m:
            rule = m.group(1)
            jobs.append((rule, {}))
            continue
        m = re.match(r"\s*wildcards: (.*)$", ln)
        if m and jobs:
            jobs[-1][1].update(kv.split("=", 1) for kv in m.group(1).split(", ") if "=" in kv)
    return jobs


def shell_command(dry_text):
    """The first "Shell command:" of a `snakemake -n -p` run, as (env, rlvr argv)."""
    for ln in dry_text.splitlines():
        if ln.startswith("Shell command:"):
            tokens = shlex.split(ln.split(":", 1)[1])
            i = next(j for j in range(len(tokens) - 1) if tokens[j:j + 2] == ["-m", "rlvr"])
            # VAR=value words before the command (the rules may also set them in shell.prefix,
            # which -p does not print; the bench sets PYTHONPATH to the copy itself)
            env = dict(t.rstrip(";").split("=", 1) for t in tokens[:i]
                       if re.match(r"^[A-Z_]+=[^$]*$", t.rstrip(";")))
            argv = tokens[i + 2:]
            if "2>" in argv:
                argv = argv[:argv.index("2>")]
            return env, argv
    raise RuntimeError("no shell command in the dry run's output")


def redirect_outputs(argv, outdir):
    """argv with every --out* value replaced by a file under outdir."""
    argv = list(argv)
    for i, tok in enumerate(argv[:-1]):
        if tok.startswith("--out"):
            argv[i + 1] = str(Path(outdir) / f"{tok.lstrip('-')}.parquet")
    return argv


class SlurmProbe:
    """The slurm executor plugin, if installed, runs `scontrol show config` (10 s time-out)
    every time Snakemake starts. Without a slurm controller that call hangs until its own
    time-out. `stub_env` puts a `scontrol` that fails at once first on PATH, to show what
    Snakemake costs without that probe."""

    def __init__(self, tmp):
        self.scontrol = shutil.which("scontrol")
        self.seconds = None
        stub_dir = Path(tmp) / "stub-bin"
        stub_dir.mkdir(exist_ok=True)
        stub = stub_dir / "scontrol"
        stub.write_text("#!/bin/sh\nexit 1\n")
        stub.chmod(0o755)
        self.stub_env = env_with(PATH=f"{stub_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        try:
            metadata.version("snakemake-executor-plugin-slurm")
            self.plugin = True
        except metadata.PackageNotFoundError:
            self.plugin = False
        if self.scontrol and self.plugin:
            t0 = time.perf_counter()
            try:
                subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=15)
            except subprocess.TimeoutExpired:
                pass
            self.seconds = time.perf_counter() - t0

    def describe(self):
        if not self.plugin:
            return "slurm executor plugin not installed: no probe"
        if not self.scontrol:
            return "slurm plugin installed, no scontrol on PATH: probe fails at once"
        return f"slurm plugin installed; `scontrol show config` takes {self.seconds:.1f} s here"


# --- machine header -------------------------------------------------------------------------


def machine_header():
    cpu = "unknown"
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for ln in open("/proc/meminfo"):
            if ln.startswith("MemTotal"):
                ram = f"{int(ln.split()[1]) / 1024 ** 2:.1f} GiB"
    except OSError:
        pass

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "not installed"

    import pyarrow

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} (usable {len(os.sched_getaffinity(0))})",
        "ram": ram,
        "os": platform.platform(),
        "python": f"{platform.python_version()} ({PY})",
        "numpy": np.__version__,
        "pyarrow": pyarrow.__version__,
        "snakemake": version("snakemake"),
        "slurm plugin": version("snakemake-executor-plugin-slurm"),
        "repo": f"{REPO} at {commit}" + (" + uncommitted changes" if dirty else ""),
        "load average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    section("machine")
    for k, v in info.items():
        print(f"  {k:<14} {v}")
    RESULTS["machine"] = info


# --- target 1: cold run vs in-process -------------------------------------------------------


def target_cold(tmp, reps, probe):
    section("1. cold `snakemake -c2` (default config, fresh copy) vs `python -m rlvr all`")
    # The pipeline writes the tables and the figures; `rlvr all` prints the tables, and with
    # --figures draws the same figures too: both comparisons are shown.
    inproc, inproc_fig = [], []
    for i in range(reps):
        copy = make_copy(tmp, "inproc")
        r = rlvr(copy, "all", "--config", "config/config.yaml").check("python -m rlvr all")
        inproc.append(r.wall)
        m = re.search(r"computed in ([0-9.]+) s", r.err)
        compute = float(m.group(1)) if m else None
        inproc_fig.append(rlvr(copy, "all", "--config", "config/config.yaml", "--figures", "figures")
                          .check("python -m rlvr all --figures").wall)
    line("in-process `python -m rlvr all`", fmt_runs(inproc))
    if compute is not None:
        line("  of which compute_all (its own log)", f"{compute:.2f} s (last run)")
    line("in-process `python -m rlvr all --figures`", fmt_runs(inproc_fig))

    cold, own_cpu, stats, copy = [], [], {}, None
    for i in range(reps):
        copy = make_copy(tmp, "pipeline")
        r, cpu = snakemake_own_cpu(copy, "-c2")
        cold.append(r.check("cold snakemake -c2").wall)
        own_cpu.append(cpu)
        stats = job_stats(r.err + r.out)
    ratio = med(cold) / med(inproc)
    line("cold `python -m snakemake -c2`", fmt_runs(cold))
    line("  Snakemake's own CPU (greedy, profiles/default)", fmt_runs(own_cpu))
    # what profiles/default's scheduler settings save: Snakemake's default ILP scheduler
    ilp_wall, ilp_cpu = [], []
    for i in range(max(1, reps // 2)):
        r, cpu = snakemake_own_cpu(make_copy(tmp, "ilp"), "-c2", "--scheduler", "ilp",
                                   "--scheduler-subsample", "1000000000")
        ilp_wall.append(r.check("cold snakemake -c2 --scheduler ilp").wall)
        ilp_cpu.append(cpu)
    line("  the same with --scheduler ilp", f"{fmt_runs(ilp_wall)}; Snakemake's own CPU "
         f"{fmt_runs(ilp_cpu)} (+ its solver's processes)")
    # the same without the fork server (rlvr/forkserver.py): every job imports numpy and pyarrow
    no_server = []
    for i in range(max(1, reps // 2)):
        no_server.append(snakemake(make_copy(tmp, "noserver"), "-c2",
                                   env=env_with(RLVR_FORKSERVER="0")).check("cold snakemake -c2, no server").wall)
    line("  the same with RLVR_FORKSERVER=0", f"{fmt_runs(no_server)}  ({med(no_server) / med(inproc):.2f}x)")
    line("jobs", f"{stats.get('total', '?')} ({', '.join(f'{k} {v}' for k, v in stats.items() if k != 'total')})")
    ratio_fig = med(cold) / med(inproc_fig)
    line("ratio cold / in-process tables", f"{ratio:.2f}x", "<= 2x", ratio <= 2)
    line("ratio cold / in-process tables + figures", f"{ratio_fig:.2f}x  (the same outputs)", "<= 2x",
         ratio_fig <= 2)
    line("stretch: ratio <= 1x (tables + figures)", f"{ratio_fig:.2f}x", "<= 1x", ratio_fig <= 1)
    if probe.seconds:
        adj = (med(cold) - probe.seconds) / med(inproc)
        line("  ratio without the slurm probe (estimate)", f"{adj:.2f}x  (cold minus {probe.seconds:.1f} s)")
    RESULTS["1_cold"] = {"inproc_s": inproc, "inproc_figures_s": inproc_fig, "cold_s": cold,
                         "ratio": ratio, "ratio_figures": ratio_fig, "jobs": stats,
                         "no_forkserver_s": no_server, "snakemake_own_cpu_s": own_cpu,
                         "ilp_s": ilp_wall, "ilp_own_cpu_s": ilp_cpu,
                         "slurm_probe_s": probe.seconds}
    return copy  # an up-to-date copy, for targets 2, 3 and 7


# --- target 2: no-op rerun ------------------------------------------------------------------


def target_noop(copy, reps, probe):
    section("2. no-op rerun (everything up to date)")
    asis = repeat(max(2, reps), lambda: snakemake(copy, "-c2").check("no-op snakemake"))
    nothing = all("Nothing to be done" in (r.err + r.out) for r in asis)
    walls = [r.wall for r in asis]
    line("`python -m snakemake -c2`, as installed", fmt_runs(walls), "<= 1.5 s", med(walls) <= 1.5 and nothing)
    if not nothing:
        print("  !! Snakemake found work to do: the copy was not up to date")
    print(f"  ({probe.describe()})")
    stub = repeat(5 if reps > 1 else 3,
                  lambda: snakemake(copy, "-c2", env=probe.stub_env).check("no-op snakemake"))
    stub_walls = [r.wall for r in stub]
    line("same, slurm probe stubbed out", fmt_runs(stub_walls), "<= 1.5 s", med(stub_walls) <= 1.5)
    floor = [snakemake(copy, "--version", env=probe.stub_env).wall for _ in range(3)]
    line("floor: `python -m snakemake --version`", fmt_runs(floor))
    RESULTS["2_noop"] = {"as_is_s": walls, "stubbed_s": stub_walls, "version_floor_s": floor}


# --- target 3: incremental reruns -----------------------------------------------------------

# what a change to training may rerun besides its train jobs (not the gradient demos' figures)
RENDER_AND_AGGREGATE = re.compile(r"^(aggregate_(runs|curves|passk)|tables|figures_training|all)$")


def target_incremental(copy, probe):
    import yaml

    section("3. incremental reruns (dry runs after editing the copied config)")
    cfg_path = copy / "config" / "config.yaml"
    original = cfg_path.read_text()
    cfg = yaml.safe_load(original)
    tr = cfg["training"]
    out = {}

    def dry(edit):
        new = yaml.safe_load(original)
        edit(new)
        cfg_path.write_text(yaml.safe_dump(new, sort_keys=False))
        try:
            r = snakemake(copy, "-n", "-c2", env=probe.stub_env).check("dry run")
        finally:
            cfg_path.write_text(original)
        text = r.err + r.out
        return job_stats(text), dry_run_jobs(text)

    def judge(name, stats, jobs, want_train):
        train = [w for rule, w in jobs if rule == "train"]
        others = {k: v for k, v in stats.items() if k not in ("train", "total")}
        unexpected = sorted(k for k in others if not RENDER_AND_AGGREGATE.match(k))
        good_set = all(want_train(w) for w in train)
        n_expected = want_train.count
        ok = (stats.get("train", 0) == n_expected and len(train) == n_expected and good_set
              and not unexpected and "tables" in stats and "figures_training" in stats)
        table = ", ".join(f"{k} {v}" for k, v in stats.items())
        line(name, f"train {stats.get('train', 0)} (expected {n_expected}); job stats: {table}",
             ok=ok)
        if unexpected:
            print(f"    unexpected rules rerun: {unexpected}")
        if not good_set:
            print(f"    train jobs outside the edited row/seed: {[w for w in train if not want_train(w)]}")
        out[name] = {"job_stats": stats, "ok": ok}

    # a) one training row's lr
    row = tr["rows"][0]
    new_lr = float(row["lr"]) * 1.5 + 0.25

    class RowWant:
        count = len(tr["seeds"])

        def __call__(self, w):
            return (w.get("experiment") == "training" and w.get("method") == row["method"]
                    and float(w.get("lr", "nan")) == new_lr
                    and float(w.get("offset", "nan")) == float(row["reward_offset"]))

    stats, jobs = dry(lambda c: c["training"]["rows"][0].__setitem__("lr", new_lr))
    judge(f"training.rows[0].lr {row['lr']} -> {new_lr}", stats, jobs, RowWant())

    # b) a sixth seed
    seed = max(tr["seeds"]) + 1

    class SeedWant:
        count = len(tr["rows"])

        def __call__(self, w):
            return w.get("experiment") == "training" and int(w.get("seed", -1)) == seed

    stats, jobs = dry(lambda c: c["training"]["seeds"].append(seed))
    judge(f"training.seeds + [{seed}]", stats, jobs, SeedWant())
    RESULTS["3_incremental"] = out


# --- target 4: training kernel vs one-hot ---------------------------------------------------


def onehot_sample(pi, G, rng):
    """Inverse-CDF sampling the straightforward way: compare u against every CDF entry, an
    [n, G, M] boolean tensor. Draws the same uniforms as rlvr.policy.sample_answers."""
    cdf = np.cumsum(pi, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((pi.shape[0], G))
    return (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)


def onehot_gradient(y, A, pi):
    """The lecture's gradient code: an explicit [n, G, M] one-hot tensor."""
    n, G = y.shape
    onehot = np.zeros((n, G, pi.shape[1]))
    np.put_along_axis(onehot, y[:, :, None], 1, axis=2)
    return (A[:, :, None] * (onehot - pi[:, None, :])).mean(axis=1)


def kernel_loop(sample, gradient, logits, n, G, steps, seed, method="grpo", lr=2.0):
    """steps x (draw n prompts, sample G answers each, advantages, gradient, apply)."""
    from rlvr.estimators import advantages
    from rlvr.policy import softmax

    logits = logits.copy()
    rng = np.random.default_rng(seed)
    P = logits.shape[0]
    for _ in range(steps):
        prompts = rng.choice(P, n, replace=False)
        pi = softmax(logits[prompts])
        y = sample(pi, G, rng)
        A = advantages((y == 0) + 0.0, method)
        logits[prompts] += lr * gradient(y, A, pi)
    return logits


def kernel_parts(sample, gradient, logits, n, G, steps, seed=0, method="grpo", lr=2.0):
    """kernel_loop with a clock around each part: {part: microseconds per step}."""
    from rlvr.estimators import advantages
    from rlvr.policy import softmax

    logits = logits.copy()
    rng = np.random.default_rng(seed)
    P = logits.shape[0]
    parts = dict.fromkeys(("choose prompts", "softmax", "sample", "advantages", "gradient", "apply"), 0.0)
    clock = time.perf_counter
    for _ in range(steps):
        t0 = clock()
        prompts = rng.choice(P, n, replace=False)
        t1 = clock()
        pi = softmax(logits[prompts])
        t2 = clock()
        y = sample(pi, G, rng)
        t3 = clock()
        A = advantages((y == 0) + 0.0, method)
        t4 = clock()
        g = gradient(y, A, pi)
        t5 = clock()
        logits[prompts] += lr * g
        t6 = clock()
        for k, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
            parts[k] += dt
    return {k: v / steps * 1e6 for k, v in parts.items()}


def target_kernel(copy, quick):
    from rlvr.policy import policy_gradient, sample_answers

    section("4. training kernel (sample + advantages + gradient + apply), one process, one core")
    sizes = [(16, 8, 16, 200, 3000), (200, 64, 16, 200, 150), (200, 64, 256, 200, 25)]
    reps = 3 if quick else 5
    scale = 0.3 if quick else 1.0
    out = []
    for n, G, M, P, steps in sizes:
        steps = max(3, int(steps * scale))
        base = np.random.default_rng(1).normal(size=(P, M))
        base[:, 0] -= 1.0  # the correct answer a little less likely than the rest
        # same gradient for the same y, A, pi
        rng = np.random.default_rng(2)
        pi = np.random.default_rng(3).dirichlet(np.ones(M), size=n)
        y = rng.integers(0, M, size=(n, G))
        A = rng.normal(size=(n, G))
        same_grad = np.allclose(policy_gradient(y, A, pi), onehot_gradient(y, A, pi))
        # same training trajectory for the same seed
        check_steps = min(steps, 50)
        fast_logits = kernel_loop(sample_answers, policy_gradient, base, n, G, check_steps, 7)
        slow_logits = kernel_loop(onehot_sample, onehot_gradient, base, n, G, check_steps, 7)
        same_run = np.allclose(fast_logits, slow_logits)

        def rate(sample, gradient):
            walls, cpus = [], []
            for _ in range(reps):
                t0, c0 = time.perf_counter(), time.process_time()
                kernel_loop(sample, gradient, base, n, G, steps, 0)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            return n * G * steps / med(walls), med(cpus) / med(walls)

        fast, fast_cpu = rate(sample_answers, policy_gradient)
        slow, slow_cpu = rate(onehot_sample, onehot_gradient)
        speedup = fast / slow
        line(f"{n} prompts x G={G} x M={M} ({steps} steps)",
             f"fast {fast / 1e6:.2f} M answers/s, one-hot {slow / 1e6:.2f} M/s: {speedup:.2f}x",
             ">= 3x", speedup >= 3)
        line("  same gradient (allclose) / same run for a seed", f"{same_grad} / {same_run}",
             ok=same_grad and same_run)
        line("  cpu/wall (1.0 = one core)", f"fast {fast_cpu:.2f}, one-hot {slow_cpu:.2f}")
        fast_parts = kernel_parts(sample_answers, policy_gradient, base, n, G, steps)
        slow_parts = kernel_parts(onehot_sample, onehot_gradient, base, n, G, steps)
        print("    us per step, fast / one-hot: " + ", ".join(
            f"{k} {fast_parts[k]:.0f}/{slow_parts[k]:.0f}" for k in fast_parts))
        out.append({"n": n, "G": G, "M": M, "steps": steps, "fast_per_s": fast,
                    "onehot_per_s": slow, "speedup": speedup, "same_grad": bool(same_grad),
                    "same_run": bool(same_run)})

    # the whole training loop as the pipeline runs it, for reference
    try:
        from rlvr.stages import task_from_columns

        from rlvr import io as rio
        from rlvr.training import train

        task_file = Path(tempfile.mkdtemp(dir=copy)) / "task.parquet"
        rlvr(copy, "task", "--P", 200, "--M", 16, "--seed", 0, "--level-logodds", -4.5, -3.0, -1.1, 0.6,
             "--spread", 0.3, "--out", task_file).check("rlvr task")
        task = task_from_columns(rio.read_table(task_file))
        walls = []
        for _ in range(reps):
            t0 = time.perf_counter()
            res = train(task, "grpo", 300, 16, 8, 2.0, 0, eval_every=5)
            walls.append(time.perf_counter() - t0)
        line("rlvr.training.train, grpo 300 steps x 16 x 8",
             f"{med(walls) * 1e3:.1f} ms = {res['answers'] / med(walls) / 1e6:.2f} M answers/s (incl. eval)")
        RESULTS["4_train_loop_s"] = walls
    except Exception as err:  # the training API may change under us: report, don't stop
        print(f"  (rlvr.training.train not timed: {err!r})")
    RESULTS["4_kernel"] = out


# --- target 5: gradient statistics memory and time ------------------------------------------

ONEHOT_GRADSTATS = r"""
import sys, numpy as np
n, G, M = int(sys.argv[1]), 8, 16
rng = np.random.default_rng(0)
z = rng.normal(size=M); pi = np.exp(z) / np.exp(z).sum()
cdf = np.cumsum(pi); cdf[-1] = 1.0
y = (rng.random((n, G))[:, :, None] >= cdf).sum(axis=2)
r = (y == 0) * 1.0
A = (r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + 1e-6)
onehot = np.zeros((n, G, M)); np.put_along_axis(onehot, y[:, :, None], 1, axis=2)
g = (A[:, :, None] * (onehot - pi[None, None, :])).mean(1)
print(g.mean(0)[0], g.std(0)[0])
"""


def target_gradstats(tmp, copy, quick):
    section("5. gradient statistics, G=8, M=16: peak RSS and time against n")
    work = Path(tmp) / "gradstats"
    work.mkdir(exist_ok=True)
    task = work / "task.parquet"
    rlvr(copy, "task", "--P", 200, "--M", 16, "--seed", 0, "--level-logodds", -4.5, -3.0, -1.1, 0.6,
         "--spread", 0.3, "--out", task, cwd=work).check("rlvr task")
    # n = 1M for the memory target; 2M and 4M show that memory stays bounded and that time grows
    # linearly (sub-second runs at smaller n are too noisy for slopes on a shared machine)
    reps = 1 if quick else 3
    rows = []
    for n in (1_000_000, 2_000_000, 4_000_000):
        runs = repeat(reps, lambda: rlvr(copy, "gradstats", "--task", task, "--offset", 0, "--method", "grpo",
                                         "--level", "medium", "--G", 8, "--reps", n, "--seed", 0,
                                         "--out", work / f"gs{n}.parquet", cwd=work).check("rlvr gradstats"))
        wall, rss = med([r.wall for r in runs]), max(r.rss_mb for r in runs)
        rows.append((n, wall, rss))
        line(f"n = {n:>9,}", f"{wall:.2f} s ({wall / n * 1e6:.2f} us/rep), peak RSS {rss:.0f} MB")
    (n1, t1, rss1), (n2, t2, _), (n3, t3, rss3) = rows
    slope_lo, slope_hi = (t2 - t1) / (n2 - n1), (t3 - t2) / (n3 - n2)
    line("peak RSS at n = 1,000,000", f"{rss1:.0f} MB", "<= 500 MB", rss1 <= 500)
    line("peak RSS at n = 4,000,000 / at 1,000,000", f"{rss3 / rss1:.2f}  (1 = bounded)")
    lin = t3 / t1
    line("time(4M) / time(1M) (4 = linear, less = startup)", f"{lin:.2f}", "<= 4.4", lin <= 4.4)
    line("marginal cost 2M->4M vs 1M->2M",
         f"{slope_hi * 1e6:.2f} vs {slope_lo * 1e6:.2f} us/rep (ratio {slope_hi / slope_lo:.2f})",
         "<= 1.1 (+ noise)", slope_hi / slope_lo <= 1.25)
    n_ref = 250_000 if quick else 1_000_000
    ref = run([PY, "-c", ONEHOT_GRADSTATS, str(n_ref)]).check("one-hot reference")
    line(f"reference: one-hot [n, G, M] at n = {n_ref:,}", f"{ref.wall:.2f} s, peak RSS {ref.rss_mb:.0f} MB")
    RESULTS["5_gradstats"] = {"rows": rows, "onehot_ref": [n_ref, ref.wall, ref.rss_mb]}


# --- target 6: scale with the number of seeds ------------------------------------------------


def target_scale(tmp, probe, quick):
    import yaml

    s_small, s_big = (2, 20) if quick else (5, 50)
    section(f"6. scale: {s_small} vs {s_big} seeds (2 training rows, group_size 1 G x 1 seed, "
            "no dynamic sampling; targets: the aggregate_* rules of the runs)")
    reps = 1 if quick else 2
    walls, stats, noop, copies = {}, {}, {}, {}
    for seeds in (s_small, s_big):
        walls[seeds] = []
        for i in range(reps):
            copy = make_copy(tmp, f"scale{seeds}")
            cfg_path = copy / "config" / "config.yaml"
            cfg = yaml.safe_load(cfg_path.read_text())
            cfg["training"]["rows"] = cfg["training"]["rows"][:2]
            cfg["training"]["seeds"] = list(range(seeds))
            cfg["group_size"]["seeds"] = [0]
            cfg["group_size"]["G"] = [cfg["training"]["G"]]
            if "dynamic_sampling" in cfg:
                cfg["dynamic_sampling"]["enabled"] = False
            cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
            rules = snakemake(copy, "--list-rules", env=probe.stub_env).check("list rules").out.split()
            targets = [r for r in rules if r.startswith("aggregate_") and "gradient" not in r]
            r = snakemake(copy, "-c2", *targets, env=probe.stub_env).check("scale run")
            walls[seeds].append(r.wall)
            stats[seeds] = job_stats(r.err + r.out)
        noop[seeds] = med([snakemake(copy, "-c2", *targets, env=probe.stub_env).wall for _ in range(3)])
        copies[seeds] = copy
        line(f"{seeds} seeds: snakemake -c2 (probe stubbed)",
             f"{fmt_runs(walls[seeds])}, {stats[seeds].get('train', '?')} train jobs, "
             f"no-op {noop[seeds]:.2f} s")
    ratio = med(walls[s_big]) / med(walls[s_small])
    line(f"pipeline wall {s_big} / {s_small} seeds", f"{ratio:.2f}", "<= 11 (1.1 x 10)", ratio <= 11)
    jobs_s, jobs_b = stats[s_small].get("train", 0), stats[s_big].get("train", 0)
    if jobs_b > jobs_s:
        per_job = (med(walls[s_big]) - med(walls[s_small])) / (jobs_b - jobs_s)
        line("  marginal wall per extra train job (2 cores)", f"{per_job:.3f} s")
    line(f"no-op {s_big} / {s_small} seeds (DAG building)", f"{noop[s_big] / noop[s_small]:.2f}")

    # the aggregation itself, on the same files
    big = copies[s_big]
    agg = {}
    for suffix in (".run.parquet", ".curve.parquet"):
        files = sorted(glob.glob(str(big / "results" / "runs" / "training" / "**" / f"seed*{suffix}"),
                                 recursive=True))
        small = [f for f in files if int(re.search(r"seed(\d+)\.", f).group(1)) < s_small]
        times = {}
        for label, fs in ((s_small, small), (s_big, files)):
            outp = Path(tmp) / f"agg{label}{suffix}"
            times[label] = med([rlvr(big, "aggregate", "--out", outp, *fs).check("aggregate").wall
                                for _ in range(5 if not quick else 3)])
        r_agg = times[s_big] / times[s_small]
        line(f"aggregate {suffix}: {len(small)} vs {len(files)} files",
             f"{times[s_small]:.3f} s vs {times[s_big]:.3f} s: ratio {r_agg:.2f}", "<= 11", r_agg <= 11)
        agg[suffix] = {"files": [len(small), len(files)], "s": [times[s_small], times[s_big]]}
    RESULTS["6_scale"] = {"walls": walls, "job_stats": stats, "noop": noop, "ratio": ratio, "aggregate": agg}


# --- target 7: imports and per-job overhead -------------------------------------------------

TIMED_MAIN = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from rlvr import cli, stages
name, reps, argv = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
inner, outer = [], []
original = getattr(stages, name)
def timed(*a, **k):
    t0 = time.perf_counter()
    try:
        return original(*a, **k)
    finally:
        inner.append(time.perf_counter() - t0)
setattr(stages, name, timed)
for _ in range(reps + 1):  # the first call warms caches and lazy imports
    t0 = time.perf_counter()
    assert cli.main(argv) == 0
    outer.append(time.perf_counter() - t0)
print(json.dumps({"compute": inner[1:], "main": outer[1:]}))
"""

MODULES_AFTER_JOB = r"""
import json, runpy, sys
sys.argv = ["rlvr", *sys.argv[1:]]
try:
    runpy.run_module("rlvr", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    if stop.code not in (0, None):
        raise
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""

WAIT_FOR_SERVER = r"""
import socket, sys, time
from rlvr.forkserver import server_name
address, deadline = "\0" + server_name(), time.monotonic() + 30
while time.monotonic() < deadline:
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        try:
            s.connect(address)
            sys.exit(0)
        except OSError:
            time.sleep(0.05)
sys.exit(1)
"""

SERVER_MODULES = r"""
import json, sys
from rlvr.forkserver import preload
preload()
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""

FORBIDDEN = ("pandas", "matplotlib", "snakemake")


def third_party(roots):
    return sorted(r for r in roots if r not in sys.stdlib_module_names and not r.startswith("_"))


def import_report(stderr):
    """From `python -X importtime` output: [(ms, module)] of the top-level imports, slowest
    first. (importtime also lists imports that failed, such as rlvr's refused `pandas`, so
    what was really loaded is read from sys.modules instead: MODULES_AFTER_JOB.)"""
    top = []
    for ln in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)", ln)
        if m and len(m.group(3)) == 1:
            top.append((int(m.group(2)) / 1000, m.group(4)))
    return sorted(top, reverse=True)


def job_command(copy, probe, pattern, rule_name):
    """(env, argv) of one real job of the copy, from `snakemake -n -p -f <its output>`."""
    files = sorted(glob.glob(str(copy / "results" / pattern), recursive=True))
    if not files:
        raise RuntimeError(f"no {pattern} in the copy's results")
    pick = next((f for f in files if "/grpo/" in f), files[0])
    target = os.path.relpath(pick, copy)
    r = snakemake(copy, "-n", "-p", "-f", target, env=probe.stub_env).check(f"dry run of {rule_name}")
    return shell_command(r.err + r.out)


def target_imports(tmp, copy, probe, quick):
    section("7. compute jobs: imports and per-job overhead")
    reps = 3 if quick else 5
    floors = {}
    for code in ("pass", "import numpy", "import numpy, pyarrow.parquet"):
        floors[code] = med([run([PY, "-c", code]).check(code).wall for _ in range(reps)])
        line(f"floor: python -c \"{code}\"", f"{floors[code]:.3f} s")
    out = {"floors": floors}
    for pattern, rule_name, fn_name in (("runs/training/**/*.run.parquet", "train", "run_columns"),
                                        ("gradient_stats/**/*.parquet", "gradstats", "gradstat_columns")):
        try:
            env, argv = job_command(copy, probe, pattern, rule_name)
        except Exception as err:
            print(f"  ({rule_name}: could not get a job command: {err})")
            continue
        outdir = Path(tempfile.mkdtemp(dir=tmp))
        argv = redirect_outputs(argv, outdir)
        job_env = env_with(**{**env, "PYTHONPATH": str(copy)})
        imp = run([PY, "-X", "importtime", "-m", "rlvr", *argv], cwd=copy, env=job_env).check("importtime")
        top = import_report(imp.err)
        loaded = run([PY, "-c", MODULES_AFTER_JOB, *argv], cwd=copy, env=job_env).check("modules")
        third = third_party(json.loads(loaded.out.strip().splitlines()[-1]))
        bad = [m for m in FORBIDDEN if m in third]
        line(f"`rlvr {argv[0]}` third-party packages loaded", ", ".join(third), f"none of {FORBIDDEN}", not bad)
        attempted = [m for m in FORBIDDEN if re.search(rf"\| +{m}(\.|$)", imp.err, re.M)]
        if attempted:
            print(f"    (attempted but refused or absent: {', '.join(m for m in attempted if m not in bad)})")
        print("    slowest top-level imports (-X importtime, cumulative): "
              + ", ".join(f"{name} {ms:.0f} ms" for ms, name in top[:7]))
        walls = [run([PY, "-m", "rlvr", *argv], cwd=copy, env=job_env).check("job").wall for _ in range(reps)]
        served_env = {**job_env, "RLVR_FORKSERVER": "1"}
        run([PY, "-m", "rlvr", *argv], cwd=copy, env=served_env).check("job")  # starts the server
        if run([PY, "-c", WAIT_FOR_SERVER], cwd=copy, env=served_env).rc != 0:
            print("    (the fork server did not come up in 30 s: 'forked' timings are of jobs in their own process)")
        served = [run([PY, "-m", "rlvr", *argv], cwd=copy, env=served_env).check("job").wall for _ in range(reps)]
        t = run([PY, "-c", TIMED_MAIN, str(copy), fn_name, str(reps), *argv], cwd=copy, env=job_env).check("timed main")
        timed = json.loads(t.out.strip().splitlines()[-1])
        wall = med(served)
        line(f"`rlvr {argv[0]}` job wall, own process", fmt_runs(walls))
        line(f"`rlvr {argv[0]}` job wall, forked by the server", fmt_runs(served))
        if timed["compute"]:
            compute = med(timed["compute"])
            overhead = wall - compute
            line(f"  in-process stages.{fn_name}", f"{compute * 1e3:.1f} ms")
            line("  in-process cli.main (compute + Parquet I/O)", f"{med(timed['main']) * 1e3:.1f} ms")
            line("  per-job overhead = served job wall - compute", f"{overhead:.3f} s", "<= 0.15 s",
                 overhead <= 0.15)
            line("  own process: job wall - compute", f"{med(walls) - compute:.3f} s  (of which the "
                 f"numpy+pyarrow floor {floors['import numpy, pyarrow.parquet']:.3f} s)")
        else:
            compute = overhead = None
            print(f"  (stages.{fn_name} was not called through the stages module: no compute time)")
        out[rule_name] = {"argv": argv, "third_party": third, "top_imports": top[:10], "wall": walls,
                          "served_wall": served,
                          "compute": timed["compute"], "main": timed["main"], "overhead": overhead}
    loaded = run([PY, "-c", SERVER_MODULES], cwd=copy, env=env_with(PYTHONPATH=str(copy))).check("preload")
    third = third_party(json.loads(loaded.out.strip().splitlines()[-1]))
    bad = [m for m in FORBIDDEN if m in third]
    line("fork server: third-party packages loaded", ", ".join(third), f"none of {FORBIDDEN}", not bad)
    out["server_third_party"] = third
    RESULTS["7_imports"] = out
    return out


# --- profiles -------------------------------------------------------------------------------


def short(path):
    for marker in ("site-packages/", "/lib/python3", f"{os.sep}rlvr-bench-"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker.startswith(os.sep):
                path = path.split(os.sep, 1)[1]  # drop the temporary copy's name
            break
    return path


def print_stats(stats, sort, limit, skip=("<frozen", "<string>", "builtins.exec", "builtins.__import__",
                                           "_imp.exec_dynamic", "runpy")):
    """The top entries of a profile, by 'tottime' or 'cumulative', without import machinery."""
    s = pstats.Stats(stats) if isinstance(stats, str) else stats
    rows = []
    for (path, lineno, func), (cc, nc, tt, ct, _) in s.stats.items():
        name = f"{short(path)}:{lineno}({func})" if lineno else func
        if not any(x in name or x in path for x in skip):
            rows.append((tt if sort == "tottime" else ct, nc, tt, ct, name))
    rows.sort(reverse=True)
    print(f"    {'calls':>7} {'own s':>7} {'cum s':>7}  function")
    for _, nc, tt, ct, name in rows[:limit]:
        print(f"    {nc:>7} {tt:7.3f} {ct:7.3f}  {name}")


def profiles(tmp, copy, probe, job):
    section("profile: one training run in-process (cProfile, by own time)")
    train_argv = job.get("train", {}).get("argv") if job else None
    here = os.getcwd()
    try:
        from rlvr import cli

        os.chdir(copy)  # the job's paths are relative to the copy
        with contextlib.redirect_stderr(io.StringIO()):  # the job's log lines
            cli.main(train_argv)  # warm up: lazy imports, caches
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(5):
                cli.main(train_argv)
            prof.disable()
        print("  (5 runs of cli.main for one default training job; times are totals)")
        print_stats(pstats.Stats(prof), "tottime", 14)
    except Exception as err:
        print(f"  (not profiled: {err!r})")
    finally:
        os.chdir(here)

    section("profile: one whole `rlvr train` job as a process (cProfile, cumulative)")
    if train_argv:
        pfile = Path(tmp) / "job.prof"
        run([PY, "-m", "cProfile", "-o", str(pfile), "-m", "rlvr", *train_argv], cwd=copy,
            env=env_with(PYTHONPATH=str(copy))).check("profiled job")
        print_stats(str(pfile), "cumulative", 18)

    section("profile: no-op `snakemake -c2` (cProfile, cumulative; slurm probe stubbed)")
    pfile = Path(tmp) / "noop.prof"
    run([PY, "-m", "cProfile", "-o", str(pfile), "-m", "snakemake", "-c2"], cwd=copy,
        env=probe.stub_env).check("profiled no-op")
    s = pstats.Stats(str(pfile))
    total = s.total_tt
    print(f"  total {total:.2f} s under the profiler; selected entries (cumulative s):")
    wanted = [("snakemake/cli.py", "<module>", "import snakemake.cli (and what it pulls in)"),
              ("plugin_registry/__init__.py", "collect_plugins", "plugin discovery (all registries)"),
              ("snakemake_executor_plugin_slurm/__init__.py", "<module>", "import of the slurm executor plugin"),
              ("pandas/__init__.py", "<module>", "import pandas (by Snakemake or a plugin)"),
              ("snakemake/workflow.py", "include", "parse Snakefile + rules (incl. config validation)"),
              ("snakemake/workflow.py", "_build_dag", "build the DAG, check rerun triggers"),
              ("snakemake/persistence/__init__.py", "<module>", "import snakemake.persistence"),
              ("subprocess.py", "run", "child processes (e.g. scontrol)")]
    for suffix, func, label in wanted:
        hits = [(v[3], k) for k, v in s.stats.items() if k[0].endswith(suffix) and k[2] == func]
        if hits:
            cum = max(h[0] for h in hits)
            print(f"    {cum:6.2f} s  {label}")


def cold_breakdown():
    """Where the cold run's wall time goes, from figures measured above (an estimate)."""
    try:
        cold = med(RESULTS["1_cold"]["cold_s"])
        jobs = RESULTS["1_cold"]["jobs"].get("total", 0) - 1  # `all` runs nothing
        inproc = med(RESULTS["1_cold"]["inproc_s"])
        drawing = med(RESULTS["1_cold"]["inproc_figures_s"]) - inproc
        startup = med(RESULTS["2_noop"]["stubbed_s"])
        overhead = RESULTS["7_imports"]["train"]["overhead"]
    except (KeyError, TypeError):
        return
    probe = RESULTS["1_cold"].get("slurm_probe_s") or 0.0
    section("where the cold run's time goes (estimate from the figures above)")
    parts = [("Snakemake start-up + DAG (the no-op run)", startup),
             ("slurm probe (`scontrol show config`)", probe),
             ("the computation itself, on 2 cores (in-process `all` / 2)", inproc / 2),
             ("drawing the figures (`all --figures` - `all`), demos 3-6 at the end", drawing),
             (f"per-job process overhead: {jobs} jobs x {overhead:.2f} s / 2 cores", jobs * overhead / 2)]
    rest = cold - sum(v for _, v in parts)
    for name, v in parts + [("the rest: scheduling, job bookkeeping, waiting on the 2 cores", rest)]:
        line(name, f"{v:6.1f} s  ({v / cold:5.1%})")
    line("total cold run", f"{cold:6.1f} s")
    RESULTS["cold_breakdown"] = dict(parts + [("rest", rest)])


# --- main -----------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a smaller scale test")
    ap.add_argument("--json", help="also write every figure to this JSON file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copies")
    ap.add_argument("--only", help="comma-separated targets to run, e.g. 4,5 (1 is needed by 2, 3, 7)")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    want = lambda t: only is None or t in only  # noqa: E731

    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-bench-"))
    sys.path.insert(0, str(make_copy(tmp, "lib")))  # import the benchmarked rlvr, not an installed one
    heavy = 1 if a.quick else 3
    print(f"rlvr benchmarks{' (--quick)' if a.quick else ''}: python bench/run.py; copies under {tmp}")
    machine_header()
    probe = SlurmProbe(tmp)
    print(f"  {'slurm probe':<14} {probe.describe()}")

    failures = []

    def guarded(name, fn, *args):
        try:
            return fn(*args)
        except Exception as err:
            failures.append(name)
            print(f"  !! {name} could not be measured: {err}", flush=True)
            return None

    copy = None
    if want("1") or want("2") or want("3") or want("7"):
        copy = guarded("target 1", target_cold, tmp, heavy, probe)
    if copy and want("2"):
        guarded("target 2", target_noop, copy, heavy, probe)
    if copy and want("3"):
        guarded("target 3", target_incremental, copy, probe)
    lib = Path(sys.path[0])
    if want("4"):
        guarded("target 4", target_kernel, lib, a.quick)
    if want("5"):
        guarded("target 5", target_gradstats, tmp, lib, a.quick)
    if want("6"):
        guarded("target 6", target_scale, tmp, probe, a.quick)
    job = None
    if copy and want("7"):
        job = guarded("target 7", target_imports, tmp, copy, probe, a.quick)
    if copy and (only is None or "profile" in only):
        guarded("profiles", profiles, tmp, copy, probe, job)

    cold_breakdown()
    total = time.perf_counter() - t_start
    section("done")
    print(f"  total bench time {total:.0f} s" + (f"; not measured: {', '.join(failures)}" if failures else ""))
    RESULTS["bench_seconds"] = total
    if a.json:
        Path(a.json).write_text(json.dumps(RESULTS, indent=1, default=str))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"  kept {tmp}")


if __name__ == "__main__":
    main()
