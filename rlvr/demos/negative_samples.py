"""The demo "one sign of sample: PSR, NSR, W-REINFORCE": its table (en, zh), its figure and its claims.

Zhu et al. 2025 train on the correct answers alone (PSR), the wrong ones alone (NSR), or both
with the correct ones down-weighted (W-REINFORCE, λ = 0.1): rlvr/estimators.py. What each name
below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..policy import softmax

NUMBER = 13  # its place in the lecture's order; its table is demo13_negative_samples
TITLE = "one sign of sample: PSR, NSR, W-REINFORCE"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('task', 'reference', 'runs', 'passk')
ROWS = True
EXPERIMENT = "negative_samples"

CONFIG = {
    "help": "positive and negative sample reinforcement (Zhu et al. 2025) against GRPO over an lr range, "
            "tabular and with shared weights; one run per row x seed, rows as in training (grids allowed)",
    "seeds": list(range(10)),
    "rows": [
        {"method": ["psr", "nsr", "w_reinforce", "grpo"], "lr": [0.5, 2.0, 8.0], "shared_lr": [0.0, 0.05]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: one sign of sample (PSR, NSR, W-REINFORCE) against GRPO ({pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["policy", "lr", "shared lr", "pass@{lo}", "pass@{hi}", "pass@{hi} − reference's",
                 "at pass@{hi}"],
        "above": "above the reference",
        "below": "below the reference",
        "within": "not resolved",
        "note": [
            "Exact pass@k over all prompts. 'at pass@{hi}': whether the difference to the reference's",
            "exact pass@{hi} is resolved (a t test over seeds at α = {alpha}, on {least} seeds or more). shared lr 0:",  # noqa: E501 ({alpha}: 0.01 when rendered)
            "the tabular policy; > 0:",
            "a weight per answer strategy type shared by every prompt (demo 11).",
        ],
    },
    "zh": {
        "title": "演示 {number}：只用一种符号的样本（PSR、NSR、W-REINFORCE）与 GRPO 对比（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["策略", "学习率", "共享学习率", "pass@{lo}", "pass@{hi}", "pass@{hi} − 参考模型",
                 "pass@{hi} 与参考模型"],
        "above": "高于参考模型",
        "below": "低于参考模型",
        "within": "未分辨",
        "note": [
            "全部题目上的精确 pass@k。“pass@{hi} 与参考模型”：与参考模型精确 pass@{hi} 之差",
            "是否可分辨（种子间 α = {alpha} 的 t 检验，至少 {least} 个种子）。",
            "共享学习率 0：表格策略；> 0：按回答策略类型、所有题共享的权重（演示 11）。",
        ],
    },
}


def _to_reference(top, ref, cfg, k):
    """The runs of one configuration: their pass@k minus the reference's, over seeds (Difference)."""
    here = A.select_rows(top, k=k, **{c: cfg[c] for c in ("method", "lr", "shared_lr")})
    return K.over_seeds(here["pass_at_k"] - ref[k])


def table(frames, L):
    got = A.passk_and_reference(frames, EXPERIMENT)
    if got is None:
        return None
    top, ref, runs = got
    lo, hi = int(top["k"].min()), int(top["k"].max())
    rows = [[L["reference"], "", "", f"{ref[lo]:.3f}", f"{ref[hi]:.3f}", "", "", ""]]
    n = []
    for cfg, g, other in A.configurations(runs, ("method", "lr", "shared_lr")):
        here = A.select_rows(top, **{c: cfg[c] for c in ("method", "lr", "shared_lr")})
        d = _to_reference(top, ref, cfg, hi)
        verdict = L["within"] if not d.resolved else L["above"] if d.mean > 0 else L["below"]
        rows.append([R.method_name(L, cfg["method"]), f"{cfg['lr']:g}", f"{cfg['shared_lr']:g}",
                     A.pm(here[here["k"] == lo]["pass_at_k"]), A.pm(here[here["k"] == hi]["pass_at_k"]),
                     K.signed(d, note=False), verdict, other])
        n.append(g["seed"].nunique())
    head = [h.format(lo=lo, hi=hi) for h in L["head"]]
    head, rows = R.with_others(head, rows, L["other"])
    return (R.title(L, runs.iloc[0], min(n)), [("", head, rows)],
            [x.format(hi=hi, alpha=K.ALPHA, least=K.MIN_SEEDS) for x in L["note"]])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: where NSR keeps pass@k at the largest k at or
    above the reference's and where it does not; NSR against PSR at the largest lr, paired."""
    got = A.passk_and_reference(frames, EXPERIMENT)
    if got is None:
        return []
    top, ref, runs = got
    hi = int(top["k"].max())
    out = []
    for method in [m for m in ("nsr", "w_reinforce", "psr", "grpo") if (runs["method"] == m).any()]:
        where, diffs = {"above": [], "not resolved from it": [], "below": []}, []
        for cfg, _, _ in A.configurations(A.select_rows(runs, method=method), ("method", "lr", "shared_lr")):
            d = _to_reference(top, ref, cfg, hi)
            verdict = ("above" if d.mean > 0 else "below") if d.resolved else "not resolved from it"
            shared = f" with shared lr {cfg['shared_lr']:g}" if cfg["shared_lr"] else ""
            number = K.signed(d, note=False)
            where[verdict].append(f"lr {cfg['lr']:g}{shared} ({number})")
            diffs.append(d)
        seeds = A.select_rows(runs, method=method)["seed"].nunique()
        parts = [f"{verdict} at {', '.join(settings)}" for verdict, settings in where.items() if settings]
        out.append(K.Claim(f"{method}_at_pass{hi}", (
            f"{style.label(method)}'s final pass@{hi} against the reference's {ref[hi]:.3f}: "
            + "; ".join(parts) + f" (difference to the reference, {seeds} seeds)"), tuple(diffs)))
    tabular = A.select_rows(runs, shared_lr=0.0)
    if {"nsr", "psr"} <= set(tabular["method"]):
        lr = tabular["lr"].max()
        this, base = ({"method": m, "lr": lr, "shared_lr": 0.0} for m in ("nsr", "psr"))
        wide = top[top["k"] == hi].rename(columns={"pass_at_k": "passk_hi"})
        d1 = K.paired(tabular, "final_pass1", this, base)
        dk = K.paired(wide, "passk_hi", this, base)
        out.append(K.Claim("nsr_against_psr", (
            f"On the tabular policy at lr {lr:g}, NSR against PSR {K.change(d1, 'the final pass@1')} and "
            f"{K.change(dk, f'pass@{hi}')} ({d1.seeds} seeds, paired)"), (d1, dk)))
    where = _where_the_mass_went(frames, tabular)
    if where:
        out.append(where)
    return out


