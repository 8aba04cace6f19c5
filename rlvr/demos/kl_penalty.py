"""The demo "KL to the reference": its table (en, zh), its figures and its claims.

What each name below is: rlvr/demos/__init__.py.
"""

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import render as R
from .. import style

NUMBER = 9  # its place in the lecture's order; its table is demo9_kl_penalty
TITLE = "KL to the reference"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('runs', 'curves', 'passk', 'klgrad')
ROWS = True

CONFIG = {
    "help": "a KL penalty to the reference: β x estimator x placement; one run per row x seed, rows as in "
            "training (grids allowed)",
    "seeds": list(range(5)),
    "rows": [
        {"method": "grpo", "lr": 2.0},
        {"method": "grpo", "lr": 2.0, "kl_beta": [0.1, 0.3, 1.0], "kl_estimator": ["k1", "k2", "k3"],
         "kl_placement": ["loss", "reward"]},
    ],
}

TEXT = {
    "en": {
        "title": "Demo {number}: a KL penalty to the reference ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["β", "estimator", "placement", "final pass@1", "pass@256", "KL(π‖π_ref)", "entropy"],
        "none": "none",
        "grad": "where each estimator's exact expected gradient points, on the policies trained without KL (β = 0 above): cosine and norm ratio against the gradients of KL(π‖π_ref) and KL(π_ref‖π), all prompts at once",  # noqa: E501
        "grad_head": [
            "estimator",
            "placement",
            "cos, reverse KL",
            "|g| / |∇ reverse|",
            "cos, forward KL",
            "|g| / |∇ forward|",
        ],
        "note": [
            "placement 'loss': β·k(y) added to the loss and differentiated (GRPO, TRL); 'reward': subtracted",
            "from the reward before the advantages (verl use_kl_in_reward). On-policy, k1 in the loss has zero",  # noqa: E501
            "expected gradient, k2 in the loss and k1 in the reward that of KL(π‖π_ref), k3 in the loss that of",  # noqa: E501
            "KL(π_ref‖π): exact identities (cosine 1), tested to 1e-12.",
        ],
    },
    "zh": {
        "title": "演示 {number}：对参考模型的 KL 惩罚（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["β", "估计量", "位置", "训练后 pass@1", "pass@256", "KL(π‖π_ref)", "熵"],
        "none": "无",
        "grad": "各估计量的精确期望梯度的方向，在不加 KL 训练出的策略上（上表 β = 0）：与 KL(π‖π_ref) 和 KL(π_ref‖π) 梯度的余弦与范数之比，全部题目一起",  # noqa: E501
        "grad_head": ["估计量", "位置", "余弦，反向 KL", "|g| / |∇ 反向|", "余弦，正向 KL", "|g| / |∇ 正向|"],
        "note": [
            "位置 loss：把 β·k(y) 加进损失并求导（GRPO、TRL）；reward：在计算优势之前从奖励中减去（verl use_kl_in_reward）。",  # noqa: E501
            "同策略下，k1 作损失的期望梯度为 0，k2 作损失与 k1 进奖励的期望梯度是 KL(π‖π_ref) 的梯度，",
            "k3 作损失的是 KL(π_ref‖π) 的梯度：精确的恒等式（余弦为 1），测试精度 1e-12。",
        ],
    },
}


def table(frames, L):
    runs = A.experiment_runs(frames, "kl_penalty", ["kl_ref", "entropy"])
    if runs is None:
        return None
    passk, klgrad = frames.get("passk"), frames.get("klgrad")
    top = (A.select_rows(A.trained_passk(passk, "kl_penalty"), level="all") if passk is not None else None)
    k_max = int(top["k"].max()) if top is not None and len(top) else None
    rows, n = [], []
    for cfg, g, other in A.configurations(runs, ("kl_beta", "kl_estimator", "kl_placement")):
        kl = cfg["kl_beta"] > 0
        pk = A.select_rows(top, **cfg, k=k_max)["pass_at_k"] if k_max else []
        rows.append([f"{cfg['kl_beta']:g}", cfg["kl_estimator"] if kl else L["none"],
                     cfg["kl_placement"] if kl else "", A.pm(g["final_pass1"]), A.pm(pk) if len(pk) else "",
                     A.pm(g["kl_ref"]), A.pm(g["entropy"]), other])
        n.append(g["seed"].nunique())
    head = L["head"][:4] + [f"pass@{k_max}" if k_max else ""] + L["head"][5:]
    head, rows = R.with_others(head, rows, L["other"])
    parts = [("", head, rows)]
    if klgrad is not None:  # on the policies trained without a penalty (the first such configuration)
        free = klgrad[(klgrad["experiment"] == "kl_penalty") & (klgrad["kl_beta"] == 0)]
        first = next((cfg for cfg, _, _ in A.configurations(free, ("estimator", "placement", "seed"))), None)
        free = A.select_rows(free, **first) if first else free
        grad_rows = [
            [est, place]
            + [
                A.pm(g[c], 2)
                for c in ("cos_reverse", "norm_ratio_reverse", "cos_forward", "norm_ratio_forward")
            ]
            for (est, place), g in free.groupby(["estimator", "placement"], sort=False)
        ]
        if grad_rows:
            parts.append((L["grad"], L["grad_head"], grad_rows))
    return (R.title(L, runs.iloc[0], min(n)), parts, L["note"])


