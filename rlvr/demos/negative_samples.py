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
FRAMES = ('task', 'reference', 'runs', 'passk', 'finite_step')
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
        "exact": "exact: one step from the reference on the {n} very hard prompts (every group of G = {G} enumerated, rlvr/finite_step.py; mean over the prompts)",  # noqa: E501
        "exact_head": ["policy", "lr", "E[Δπ(correct)]", "groups where π(correct) falls",
                       "prompts where E[Δπ(correct)] < 0", "E[Δπ(likeliest wrong)]",
                       "E[Δz(correct) − mean Δz]"],
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
        "exact": "精确值：从参考模型出发在 {n} 道极难题上走一步（枚举 G = {G} 的每一组回答，rlvr/finite_step.py；对题目取平均）",  # noqa: E501
        "exact_head": ["策略", "学习率", "E[Δπ(正确)]", "π(正确) 下降的组的比例",
                       "E[Δπ(正确)] < 0 的题的比例", "E[Δπ(最可能的错误回答)]", "E[Δz(正确) − 平均 Δz]"],
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
    sections = [("", head, rows)]
    one_step = exact_step(frames)
    if one_step is not None:
        ex = [[R.method_name(L, method), f"{lr:g}", f"{m['d_p_correct']:+.2e}", f"{m['p_falls']:.2f}",
               f"{m['down']:.2f}", f"{m['d_top_wrong']:+.2e}", f"{m['d_logit_correct']:+.4f}"]
              for (method, lr), m in one_step.iterrows()]
        sections.append((L["exact"].format(n=_prompts(frames), G=_G(frames)), L["exact_head"], ex))
    return (R.title(L, runs.iloc[0], min(n)), sections,
            [x.format(hi=hi, alpha=K.ALPHA, least=K.MIN_SEEDS) for x in L["note"]])


# the order the sample-sign estimators and GRPO are shown in
SHOWN = ("nsr", "w_reinforce", "psr", "grpo")


def exact_step(frames):
    """The exact one-step outcomes on the task's very hard prompts (the finite_step frame's
    "task" rows), mean over the prompts, a row per (method, lr) in SHOWN's order, with `down`:
    the share of prompts whose E[Δπ(correct)] < 0; None without the frame."""
    fs = frames.get("finite_step")
    if fs is None or not (fs["source"] == "task").any():
        return None
    task = fs[fs["source"] == "task"].assign(down=lambda d: d["d_p_correct"] < 0)
    means = task.groupby(["method", "lr"])[["d_p_correct", "p_falls", "down", "d_top_wrong",
                                            "d_logit_correct", "p_correct"]].mean()
    order = sorted(means.index, key=lambda k: (SHOWN.index(k[0]) if k[0] in SHOWN else len(SHOWN), k))
    return means.loc[order]


def _prompts(frames):
    fs = frames["finite_step"]
    return fs.loc[fs["source"] == "task", "prompt"].nunique()


def _G(frames):
    return int(frames["runs"].query(f"experiment == '{EXPERIMENT}'")["G"].max())


def safe_lr(frames):
    """On the finite_step frame's map: for each (lam, spread, p_correct) the lr at which the
    expected step's Δπ(correct) turns negative, log-linear between the map's two lrs around the
    sign change; inf where it stays ≥ 0 to the largest lr, 0 where it is < 0 at the smallest.
    A frame with columns lam, spread, p_correct, safe_lr; None without the map."""
    import numpy as np
    import pandas as pd

    fs = frames.get("finite_step")
    if fs is None or not (fs["source"] == "map").any():
        return None
    rows = []
    for (lam, spread, p), g in fs[fs["source"] == "map"].groupby(["lam", "spread", "p_correct"]):
        g = g.sort_values("lr")
        lr, d = np.log(g["lr"].to_numpy()), g["d_p_correct"].to_numpy()
        neg = np.flatnonzero(d < 0)
        if not len(neg):
            at = np.inf
        elif neg[0] == 0:
            at = 0.0
        else:
            i = neg[0]
            at = float(np.exp(lr[i - 1] + (lr[i] - lr[i - 1]) * d[i - 1] / (d[i - 1] - d[i])))
        rows.append({"lam": lam, "spread": spread, "p_correct": p, "safe_lr": at})
    return pd.DataFrame(rows)


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
    return out + _exact_claims(frames)


