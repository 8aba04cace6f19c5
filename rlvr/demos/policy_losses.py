"""The demo "PPO's clip, GSPO and CISPO": its table (en, zh), its figure and its claims.

Where π has moved from the π_old that drew a batch (μ passes over it, or m minibatches of it,
one update each), the policy loss decides what a moved answer weighs (rlvr/objective.py's
POLICY_LOSSES): PPO's clipped surrogate zeroes an answer whose ratio left [1 − ε_low, 1 + ε_high]
in its advantage's direction; GSPO clips the length-normalised ratio ρ^(1/|y|) (its paper's
ε, 3e-4 / 4e-4, as the toy's answers are 100–1000 tokens); CISPO caps the weight and zeroes none.
Every row averages an answer's tokens (seq-mean-token-mean, which GSPO needs) so that only the
policy loss differs; with μ = m = 1 all three are one update, by construction. What each name
below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..finite_step import batchable, mean_and_se, one_batch
from ..objective import FEW_TOKENS
from ..specs import TrainRow
from ..task import LEVEL_KEYS
from ..text import number

NUMBER = 18  # its place in the order; its table is demo18_policy_losses
TITLE = "PPO's clip, GSPO and CISPO"
SWITCHABLE = True
FRAMES = ('task', 'runs', 'curves')  # the results its table, claims and figures read (rlvr/io.py)
ROWS = True
EXPERIMENT = "policy_losses"
SHOWN = ("policy_loss", "epochs", "minibatches", "clip_low", "clip_high", "ratio_tokens")
TOKENS = {"one": "1 token", "few": f"{FEW_TOKENS} tokens", "even": "every token"}  # objective.RATIO_TOKENS
FIRST_BATCH = {"groups": 400, "seed": 18, "level": "easy"}  # the first batch's Monte Carlo (first_batch)

_ROW = {"method": "grpo", "lr": 2.0, "loss_agg": "seq-mean-token-mean"}
CONFIG = {
    "help": "the policy loss (ppo, gspo, cispo) where π has moved from π_old: μ = 4 passes over a batch, "
            "or m = 4 minibatches of it; one run per row x seed, rows as in training (grids allowed)",
    "seeds": list(range(10)),
    "rows": [
        dict(_ROW),  # μ = m = 1: on-policy, every policy loss is this update
        dict(_ROW, policy_loss=["ppo", "cispo"], epochs=4),
        dict(_ROW, policy_loss="gspo", clip_low=3e-4, clip_high=4e-4, epochs=4),
        # the clip and the cap of a token's ratio, the answer's log-ratio shared by 4 tokens or all
        dict(_ROW, policy_loss=["ppo", "cispo"], epochs=4, ratio_tokens=["few", "even"]),
        dict(_ROW, policy_loss=["ppo", "cispo"], minibatches=4),
        dict(_ROW, policy_loss="gspo", clip_low=3e-4, clip_high=4e-4, minibatches=4),
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: the policy loss where π has moved from π_old ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps, seq-mean-token-mean; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["policy loss", "μ", "m", "ε_low / ε_high", "log ρ on", "final pass@1", "Δ vs μ = m = 1",
                 "entropy (nats)", "Δ vs μ = m = 1", "clipped"],
        "note": [
            "μ: passes over a batch; m: minibatches of it, one update each (each answer once a pass).",
            "Δ: paired over seeds. clipped: share of (answer, update) pairs the clip acted on over the whole",
            "run, zeroed (ppo, gspo) or capped (cispo); a batch's first update is on-policy, never clipped.",
            "log ρ on: the tokens an answer's log-ratio is shared by, whose ratio ppo clips and cispo caps",
            "(1 token: the answer's ρ; 4 tokens: ρ^(1/4); every token: ρ^(1/|y|), GSPO's ratio).",
        ],
        "first": "one batch from the reference on the easy prompts, through the training update, by Monte Carlo ({n} groups a prompt; mean ± s.e.)",  # noqa: E501
        "first_head": ["setting", "Δπ(likeliest answer)", "clipped"],
    },
    "zh": {
        "title": "演示 {number}：π 偏离 π_old 之后的策略损失（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步，seq-mean-token-mean；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["策略损失", "μ", "m", "ε_low / ε_high", "log ρ 分布于", "训练后 pass@1", "与 μ = m = 1 之差",
                 "熵（nats）", "与 μ = m = 1 之差", "被裁剪"],
        "note": [
            "μ：一批数据上的遍数；m：一批分成的小批数，每个小批一次更新（每遍每个回答用一次）。差值按种子配对。",
            "被裁剪：整个训练期间裁剪起作用的（回答, 更新）对所占比例，置零（ppo、gspo）或封顶（cispo）；",
            "每批的第一次更新是同策略的，从不裁剪。",
            "log ρ 分布于：回答的对数比值均分到的词元数，ppo 裁剪、cispo 封顶的是词元的比值",
            "（1 个词元：回答的 ρ；4 个词元：ρ^(1/4)；每个词元：ρ^(1/|y|)，即 GSPO 的比值）。",
        ],
        "first": "从参考策略出发、在简单题上的一批更新，经训练代码本身，蒙特卡洛（每题 {n} 组；平均 ± 标准误）",  # noqa: E501
        "first_head": ["设置", "Δπ(最可能的回答)", "被裁剪"],
    },
}


def _runs(frames):
    """The demo's runs with their final entropy and the clip share over the whole run (None where
    the results hold none)."""
    runs = A.experiment_runs(frames, EXPERIMENT, ["entropy"])
    if runs is None or "policy_loss" not in runs:
        return None
    c = frames["curves"]
    c = c[(c["experiment"] == EXPERIMENT) & (c["level"] == "all") & (c["step"] > 0)]
    keys = [k for k in TrainRow.COLUMNS if k in c] + ["seed"]
    clip_run = c.groupby(keys)["clip_frac"].mean().rename("clip_run").reset_index()
    return runs.merge(clip_run, on=keys, how="left")


def _on_policy(runs):
    """The μ = m = 1 runs (one update a batch: every policy loss's), or an empty frame."""
    return A.select_rows(runs, epochs=1, minibatches=1)


def _moved(runs):
    """[(cfg, its runs)] of the settings with more than one update a batch, in the config's order."""
    return [(cfg, g) for cfg, g, _ in A.configurations(runs, SHOWN) if cfg["epochs"] * cfg["minibatches"] > 1]


def table(frames, L):
    runs = _runs(frames)
    if runs is None:
        return None
    base = _on_policy(runs)
    base = A.select_rows(base, **{k: base[k].iloc[0] for k in SHOWN}) if len(base) else base
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, SHOWN):
        one = cfg["epochs"] * cfg["minibatches"] == 1
        rows.append([
            "any (one update)" if one else cfg["policy_loss"],
            f"{cfg['epochs']}",
            f"{cfg['minibatches']}",
            "" if one else f"{number(cfg['clip_low'])} / {number(cfg['clip_high'])}",
            "" if one or cfg["policy_loss"] == "gspo" else TOKENS[cfg["ratio_tokens"]],
            A.pm(g["final_pass1"]),
            "" if one else R.delta(g, base, "final_pass1", 4),
            A.pm(g["entropy"]),
            "" if one else R.delta(g, base, "entropy", 4),
            f"{g['clip_run'].mean() * 100:.1f}%",
            other,
        ])
        n.append(g["seed"].nunique())
    head, rows = R.with_others(list(L["head"]), rows, L["other"])
    first = first_batch(frames, runs)
    batch = [(L["first"].format(n=FIRST_BATCH["groups"]), L["first_head"],
              [[_words(cfg), f"{dp:+.4f} ± {dp_se:.4f}", f"{clip:.1%} ± {clip_se:.1%}"]
               for cfg, (dp, dp_se, clip, clip_se) in first])] if first else []
    return (R.title(L, runs.iloc[0], min(n)), [("", head, rows), *batch], L["note"])


