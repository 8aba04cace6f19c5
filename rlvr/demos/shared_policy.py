"""The demo "shared weights: RL narrows pass@k": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 11  # its place in the lecture's order; its table is demo11_shared_policy
TITLE = "shared weights: RL narrows pass@k"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('reference', 'runs', 'passk')
ROWS = True

CONFIG = {
    "help": "RL narrowing pass@k: the policy gets shared weights per answer strategy type (rows' shared_lr; "
            "task.minority); one run per row x seed, rows as in training (grids allowed)",
    "seeds": list(range(10)),
    "rows": [  # shared_lr 0: the tabular policy beside it
        {"method": ["none", "rloo", "grpo", "dr_grpo", "pkpo_k4", "unlikeliness"], "lr": 2.0,
         "shared_lr": [0.0, 0.01, 0.05]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: shared weights per answer strategy; RL narrows pass@k (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": [
            "policy",
            "shared lr",
            "pass@{lo}",
            "pass@{hi}",
            "minority: pass@{lo}",
            "minority: pass@{hi}",
            "below the reference from k",
        ],
        "note": [
            "logits = the prompt's own logits + a weight per answer type shared by every prompt (shared lr 0: the",  # noqa: E501
            "tabular policy). {m} of the {P} prompts need the minority strategy for their correct answer; every",  # noqa: E501
            "other prompt's correct answer is of the majority type, and wrong answers are of either. 'below the",  # noqa: E501
            "reference from k': the smallest k <= 256 at which the trained policy's exact pass@k over all",
            "prompts is below the reference's (mean over the seeds where it happens).",
        ],
    },
    "zh": {
        "title": "演示 {number}：按回答策略类型共享的权重；RL 使 pass@k 变窄（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": [
            "策略",
            "共享学习率",
            "pass@{lo}",
            "pass@{hi}",
            "少数题：pass@{lo}",
            "少数题：pass@{hi}",
            "从哪个 k 起低于参考模型",
        ],
        "note": [
            "logits = 每道题自己的 logits + 按回答类型、所有题共享的权重（共享学习率 0：表格策略）。",
            "{P} 道题中有 {m} 道的正确回答需要少数策略；其余题的正确回答属于多数类型，错误回答两种都有。",
            "“从哪个 k 起低于参考模型”：训练后策略在全部题目上的精确 pass@k 低于参考模型的最小 k（k <= 256，",
            "对出现这种情况的种子取平均）。",
        ],
    },
}


def table(frames, L):
    runs, passk, ref = frames["runs"], frames.get("passk"), frames["reference"]
    if passk is None or "shared_lr" not in runs or not (runs["experiment"] == "shared_policy").any():
        return None
    sp = runs[runs["experiment"] == "shared_policy"]
    top = A.trained_passk(passk, "shared_policy")
    ks = (int(top["k"].min()), int(top["k"].max()))  # pass@k at the smallest and largest k asked for
    has_minority = (top["level"] == "minority").any()

    def at(frame, level, k):
        return A.select_rows(frame, level=level, k=k)["pass_at_k"]

    blank = ["", ""] if not has_minority else None
    rows = [[L["reference"], ""] + [f"{at(ref, 'all', k).iloc[0]:.3f}" for k in ks]
            + (blank or [f"{at(ref, 'minority', k).iloc[0]:.3f}" for k in ks]) + ["", ""]]
    n = []
    for cfg, g, other in A.configurations(sp, ("method", "shared_lr")):
        pk = A.select_rows(top, **{c: cfg[c] for c in cfg})
        cross = R.crossover(g, L)
        rows.append(
            [R.method_name(L, cfg["method"]), f"{cfg['shared_lr']:g}"]
            + [A.pm(at(pk, "all", k)) for k in ks]
            + (blank or [A.pm(at(pk, "minority", k)) for k in ks])
            + [cross, other]
        )
        n.append(g["seed"].nunique())
    head = [h.format(lo=ks[0], hi=ks[1]) for h in L["head"]]
    head, rows = R.with_others(head, rows, L["other"])
    all_ref = A.select_rows(ref, level="all", k=ks[0])["n_prompts"].iloc[0]
    minority = A.select_rows(ref, level="minority", k=ks[0])["n_prompts"] if has_minority else []
    note = [
        line.format(m=int(minority.iloc[0]) if len(minority) else 0, P=int(all_ref)) for line in L["note"]
    ]
    return (R.title(L, sp.iloc[0], min(n)), [("", head, rows)], note)


def claims(frames):
    """What FINDINGS.md says of this demo, computed: with shared weights the estimators that see
    only pass@1 end above the reference at pass@1 and below it at the largest k, and cross it;
    the tabular policy never does; PKPO and the unlikeliness reward paired with GRPO."""
    runs, passk, ref = frames["runs"], frames.get("passk"), frames["reference"]
    if passk is None or "shared_lr" not in runs or not (runs["experiment"] == "shared_policy").any():
        return []
    from ..estimators import ESTIMATORS

    sp = runs[runs["experiment"] == "shared_policy"]
    pk = A.trained_passk(passk, "shared_policy")
    k = int(pk["k"].max())
    at = {lv: A.select_rows(ref, level=lv, k=k)["pass_at_k"] for lv in ("all", "minority")}
    top = {lv: A.select_rows(pk, level=lv, k=k) for lv in at if len(at[lv])}
    pass1 = (
        float(A.select_rows(ref, level="all", k=1)["pass_at_k"].iloc[0]) if (ref["k"] == 1).any() else None
    )
    methods = list(dict.fromkeys(sp["method"]))
    plain = [m for m in methods if ESTIMATORS.get(m) is None or ESTIMATORS[m].family != "pass@k"]
    shared = sorted(lr for lr in sp["shared_lr"].unique() if lr > 0)
    out = []

    def span(values, digits=3):
        lo, hi = min(values), max(values)
        return (
            f"{lo:.{digits}f}"
            if f"{lo:.{digits}f}" == f"{hi:.{digits}f}"
            else f"{lo:.{digits}f}–{hi:.{digits}f}"
        )

    for lr in shared if plain else ():  # only pass@k-aware estimators: nothing to say of the others
        here = A.select_rows(sp, shared_lr=lr)
        below = [
            K.over_seeds(A.select_rows(top["all"], method=m, shared_lr=lr)["pass_at_k"] - at["all"].iloc[0])
            for m in plain
        ]
        resolved = sum(d.resolved and d.mean < 0 for d in below)
        crossed = [A.select_rows(here, method=m)["crossover_k"] for m in plain]
        every = all((c > 0).all() for c in crossed)
        means = [c[c > 0].mean() for c in crossed if (c > 0).any()]  # over the seeds that cross
        # no seed crossing is a result too (a task or lr where RL does not narrow): said, not averaged
        where = (f"falls below the reference's from k = {span(means, 0)} on (mean over the seeds where it "
                 f"does: {'all' if every else 'not all'} of them)" if means
                 else "never falls below the reference's at any k ≤ 256 (no seed crosses)")
        text = (f"At shared lr {lr:g}, {', '.join(style.label(m) for m in plain)} end at pass@1 "
                f"{span([A.select_rows(here, method=m)['final_pass1'].mean() for m in plain])}"
                + (f" (reference {pass1:.3f})" if pass1 is not None else "")
                + f" and pass@{k} {span([d.mean + at['all'].iloc[0] for d in below])} (reference "
                f"{at['all'].iloc[0]:.3f}; "
                f"{'every one' if resolved == len(below) else f'{resolved} of {len(below)}'}"
                f" resolved below it); their pass@k {where}")
        if "minority" in top:
            minority = [A.select_rows(top["minority"], method=m, shared_lr=lr)["pass_at_k"] for m in plain]
            text += (f"; on the minority prompts pass@{k} falls from {at['minority'].iloc[0]:.3f} to "
                     f"{span([x.mean() for x in minority], 2)}")
        out.append(
            K.Claim(f"narrows_at_{lr:g}".replace(".", "_"), text + f" ({here['seed'].nunique()} seeds)", ())
        )
    tabular = A.select_rows(sp, shared_lr=0.0)
    if len(tabular):
        n = int((tabular["crossover_k"] > 0).sum())
        out.append(K.Claim("tabular", (
            f"With shared lr 0 (the tabular policy) {'none' if n == 0 else n} of its {len(tabular)} runs "
            f"{'falls' if n in (0, 1) else 'fall'} below the reference at any k ≤ 256"), ()))
    if shared and "grpo" in methods:
        lr = shared[0]

        def vs_grpo(method, frame, column="pass_at_k"):
            return K.paired(
                A.select_rows(frame, shared_lr=lr), column, {"method": method}, {"method": "grpo"}
            )

        for method in ("pkpo_k4", "unlikeliness"):
            if method not in methods:
                continue
            mine = A.select_rows(top["all"], method=method, shared_lr=lr)["pass_at_k"]
            to_ref = K.over_seeds(mine - at["all"].iloc[0])
            diffs = [vs_grpo(method, top["all"])]
            label = style.label(method)
            text = (f"{label[0].upper()}{label[1:]}, paired with GRPO at shared lr {lr:g}: it "
                    f"{K.change(diffs[0], f'pass@{k}', 4)} (to {A.pm(mine)}; against the reference "
                    f"{K.signed(to_ref)}), and falls below the reference in "
                    f"{int((A.select_rows(sp, method=method, shared_lr=lr)['crossover_k'] > 0).sum())} of "
                    f"{len(mine)} seeds")
            if "minority" in top:
                diffs.append(vs_grpo(method, top["minority"]))
                text += f"; on the minority prompts it {K.change(diffs[-1], f'pass@{k}', 2)}"
            diffs.append(vs_grpo(method, sp, "final_pass1"))
            text += f"; it {K.change(diffs[-1], 'the final pass@1')}"
            for other in shared[1:]:
                cross = A.select_rows(sp, method=method, shared_lr=other)["crossover_k"]
                if (cross > 0).any():
                    k_cross = K.number(K.over_seeds(cross[cross > 0]), 0)
                    text += (f"; at shared lr {other:g} it falls below the reference from k = "
                             f"{k_cross} on ({int((cross > 0).sum())} of {len(cross)} seeds)")
            out.append(K.Claim(method, text, (*diffs, to_ref)))
    return out


def shared_policy(ref, passk):
    sp, note = A.focus(A.trained_passk(passk, "shared_policy"), ("method", "shared_lr"))
    shared = sorted(sp["shared_lr"].unique())
    # all prompts: the share of prompts missed, over the reference's, on a log scale, so that
    # the gain at small k and the loss at large k both show (> 1: the trained policy misses more)
    rows = [("all", "1 − pass@k over the\nreference's, all prompts", True)]
    if (sp["level"] == "minority").any():
        rows.append(("minority", "pass@k, prompts that need\nthe minority strategy", False))
    fig, axes = F.subplots(
        len(rows), max(len(shared), 1), height=1.9 * len(rows) + 0.9, sharex=True, sharey="row"
    )
    order = list(dict.fromkeys(sp["method"]))
    for j, lr_shared in enumerate(shared):
        for i, (level, ylabel, relative) in enumerate(rows):
            ax = axes[i, j]
            r = ref[ref["level"] == level].set_index("k")["pass_at_k"]
            if relative:
                ax.axhline(1, **style.REFERENCE, lw=1, label="reference (step 0)")
                F.ratio_axis(ax)
            else:
                ax.plot(r.index, r.to_numpy(), **style.REFERENCE, lw=1)
            here = sp[(sp["shared_lr"] == lr_shared) & (sp["level"] == level)]
            for n, (method, g) in enumerate(here.groupby("method", sort=False)):
                g = g.assign(pass_at_k=(1 - g["pass_at_k"]) / (1 - g["k"].map(r))) if relative else g
                s = A.over_seeds(g, "k", "pass_at_k")
                # coinciding methods told apart
                marker = style.MARKERS[order.index(method) % len(style.MARKERS)]
                F.line(ax, s.index, s, method, marker=marker, ms=3.2 - 0.3 * n, mfc="none", mew=0.8,
                       lw=1.6 - 0.15 * n, label=style.label(method))
            F.log_ticks(ax, sp["k"])
            if j == 0:
                ax.set_ylabel(ylabel)
        axes[0, j].set_title(F.shared_lr_title(lr_shared))
        axes[-1, j].set_xlabel("k")
    fig.suptitle("Exact pass@k after training, with weights shared per answer strategy type "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    F.legend_below(fig, handles, ncol=min(len(handles), 6))
    return fig


def passk_frontier(ref, passk):
    sp, note = A.focus(
        A.trained_passk(passk, "shared_policy").query("level == 'all'"), ("method", "shared_lr")
    )
    shared = sorted(sp["shared_lr"].unique())
    lo, hi = int(sp["k"].min()), int(sp["k"].max())
    r = ref[ref["level"] == "all"].set_index("k")["pass_at_k"]
    fig, axes = F.subplots(1, max(len(shared), 1), height=2.7, sharex=True, sharey=True)
    for ax, lr_shared in zip(axes[0], shared):
        # the reference's pass@k as a line; its pass@1, far left of every trained point, in the title
        # (a point there would squeeze the trained ones onto each other)
        ax.axhline(r[hi], **style.REFERENCE, lw=1, zorder=1)
        here = sp[sp["shared_lr"] == lr_shared]
        for method, g in here.groupby("method", sort=False):
            x, y = (g[g["k"] == k]["pass_at_k"] for k in (lo, hi))  # [seeds] each
            ci = [1.96 * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0 for v in (x, y)]
            # a hollow shape of its own: an estimator whose point lies on another's still shows
            bars = ax.errorbar(x.mean(), y.mean(), xerr=ci[0], yerr=ci[1], fmt=style.marker(method), ms=5,
                               mfc="none", mew=1.1, capsize=1.5, lw=0.8, label=style.label(method),
                               **F.tag(method))
            F.gid(bars.get_children(), method)
        ax.set_title(F.shared_lr_title(lr_shared))
        ax.set_xlabel(f"exact pass@{lo}, all prompts")
    axes[0, 0].set_ylabel(f"exact pass@{hi}, all prompts")
    fig.suptitle(
        f"pass@{lo} against pass@{hi} after training (mean over seeds, 95% intervals{note});\n"
        f"the reference (step 0): pass@{lo} {r[lo]:.3f}, pass@{hi} {r[hi]:.3f} (dashed): above the line "
        f"a trained policy beats it at k = {hi}",
        fontsize="medium",
    )
    handles = axes[0, 0].get_legend_handles_labels()[0]
    F.legend_below(fig, handles, ncol=min(len(handles), 6))
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "shared_policy": (lambda f: shared_policy(f["reference"], f["passk"]), ('reference', 'passk')),
    "passk_frontier": (lambda f: passk_frontier(f["reference"], f["passk"]), ('reference', 'passk')),
}
