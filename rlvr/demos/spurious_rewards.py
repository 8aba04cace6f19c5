"""The demo "spurious rewards and the clip": its table (en, zh), its figure and its claims.

Shao et al. 2025 trained on rewards independent of correctness and saw accuracy rise, which they
attribute to the clip favouring answers the policy already likes. Here a row's `reward` is a
reward function of rlvr/rewards.py that ignores the answer (random_half: 1 with probability ½),
trained with one update per batch, μ = 4 clipped updates on the same batch, or m = 8 minibatches
of one answer of every group each (each answer used once, as the paper's setting of updates on
distinct minibatches), and each without a clip (clip_low and clip_high null). What each name
below is: rlvr/demos/__init__.py.
"""

import math

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..objective import Objective, random_reward_logit_change
from ..task import LEVEL_KEYS
from ..text import number

NUMBER = 16  # its place in the lecture's order; its table is demo16_spurious_rewards
TITLE = "spurious rewards and the clip"
SWITCHABLE = True
FRAMES = ('runs', 'curves', 'finite_step')  # the results its table, claims and figures read (rlvr/io.py)
ROWS = True
EXPERIMENT = "spurious_rewards"
SHOWN = ("reward", "lr", "epochs", "minibatches", "clip_low", "clip_high")
NO_CLIP = (1.0, math.inf)  # (ε_low, ε_high) of clip_low and clip_high null: "without the clip"
EXAMPLE = np.log([0.6, 0.2, 0.15, 0.05])  # the exact part's prompt: 4 answers, G = 4
EXAMPLE_G = 4

CONFIG = {
    "help": "rewards that ignore correctness (reward: random_half) with one update per batch, μ = 4 "
    "clipped updates or m = 8 minibatches of a batch (each answer once), and without a clip (clip_low "
    "and clip_high null); one run per row x seed, rows as in training (grids allowed)",
    "seeds": list(range(10)),
    "rows": [  # clip_low / clip_high null: no clip
        {"method": "grpo", "lr": [0.5, 2.0], "reward": "random_half"},
        {"method": "grpo", "lr": [0.5, 2.0], "reward": "random_half", "epochs": 4, "clip_high": [0.2, 0.28]},
        {"method": "grpo", "lr": [0.5, 2.0], "reward": "random_half", "epochs": 4, "clip_low": None,
         "clip_high": None},
        # the paper's setting: distinct minibatches, each answer once (here one answer of every group each)
        {"method": "grpo", "lr": [0.5, 2.0], "reward": "random_half", "minibatches": 8},
        {"method": "grpo", "lr": [0.5, 2.0], "reward": "random_half", "minibatches": 8, "clip_low": None,
         "clip_high": None},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: rewards that ignore correctness, and the clip ({method}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": [
            "reward",
            "lr",
            "μ",
            "m",
            "clip ε_low / ε_high",
            "clipped",
            "pass@1 − reference",
            "easy: − reference",
            "easy prompts",
        ],
        "no_clip": "none",
        "above": "raised",
        "below": "lowered",
        "within": "not resolved",
        "exact": "exact: the expected change of each logit over one batch of μ passes in m minibatches, GRPO, random ½ rewards, one prompt of 4 answers (π = 0.6, 0.2, 0.15, 0.05), G = 4 (a trained m above 4 is m = 4 here: one answer a minibatch)",  # noqa: E501
        "exact_head": [
            "lr",
            "μ",
            "m",
            "clip ε_low / ε_high",
            "Δz likeliest",
            "Δz 2nd",
            "Δz 3rd",
            "Δz least likely",
        ],
        "batch": "one batch from the reference on the {n} easy prompts, by Monte Carlo ({groups:,} groups a prompt; mean over the prompts ± s.e.): the likeliest answer's expected change",  # noqa: E501
        "batch_head": ["lr", "μ", "m", "clip ε_low / ε_high", "E[Δz − mean Δz]", "E[Δπ]"],
        "note": [
            "Exact pass@1 at the last step minus the reference's (step 0), on all prompts and on the",
            "easy ones; 'easy prompts': whether that change is resolved (a t test over seeds, α = {alpha}).",
            "'clipped': the share of (answer, update) pairs the clip zeroed over the last evaluation",
            "interval (μ = m = 1 never clips: its one update is on-policy). m: minibatches of a batch, one",
            "update each, each answer once.",
        ],
    },
    "zh": {
        "title": "演示 {number}：与正确性无关的奖励与裁剪（{method}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": [
            "奖励",
            "学习率",
            "μ",
            "m",
            "裁剪 ε_low / ε_high",
            "被裁剪",
            "pass@1 − 参考模型",
            "容易：− 参考模型",
            "容易题",
        ],
        "no_clip": "无",
        "above": "升高",
        "below": "降低",
        "within": "未分辨",
        "exact": "精确值：一批分 m 个小批、共 μ 遍的更新中每个 logit 的期望变化，GRPO，随机 ½ 奖励，一道 4 个回答的题（π = 0.6、0.2、0.15、0.05），G = 4（训练中大于 4 的 m 在此为 m = 4：每个小批一个回答）",  # noqa: E501
        "exact_head": [
            "学习率",
            "μ",
            "m",
            "裁剪 ε_low / ε_high",
            "Δz 最可能",
            "Δz 第二",
            "Δz 第三",
            "Δz 最不可能",
        ],
        "batch": "从参考模型出发在 {n} 道容易题上的一批更新，蒙特卡洛（每道题 {groups:,} 组；对题目平均 ± 标准误）：最可能回答的期望变化",  # noqa: E501
        "batch_head": ["学习率", "μ", "m", "裁剪 ε_low / ε_high", "E[Δz − 平均 Δz]", "E[Δπ]"],
        "note": [
            "最后一步的精确 pass@1 减去参考模型（第 0 步）的，全部题目与容易题；",
            "“容易题”：该变化是否可分辨（种子间 t 检验，α = {alpha}）。“被裁剪”：最后一个评估区间内被裁剪置零的",  # noqa: E501 ({alpha}: 0.01 when rendered)
            "（回答，更新）对的比例（μ = m = 1 从不裁剪：唯一的更新是同策略的）。m：一批分成的小批数，",
            "每个小批一次更新，每个回答只用一次。",
        ],
    },
}