def first_batch(frames, runs):
    """[(cfg, (E[Δπ(top)], its s.e., the clipped share of (answer, update) pairs, its s.e.))] of
    one batch of each moved setting from the task's reference, on its easy prompts, by Monte Carlo
    through the training update itself (finite_step.one_batch; FIRST_BATCH groups a prompt, a
    generator seeded by FIRST_BATCH and the setting's place); [] without the task or where a
    setting's update is not one_batch's (finite_step.batchable)."""
    task = frames.get("task")
    if task is None:
        return []
    at = (task["level"] == LEVEL_KEYS.index(FIRST_BATCH["level"])).to_numpy()
    logits = task[[c for c in task if c.startswith("logit_")]].to_numpy()
    length = task[[c for c in task if c.startswith("length_")]].to_numpy().astype(float)
    r, out = runs.iloc[0], []
    for i, (cfg, _) in enumerate(_moved(runs)):
        row = TrainRow(experiment=EXPERIMENT, method=r["method"], lr=float(r["lr"]), reward_offset=0.0,
                       G=int(r["G"]), prompts_per_step=1, steps=1, max_rounds=0, value_lr=0.0, eval_every=1,
                       k=(1,), seeds=(), loss_agg=r["loss_agg"], **{k: cfg[k] for k in SHOWN})
        if not batchable(row):
            continue
        rng = np.random.default_rng([FIRST_BATCH["seed"], i])
        _, d_p, clip = one_batch(logits[at], row, row.G, FIRST_BATCH["groups"], rng, length[at],
                                 length.mean())
        out.append((cfg, (*mean_and_se(d_p), *mean_and_se(clip))))
    return out


