"""What a config will cost, before anything runs: every stage's peak memory and the CPU time of
the whole config, estimated from its sizes, so that validate_config refuses a config that this
machine cannot hold or that would run for longer than `max_hours`, naming the key.

Every constant was measured on the project's 2-core machine (numpy 2, Python 3.11, 2026-12):
time as CPU seconds (time.process_time) of rlvr's own functions on sizes chosen to make one term
dominate (train_seeds with G = 2048, S = 200 seeds, M = 2048, eval_every = 1, shared_lr,
sampler_lag, max_rounds; gradient_stats with G = 512 and M = 2048; exact_moments at G = 64
and 1024; reference_columns at n_samples = 1e5, 1e6), memory as tracemalloc's peak of the
same calls, and the rendering jobs' peak RSS (/usr/bin/time -v) on the default config's results.
Each is rounded up, about 1.5-2x the measurement: an estimate that errs, errs on the costly side.
"""

import math
import os
from typing import NamedTuple

from .binding import finite_step_spec

MIB = 2**20
BASE_MB = 100  # a job's interpreter and libraries (numpy, pyarrow; ~80 MiB measured)
RENDER_BASE_MB = 250  # a tables or figures job: pandas and matplotlib too (~200 MiB measured)
CHUNK = 1 << 16  # gradient_stats draws its repetitions in chunks of this many (rlvr/metrics.py)
CROSSOVER_K = 256  # crossover_ks compares pass@k up to this k for every trained policy

# memory, bytes
GRAD_PER_ANSWER = 48  # gradient_stats, per (repetition of a chunk, answer): 34 measured
GRAD_PER_LOGIT = 32  # ... per (repetition of a chunk, answer of the task): 24 measured
EXACT_PER_G2 = 48  # exact_moments, per G²: its [G+1, G] rewards and advantages (24-34 measured)
EXACT_PER_GM = 64  # ... per (G + 1) x M: the conditional means
REF_PER_SAMPLE = 32  # reference_columns, per n_samples: the product over the correct answers (13 measured)
BATCH_PER_ANSWER = 96  # a training step, per answer of its batch (seeds x prompts x G, every round): 51
RECORD_PER_SEED = 4096  # a training job, per (seed, recorded step): the Records (1.7 KiB) and their
#                         curve rows as columns (5 rows x ~33 values) and as Arrow (5 x 300 B)
TABLE_ROW = 640  # an aggregate job, per row of the largest aggregated table: its inputs and the
#                  concatenation (300 B a curves row in Arrow)
FRAME_ROW = 1024  # a rendering job, per row of the frames it reads: 620 B measured (tables job,
#                   default config: 521 MiB peak for 680,000 rows of curves, pass@k, KL gradients)