def _updates(cfg):
    """Updates a batch makes: μ passes in m minibatches (1: on-policy, the clip never acts)."""
    return int(cfg["epochs"]) * int(cfg["minibatches"])


def _clip(L, cfg):
    if _updates(cfg) == 1:
        return ""
    if (cfg["clip_low"], cfg["clip_high"]) == NO_CLIP:
        return L["no_clip"]
    return _epsilons(cfg)


def _epsilons(cfg):
    """ε_low / ε_high, ∞ where clip_high is null (no clip above); clip_low null shows as 1,
    which it is: a ratio is never below 0."""
    return f"{number(cfg['clip_low'])} / {number(cfg['clip_high'])}"


def _runs(frames):
    """The demo's runs with their final clip share and the reference's pass@1 (all, easy) subtracted
    ("gain", "gain_easy"); None where the results hold none."""
    runs = A.experiment_runs(frames, EXPERIMENT, ["clip_frac"])
    if runs is None or "reward" not in runs:
        return None
    c = frames["curves"]
    start = c[(c["experiment"] == EXPERIMENT) & (c["step"] == 0)].groupby("level")["pass1"].first()
    return runs.assign(
        gain=runs["final_pass1"] - start["all"], gain_easy=runs["final_pass1_easy"] - start["easy"]
    )


def exact_rows(runs):
    """[(lr, epochs, minibatches, clip_low, clip_high, E[Δz] [4])] for each configuration of the
    runs, on EXAMPLE; m at most EXAMPLE_G (m = G: one answer of the group a minibatch)."""
    out = []
    for cfg, _, _ in A.configurations(runs, SHOWN):
        m = min(int(cfg["minibatches"]), EXAMPLE_G)
        obj = Objective(epochs=int(cfg["epochs"]), minibatches=m, clip_low=cfg["clip_low"],
                        clip_high=cfg["clip_high"])
        key = (cfg["lr"], int(cfg["epochs"]), m, cfg["clip_low"], cfg["clip_high"])
        if key not in [o[:5] for o in out]:
            out.append((*key, random_reward_logit_change(EXAMPLE, EXAMPLE_G, "grpo", obj, cfg["lr"])))
    return out


