"""The demo "shared weights: what keeps pass@k": its table (en, zh), its figure and its claims.

Demo 11's shared-weight policy falls below the reference at large k. Two remedies the field
proposes, on that policy: a KL penalty to the reference (β of k3 in the loss), and the
unlikeliness reward with several correct answers per prompt (He et al. 2025's setting, where it
is meant to keep pass@N). What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 14  # its place in the lecture's order; its table is demo14_narrowing_remedies
TITLE = "shared weights: what keeps pass@k"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('reference', 'runs', 'passk')
ROWS = True
EXPERIMENT = "narrowing_remedies"
KNOBS = ("method", "correct_answers", "kl_beta", "shared_lr")  # what sets a configuration apart here

CONFIG = {
    "help": "demo 11's shared-weight policy with a KL penalty (k3 in the loss) or with several correct "
            "answers per prompt and the unlikeliness reward; one run per row x seed, rows as in training",
    "seeds": list(range(10)),
    "rows": [
        {"method": "grpo", "lr": 2.0, "shared_lr": 0.05, "kl_beta": [0.0, 0.1, 0.3, 1.0],
         "kl_estimator": "k3"},
        {"method": ["grpo", "unlikeliness"], "lr": 2.0, "shared_lr": [0.0, 0.05], "correct_answers": 4},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: shared weights, what keeps pass@k (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["policy", "correct answers", "KL β", "shared lr", "pass@{lo}", "pass@{hi}",
                 "pass@{hi} − reference's", "below the reference from k"],
        "note": [
            "Exact pass@k over all prompts; the reference's own pass@k is exact. KL β: k3 in the loss",
            "(TRL's KL term). 'below the reference from k': the smallest k <= {hi} at which the trained",
            "policy's pass@k is below the reference's (mean over the seeds where it happens).",
        ],
    },
    "zh": {
        "title": "演示 {number}：共享权重下什么能保住 pass@k（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["策略", "正确回答数", "KL β", "共享学习率", "pass@{lo}", "pass@{hi}", "pass@{hi} − 参考模型",
                 "从哪个 k 起低于参考模型"],
        "note": [
            "全部题目上的精确 pass@k；参考模型的 pass@k 也是精确值。KL β：损失中的 k3（TRL 的 KL 项）。",
            "“从哪个 k 起低于参考模型”：训练后策略的 pass@k 低于参考模型的最小 k（k <= {hi}，对出现这种情况的种子取平均）。",  # noqa: E501
        ],
    },
}


def table(frames, L):
    got = A.passk_and_reference(frames, EXPERIMENT)
    if got is None:
        return None
    top, ref, runs = got
    lo, hi = int(top["k"].min()), int(top["k"].max())
    rows = [[L["reference"], "", "", "", f"{ref[lo]:.3f}", f"{ref[hi]:.3f}", "", "", ""]]
    n = []
    for cfg, g, other in A.configurations(runs, KNOBS):
        here = A.select_rows(top, **{c: cfg[c] for c in KNOBS})
        d = K.over_seeds(here[here["k"] == hi]["pass_at_k"].to_numpy() - ref[hi])
        rows.append([R.method_name(L, cfg["method"]), f"{cfg['correct_answers']}", f"{cfg['kl_beta']:g}",
                     f"{cfg['shared_lr']:g}", A.pm(here[here["k"] == lo]["pass_at_k"]),
                     A.pm(here[here["k"] == hi]["pass_at_k"]), K.signed(d, note=False),
                     R.crossover(g, L), other])
        n.append(g["seed"].nunique())
    head = [h.format(lo=lo, hi=hi) for h in L["head"]]
    head, rows = R.with_others(head, rows, L["other"])
    return (R.title(L, runs.iloc[0], min(n)), [("", head, rows)], [x.format(hi=hi) for x in L["note"]])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: whether a KL penalty keeps the shared-weight
    policy from falling below the reference, at what pass@1 cost; whether the unlikeliness reward
    does with several correct answers."""
    got = A.passk_and_reference(frames, EXPERIMENT)
    if got is None:
        return []
    top, ref, runs = got
    hi = int(top["k"].max())
    wide = top[top["k"] == hi].rename(columns={"pass_at_k": "passk_hi"})
    out = []

    def crossing(g):
        crossed = g["crossover_k"][g["crossover_k"] > 0]
        return (f"in none of its {len(g)} seeds" if not len(crossed) else
                f"from k = {K.number(K.over_seeds(crossed), 0)} on ({len(crossed)} of {len(g)} seeds)")

    kl = A.select_rows(runs, method="grpo", correct_answers=1)
    kl = kl[kl["shared_lr"] > 0]
    betas = sorted(kl["kl_beta"].unique())
    if len(betas) > 1 and betas[0] == 0:
        shared = kl["shared_lr"].iloc[0]
        base = {"kl_beta": 0.0}
        parts, diffs = [], []
        for beta in betas[1:]:
            d1 = K.paired(kl, "final_pass1", {"kl_beta": beta}, base)
            dk = K.paired(A.select_rows(wide, method="grpo", correct_answers=1, shared_lr=shared), "passk_hi",
                          {"kl_beta": beta}, base)
            parts.append(f"at β = {beta:g} it falls below {crossing(A.select_rows(kl, kl_beta=beta))}, and "
                         f"against β = 0 it {K.change(d1, 'the final pass@1')} and "
                         f"{K.change(dk, f'pass@{hi}')}")
            diffs += [d1, dk]
        out.append(K.Claim("kl_penalty", (
            f"With shared lr {shared:g}, GRPO without a penalty falls below the reference's pass@k "
            f"{crossing(A.select_rows(kl, kl_beta=0.0))}; with k3 in the loss " + "; ".join(parts)
            + f" ({kl['seed'].nunique()} seeds, paired)"), tuple(diffs)))
    several = runs[(runs["correct_answers"] > 1) & (runs["shared_lr"] > 0)]
    if {"grpo", "unlikeliness"} <= set(several["method"]):
        C, shared = int(several["correct_answers"].iloc[0]), several["shared_lr"].iloc[0]
        where = {"correct_answers": C, "shared_lr": shared}
        this, base = {"method": "unlikeliness"}, {"method": "grpo"}
        dk = K.paired(A.select_rows(wide, **where), "passk_hi", this, base)
        d1 = K.paired(A.select_rows(several, **where), "final_pass1", this, base)
        out.append(K.Claim("several_correct", (
            f"With {C} correct answers per prompt and shared lr {shared:g}, GRPO falls below the reference's "
            f"pass@k {crossing(A.select_rows(several, method='grpo'))} and the unlikeliness reward "
            f"{crossing(A.select_rows(several, method='unlikeliness'))}; against GRPO the unlikeliness "
            f"reward {K.change(dk, f'pass@{hi}')} and {K.change(d1, 'the final pass@1')} ({dk.seeds} seeds, "
            "paired)"),
            (dk, d1)))
    return out