# CPU time, seconds
JOB = 1.5  # a pipeline job's own costs: a Python start, imports, the files' hashes; Snakemake's
STEP = 150e-6  # a training step's fixed numpy calls (122 µs measured)
EPOCH = 50e-6  # ... each further epoch of the step (50 µs)
SEED_ROUND = 40e-6  # ... per seed and round of drawing (26 µs: its own generator, prompts, rows)
ANSWER = 40e-9  # ... per answer drawn (28 ns at M = 16) ...
ANSWER_LOGIT = 1.5e-9  # ... and per (answer, answer of the task): inverse_cdf compares each (1.1 ns)
LOGIT_LOOP = 2.5e-6  # ... per answer of the task and round: inverse_cdf's loop over them (1.5 µs)
ANSWER_EPOCH = 20e-9  # ... per answer and epoch of the update
ROW_LOGIT = 50e-9  # ... per (batch row, answer of the task) and epoch: softmax, ratios, update (37 ns)
SHARED_LOGIT = 30e-9  # ... per seed x prompt x answer, with shared weights: every prompt moves (24 ns)
LAG_LOGIT = 8e-9  # ... per seed x prompt x answer, off-policy: the sampler's copy, its noise (3.4 ns)
RECORD = 150e-6  # a recorded step (eval_every): its fixed costs (115 µs) ...
RECORD_PROMPT = 80e-9  # ... per seed x prompt: the curves' level means (60 ns)
STALE_LOGIT = 30e-9  # ... per (seed, prompt moved since the last record) x answer: its stats again
SEED_END = 1e-3  # a trained seed's summary ...
SEED_END_PROMPT = 30e-9  # ... per prompt x (256 ks of the crossover + answers + ks x groups)
GRAD_REP = 150e-9  # gradient_stats, per repetition (50 ns) ...
GRAD_ANSWER = 100e-9  # ... per (repetition, answer): 35-70 ns by method
GRAD_LOGIT = 80e-9  # ... per (repetition, answer of the task): 10-55 ns by method
EXACT = 1e-3  # exact_moments, per call (0.1-0.6 ms at G = 64) ...
EXACT_G2 = 50e-9  # ... per G² (19-29 ns at G = 1024)
EXACT_GM = 30e-9  # ... per G x M
REF_SAMPLE = 6e-9  # reference_columns, per (n_samples, prompt, k): 1.4 ns measured where a prompt's
#                    correct answers are a third of n_samples; bounded here by n_samples, its level's
#                    and the "all" group both (a minority group a third)
ROW_SECONDS = 5e-6  # aggregating and rendering, per row of the trained frames (4 µs: tables job)


class Part(NamedTuple):
    """One stage's share of a config's cost: its CPU seconds, the keys that set its size (with
    their values), and the stage."""

    what: str
    seconds: float
    keys: tuple  # ((key, value), ...), the one that grew most first