def table(frames, L):
    runs = _runs(frames)
    if runs is None:
        return None
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, SHOWN):
        easy = K.over_seeds(g["gain_easy"])
        verdict = L["within"] if not easy.resolved else L["above"] if easy.mean > 0 else L["below"]
        rows.append(
            [
                cfg["reward"],
                f"{cfg['lr']:g}",
                f"{cfg['epochs']:d}",
                f"{cfg['minibatches']:d}",
                _clip(L, cfg),
                f"{g['clip_frac'].mean():.3f}",
                K.signed(K.over_seeds(g["gain"]), note=False),
                K.signed(easy, note=False),
                verdict,
                other,
            ]
        )
        n.append(g["seed"].nunique())
    head, rows = R.with_others(list(L["head"]), rows, L["other"])
    ex = [
        [f"{lr:g}", f"{mu:d}", f"{m:d}", _clip(L, {"epochs": mu, "minibatches": m, "clip_low": lo,
                                                    "clip_high": hi})]
        + [_logit(v) for v in dz]
        for lr, mu, m, lo, hi, dz in exact_rows(runs)
    ]
    sections = [("", head, rows), (L["exact"], L["exact_head"], ex)]
    batches = batch_rows(frames)
    if batches is not None:
        first = _batches(frames).iloc[0]
        title = L["batch"].format(n=int(first["n_prompts"]), groups=int(first["n_groups"]))
        sections.append((title, L["batch_head"],
                         [[f"{cfg['lr']:g}", f"{cfg['epochs']:d}", f"{cfg['minibatches']:d}", _clip(L, cfg),
                           K.signed(dz, note=False), K.signed(dp, note=False)] for cfg, dz, dp in batches]))
    return (
        R.title(L, runs.iloc[0], min(n)),
        sections,
        [line.format(alpha=K.ALPHA) for line in L["note"]],
    )


