"""The lecture's four tables (text and Markdown) and the figures, from the aggregated results.

Inputs are pandas DataFrames read from the Parquet files:
reference (reference_passk), gradstats (gradient_stats), runs, curves.
"""

from pathlib import Path

import numpy as np

from .config import LEVELS
from .text import display_width, pad

LABELS = {
    "en": {
        "levels": {"very_hard": "very hard", "hard": "hard", "medium": "medium", "easy": "easy",
                   "all": "all"},
        "methods": {"none": "no baseline (REINFORCE)", "learned": "learned baseline (V per prompt)",
                    "rloo": "leave-one-out (RLOO)", "group": "group mean (no std)",
                    "grpo": "GRPO (divide by group std)"},
        "demo1": "Demo 1: the reference model (before RL), {P} prompts, 4 levels",
        "demo1_head": ["level", "prompts"],
        "demo2": "Demo 2: bias and variance of the gradient estimate (reference model, G = {G}, {n} repetitions each)",
        "demo2_case": "reward offset {off:g}; a {level} prompt (pi(correct) = {p:.2f}, true gradient pi(1-pi) = {g:.4f}):",
        "demo2_head": ["method", "grad mean", "± s.e.", "std", "total variance of the gradient"],
        "demo2_ratio": "GRPO's gradient mean over the true gradient (one prompt per level):",
        "demo2_ratio_row": "pi(correct) = {p:.2f}   {method} / true gradient = {r:.2f} ± {se:.2f}",
        "demo3": "Demo 3: training ({pps} prompts x {G} answers per step, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo3_head": ["method", "lr", "offset", "final pass@1", "by level: very hard / hard / medium / easy"],
        "demo3_ref": "(reference model: pass@1 = {p:.3f})",
        "demo4": "Demo 4: group size G (fixed {A} answers per step; {method}, lr {lr:g}; {steps} steps, {n} seeds)",
        "demo4_head": ["G", "prompts/step", "final pass@1", "by level: very hard / hard / medium / easy", "no-signal groups"],
    },
    "zh": {
        "levels": {"very_hard": "很难", "hard": "难", "medium": "中等", "easy": "容易", "all": "全部"},
        "methods": {"none": "无基线（REINFORCE）", "learned": "学到的基线（每题一个 V）",
                    "rloo": "留一法基线（RLOO）", "group": "组内均值（不除标准差）",
                    "grpo": "GRPO（除以组内标准差）"},
        "demo1": "演示 1：参考模型（RL 之前）——{P} 道题，4 种难度",
        "demo1_head": ["难度", "题数"],
        "demo2": "演示 2：梯度估计的偏差与方差（参考模型，G = {G}，每种情况重复 {n} 次）",
        "demo2_case": "奖励偏移 {off:g}；一道{level}的题（π(正确) = {p:.2f}，真实梯度 π(1-π) = {g:.4f}）：",
        "demo2_head": ["方法", "梯度均值", "± 标准误", "标准差", "整个梯度向量的总方差"],
        "demo2_ratio": "GRPO 的梯度均值与真实梯度之比（各难度各取一道题）：",
        "demo2_ratio_row": "π(正确) = {p:.2f}   {method} / 真实梯度 = {r:.2f} ± {se:.2f}",
        "demo3": "演示 3：训练（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个随机种子的平均 ± 标准误）",
        "demo3_head": ["方法", "学习率", "格式分", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易"],
        "demo3_ref": "（参考模型：pass@1 = {p:.3f}）",
        "demo4": "演示 4：组的大小 G（总样本数固定：每步 {A} 个回答；{method}，学习率 {lr:g}；{steps} 步，{n} 个种子）",
        "demo4_head": ["G", "每步题数", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易", "没有学习信号的组"],
    },
}


def _se(x):
    """Standard error of the mean of x over seeds (0 for a single seed)."""
    x = np.asarray(x, float)
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def _method(L, m):
    return L["methods"].get(m, m)


def _text_table(head, rows):
    """Left-aligned columns, each as wide as its widest cell plus two spaces."""
    widths = [max(display_width(c) for c in col) + 2 for col in zip(head, *rows)]
    lines = [head] + rows
    return ["  " + "".join(pad(c, w) for c, w in zip(line, widths)).rstrip() for line in lines]


def _md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def demo_tables(frames, lang="en"):
    """[(name, title, [(subtitle, head, rows)], footer lines)] for the four demos."""
    L = LABELS[lang]
    demos = []

    ref = frames["reference"]
    ks = sorted(ref["k"].unique())
    head = L["demo1_head"] + [f"pass@{k}" for k in ks]
    rows = []
    for level in list(LEVELS) + ["all"]:
        sub = ref[ref["level"] == level].set_index("k")
        if len(sub):
            rows.append([L["levels"][level], f"{int(sub['n_prompts'].iloc[0])}"]
                        + [f"{sub.loc[k, 'pass_at_k']:.3f}" for k in ks])
    P = int(ref.loc[ref["level"] == "all", "n_prompts"].iloc[0])
    demos.append(("demo1_reference", L["demo1"].format(P=P),
                  [("", head, rows)], []))

    gs = frames["gradstats"]
    parts = []
    first = gs.iloc[0]
    # one block per (offset, probe level) that compares several methods ...
    for (off, level), sub in gs.groupby(["reward_offset", "level"], sort=False):
        if sub["method"].nunique() < 2:
            continue
        r = sub.iloc[0]
        title = L["demo2_case"].format(off=off, level=L["levels"][level], p=r["p_correct"],
                                       g=r["true_grad"])
        rows = [[_method(L, x["method"]), f"{x['grad_mean']:7.4f}", f"{x['grad_mean_se']:.4f}",
                 f"{x['grad_std']:7.4f}", f"{x['total_var']:7.4f}"] for _, x in sub.iterrows()]
        parts.append((title, L["demo2_head"], rows))
    # ... and GRPO's mean over the true gradient on each level it was run on
    ratio = gs[(gs["method"] == "grpo") & (gs["reward_offset"] == 0)].copy()
    ratio["order"] = ratio["level"].map(LEVELS.index)
    ratio = ratio.sort_values("order")
    if len(ratio) > 1:
        rows = [[L["levels"][x["level"]],
                 L["demo2_ratio_row"].format(p=x["p_correct"], method="GRPO", r=x["mean_over_true"],
                                             se=x["grad_mean_se"] / x["true_grad"])]
                for _, x in ratio.iterrows()]
        parts.append((L["demo2_ratio"], [L["demo1_head"][0], ""], rows))
    demos.append(("demo2_gradients", L["demo2"].format(G=int(first["G"]), n=int(first["n_reps"])),
                  parts, []))

    runs = frames["runs"]
    ref_p1 = float(ref.loc[(ref["level"] == "all") & (ref["k"] == 1), "pass_at_k"].iloc[0]) \
        if ((ref["level"] == "all") & (ref["k"] == 1)).any() else float("nan")
    tr = runs[runs["experiment"] == "training"]
    if len(tr):
        rows = []
        for (m, lr, off), sub in tr.groupby(["method", "lr", "reward_offset"], sort=False):
            lv = " / ".join(f"{sub[f'final_pass1_{k}'].mean():.2f}" for k in LEVELS)
            rows.append([_method(L, m), f"{lr:4.1f}", f"{off:3.0f}",
                         f"{sub['final_pass1'].mean():.3f} ± {_se(sub['final_pass1']):.3f}", lv])
        r0 = tr.iloc[0]
        n_seeds = tr.groupby(["method", "lr", "reward_offset"])["seed"].nunique().min()
        demos.append(("demo3_training",
                      L["demo3"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                                        steps=int(r0["steps"]), n=int(n_seeds)),
                      [("", L["demo3_head"], rows)],
                      [L["demo3_ref"].format(p=ref_p1)]))

    gz = runs[runs["experiment"] == "group_size"]
    if len(gz):
        rows = []
        for G, sub in gz.groupby("G", sort=True):
            lv = " / ".join(f"{sub[f'final_pass1_{k}'].mean():.2f}" for k in LEVELS)
            rows.append([f"{G:3d}", f"{int(sub['prompts_per_step'].iloc[0]):3d}",
                         f"{sub['final_pass1'].mean():.3f} ± {_se(sub['final_pass1']):.3f}", lv,
                         f"{sub['zero_signal_frac'].mean() * 100:5.1f}% ± {_se(sub['zero_signal_frac']) * 100:.1f}"])
        r0 = gz.iloc[0]
        demos.append(("demo4_group_size",
                      L["demo4"].format(A=int(r0["G"] * r0["prompts_per_step"]), method=r0["method"],
                                        lr=r0["lr"], steps=int(r0["steps"]),
                                        n=int(gz.groupby("G")["seed"].nunique().min())),
                      [("", L["demo4_head"], rows)], []))
    return demos


def render_text(frames, lang="en"):
    """The four demos as the lecture prints them."""
    return "\n".join(render_text_one(demo) for demo in demo_tables(frames, lang))


def render_markdown(demo):
    _, title, parts, footer = demo
    out = [f"## {title}", ""]
    for subtitle, head, rows in parts:
        if subtitle:
            out += [subtitle, ""]
        out += _md_table(head, rows) + [""]
    return "\n".join(out + footer) + "\n"


def write_tables(frames, outdir, lang="en"):
    """Write each demo as .txt and .md under outdir, plus all.txt; return the paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for demo in demo_tables(frames, lang):
        name = demo[0]
        txt = render_text_one(demo)
        for suffix, body in ((".txt", txt), (".md", render_markdown(demo))):
            path = outdir / f"{name}{suffix}"
            path.write_text(body, encoding="utf-8")
            paths.append(path)
    path = outdir / "all.txt"
    path.write_text(render_text(frames, lang) + "\n", encoding="utf-8")
    return paths + [path]


def render_text_one(demo):
    _, title, parts, footer = demo
    out = ["=" * 78, title, "=" * 78]
    for subtitle, head, rows in parts:
        if subtitle:
            out += ["", subtitle]
        out += _text_table(head, rows)
    return "\n".join(out + ["  " + f for f in footer]) + "\n"