def _same(d):
    """Whether a paired difference is exactly 0 on every seed (neither setting's clip acted)."""
    return d.mean == 0 and d.se == 0


def _versus(a, b, d):
    """b's final pass@1 against a's, paired by seed, in words."""
    if _same(d):
        return f"{b['policy_loss']} ends at exactly {a['policy_loss']}'s on every seed"
    return f"{b['policy_loss']} {K.change(d, 'it', 4)} against {a['policy_loss']}"


def _words(cfg):
    passes = f"μ = {cfg['epochs']}" if cfg["epochs"] > 1 else f"m = {cfg['minibatches']} minibatches"
    tokens = "" if cfg["ratio_tokens"] == "one" else f", log ρ on {TOKENS[cfg['ratio_tokens']]}"
    eps = f"ε {number(cfg['clip_low'])} / {number(cfg['clip_high'])}"
    return f"{cfg['policy_loss']} ({passes}, {eps}{tokens})"


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each policy loss against one update a batch
    (paired by seed), at μ passes and at m minibatches; the policy losses against each other at the
    same μ and m; the share of pairs each one's clip acts on."""
    runs = _runs(frames)
    if runs is None or not len(_on_policy(runs)):
        return []
    one = {"epochs": 1, "minibatches": 1}
    seeds = runs["seed"].nunique()
    by_passes = {}  # (μ, m, ratio_tokens) -> [(cfg, Δ pass@1, Δ entropy)]
    for cfg, _ in _moved(runs):
        this = {k: cfg[k] for k in SHOWN}
        by_passes.setdefault((cfg["epochs"], cfg["minibatches"], cfg["ratio_tokens"]), []).append(
            (cfg, K.paired(runs, "final_pass1", this, one), K.paired(runs, "entropy", this, one)))
    out = []
    for (mu, m, tokens), settings in by_passes.items():
        key = (f"mu{mu}" if m == 1 else f"m{m}") + ("" if tokens == "one" else f"_{tokens}")
        parts = [f"{_words(cfg)} {K.change(p, 'the final pass@1', 4)} and "
                 f"{K.change(h, 'the entropy', 4, ' nats')}" for cfg, p, h in settings]
        out.append(K.Claim(key, "Against one update a batch, paired by seed: " + "; ".join(parts)
                           + f" ({seeds} seeds)", tuple(d for _, p, h in settings for d in (p, h))))
        pairs = []
        for i, (a, _, _) in enumerate(settings):
            for b, _, _ in settings[i + 1:]:
                d = K.paired(runs, "final_pass1", {k: b[k] for k in SHOWN}, {k: a[k] for k in SHOWN})
                pairs.append((a, b, d))
        if pairs:
            where = (f"μ = {mu}" if m == 1 else f"m = {m} minibatches") + (
                "" if tokens == "one" else f", log ρ on {TOKENS[tokens]}")
            out.append(K.Claim(f"{key}_between", (
                f"At {where}, the final pass@1 paired by seed: "
                + "; ".join(_versus(a, b, d) for a, b, d in pairs) + f" ({seeds} seeds)"),
                tuple(d for _, _, d in pairs if not _same(d))))
    shares = "; ".join(f"{_words(cfg)} {g['clip_run'].mean():.1%}" for cfg, g in _moved(runs))
    out.append(K.Claim("clip_share", "The share of (answer, update) pairs the clip acted on over the run "
                       f"(zeroed by ppo and gspo, capped by cispo): {shares}", ()))
    first = first_batch(frames, runs)
    if first:
        each = "; ".join(f"{_words(cfg)} {dp:+.4f} ± {dp_se:.4f}, clipped {clip:.1%} ± {clip_se:.1%}"
                         for cfg, (dp, dp_se, clip, clip_se) in first)
        out.append(K.Claim("first_batch", (
            f"One batch from the reference on the {FIRST_BATCH['level']} prompts, by Monte Carlo "
            f"({FIRST_BATCH['groups']} groups a prompt, mean ± s.e.): the likeliest answer's change of "
            f"probability, and the share of (answer, update) pairs the clip acted on: {each}"), ()))
    return out + _windows(frames, runs)