def claims(frames):
    """What FINDINGS.md says of this demo, computed: each setting's change of the easy prompts'
    pass@1 from the reference, whether any clipped setting raises it (resolved) while the same lr
    without the clip does not, each clipped μ > 1 setting against μ = 1 and against no clip
    (paired: a trust region, or a gain of the clip's own), and the exact expected logit change on
    the example prompt."""
    runs = _runs(frames)
    if runs is None:
        return []
    out, by_lr = [], {}
    for cfg, g, _ in A.configurations(runs, SHOWN):
        by_lr.setdefault((cfg["reward"], cfg["lr"]), []).append(
            (cfg, K.over_seeds(g["gain"]), K.over_seeds(g["gain_easy"])))
    seeds = runs["seed"].nunique()
    one_reward = runs["reward"].nunique() == 1
    for (reward, lr), settings in by_lr.items():
        parts = [f"{_setting(cfg)}: all prompts {K.signed(d)}, easy {K.signed(e)}" for cfg, d, e in settings]
        out.append(K.Claim(
            f"lr{lr:g}" if one_reward else f"{reward}_lr{lr:g}",
            f"At lr {lr:g} on reward {reward}, the final pass@1 minus the reference's: " + "; ".join(parts)
            + f" ({seeds} seeds)",
            tuple(x for _, d, e in settings for x in (d, e))))
    every = [(cfg, e) for settings in by_lr.values() for cfg, _, e in settings]
    raised = [(cfg, e) for cfg, e in every if e.resolved and e.mean > 0]
    unclipped = {cfg["lr"] for cfg, _ in raised if (cfg["clip_low"], cfg["clip_high"]) == NO_CLIP}
    clip_only = [
        (cfg, e)
        for cfg, e in raised
        if _updates(cfg) > 1 and cfg["lr"] not in unclipped and (cfg["clip_low"], cfg["clip_high"]) != NO_CLIP
    ]
    if not raised:
        top, e = max(every, key=lambda x: x[1].mean)
        text = (
            f"No setting raises the easy prompts' pass@1 above the reference's (resolved), with the "
            f"clip or without it; the largest change is {K.signed(e)} ({_setting(top)} at lr {top['lr']:g}, "
            f"reward {top['reward']})"
        )
    else:
        text = (
            "With random ½ rewards the easy prompts' pass@1 rises above the reference's (resolved) at "
            + "; ".join(f"{_setting(cfg)}, lr {cfg['lr']:g}, reward {cfg['reward']} ({K.signed(e)})"
                        for cfg, e in raised)
            + "; with the clip and not without it at the same lr: "
            + ("; ".join(f"{_setting(cfg)}, lr {cfg['lr']:g}" for cfg, _ in clip_only) or "none")
        )
    stated = (e,) if not raised else tuple(e for _, e in raised)  # the differences the sentence gives
    out.append(K.Claim("clip_only", f"{text} ({seeds} seeds)", stated))
    trust = _trust_region(runs, by_lr)
    if trust:
        out.append(trust)
    paper = [(cfg, e) for cfg, e in every if cfg["epochs"] == 1 and cfg["minibatches"] > 1
             and (cfg["clip_low"], cfg["clip_high"]) != NO_CLIP]
    if paper:  # each answer used once, in distinct minibatches, with the clip
        up = ", ".join(f"{cfg['lr']:g}" for cfg, e in paper if e.resolved and e.mean > 0)
        verdict = (f"the toy reproduces the paper's gain at lr {up}" if up
                   else "the toy does not reproduce the paper's gain")
        out.append(K.Claim("paper_setting", (
            "In the paper's setting, each answer used once in distinct minibatches with the clip, the easy "
            "prompts' final pass@1 minus the reference's: "
            + "; ".join(f"{_setting(cfg)} at lr {cfg['lr']:g}, reward {cfg['reward']} {K.signed(e)}"
                        for cfg, e in paper) + f" ({seeds} seeds): {verdict}"), tuple(e for _, e in paper)))
    ex = exact_rows(runs)
    words = "; ".join(
        f"{_setting({'epochs': mu, 'minibatches': m, 'clip_low': lo, 'clip_high': hi})} at lr {lr:g} "
        f"{_logit(dz[0])}"
        for lr, mu, m, lo, hi, dz in ex
    )
    out.append(
        K.Claim(
            "exact",
            (
                f"Exactly, on one prompt of 4 answers (π = 0.6, 0.2, 0.15, 0.05) with G = {EXAMPLE_G} and "
                f"random ½ rewards, "
                f"the likeliest answer's logit changes in expectation over one batch of GRPO updates by: "
                f"{words}"
            ),
            (),
        )
    )
    batches = batch_rows(frames)
    if batches:
        first = _batches(frames).iloc[0]
        by = {}
        for cfg, dz, dp in batches:
            by.setdefault((cfg["reward"], cfg["lr"]), []).append(
                f"{_setting(cfg)} {K.signed(dz, 4)} and {K.signed(dp, 4)}")
        prompts, groups, G = int(first["n_prompts"]), int(first["n_groups"]), int(runs["G"].iloc[0])
        out.append(K.Claim("one_batch", (
            f"By Monte Carlo, one batch of GRPO updates from the reference on the {prompts} easy "
            f"prompts ({groups:,} groups of G = {G} a prompt, through the "
            "training update; mean over the prompts ± s.e.), the likeliest answer's expected change of its "
            "logit against the mean logit and of its probability: "
            + "; ".join(f"at lr {lr:g} on reward {reward}: " + ", ".join(parts)
                        for (reward, lr), parts in by.items())),
            tuple(d for _, dz, dp in batches for d in (dz, dp))))
    return out


def batch_rows(frames):
    """One batch of each setting from the reference on the easy prompts (the finite_step frame's
    "batch" rows, by Monte Carlo): [(setting, E[Δz − mean Δz], E[Δπ])] of the likeliest answer,
    each a Difference whose count is the groups drawn, in the table's order; None without them."""
    batches = _batches(frames)
    if batches is None:
        return None
    out = []
    for _, b in batches.sort_values(["reward", "lr", "epochs", "minibatches"]).iterrows():
        groups = int(b["n_groups"] * b["n_prompts"])
        cfg = {**{k: b[k] for k in SHOWN}, "epochs": int(b["epochs"]), "minibatches": int(b["minibatches"])}
        out.append((cfg, K.Difference(b["d_logit_top"], b["d_logit_top_se"], groups),
                    K.Difference(b["d_p_top"], b["d_p_top_se"], groups)))
    return out


def _batches(frames):
    fs = frames.get("finite_step")
    return None if fs is None or not (fs["source"] == "batch").any() else fs[fs["source"] == "batch"]


def _logit(change):
    """An exact expected logit change: 0 where it is zero to rounding (1e-12), else signed."""
    return "0" if abs(change) < 1e-12 else f"{change:+.4f}"


