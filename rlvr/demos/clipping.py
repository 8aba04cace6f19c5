"""The demo "clipping and inner updates": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style
from ..text import number

NUMBER = 8  # its place in the lecture's order; its table is demo8_clipping
TITLE = "clipping and inner updates"
SWITCHABLE = True
FRAMES = ('runs', 'curves')  # the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
ROWS = True

CONFIG = {
    "help": "PPO's clipped ratio over μ inner updates per batch (GRPO's objective; DAPO's clip-higher): one "
            "run per row x seed, rows as in training (grids allowed)",
    # 20 seeds: the differences are a few thousandths of pass@1, read as paired differences
    "seeds": list(range(20)),
    "rows": [
        {"method": "grpo", "lr": 2.0, "epochs": [1, 2, 4], "clip_high": [0.2, 0.28, 0.4]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: PPO's clipped ratio over μ updates per batch ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": [
            "μ",
            "ε_low / ε_high",
            "final pass@1",
            "Δ vs μ = 1",
            "entropy (nats)",
            "Δ vs μ = 1",
            "clipped",
        ],
        "note": [
            "Δ: paired over seeds (the same seed draws the same first batch). clipped: share of (answer, update)",  # noqa: E501
            "pairs whose gradient the clip zeroed, over the whole run; the first update of a batch is on-policy",  # noqa: E501
            "and is never clipped, so μ = 1 never clips (by construction) and its rows are one run.",
        ],
    },
    "zh": {
        "title": "演示 {number}：每批 μ 次更新与 PPO 的比率裁剪（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["μ", "ε_low / ε_high", "训练后 pass@1", "与 μ = 1 之差", "熵（nats）", "与 μ = 1 之差", "被裁剪"],  # noqa: E501
        "note": [
            "差值按种子配对（同一种子抽到相同的第一批）。被裁剪：梯度被裁剪置零的（回答, 更新）对所占比例，",
            "整个训练期间；每批的第一次更新是同策略的，从不裁剪，所以 μ = 1 从不裁剪（由构造决定），其各行是同一次运行。",  # noqa: E501
        ],
    },
}


def table(frames, L):
    runs = A.experiment_runs(frames, "clipping", ["entropy"])
    if runs is None:
        return None
    curves = frames["curves"]
    clip = curves[(curves["experiment"] == "clipping") & (curves["level"] == "all") & (curves["step"] > 0)]
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, ("epochs", "clip_low", "clip_high", "clip_c")):
        # μ = 1 never clips: its runs under any clip settings are one run; the first is the baseline
        base = A.select_rows(runs, **dict(cfg, epochs=1, clip_low=None, clip_high=None, clip_c=None))
        base = (
            A.select_rows(base, **{k: base[k].iloc[0] for k in ("clip_low", "clip_high", "clip_c")})
            if len(base)
            else base
        )
        dual = f" / c {cfg['clip_c']:g}" if cfg["clip_c"] else ""
        rows.append(
            [
                f"{cfg['epochs']}",
                f"{number(cfg['clip_low'])} / {number(cfg['clip_high'])}{dual}",
                A.pm(g["final_pass1"]),
                R.delta(g, base, "final_pass1", 4),
                A.pm(g["entropy"]),
                R.delta(g, base, "entropy", 4),
                f"{A.select_rows(clip, **cfg)['clip_frac'].mean() * 100:.1f}%",
                other,
            ]
        )
        n.append(g["seed"].nunique())
    head, rows = R.with_others(L["head"], rows, L["other"])
    return (R.title(L, runs.iloc[0], min(n)), [("", head, rows)], L["note"])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: μ = 1 never clips; more updates per batch
    against one (paired by seed), the share of later updates the clip zeroes, a higher ε_high."""
    runs = A.experiment_runs(frames, "clipping", ["entropy"])
    if runs is None or 1 not in set(runs["epochs"]):
        return []
    curves = frames["curves"]
    c = curves[(curves["experiment"] == "clipping") & (curves["level"] == "all") & (curves["step"] > 0)]
    low, high = runs["clip_high"].min(), runs["clip_high"].max()
    one = {"epochs": 1, "clip_high": low}
    out = [K.Claim("one_update", (
        "With μ = 1 the clip never binds, by construction (the first update of a batch is on-policy: "
        f"ratio 1); here it zeroed {c.loc[c['epochs'] == 1, 'clip_frac'].max():.0%} of the pairs at "
        "every ε_high"), ())]
    mus = sorted(mu for mu in runs["epochs"].unique() if mu > 1)
    if not mus:
        return out
    gains = [(mu, K.paired(runs, "final_pass1", dict(one, epochs=mu), one),
              K.paired(runs, "entropy", dict(one, epochs=mu), one)) for mu in mus]
    out.append(
        K.Claim(
            "more_updates",
            f"At ε_high {number(low)}, against one update per batch, "
            + "; ".join(
                f"μ = {mu} {K.change(p, 'the final pass@1', 4)} and "
                f"{K.change(h, 'the final entropy', 4, ' nats')}"
                for mu, p, h in gains
            )
            + f" ({gains[0][1].seeds} seeds, paired)",
            tuple(d for _, p, h in gains for d in (p, h)),
        )
    )
    # the first update of a batch cannot clip: the share among the later μ − 1 updates
    later = (c[c["epochs"] > 1].groupby(["epochs", "clip_high"])["clip_frac"].mean()
             * [mu / (mu - 1) for mu, _ in c[c["epochs"] > 1].groupby(["epochs", "clip_high"]).groups])
    out.append(
        K.Claim(
            "clip_share",
            (
                f"The clip zeroes {later.min():.1%}–{later.max():.1%} of the (answer, update) pairs after a "
                f"batch's first update, which cannot clip (over the whole run, at μ = "
                f"{', '.join(map(str, mus))} and every ε_high)"
            ),
            (),
        )
    )
    if high > low:
        top = max(mus)
        entropy = K.paired(
            runs, "entropy", {"epochs": top, "clip_high": high}, {"epochs": top, "clip_high": low}
        )
        pass1 = K.paired(
            runs, "final_pass1", {"epochs": top, "clip_high": high}, {"epochs": top, "clip_high": low}
        )
        out.append(
            K.Claim(
                "clip_higher",
                (
                    f"Raising ε_high from {low:g} to {high:g} at μ = {top} "
                    f"{K.change(entropy, 'the final entropy', 4, ' nats')} "
                    f"and {K.change(pass1, 'the final pass@1', 4)} ({entropy.seeds} seeds, paired)"
                ),
                (entropy, pass1),
            )
        )
    return out