def _exact_claims(frames):
    """The exact one-step outcomes on the very hard prompts, each estimator at each lr; and where
    on the map NSR's and W-REINFORCE's expected step turns π(correct) down (at the spread of the
    map nearest the very hard prompts' own)."""
    one_step = exact_step(frames)
    if one_step is None:
        return []
    parts = []
    for method in dict.fromkeys(m for m, _ in one_step.index):
        m = one_step.loc[method]
        lrs = " / ".join(f"{lr:g}" for lr in m.index)

        def each(column, fmt, m=m):
            return " / ".join(format(v, fmt) for v in m[column])
        falls = ("in no group" if (m["p_falls"] == 0).all()
                 else f"in {each('p_falls', '.2f')} of the groups")
        parts.append(f"{style.label(method)} at lr {lrs} lowers π(correct) {falls} (on {each('down', '.2f')} "
                     f"of the prompts in expectation); E[Δπ(correct)] {each('d_p_correct', '+.2e')}, the "
                     f"likeliest wrong answer's E[Δπ] {each('d_top_wrong', '+.2e')}, the correct logit's "
                     f"rise against the mean logit {each('d_logit_correct', '+.3f')}")
    p = one_step["p_correct"].iloc[0]
    out = [K.Claim("one_step", (
        f"Exactly, one step from the reference on the {_prompts(frames)} very hard prompts (mean "
        f"π(correct) {p:.3f}; every group of G = {_G(frames)} enumerated; means over the prompts): "
        + "; ".join(parts)), ())]
    safe = safe_lr(frames)
    if safe is not None:
        spread = _very_hard_spread(frames)
        near = min(safe["spread"].unique(), key=lambda s: abs(s - spread))
        lines = []
        most = frames["finite_step"].query("source == 'map'")["lr"].max()
        for lam, g in safe[safe["spread"] == near].groupby("lam"):
            name = "NSR" if lam == 0 else f"W-REINFORCE at λ = {lam:g}"
            finite = g[g["safe_lr"] < float("inf")]
            text = f"{name}: lr {', '.join(_lr_words(v) for v in finite['safe_lr'])} at π(correct) " \
                f"{', '.join(f'{q:g}' for q in finite['p_correct'])}"
            safe_from = g.loc[g["safe_lr"] == float("inf"), "p_correct"]
            if len(safe_from):
                text += f", and none up to lr {most:g} from π(correct) {safe_from.min():g} on"
            lines.append(text)
        out.append(K.Claim("safe_lr", (
            f"Exactly, on prompts of {_answers(frames)} answers whose wrong answers' logits spread "
            f"{near:g} (the very hard prompts': {spread:.2f}), the lr from which one step lowers "
            f"π(correct) in expectation (G = {_G(frames)}): " + "; ".join(lines)), ()))
    return out


def _lr_words(lr):
    return "below every lr mapped" if lr == 0 else f"{lr:.2g}"


def _answers(frames):
    return sum(c.startswith("logit_") for c in frames["task"])


