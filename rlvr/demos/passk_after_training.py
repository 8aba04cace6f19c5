"""The demo "pass@k after training": its table (en, zh), its figures.

What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import figures as F
from .. import render as R
from .. import style

TITLE = "pass@k after training"
SWITCHABLE = False
ROWS = False

TEXT = {
    "en": {
        "title": "Demo {number}: exact pass@k before and after training (the rows of demo 3; mean of {n} seeds)",
        "head": ["policy", "lr", "offset"],
    },
    "zh": {
        "title": "演示 {number}：训练前后的精确 pass@k（演示 3 的各行；{n} 个种子的平均）",
        "head": ["策略", "学习率", "格式分"],
    },
}


def table(frames, L):
    ref, passk = frames["reference"], frames.get("passk")
    if passk is None:
        return None
    tr = A.trained_passk(passk, "training")
    ks = [k for k in (1, 8, 64, 256) if k in set(tr["k"])]
    if not len(tr) or not ks:
        return None
    parts = []
    for level in ("very_hard", "all"):
        head = L["head"] + [f"pass@{k}" for k in ks]
        r = ref[ref["level"] == level].set_index("k")["pass_at_k"]
        rows = [[L["reference"], "", ""] + [f"{r[k]:.3f}" for k in ks]]
        sub = tr[tr["level"] == level]
        for (m, lr, off), g in sub.groupby(["method", "lr", "reward_offset"], sort=False):
            means = g.groupby("k")["pass_at_k"].mean()
            rows.append([R.method_name(L, m), f"{lr:g}", f"{off:g}"] + [f"{means[k]:.3f}" for k in ks])
        parts.append((L["levels"][level] + ":", head, rows))
    n = int(tr.groupby(["method", "lr", "reward_offset"])["seed"].nunique().min())
    return (L["title"].format(n=n), parts, [])


def passk_trained(ref, passk):
    tr = A.trained_passk(passk, "training")
    levels = [lv for lv in ("all", "very_hard") if lv in set(tr["level"])]

    def step0(ax, level, first):
        r = ref[ref["level"] == level].sort_values("k")
        ax.plot(r["k"], r["pass_at_k"], **style.REFERENCE, lw=1, label="reference (step 0)" if first else None)

    fig, axes = F.training_grid(tr, levels, "k", "pass_at_k", "exact pass@k, {}", "k", extra=step0)
    F.log_ticks(axes[0, 0], tr["k"])
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "passk_trained": (lambda f: passk_trained(f["reference"], f["passk"]), ('reference', 'passk')),
}