def _where_the_mass_went(frames, tabular, level="very_hard"):
    """Where a level's mass went, from the runs' fell_frac and top_wrong columns (rlvr/training.py):
    the share of its prompts whose π(correct) ended below the reference's and the mass of their
    likeliest wrong answer, NSR at each lr, the others at the largest; None without those columns."""
    fell, top = f"fell_frac_{level}", f"top_wrong_{level}"
    if fell not in tabular or "task" not in frames or not (tabular["method"] == "nsr").any():
        return None
    task = frames["task"]
    logits = task[[c for c in task if c.startswith("logit_")]].to_numpy()[task["level_name"] == level]
    reference = softmax(logits)[:, 1:].max(axis=1).mean()  # one correct answer: answer 0 (tabular rows)
    largest = tabular["lr"].max()
    parts = []  # levels with their s.e., not differences: no ordering is claimed between them
    for method in [m for m in ("nsr", "w_reinforce", "psr", "grpo") if (tabular["method"] == m).any()]:
        for lr in sorted(set(tabular.loc[tabular["method"] == method, "lr"])):
            if method != "nsr" and lr != largest:
                continue
            g = A.select_rows(tabular, method=method, lr=lr)
            d_fell, d_top = K.over_seeds(g[fell]), K.over_seeds(g[top])
            parts.append(f"{style.label(method)} at lr {lr:g}: {K.number(d_fell, 2)} of them, their "
                         f"likeliest wrong answer {K.number(d_top, 2)} of the mass")
    return K.Claim("where_the_mass_went", (
        f"On the tabular policy, the share of the {level.replace('_', ' ')} prompts whose π(correct) "
        f"ends below the reference's, and the mean mass of their likeliest wrong answer (the "
        f"reference's: {reference:.2f}): " + "; ".join(parts)
        + f" ({tabular['seed'].nunique()} seeds)"), ())


def negative_samples(ref, passk):
    top, note = A.focus(A.trained_passk(passk, EXPERIMENT).query("level == 'all'"),
                        ("method", "lr", "shared_lr"))
    r = ref[ref["level"] == "all"].set_index("k")["pass_at_k"]
    lo, hi = int(top["k"].min()), int(top["k"].max())
    shared = sorted(top["shared_lr"].unique())
    rows = [(lo, f"pass@{lo}", False), (hi, f"pass@{hi} − reference's", True)]
    fig, axes = F.subplots(len(rows), len(shared), height=4.2, sharex=True, sharey="row")
    for j, lr_shared in enumerate(shared):
        for i, (k, ylabel, difference) in enumerate(rows):
            ax = axes[i, j]
            if difference:
                ax.axhline(0, **style.REFERENCE, lw=1, label="reference (step 0)")
            else:
                ax.axhline(r[k], **style.REFERENCE, lw=1)
            here = top[(top["shared_lr"] == lr_shared) & (top["k"] == k)]
            for method, g in here.groupby("method", sort=False):
                g = g.assign(pass_at_k=g["pass_at_k"] - r[k]) if difference else g
                s = A.over_seeds(g, "lr", "pass_at_k")
                F.line(ax, s.index, s, method, marker=style.marker(method), ms=3, label=style.label(method))
            F.log_ticks(ax, top["lr"])
            if j == 0:
                ax.set_ylabel(ylabel)
        axes[0, j].set_title(F.shared_lr_title(lr_shared))
        axes[-1, j].set_xlabel("learning rate")
    fig.suptitle(f"Exact pass@k after training, all prompts (mean over seeds, 95% band{note})",
                 fontsize="medium")
    handles = axes[1, 0].get_legend_handles_labels()[0]
    F.legend_below(fig, handles, ncol=min(len(handles), 5))
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "negative_samples": (lambda f: negative_samples(f["reference"], f["passk"]), ("reference", "passk")),
}