def _very_hard_spread(frames, level="very_hard"):
    """The mean standard deviation of the very hard prompts' wrong answers' logits."""
    task = frames["task"]
    logits = task[[c for c in task if c.startswith("logit_")]].to_numpy()[task["level_name"] == level]
    return float(logits[:, 1:].std(axis=1).mean())


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
    p_ref = softmax(logits)[:, 0].mean()
    largest = tabular["lr"].max()
    ref = frames["reference"].query(f"level == '{level}'").set_index("k")["pass_at_k"]
    hi = int(ref.index.max())
    passk = A.trained_passk(frames["passk"], EXPERIMENT).query(f"level == '{level}' and k == {hi}")
    parts = []  # levels with their s.e., not differences: no ordering is claimed between them
    for method in [m for m in ("nsr", "w_reinforce", "psr", "grpo") if (tabular["method"] == m).any()]:
        for lr in sorted(set(tabular.loc[tabular["method"] == method, "lr"])):
            if method != "nsr" and lr != largest:
                continue
            g = A.select_rows(tabular, method=method, lr=lr)
            d_fell, d_top = K.over_seeds(g[fell]), K.over_seeds(g[top])
            level_pass1 = K.over_seeds(g[f"final_pass1_{level}"] - p_ref)
            here = A.select_rows(passk, method=method, lr=lr, shared_lr=0.0)
            level_passk = K.over_seeds(here["pass_at_k"] - ref[hi])
            parts.append(f"{style.label(method)} at lr {lr:g}: {K.number(d_fell, 2)} of them, their "
                         f"likeliest wrong answer {K.number(d_top, 2)} of the mass, their mean "
                         f"π(correct) {K.signed(level_pass1, note=False)} and their pass@{hi} "
                         f"{K.signed(level_passk, note=False)} from the reference's")
    return K.Claim("where_the_mass_went", (
        f"On the tabular policy, the share of the {level.replace('_', ' ')} prompts whose π(correct) "
        f"ends below the reference's, the mean mass of their likeliest wrong answer (the "
        f"reference's: {reference:.2f}), and their mean π(correct) (the reference's {p_ref:.3f}) and "
        f"pass@{hi} (the reference's {ref[hi]:.3f}) against the reference's: " + "; ".join(parts)
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


def safe_map(frames):
    """Where one step keeps raising π(correct) in expectation: per spread of the wrong answers'
    logits (a panel each), the lr from which NSR's (λ = 0) and W-REINFORCE's expected step
    lowers it, against π(correct); below a line its step is safe. The trained lrs dotted, the
    very hard prompts' mean π(correct) dashed."""
    import numpy as np
    from matplotlib.ticker import NullLocator

    safe = safe_lr(frames)
    if safe is None:  # not planned: too many groups to enumerate (rlvr/binding.py finite_step_spec)
        fig, axes = F.subplots(1, 1, height=1.2)
        axes[0, 0].set_axis_off()
        axes[0, 0].text(0.5, 0.5, f"not computed: every group of G = {_G(frames)} answers is too many "
                        "to enumerate", ha="center", va="center", fontsize="small", wrap=True)
        return fig
    spreads = sorted(safe["spread"].unique())
    fig, axes = F.subplots(1, len(spreads), height=2.8, sharex=True, sharey=True)
    lams = sorted(safe["lam"].unique())
    most = frames["finite_step"].query("source == 'map'")["lr"]
    lo, hi = most.min(), most.max()
    one_step = exact_step(frames)  # None: the task has no very hard prompt
    trained = [] if one_step is None else sorted(one_step.index.get_level_values("lr").unique())
    very_hard = None if one_step is None else one_step["p_correct"].iloc[0]
    for ax, spread in zip(axes[0], spreads):
        for lr in trained:
            ax.axhline(lr, color="grey", ls=":", lw=0.8)
        if very_hard is not None:
            ax.axvline(very_hard, **style.REFERENCE, lw=0.8)
        for i, lam in enumerate(lams):
            g = safe[(safe["spread"] == spread) & (safe["lam"] == lam)].sort_values("p_correct")
            method = "nsr" if lam == 0 else "w_reinforce"
            name = style.label(method) + ("" if lam == 0 else f" λ = {lam:g}")
            look = {**F.tag(method), **({} if lam == 0 else F.variant(i - 1, len(lams) - 1))}
            inside = g[(g["safe_lr"] > 0) & (g["safe_lr"] < np.inf)]  # exact: no band
            ax.plot(inside["p_correct"], inside["safe_lr"], marker=style.marker(method), ms=3, label=name,
                    **look)
            beyond = g[g["safe_lr"] == np.inf]  # safe up to every lr mapped: an open marker at the top
            look.pop("ls", None)
            ax.plot(beyond["p_correct"], [hi] * len(beyond), ls="none", marker="^", ms=4, mfc="none", **look)
        ax.set_xscale("log")
        ax.set_yscale("log", base=2)
        ax.set_ylim(lo / 1.3, hi * 1.3)
        ticks = [v for v in sorted(most.unique()) if v in (lo, hi) or v in trained]
        ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_title(f"wrong logits' spread {spread:g}", fontsize="small")
        ax.set_xlabel("π(correct) before the step")
    axes[0, 0].set_ylabel("lr from which\nE[Δπ(correct)] < 0")
    fig.suptitle(f"One step, exact (G = {_G(frames)}): below a line the expected step raises π(correct); "
                 f"△: up to lr {hi:g}",
                 fontsize="medium")
    F.legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=len(lams))
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "negative_samples": (lambda f: negative_samples(f["reference"], f["passk"]), ("reference", "passk")),
    "negative_samples_safe_lr": (safe_map, ("runs",)),  # and finite_step, where it is planned
}