def claims(frames):
    """What FINDINGS.md says of this demo, computed: where each estimator and placement leaves the KL
    and pass@1 at the largest β; what k1 in the loss does (paired with no penalty); and where the
    exact expected gradients of k2 and k3 in the reward point on the policies trained without KL."""
    runs = A.experiment_runs(frames, "kl_penalty", ["kl_ref"])
    if runs is None or not (runs["kl_beta"] == 0).any():
        return []
    free = {"kl_beta": 0.0}
    out, beta = [], runs["kl_beta"].max()
    top = [(g["kl_ref"], g["final_pass1"], est, place) for (est, place), g in
           A.select_rows(runs, kl_beta=beta).groupby(["kl_estimator", "kl_placement"], sort=False)]
    top.sort(key=lambda x: x[0].mean())
    none = A.select_rows(runs, **free)
    if top:
        out.append(K.Claim("at_largest_beta", (
            f"At β = {beta:g}, the final KL(π‖π_ref) is " + ", ".join(f"{A.pm(kl)} with {est} in the {place}"
                                                                      for kl, _, est, place in top)
            + f", against {A.pm(none['kl_ref'])} without a penalty; the final pass@1 "
            + ", ".join(f"{A.pm(p1)} ({est} in the {place})" for _, p1, est, place in top)
            + f", against {A.pm(none['final_pass1'])} ({len(none)} seeds)"), ()))
    k1 = [(b, K.paired(runs, "kl_ref", {"kl_beta": b, "kl_estimator": "k1", "kl_placement": "loss"}, free),
           K.paired(runs, "final_pass1", {"kl_beta": b, "kl_estimator": "k1", "kl_placement": "loss"}, free))
          for b in sorted(runs["kl_beta"].unique()) if b > 0
          and len(A.select_rows(runs, kl_beta=b, kl_estimator="k1", kl_placement="loss"))]
    if k1 and (runs["epochs"] == 1).all():
        out.append(K.Claim("k1_in_the_loss", (
            "k1 in the loss adds exactly −β to every sampled answer's weight (its slope is 1; one update per "
            "batch, by construction): a constant reward offset after the advantages, with zero expected "
            "gradient on-policy, that acts through its noise as the lecture's offset does. Against no "
            "penalty, " + "; ".join(f"at β = {b:g} it {K.change(kl, 'the final KL')} and "
                                    f"{K.change(p1, 'the final pass@1')}" for b, kl, p1 in k1)
            + f" ({k1[0][1].seeds} seeds, paired)"), tuple(d for _, kl, p1 in k1 for d in (kl, p1))))
    klgrad = frames.get("klgrad")
    if klgrad is not None:
        g = klgrad[(klgrad["experiment"] == "kl_penalty") & (klgrad["kl_beta"] == 0)]
        g = A.select_rows(g, **{k: g[k].iloc[0] for k in ("method", "lr")}) if len(g) else g

        def cos(est, column):
            return A.pm(A.select_rows(g, estimator=est, placement="reward")[column], 2)

        k3 = A.select_rows(g, estimator="k3", placement="reward")
        # |g|/|∇ reverse| over |g|/|∇ forward|: how much longer the forward KL's gradient is
        longer = k3["norm_ratio_reverse"] / k3["norm_ratio_forward"]
        if len(k3) and not np.isfinite(longer).all():  # a policy still the reference's: every gradient 0
            out.append(K.Claim("k3_in_the_reward", (
                "The policies trained without a penalty are still the reference policy where the KL "
                f"gradients are measured ({g['seed'].nunique()} seeds): every KL gradient there is 0, so "
                "their directions are not defined"), ()))
        elif len(k3):
            out.append(K.Claim("k3_in_the_reward", (
                f"On the policies trained without a penalty, the exact expected gradient of k3 in the reward "
                f"has cosine {cos('k3', 'cos_reverse')} with ∇KL(π‖π_ref) and {cos('k3', 'cos_forward')} "
                f"with ∇KL(π_ref‖π); that of k2 in the reward {cos('k2', 'cos_reverse')} with ∇KL(π‖π_ref) "
                f"({g['seed'].nunique()} seeds). There ∇KL(π_ref‖π) is {A.pm(longer, 1)} times as long as "
                f"∇KL(π‖π_ref); k3 in the reward's expected gradient is exactly their difference "
                f"(rlvr.exact.KL_GRADIENT_LAWS)"
                + (", so it points nearly against the forward KL's" if (k3["cos_forward"] < -0.9).all()
                   else "")), ()))
    return out