def cores():
    """The cores this process may run on (the jobs run in parallel on them)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def memory_mb(P, M, seeds=0, sampler_copies=0):
    """Peak memory (MiB) of a job on a task of P prompts x M answers training `seeds` seeds
    together (0: the task job), a little above what bench/memory.py measures: ~80 MiB of
    interpreter and libraries, ~110 bytes per prompt x answer, 48-58 per prompt x answer x seed;
    plus 8 bytes per prompt x answer x seed for each copy of the logits an off-policy sampler
    keeps (sampler_copies: training's lag + 1 past policies, 2 for a perturbation)."""
    return BASE_MB + (128 * P * M + 64 * P * M * seeds + 8 * P * M * seeds * sampler_copies) / MIB


# the network (rlvr/net/), peak RSS of row_columns in a fresh process (2026-12-07; default size, 5
# seeds: 1,310 MiB; 4x the answers a step +215; d 128 +530; 4 layers +470; one seed 504), x1.2
NET_BASE_MB = 250  # a network job's interpreter, numpy, pyarrow and torch (233-251 measured)
NET_MODEL_MB = 115  # per packed model, whatever its size
NET_EVAL_MB = 2.4e-4  # per packed model, layer x d_model x answer of an exact record (≤ 4,096 at a time)
NET_STEP_MB = 4.4e-4  # per packed model, layer x d_model x answer of a training step (or base batch)
NET_PARAM_COPIES = 6  # float32 copies of the parameters a training job holds: the model, its
#                       gradient, Adam's two moments, π_ref, one past policy (+1 a step of sampler lag)
NET_FILE_PER_PARAM = 16  # the base's file, per parameter: its float32 value, Arrow's copy, Parquet's pages
# (a base of 2 layers, d 4,096, 403M parameters, 20 steps: 11.2 GiB peak RSS measured, 21.5 GiB estimated)


def net_params(n_layer, d_model):
    """Parameters of one network model (rlvr/net/model.py: 12·d² + 13·d a layer, and the embeddings,
    the final norm and the head, ~30·d; 102,720 at 2 layers, d 64)."""
    return n_layer * (12 * d_model**2 + 13 * d_model) + 30 * d_model


def network_mb(model, answers, seeds, eval_answers, lag=0, base=False):
    """Peak memory (MiB) of a network job: `seeds` models of model's sizes ({n_layer, d_model}) packed,
    a step of `answers` answers each (a training step's prompts x G, or the base's batch), exact
    records of eval_answers (the task's P x M, at most 4,096 at a time), a sampler `lag` steps
    stale; base: the base's job, which also writes every parameter as a row of its file."""
    L, d = model["n_layer"], model["d_model"]
    params = net_params(L, d) * 4 * (NET_PARAM_COPIES + lag) / MIB
    per_model = NET_MODEL_MB + params + L * d * (NET_EVAL_MB * min(eval_answers, 4096)
                                                  + NET_STEP_MB * answers)
    file = net_params(L, d) * NET_FILE_PER_PARAM / MIB if base else 0
    return 1.2 * (NET_BASE_MB + seeds * per_model + file)


def sampler_copies(lag, noise, steps):
    """The [S, P, M] arrays an off-policy sampler adds to a training job (rlvr/training.py): the
    policies of the last lag + 1 steps (of a run's `steps`, as many as it has), and the
    perturbation with the perturbed logits."""
    return (min(lag, steps) + 1 if lag else 0) + (2 if noise else 0)


def gradstats_mb(P, M, G, n_reps):
    """A gradient-statistics job: a chunk of repetitions [chunk, G] and [chunk, M], and the exact moments."""
    chunk = min(CHUNK, n_reps)
    return memory_mb(P, M) + (chunk * (GRAD_PER_ANSWER * G + GRAD_PER_LOGIT * M)
                            + EXACT_PER_G2 * (G + 1) ** 2 + EXACT_PER_GM * (G + 1) * M) / MIB


def exact_mb(G, M, points):
    """The exact-curve job: one exact_moments at a time, and its rows."""
    return BASE_MB + (EXACT_PER_G2 * (G + 1) ** 2 + EXACT_PER_GM * (G + 1) * M + 200 * points) / MIB


def reference_mb(P, M, n_samples, k):
    """The reference job: the task, and the product over a prompt's correct answers (<= n_samples)."""
    return memory_mb(P, M) + (REF_PER_SAMPLE * n_samples + 200 * P * len(k)) / MIB


def records(row):
    """The steps a training row records per seed: step 0, every eval_every-th, the last."""
    return row.steps // row.eval_every + 2


def rounds(row, P):
    """The rounds a step draws at most: dynamic sampling's each draw prompts not drawn yet that step."""
    return min(max(row.max_rounds, 1), -(-P // row.prompts_per_step))


def batch_answers(row, P):
    """The answers a training step of this row holds at once, every round of dynamic sampling."""
    return len(row.seeds) * row.prompts_per_step * row.G * rounds(row, P)


def row_table_rows(row, n_levels=4):
    """Rows a training row adds to the aggregated curves, pass@k and KL-gradient tables."""
    groups = n_levels + 3  # each level, all, the minority (pass@k)
    return len(row.seeds) * (records(row) * (n_levels + 1) + len(row.k) * groups + 8)


def train_extra_mb(row, P):
    """A training job's memory beyond the policy's (memory_mb): its batch, its records."""
    return (BATCH_PER_ANSWER * batch_answers(row, P) + RECORD_PER_SEED * len(row.seeds) * records(row)) / MIB


def aggregate_mb(rows):
    """The aggregate jobs: the largest aggregated table, its inputs and its concatenation."""
    return BASE_MB + TABLE_ROW * sum(row_table_rows(row) for row in rows) / MIB


def render_mb(rows):
    """The rendering job: every trained frame as pandas, and one demo's rows of them at a time (the
    default config's: 795 MB peak measured, the drawing processes forked from it beside)."""
    return RENDER_BASE_MB + FRAME_ROW * sum(row_table_rows(row) for row in rows) / MIB


def train_seconds(row, P, M):
    """CPU seconds of one training row, every seed (rlvr/training.py's train_seeds and row_columns)."""
    S, n, G, epochs = len(row.seeds), row.prompts_per_step, row.G, row.epochs
    updates = epochs * row.minibatches  # each a softmax of the batch's rows; the answers once an epoch
    answers = S * n * G
    draw = SEED_ROUND * S + LOGIT_LOOP * M + answers * (ANSWER + ANSWER_LOGIT * M)  # a round's
    step = (STEP + EPOCH * updates + rounds(row, P) * draw + answers * ANSWER_EPOCH * epochs
            + ROW_LOGIT * S * n * M * updates)
    if row.shared_lr:
        step += SHARED_LOGIT * S * P * M
    if row.sampler_lag or row.sampler_noise:
        step += LAG_LOGIT * S * P * M
    moved = S * min(P, n * rounds(row, P) * row.eval_every)  # rows a record recomputes, at most every one
    record = RECORD + RECORD_PROMPT * S * P + STALE_LOGIT * moved * M
    end = S * (SEED_END + SEED_END_PROMPT * P * (CROSSOVER_K + M + 7 * len(row.k)))
    return JOB + row.steps * step + records(row) * record + end


def gradstats_seconds(M, G, n_reps):
    """CPU seconds of one gradient-statistics case: its Monte Carlo and its exact moments."""
    return n_reps * (GRAD_REP + GRAD_ANSWER * G + GRAD_LOGIT * M) + exact_seconds(G, M)


def exact_seconds(G, M):
    """CPU seconds of one exact_moments call."""
    return EXACT + EXACT_G2 * (G + 1) ** 2 + EXACT_GM * (G + 1) * M


# the finite-step job (rlvr/finite_step.py; 2026-12-07, the default: 490,314 multisets x 16 answers)
FS_CELL = 150e-9  # per cell (multiset of G answers x answer of the task): making them (120 ns)
FS_GRAD = 40e-9  # ... per cell and (prompt, estimator) or map prompt: its step (25 ns)
FS_LR = 20e-9  # ... per cell and lr stepped at: the softmax after the step (13 ns)
FS_CELL_BYTES = 80  # ... per cell: the counts, the step, the logits after it (~56 measured)
FS_BATCH = 10e-9  # demo 16's batches, per (group, answer drawn, answer of the task, update)


def finite_step_cost(spec, P, M, levels):
    """(CPU seconds, peak MiB) of the finite-step job of spec (rlvr/binding.py finite_step_spec's
    JSON; "" : none) on P prompts of M answers in `levels` equal levels: the very hard prompts
    (P / levels) under each estimator at each lr and the map's prompts at its lrs, every
    multiset enumerated; demo 16's batches on the easy prompts."""
    import json

    from .finite_step import MAP_LAMBDAS, MAP_LRS, MAP_P, MAP_SPREADS

    if not spec:
        return 0.0, 0.0
    spec = json.loads(spec)
    seconds, cells, level = JOB, 0, P // levels
    if "sample_sign" in spec:
        signs = spec["sample_sign"]
        cells = math.comb(M + signs["G"] - 1, signs["G"]) * M
        mapped = len(MAP_P) * len(MAP_SPREADS) * len(MAP_LAMBDAS)
        seconds += cells * (FS_CELL + level * len(signs["methods"]) * (FS_GRAD + FS_LR * len(signs["lrs"]))
                            + mapped * (FS_GRAD + FS_LR * len(MAP_LRS)))
    batch = 0
    if "batches" in spec:
        b = spec["batches"]
        batch = level * b["n_groups"] * b["G"] * M  # the answers a row draws, each against the task's
        seconds += FS_BATCH * batch * sum(r.get("epochs", 1) * r.get("minibatches", 1) for r in b["rows"])
    return seconds, BASE_MB + (FS_CELL_BYTES * cells + 8 * 4 * batch) / MIB


def reference_seconds(P, n_samples, k):
    return JOB + REF_SAMPLE * n_samples * P * len(k)


# the network (rlvr/net/, issue 35), at its default size (2 layers, d 64; BENCHMARKS.md "The
# network's model-step"), one torch thread, scaled by n_layer · d_model² (at least a quarter: a
# small model keeps its Python and launch costs)
NET_TORCH = 2.0  # a network job's torch import (1.6 s measured), beyond JOB
NET_BASE_ANSWER = 4e-4  # the base, per answer of its batch and step (0.097 CPU-s / 512 measured)
NET_ANSWER = 7e-4  # a network training step, per answer sampled and updated (0.176 / 512) ...
NET_EPOCH = 4e-4  # ... per answer and further update (μ > 1)
NET_RECORD = 3e-5  # a record, per (seed, prompt, candidate) teacher-forced
# ... and per answer it samples (rlvr/net/train.py record_sample; 0.68 CPU-s for 5 models x 800 answers
# at init, measured with both cores busy)
NET_RECORD_ANSWER = 1.7e-4
# answers a prompt a record samples: rlvr/net/train.py's RECORD_ANSWERS, which imports torch, as this
# module must not (tests/test_network.py holds the two equal)
RECORD_ANSWERS = 4


def network_seconds(net, P, M):
    """CPU-seconds of the network section, estimated: (its bases, one a seed; every row). A row
    with lists is a grid: its combinations, each at the row's largest epochs."""
    model = net["model"]
    scale = max(0.25, model["n_layer"] * model["d_model"] ** 2 / (2 * 64**2))
    base = len(net["seeds"]) * (JOB + NET_TORCH + net["base"]["steps"] * net["base"]["batch"]
                                * NET_BASE_ANSWER * scale)
    records = (net["steps"] // net["eval_every"] + 2) * len(net["seeds"]) * P

    def largest(row, key, default):  # a row's value, the largest of a grid's, or the default
        value = row.get(key)
        if isinstance(value, list):
            value = max((v for v in value if v is not None), default=None)
        return default if value is None else value

    rows = 0.0
    for row in net["rows"]:
        combos = math.prod(len(v) for v in row.values() if isinstance(v, list))
        epochs = largest(row, "epochs", 1)
        answers = (net["steps"] * largest(row, "prompts_per_step", net["prompts_per_step"])
                   * largest(row, "G", net["G"]) * len(net["seeds"]))
        rows += combos * (JOB + NET_TORCH + scale * (answers * (NET_ANSWER + NET_EPOCH * (epochs - 1))
                                                       + records * (M * NET_RECORD
                                                                    + RECORD_ANSWERS * NET_RECORD_ANSWER)))
    return base, rows


def hours(seconds):
    """A duration in words: '3.2 hours', '41 days', '2.1e+09 years'."""
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.0f} minutes"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:,.1f} hours"
    days = seconds / 86400
    return f"{days:,.0f} days" if days < 1000 else f"{days / 365.25:.2g} years"


def grown(keys):
    """keys ((key, value, default), ...) ordered by how far each value is above its default (the one
    that makes the config large first), as ((key, value), ...)."""
    ratio = [(v / d if d else v, key, v) for key, v, d in keys]
    return tuple((key, v) for _, key, v in sorted(ratio, key=lambda x: -x[0]))


def parts(cfg, defaults, training):
    """[Part] of a validated config: its task and reference, gradient statistics, exact curve, each
    demo's training rows, aggregation and rendering. defaults: the schema's defaults of the config
    (what a value "grew" from); training: [(demo's section, its [TrainRow], its keys ((key, value,
    default), ...))], from rlvr.config."""
    task, ref, gs = cfg["task"], cfg["reference"], cfg["gradient_stats"]
    P, M = task["P"], task["M"]
    d_task, d_ref, d_gs = defaults["task"], defaults["reference"], defaults["gradient_stats"]
    out = [Part("the task and the reference's pass@k", JOB + reference_seconds(P, ref["n_samples"], ref["k"]),
                grown([("reference.n_samples", ref["n_samples"], d_ref["n_samples"]),
                       ("task.P", P, d_task["P"]), ("reference.k", len(ref["k"]), len(d_ref["k"]))]))]
    if gs["enabled"]:  # demo 2: its statistics and its exact curve
        n_cases = sum(len(c["reward_offsets"]) * len(c["methods"]) * len(c["levels"]) for c in gs["cases"])
        out.append(Part("the gradient statistics", JOB * len({m for c in gs["cases"] for m in c["methods"]})
                        + n_cases * gradstats_seconds(M, gs["G"], gs["n_reps"]),
                        grown([("gradient_stats.n_reps", gs["n_reps"], d_gs["n_reps"]),
                               ("gradient_stats.G", gs["G"], d_gs["G"]), ("task.M", M, d_task["M"])])))
        curve = gs["exact_curve"]
        n_curve = len(curve["methods"]) * curve["n_points"]
        out.append(Part("the exact curve", JOB + n_curve * exact_seconds(gs["G"], M),
                        grown([("gradient_stats.exact_curve.n_points", curve["n_points"],
                                d_gs["exact_curve"]["n_points"]), ("gradient_stats.G", gs["G"], d_gs["G"])])))
    every = []
    for name, rows, keys in training:
        every += rows
        out.append(Part(f"the {name} rows' training", sum(train_seconds(r, P, M) for r in rows), grown(keys)))
    seconds, _ = finite_step_cost(finite_step_spec(every, M), P, M, len(task["level_logodds"]))
    if seconds:  # demos 13 and 16: what one finite step or batch does
        out.append(Part("the finite-step job", seconds,
                        grown([("task.M", M, d_task["M"]), ("task.P", P, d_task["P"])])))
    net = cfg["network"]
    if net["enabled"]:
        base, rows = network_seconds(net, P, M)
        d_net = defaults["network"]
        # every knob the estimate grows with, so that a refusal names the one that grew it most
        model = [(f"network.model.{key}", net["model"][key], d_net["model"][key])
                 for key in ("n_layer", "d_model")]
        seeds = ("network.seeds", len(net["seeds"]), len(d_net["seeds"]))
        out.append(Part("the network's bases", base, grown([
            ("network.base.steps", net["base"]["steps"], d_net["base"]["steps"]),
            ("network.base.batch", net["base"]["batch"], d_net["base"]["batch"]), seeds, *model])))
        out.append(Part("the network rows' training", rows, grown([
            ("network.steps", net["steps"], d_net["steps"]), seeds,
            ("network.rows", len(net["rows"]), len(d_net["rows"])),
            ("network.G", net["G"], d_net["G"]),
            ("network.prompts_per_step", net["prompts_per_step"], d_net["prompts_per_step"]), *model])))
    trained = sum(row_table_rows(r) for r in every)
    eval_every = cfg["trainer"]["eval_every"]
    out.append(Part("aggregating and rendering", 20 * JOB + ROW_SECONDS * trained,
                    (("trainer.eval_every", eval_every),)))
    return out


def check_time(cfg, parts_, n_cores=None):
    """A ConfigError message if the config's CPU time, spread over the cores, exceeds max_hours;
    else None. It names the parts that make most of it, their keys and values."""
    n_cores = n_cores or cores()
    total = sum(p.seconds for p in parts_)
    wall, limit = total / n_cores, cfg["max_hours"] * 3600
    if wall <= limit:
        return None
    big = sorted(parts_, key=lambda p: -p.seconds)
    big = [p for p in big if p.seconds >= 0.2 * total] or big[:1]
    key, value = big[0].keys[0]
    others = "; ".join(f"{p.what}: {hours(p.seconds)} ("
                       + ", ".join(f"{k} = {number(v)}" for k, v in p.keys[:2]) + ")" for p in big)
    need = math.ceil(wall / 3600 * 1.1)
    return (f"config key {key}: {number(value)} would make the config run for about {hours(wall)} on this "
            f"machine's {n_cores} cores ({hours(total)} of CPU), more than max_hours = "
            f"{number(cfg['max_hours'])} allows; the most of it: {others}. Make {key} smaller, or set "
            f"max_hours: {need:,} (a top-level "
            "key) to run it anyway")


def number(x):
    """A value as a message shows it: whole numbers with separators, large ones in e-notation."""
    if isinstance(x, float) and not x.is_integer():
        return f"{x:g}"
    return f"{int(x):,}" if abs(x) < 1e9 else f"{x:.3g}"