def _windows(frames, runs):
    """The window each clip puts on an answer's ratio ρ = π(y)/π_old(y): PPO's and CISPO's on a
    token's ratio, ρ itself where the log-ratio is on one token, ρ^(1/n) where n tokens share it;
    GSPO's on ρ^(1/|y|); so on ρ it is [(1 − ε_low)^n, (1 + ε_high)^n], at the task's mean answer
    length where n is |y| (by construction)."""
    task = frames.get("task")
    if task is None:
        return []
    lengths = task[[c for c in task if c.startswith("length_")]].to_numpy()
    length, shortest, longest = lengths.mean(), lengths.min(), lengths.max()
    parts, spans = [], []
    for cfg, _ in _moved(runs):
        lo, hi = 1 - cfg["clip_low"], 1 + cfg["clip_high"]
        tokens = cfg["ratio_tokens"]
        name = cfg["policy_loss"] + ("" if tokens == "one" else f" (log ρ on {TOKENS[tokens]})")
        if cfg["ratio_tokens"] == "few":
            lo, hi = lo ** FEW_TOKENS, hi ** FEW_TOKENS
        elif cfg["ratio_tokens"] == "even":
            lo, hi = lo ** length, hi ** length
        if cfg["policy_loss"] == "gspo":
            spans.append(f"[{lo ** shortest:.2f}, {hi ** shortest:.2f}] at its shortest answer "
                         f"({shortest:.0f} tokens) to [{lo ** longest:.2f}, {hi ** longest:.2f}] at its "
                         f"longest ({longest:.0f})")
            lo, hi = lo ** length, hi ** length
        if (name, lo, hi) not in [p[:3] for p in parts]:
            parts.append((name, lo, hi))
    windows = ", ".join(f"{name} [{_bound(lo)}, {_bound(hi)}]" for name, lo, hi in parts)
    return [K.Claim("windows", (
        "By construction, the window each clip puts on an answer's ratio ρ = π(y)/π_old(y) (the "
        f"toy's answer is one choice, so its ratio is the whole answer's; PPO's and CISPO's on a "
        f"token's ratio, ρ^(1/n) where n tokens share log ρ): {windows}; GSPO's on ρ^(1/|y|) and a "
        f"token's on ρ^(1/|y|) where every token shares it, here at the task's mean answer length of "
        f"{length:.0f} tokens" + (f", from {spans[0]}" if spans else "")), ())]


def _bound(x):
    """A window's bound in words: two decimals, or a power of ten where it is far from 1."""
    return f"{x:.2f}" if 0.01 <= x <= 100 else f"{x:.0e}"


def policy_losses(curves):
    """Exact pass@1 of each setting minus the same seed's one-update run (top) and the clip's share
    (bottom) against the step; a column per way of moving π (μ passes, m minibatches), a line per
    policy loss."""
    from matplotlib.ticker import PercentFormatter

    c, note = A.focus(curves[(curves["experiment"] == EXPERIMENT) & (curves["level"] == "all")],
                      ("method", "lr", *SHOWN))
    method = c["method"].iloc[0]
    base = A.select_rows(c, epochs=1, minibatches=1)
    moved = c[c["epochs"] * c["minibatches"] > 1]
    columns = list(dict.fromkeys(zip(moved["epochs"], moved["minibatches"], moved["ratio_tokens"])))
    losses = list(dict.fromkeys(moved["policy_loss"]))
    fig, axes = F.subplots(2, max(len(columns), 1), height=4.2, sharex=True, sharey="row")
    for j, (mu, m, tokens) in enumerate(columns):
        here = A.select_rows(moved, epochs=mu, minibatches=m, ratio_tokens=tokens)
        for k, loss in enumerate(losses):
            run = here[here["policy_loss"] == loss]
            if not len(run):
                continue
            lo, hi = run["clip_low"].iloc[0], run["clip_high"].iloc[0]
            # a marker each: two losses may end on the same curve (ppo and gspo here), both seen
            look = {**F.variant(k, len(losses)), "marker": style.MARKERS[k % len(style.MARKERS)], "ms": 3,
                    "markevery": 0.1, "label": f"{loss}, ε {number(lo)} / {number(hi)}"}
            if len(base):
                s = A.over_seeds(A.paired(run, base, "pass1"), "step", "pass1")
                F.line(axes[0, j], s.index, s, method, **look)
            s = A.over_seeds(run[run["step"] > 0], "step", "clip_frac")
            F.line(axes[1, j], s.index, s, method, **look)
        axes[0, j].axhline(0, color="0.4", lw=0.8, zorder=1)
        axes[0, j].set_title((f"μ = {mu} passes" if m == 1 else f"m = {m} minibatches")
                             + ("" if tokens == "one" else f"\nlog ρ on {TOKENS[tokens]}"))
        axes[-1, j].set_xlabel("training step")
    axes[0, 0].set_ylabel("Δ exact pass@1 vs one\nupdate a batch, same seed")
    axes[1, 0].set_ylabel("(answer, update) pairs\nthe clip acted on")
    axes[1, 0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    fig.suptitle(f"{style.label(method)}: the policy loss where π has moved from π_old "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    F.legend_below(fig, axes[1, 0].get_legend_handles_labels()[0], ncol=3)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "policy_losses": (lambda f: policy_losses(f["curves"]), ("curves",)),
}