def _trust_region(runs, by_lr):
    """Each clipped μ > 1 setting's easy-prompt pass@1 against μ = 1 and against μ > 1 without the
    clip at the same lr and reward, paired by seed: whether the clip adds a gain of its own (above
    μ = 1) or only limits the drift of the unclipped updates (below μ = 1, above no clip). A Claim,
    or None where the runs hold no such pair."""
    parts, diffs = [], []
    for (reward, lr), settings in by_lr.items():
        base = {"reward": reward, "lr": lr}
        one = [cfg for cfg, _, _ in settings if _updates(cfg) == 1]
        for cfg, _, _ in settings:
            clipped = (cfg["clip_low"], cfg["clip_high"]) != NO_CLIP
            if _updates(cfg) == 1 or not clipped or not one:
                continue
            this = {**base, **{k: cfg[k] for k in ("epochs", "minibatches", "clip_low", "clip_high")}}
            vs_one = K.paired(runs, "gain_easy", this, {**base, "epochs": 1, "minibatches": 1})
            words = f"{_setting(cfg)} at lr {lr:g} {K.change(vs_one, 'it')} against μ = 1"
            diffs.append(vs_one)
            unclipped = {**base, "epochs": cfg["epochs"], "minibatches": cfg["minibatches"],
                         "clip_low": NO_CLIP[0], "clip_high": NO_CLIP[1]}
            if len(A.select_rows(runs, **unclipped)):
                vs_none = K.paired(runs, "gain_easy", this, unclipped)
                words += f" and {K.change(vs_none, 'it')} against no clip"
                diffs.append(vs_none)
            parts.append(words)
    if not parts:
        return None
    return K.Claim("trust_region", "On the easy prompts' final pass@1, paired by seed: " + "; ".join(parts)
                   + f" ({diffs[0].seeds} seeds)", tuple(diffs))


def _setting(cfg):
    if _updates(cfg) == 1:
        return "μ = 1"
    passes = " and ".join(([f"μ = {cfg['epochs']:d}"] if cfg["epochs"] > 1 else [])
                          + ([f"m = {cfg['minibatches']:d} minibatches"] if cfg["minibatches"] > 1 else []))
    if (cfg["clip_low"], cfg["clip_high"]) == NO_CLIP:
        return f"{passes} without the clip"
    return f"{passes}, ε {_epsilons(cfg)}"


def spurious_rewards(curves):
    """Exact pass@1 minus the reference's against the step, all prompts and easy ones (rows), one
    panel per lr, a line per (μ, clip) setting."""
    c = curves[curves["experiment"] == EXPERIMENT]
    c, note = A.focus(c, ("lr", "epochs", "minibatches", "clip_low", "clip_high"))  # one method, reward
    method, reward = c["method"].iloc[0], c["reward"].iloc[0]
    lrs = sorted(c["lr"].unique())
    levels = [("all", "all prompts"), (LEVEL_KEYS[-1], "easy prompts")]
    fig, axes = F.subplots(len(levels), len(lrs), height=4.2, sharex=True, sharey="row")
    settings = list(dict.fromkeys(zip(c["epochs"], c["minibatches"], c["clip_low"], c["clip_high"])))
    for j, lr in enumerate(lrs):
        for i, (level, name) in enumerate(levels):
            ax = axes[i, j]
            ax.axhline(0, **style.REFERENCE, lw=1, label="reference (step 0)")
            here = c[(c["lr"] == lr) & (c["level"] == level)]
            start = here[here["step"] == 0]["pass1"].iloc[0]
            for k, (mu, m, lo, hi) in enumerate(settings):
                g = A.select_rows(here, epochs=mu, minibatches=m, clip_low=lo, clip_high=hi)
                s = A.over_seeds(g.assign(pass1=g["pass1"] - start), "step", "pass1")
                F.line(
                    ax,
                    s.index,
                    s,
                    method,
                    **F.variant(k, len(settings)),
                    **({"marker": "o", "ms": 3, "markevery": 0.1} if m > 1 else {}),  # minibatches: dots
                    label=_setting({"epochs": mu, "minibatches": m, "clip_low": lo, "clip_high": hi}),
                )
            if j == 0:
                ax.set_ylabel(name)
        axes[0, j].set_title(f"lr {lr:g}")
        axes[-1, j].set_xlabel("step")
    fig.suptitle(f"{style.label(method)} on reward {reward}: pass@1 minus the reference's "
                 f"(mean, 95% band{note})", fontsize="medium")
    F.legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=3)
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "spurious_rewards": (lambda f: spurious_rewards(f["curves"]), ("curves",)),
}