def narrowing_remedies(ref, passk):
    top, note = A.focus(A.trained_passk(passk, EXPERIMENT).query("level == 'all'"), KNOBS)
    r = ref[ref["level"] == "all"].set_index("k")["pass_at_k"]
    panels = [("KL penalty (k3 in the loss), one correct answer", top[top["correct_answers"] == 1]),
              ("several correct answers", top[top["correct_answers"] > 1])]
    panels = [(title, p) for title, p in panels if len(p)]
    fig, axes = F.subplots(1, len(panels), height=2.9, sharex=True, sharey=True)
    for ax, (title, here) in zip(axes[0], panels):
        ax.axhline(1, **style.REFERENCE, lw=1, label="reference (step 0)")
        configs = list(here.groupby(["method", "correct_answers", "kl_beta", "shared_lr"], sort=False))
        for n, ((method, _, beta, shared), g) in enumerate(configs):
            g = g.assign(pass_at_k=(1 - g["pass_at_k"]) / (1 - g["k"].map(r)))
            s = A.over_seeds(g, "k", "pass_at_k")
            kl = f", β {beta:g}" if title.startswith("KL") else ""
            look = F.variant(n, len(configs)) if title.startswith("KL") else \
                {"ls": "-" if shared else ":", "alpha": 1.0}
            F.line(ax, s.index, s, method, marker="o", ms=2, mfc="none", **look,
                   label=f"{style.label(method)}{kl}, {F.shared_lr_title(shared)}")
        F.log_ticks(ax, top["k"])
        F.ratio_axis(ax)
        ax.set_title(title)
        ax.set_xlabel("k")
        ax.legend(loc="upper left", fontsize="x-small")
    axes[0, 0].set_ylabel("1 − pass@k over the\nreference's, all prompts")
    fig.suptitle("Shared weights: the share of prompts missed against the reference's (log; mean over "
                 f"seeds, 95% band{note})", fontsize="medium")
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "narrowing_remedies": (lambda f: narrowing_remedies(f["reference"], f["passk"]), ("reference", "passk")),
}
