"""The demo "pass@k after training": its table (en, zh), its figures.

What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 6  # its place in the lecture's order; its table is demo6_passk_after_training
TITLE = "pass@k after training"
SWITCHABLE = True
FRAMES = ('reference', 'passk')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = False
READS = ("training",)  # the demos whose rows its table and figures read (its own: none)

TEXT = {
    "en": {
        "title": "Demo {number}: exact pass@k before and after training (the rows of demo 3; mean of {n} seeds)",  # noqa: E501
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


def claims(frames):
    """What FINDINGS.md says of this demo, computed: at offset 0 no trained policy falls below the
    reference at any k; with an offset, what no baseline and the learned one do to pass@k on the
    very hard prompts (each against the reference's exact value, over seeds)."""
    from .. import claims as K

    ref, passk = frames["reference"], frames.get("passk")
    if passk is None:
        return []
    tr = A.trained_passk(passk, "training")
    r = ref.set_index(["level", "k"])["pass_at_k"]
    means = tr[tr["reward_offset"] == 0].groupby(["method", "lr", "level", "k"])["pass_at_k"].mean()
    below = sum(value < r[level, k] - 1e-9 for (_, _, level, k), value in means.items())
    out = [K.Claim("offset_zero", (
        f"At offset 0, {below} of the {len(means)} (estimator, lr, level, k) cells of demo 3 end below the "
        "reference's pass@k (means over seeds)"), ())]
    level, offsets = "very_hard", sorted(o for o in tr["reward_offset"].unique() if o != 0)
    ks = [k for k in (1, 64, 256) if (level, k) in r.index]
    for method in ("none", "learned"):
        sub = A.select_rows(tr, method=method, level=level, reward_offset=offsets[0] if offsets else None)
        if not offsets or not len(sub) or not ks:
            continue
        diffs = [K.over_seeds(A.select_rows(sub, k=k)["pass_at_k"] - r[level, k]) for k in ks]
        out.append(K.Claim(f"offset_{method}", (
            f"With a reward offset of {offsets[0]:g}, {style.label(method)} moves the very hard prompts' "
            + ", ".join(f"pass@{k} from {r[level, k]:.3f} to {A.pm(A.select_rows(sub, k=k)['pass_at_k'])} "
                        f"({K.signed(d)})" for k, d in zip(ks, diffs))
            + f" ({diffs[0].seeds} seeds, at lr {sub['lr'].iloc[0]:g})"), tuple(diffs)))
    return out


def passk_trained(ref, passk):
    tr = A.trained_passk(passk, "training")
    levels = [lv for lv in ("all", "very_hard") if lv in set(tr["level"])]

    def step0(ax, level, first):
        r = ref[ref["level"] == level].sort_values("k")
        ax.plot(
            r["k"], r["pass_at_k"], **style.REFERENCE, lw=1, label="reference (step 0)" if first else None
        )

    fig, axes = F.training_grid(tr, levels, "k", "pass_at_k", "exact pass@k, {}", "k", extra=step0)
    F.log_ticks(axes[0, 0], tr["k"])
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "passk_trained": (lambda f: passk_trained(f["reference"], f["passk"]), ('reference', 'passk')),
}