CLIP = ["clip_low", "clip_high", "clip_c"]  # a clipping setting (the default config varies ε_high)


def _clip_label(setting, varies):
    lo, hi, c = setting
    same = "clip_low" not in varies and hi == lo  # the symmetric clip: say so
    return ", ".join([f"ε_high = {number(hi)}" + (" = ε_low" if same else "")]
                     + ([f"ε_low = {number(lo)}"] if "clip_low" in varies else [])
                     + ([f"dual clip c = {c:g}" if c else "no dual clip"] if "clip_c" in varies else []))


def clipping(curves):
    from matplotlib.ticker import PercentFormatter

    cl, note = A.focus(curves[(curves["experiment"] == "clipping") & (curves["level"] == "all")],
                      ("method", "lr", "reward_offset", "epochs", *CLIP))
    mus = sorted(mu for mu in cl["epochs"].unique() if mu > 1)
    settings = sorted(set(zip(*(cl[c] for c in CLIP))), key=lambda t: (t[1], t[0], t[2]))
    varies = [c for c in CLIP if cl[c].nunique() > 1]
    runs = list(cl.groupby(["method", "lr", "reward_offset"], sort=False))
    quantities = (("pass1", "Δ exact pass@1\nvs μ = 1, same seed", True),
                  ("entropy", "Δ entropy (nats)\nvs μ = 1, same seed", True),
                  ("clip_frac", "(answer, update) pairs\nthe clip zeroed", False))
    fig, axes = F.subplots(len(quantities), max(len(mus), 1), height=5.2, sharex=True, sharey="row")
    for (method, lr, offset), run in runs:
        # μ = 1 never clips: its rows (one per setting) are one run, the first is the baseline
        base = run[run["epochs"] == 1]
        base = A.select_rows(base, **base[CLIP].iloc[0].to_dict()) if len(base) else base
        name = f" ({style.label(method)}, lr {lr:g}, offset {offset:g})" if len(runs) > 1 else ""
        for j, mu in enumerate(mus):
            for k, setting in enumerate(settings):
                sub = A.select_rows(run, epochs=mu, **dict(zip(CLIP, setting)))
                if not len(sub):
                    continue
                look = F.variant(k, len(settings)) | {"label": _clip_label(setting, varies) + name}
                for i, (value, _, paired) in enumerate(quantities):
                    if paired and not len(base):
                        continue
                    # the clip fraction at step 0 is 0 by definition (nothing updated yet)
                    d = A.paired(sub, base, value) if paired else sub[sub["step"] > 0]
                    s = A.over_seeds(d, "step", value)
                    F.line(axes[i, j], s.index, s, method, **look)
    for j, mu in enumerate(mus):
        axes[0, j].set_title(f"μ = {mu} updates per batch")
        axes[-1, j].set_xlabel("training step")
        for i, (_, _, paired) in enumerate(quantities):
            if paired:
                axes[i, j].axhline(0, color="0.4", lw=0.8, zorder=1, label="μ = 1 (difference 0)")
    for i, (_, ylabel, _) in enumerate(quantities):
        axes[i, 0].set_ylabel(ylabel)
    axes[-1, 0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    methods = ", ".join(dict.fromkeys(style.label(m) for (m, _, _), _ in runs))
    fig.suptitle(f"{methods}: μ updates per batch with the clipped ratio, against one update "
                 f"(mean over seeds, 95% band{note})", fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    F.legend_below(fig, handles, ncol=len(handles))
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "clipping": (lambda f: clipping(f["curves"]), ('curves',)),
}
