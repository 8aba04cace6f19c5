"""The demo "loss aggregation and lengths": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 10  # its place in the lecture's order; its table is demo10_loss_aggregation
TITLE = "loss aggregation and lengths"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('task', 'runs', 'curves')
ROWS = True

CONFIG = {
    "help": "how answers of different lengths share the loss (Dr. GRPO's length bias); one run per row x "
            "seed, rows as in training (grids allowed)",
    # 20 seeds: the expected length of a wrong answer moves by ~20 tokens, its spread over seeds ~30
    "seeds": list(range(20)),
    "rows": [
        {"method": ["grpo", "dr_grpo"], "lr": 2.0,
         "loss_agg": ["seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean"]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: loss aggregation over answers of {lo}-{hi} tokens (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": [
            "advantage",
            "aggregation",
            "final pass@1",
            "Δ pass@1",
            "wrong answer, tokens",
            "Δ",
            "correct answer, tokens",
            "Δ",
            "mean weight",
        ],
        "note": [
            "wrong (correct) answer, tokens: the exact expected length of a wrong (correct) answer to a",
            "uniformly drawn prompt, {start:.1f} ({start_c:.1f}) before training. Δ: paired over seeds, against",  # noqa: E501
            "seq-mean-token-sum-norm (every answer alike, the lecture's loss). mean weight: an answer's weight",  # noqa: E501
            "averaged uniformly over the task's answers; 1/|o| weighting raises it, so seq-mean-token-mean",
            "also takes a larger step on average.",
        ],
    },
    "zh": {
        "title": "演示 {number}：长度为 {lo}-{hi} 个 token 的回答的损失聚合（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": [
            "优势",
            "聚合方式",
            "训练后 pass@1",
            "pass@1 之差",
            "错误回答的 token 数",
            "之差",
            "正确回答的 token 数",
            "之差",
            "平均权重",
        ],
        "note": [
            "错误（正确）回答的 token 数：对均匀抽取的题目，错误（正确）回答的精确期望长度，训练前为 {start:.1f}（{start_c:.1f}）。",  # noqa: E501
            "差值按种子配对，对照 seq-mean-token-sum-norm（每个回答一样，讲座的损失）。",
            "平均权重：一个回答的权重在任务的全部回答上的均匀平均；按 1/|o| 加权会提高它，",
            "所以 seq-mean-token-mean 平均来说步子也更大。",
        ],
    },
}


def table(frames, L):
    runs = A.experiment_runs(frames, "loss_aggregation", ["length_wrong", "length_correct"])
    if runs is None:
        return None
    curves, task = frames["curves"], frames.get("task")
    start = curves[(curves["experiment"] == "loss_aggregation") & (curves["level"] == "all")
                   & (curves["step"] == 0)]
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, ("method", "loss_agg")):
        base = A.select_rows(runs, **dict(cfg, loss_agg="seq-mean-token-sum-norm"))
        rows.append(
            [
                R.method_name(L, cfg["method"]),
                cfg["loss_agg"],
                A.pm(g["final_pass1"]),
                R.delta(g, base, "final_pass1", 3),
                A.pm(g["length_wrong"], 1),
                R.delta(g, base, "length_wrong", 1),
                A.pm(g["length_correct"], 1),
                R.delta(g, base, "length_correct", 1),
                f"{mean_weight(task, cfg['loss_agg']):.2f}" if task is not None else "",
                other,
            ]
        )
        n.append(g["seed"].nunique())
    head, rows = R.with_others(L["head"], rows, L["other"])
    lengths = (
        task[[c for c in task if c.startswith("length_")]].to_numpy() if task is not None else np.zeros(1)
    )
    note = [line.format(start=start["length_wrong"].mean(), start_c=start["length_correct"].mean())
            for line in L["note"]]
    return (R.title(L, runs.iloc[0], min(n), lo=lengths.min(), hi=lengths.max()),
            [("", head, rows)], note)


def mean_weight(task, loss_agg):
    """An answer's aggregation weight averaged uniformly over the task's answers (task: the task
    table): 1 for the modes that weigh every answer of a batch alike, mean(L)·mean(1/L) for
    seq-mean-token-mean."""
    lengths = task[[c for c in task if c.startswith("length_")]].to_numpy(float)
    return float(lengths.mean() * (1 / lengths).mean()) if loss_agg == "seq-mean-token-mean" else 1.0


def claims(frames):
    """What FINDINGS.md says of this demo, computed: how each aggregation mode moves the expected
    length of a wrong and of a correct answer, and pass@1, against every answer alike (paired)."""
    runs = A.experiment_runs(frames, "loss_aggregation", ["length_wrong", "length_correct"])
    base = "seq-mean-token-sum-norm"
    if runs is None or base not in set(runs["loss_agg"]):
        return []
    curves = frames["curves"]
    start = curves[
        (curves["experiment"] == "loss_aggregation") & (curves["level"] == "all") & (curves["step"] == 0)
    ]
    methods = list(dict.fromkeys(runs["method"]))
    out = []
    for mode, key in (
        ("seq-mean-token-mean", "answer_tokens_averaged"),
        ("token-mean", "batch_tokens_alike"),
    ):
        found = [
            (
                m,
                *(
                    K.paired(runs, col, {"method": m, "loss_agg": mode}, {"method": m, "loss_agg": base})
                    for col in ("length_wrong", "length_correct", "final_pass1")
                ),
            )
            for m in methods
            if len(A.select_rows(runs, method=m, loss_agg=mode))
        ]
        if not found:
            continue
        out.append(
            K.Claim(
                key,
                (
                    f"{mode} against every answer alike ({base}): "
                    + "; ".join(
                        f"with {style.label(m)}'s advantages it "
                        f"{K.change(w, 'the expected length of a wrong answer', 1, ' tokens')}, "
                        f"{K.change(c, 'that of a correct answer', 1, ' tokens')} and "
                        f"{K.change(p, 'the final pass@1', 4)}"
                        for m, w, c, p in found
                    )
                    + f" ({found[0][1].seeds} seeds, paired; before training a wrong answer has "
                    f"{start['length_wrong'].mean():.0f} tokens, a correct one "
                    f"{start['length_correct'].mean():.0f})"
                ),
                tuple(d for _, *ds in found for d in ds),
            )
        )
    task = frames.get("task")
    if task is not None:
        out.append(K.Claim("mean_weight", (
            "averaging an answer's tokens gives an answer a mean weight of "
            f"{mean_weight(task, 'seq-mean-token-mean'):.2f} with these lengths (every answer alike: 1), "
            "so it also takes a larger step on average, by construction"), ()))
    return out


LOSS_AGG_LABELS = {"seq-mean-token-sum-norm": "seq-mean-token-sum-norm (Dr. GRPO; lecture)",
                   "seq-mean-token-mean": "seq-mean-token-mean (GRPO; TRL \"grpo\")",
                   "token-mean": "token-mean (DAPO; verl, TRL default)"}


LOSS_AGG_STYLES = {"seq-mean-token-sum-norm": "-", "seq-mean-token-mean": "--", "token-mean": ":"}


def loss_aggregation(curves):
    from matplotlib.lines import Line2D

    la, note = A.focus(curves[(curves["experiment"] == "loss_aggregation") & (curves["level"] == "all")],
                      ("method", "loss_agg"))
    methods = list(dict.fromkeys(la["method"]))
    modes = [m for m in LOSS_AGG_LABELS if m in set(la["loss_agg"])]
    base_mode = modes[0] if modes else None  # the lecture's: every answer counted once
    fig, axes = F.subplots(2, max(len(methods), 1), height=4.2, sharex=True, sharey="row")
    for j, method in enumerate(methods):
        run = la[la["method"] == method]
        base = run[run["loss_agg"] == base_mode]
        for mode in modes:
            sub = run[run["loss_agg"] == mode]
            look = {"ls": LOSS_AGG_STYLES[mode], "label": LOSS_AGG_LABELS[mode]}
            for i, column in enumerate(("length_wrong", "length_correct")):
                F.line(axes[i, j], *F.by_step(A.paired(sub, base, column), column), method, **look)
        axes[0, j].set_title(style.label(method))
        axes[1, j].set_xlabel("training step")
    start = la[la["step"] == 0].iloc[0]
    axes[0, 0].set_ylabel(f"wrong answer: Δ tokens\n(step 0: {start['length_wrong']:.0f})")
    axes[1, 0].set_ylabel(f"correct answer: Δ tokens\n(step 0: {start['length_correct']:.0f})")
    fig.suptitle("Expected length of an answer, each aggregation against the solid line's\n"
                 f"(all prompts, same seed; mean over seeds, 95% band{note})", fontsize="medium")
    # the legend in grey: the modes are line styles, the colour is the panel's method
    handles = [Line2D([], [], color="0.3", ls=LOSS_AGG_STYLES[m], label=LOSS_AGG_LABELS[m]) for m in modes]
    F.legend_below(fig, handles, ncol=2)  # three long labels: two rows, within the page width
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "loss_aggregation": (lambda f: loss_aggregation(f["curves"]), ('curves',)),
}