def kl_penalty(curves):
    kl, note = A.focus(curves[(curves["experiment"] == "kl_penalty") & (curves["level"] == "all")],
                      ("method", "kl_beta", "kl_estimator", "kl_placement"))
    free, pen = kl[kl["kl_beta"] == 0], kl[kl["kl_beta"] > 0]
    placements = [p for p in ("loss", "reward") if p in set(pen["kl_placement"])]
    estimators = sorted(set(pen["kl_estimator"]))
    betas = sorted(pen["kl_beta"].unique())
    several = pen["method"].nunique() > 1
    rows, cols = max(len(placements), 1), max(len(estimators), 1)
    # the KL curves in a grid (placements x estimators), and per placement, in a last column,
    # what the penalty costs: final pass@1 against final KL, one line per estimator over β
    fig, axes = F.subplots(rows, cols + 1, height=4.2)
    for ax in axes[:, :cols].flat:
        ax.sharex(axes[0, 0])
        ax.sharey(axes[0, 0])
    for ax in axes[:, cols]:
        ax.sharex(axes[0, cols])
        ax.sharey(axes[0, cols])
    last = A.final_by_run(kl, "kl_penalty", ["kl_ref", "pass1"])  # each run's final record
    for i, place in enumerate(placements):
        trade = axes[i, cols]
        for _, run in last[last["kl_beta"] == 0].groupby("method", sort=False):
            trade.errorbar(run["kl_ref"].mean(), run["pass1"].mean(), xerr=1.96 * A.se(run["kl_ref"]),
                           yerr=1.96 * A.se(run["pass1"]), fmt="o", ms=4, color="0.6", zorder=3)
        for n, est in enumerate(estimators):
            penalised = (last["kl_placement"] == place) & (last["kl_estimator"] == est)
            here = last[penalised | (last["kl_beta"] == 0)]
            for method, run in here.groupby("method", sort=False):
                s = run.groupby("kl_beta")[["kl_ref", "pass1"]].mean()
                trade.plot(s["kl_ref"], s["pass1"], **F.tag(method),
                           marker=style.MARKERS[n % len(style.MARKERS)], ms=3.5, mfc="white", lw=1,
                           ls=("-", "--", ":")[n % 3],
                           label=est + (f", {style.label(method)}" if several else ""))
        trade.set_title(f"its cost, in the {place}")
        trade.legend(loc="lower right", fontsize="x-small", title="β from 0 (grey) up",
                     title_fontsize="x-small")
        trade.set_ylabel("final pass@1")
    axes[-1, cols].set_xlabel("final KL(π ‖ π_ref)")
    for i, place in enumerate(placements):
        for j, est in enumerate(estimators):
            ax = axes[i, j]
            for method, run in free.groupby("method", sort=False):  # the same run in every panel
                F.line(ax, *F.by_step(run, "kl_ref"), color="0.6", zorder=1,
                      label="β = 0 (no penalty)" + (f", {style.label(method)}" if several else ""))
            here = pen[(pen["kl_placement"] == place) & (pen["kl_estimator"] == est)]
            for (method, beta), run in here.groupby(["method", "kl_beta"], sort=False):
                F.line(ax, *F.by_step(run, "kl_ref"), method, **F.variant(betas.index(beta), len(betas)),
                      label=f"β = {beta:g}" + (f", {style.label(method)}" if several else ""))
            ax.set_title(f"{est} in the {place}")
    for ax in axes[-1, :cols]:
        ax.set_xlabel("training step")
    for ax in axes[:, 0]:
        ax.set_ylabel("exact KL(π ‖ π_ref), nats")
    methods = ", ".join(dict.fromkeys(style.label(m) for m in kl["method"]))
    fig.suptitle(f"{methods} with a KL penalty β·k to the reference (mean over seeds, 95% band{note})",
                 fontsize="medium")
    handles = axes[0, 0].get_legend_handles_labels()[0]
    F.legend_below(fig, handles, ncol=len(handles))
    return fig


# name -> (draw(frames) -> matplotlib Figure, the frames it needs)
FIGURES = {
    "kl_penalty": (lambda f: kl_penalty(f["curves"]), ('curves',)),
}
