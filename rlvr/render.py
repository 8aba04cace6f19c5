"""The lecture's tables (text and Markdown) from the aggregated results: its four demos, plus
dynamic sampling, pass@k after training, the lr sweep and the rest of GRPO's objective.

Inputs are pandas DataFrames read from the Parquet files: reference (reference_passk),
gradstats (gradient_stats), runs, curves, passk (passk_trained), klgrad (kl_gradients), and
task (for the answer lengths, optional).
"""

from pathlib import Path

import numpy as np

from . import io
from .task import LEVEL_KEYS as LEVELS
from .text import display_width, pad

LABELS = {
    "en": {
        "levels": {"very_hard": "very hard", "hard": "hard", "medium": "medium", "easy": "easy",
                   "all": "all"},
        "methods": {"none": "no baseline (REINFORCE)", "learned": "learned baseline (V per prompt)",
                    "rloo": "leave-one-out (RLOO)", "group": "group mean (no std)",
                    "grpo": "GRPO (divide by group std)", "dr_grpo": "Dr. GRPO (mean, no std)",
                    "grpo_unbiased_std": "GRPO, N-1 std (TRL/verl)", "batch_std": "batch std (TRL batch)",
                    "reinforce_pp_baseline": "REINFORCE++ baseline", "oracle": "oracle baseline V = p",
                    "optimal": "optimal constant baseline"},
        "demo1": "Demo 1: the reference model (before RL), {P} prompts, 4 levels",
        "demo1_head": ["level", "prompts"],
        "demo2": "Demo 2: bias and variance of the gradient estimate (reference model, G = {G}, {n} repetitions each)",
        "demo2_case": "reward offset {off:g}; a {level} prompt (pi(correct) = {p:.2f}, true gradient pi(1-pi) = {g:.4f}):",
        "demo2_head": ["method", "grad mean", "± s.e.", "exact mean", "z vs exact", "std", "exact std",
                       "total variance of the gradient", "exact"],
        "demo2_ratio": "GRPO's gradient mean over the true gradient (one prompt per level):",
        "demo2_ratio_row": "pi(correct) = {p:.2f}   {method} / true gradient = {r:.2f} ± {se:.2f}",
        "demo3": "Demo 3: training ({pps} prompts x {G} answers per step, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo3_head": ["method", "lr", "offset", "final pass@1", "by level: very hard / hard / medium / easy"],
        "demo3_ref": "(reference model: pass@1 = {p:.3f})",
        "demo4": "Demo 4: group size G (fixed {A} answers per step; {method}, lr {lr:g}; {steps} steps, {n} seeds)",
        "demo4_head": ["G", "prompts/step", "final pass@1", "by level: very hard / hard / medium / easy",
                       "no-signal groups", "predicted p^G + (1-p)^G"],
        "demo4_rloo": "(at G = 2, GRPO is RLOO: two different rewards get advantages +1 and -1 under both)",
        "demo1_chen": "unbiased estimate from {n} samples per prompt (Chen et al. 2021) against the exact value, all prompts:",
        "demo1_chen_head": ["k", "exact", "estimate ± s.e."],
        "demo5": "Demo 5: dynamic sampling ({method}, lr {lr:g}, {pps} prompts x {G} answers, at most {R} rounds a step; {n} seeds)",
        "demo5_head": ["run", "steps", "answers drawn", "final pass@1", "very hard", "no-signal groups", "batch filled"],
        "demo5_rows": ["dynamic sampling", "plain, equal steps", "plain, equal answers"],
        "demo5_reach": "answers drawn until exact pass@1 (all prompts) first reaches a target (mean ± s.e.; linear between evaluations every {every} steps):",
        "demo5_plain": "plain",
        "demo5_ratio": "plain / dynamic",
        "demo5_note": "(plain, equal answers: read off the plain run of {steps} steps, evaluated every few steps, at the dynamic run's answers, linear in between)",
        "demo6": "Demo 6: exact pass@k before and after training (the rows of demo 3; mean of {n} seeds)",
        "demo6_head": ["policy", "lr", "offset"],
        "reference": "reference model",
        "demo7": "Demo 7: final pass@1 against the learning rate ({pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo7_lr": "lr",
        "demo7_best": "best lr",
        "other": "other settings",
        "demo11": "Demo 11: shared weights per answer strategy; RL narrows pass@k (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo11_head": ["policy", "shared lr", "pass@{lo}", "pass@{hi}", "minority: pass@{lo}", "minority: pass@{hi}",
                        "below the reference from k"],
        "demo11_none": "never",
        "demo11_some": "{k:.0f} ({n} of {N} seeds)",
        "demo11_note": ["logits = the prompt's own logits + a weight per answer type shared by every prompt (shared lr 0: the",
                        "tabular policy). {m} of the {P} prompts need the minority strategy for their correct answer; every",
                        "other prompt's correct answer is of the majority type, and wrong answers are of either. 'below the",
                        "reference from k': the smallest k <= 256 at which the trained policy's exact pass@k over all",
                        "prompts is below the reference's (mean over the seeds where it happens)."],
        "demo12": "Demo 12: several correct answers per prompt; which one training finds (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo12_head": ["policy", "μ", "ε_high", "final pass@1", "correct-answer entropy", "Δ vs GRPO, μ = 1",
                        "at pass@1 = {t:g}", "Δ vs GRPO, μ = 1"],
        "demo12_note": ["{C} correct answers per prompt, each half as likely as the one before at step 0, where p(correct) per",
                        "prompt and so pass@k are demo 1's. Correct-answer entropy: the exact entropy (nats) of π among the correct",
                        "answers, renormalised, mean over all prompts ({h0:.3f} at step 0, {hmax:.3f} if all were alike);",
                        "'at pass@1 = t': read off each run's curve where its exact pass@1 first reaches t (linear between",
                        "evaluations). Δ: paired with the GRPO run (μ = 1) of the same seed."],
        "demo8": "Demo 8: PPO's clipped ratio over μ updates per batch ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo8_head": ["μ", "ε_low / ε_high", "final pass@1", "Δ vs μ = 1", "entropy (nats)", "Δ vs μ = 1",
                       "clipped"],
        "demo8_note": ["Δ: paired over seeds (the same seed draws the same first batch). clipped: share of (answer, update)",
                       "pairs whose gradient the clip zeroed, over the whole run; the first update of a batch is on-policy",
                       "and is never clipped, so μ = 1 never clips (by construction) and its rows are one run."],
        "demo9": "Demo 9: a KL penalty to the reference ({method}, lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo9_head": ["β", "estimator", "placement", "final pass@1", "pass@256", "KL(π‖π_ref)", "entropy"],
        "demo9_none": "none",
        "demo9_grad": "where each estimator's exact expected gradient points, on the policies trained without KL (β = 0 above): cosine and norm ratio against the gradients of KL(π‖π_ref) and KL(π_ref‖π), all prompts at once",
        "demo9_grad_head": ["estimator", "placement", "cos, reverse KL", "|g| / |∇ reverse|", "cos, forward KL",
                            "|g| / |∇ forward|"],
        "demo9_note": ["placement 'loss': β·k(y) added to the loss and differentiated (GRPO, TRL); 'reward': subtracted",
                       "from the reward before the advantages (verl use_kl_in_reward). On-policy, k1 in the loss has zero",
                       "expected gradient, k2 in the loss and k1 in the reward that of KL(π‖π_ref), k3 in the loss that of",
                       "KL(π_ref‖π): exact identities (cosine 1), tested to 1e-12."],
        "demo10": "Demo 10: loss aggregation over answers of {lo}-{hi} tokens (lr {lr:g}, {pps} prompts x {G} answers, {steps} steps; mean ± s.e. over {n} seeds)",
        "demo10_head": ["advantage", "aggregation", "final pass@1", "Δ pass@1", "wrong answer, tokens", "Δ",
                        "correct answer, tokens", "Δ", "mean weight"],
        "demo10_note": ["wrong (correct) answer, tokens: the exact expected length of a wrong (correct) answer to a",
                        "uniformly drawn prompt, {start:.1f} ({start_c:.1f}) before training. Δ: paired over seeds, against",
                        "seq-mean-token-sum-norm (every answer alike, the lecture's loss). mean weight: an answer's weight",
                        "averaged uniformly over the task's answers; 1/|o| weighting raises it, so seq-mean-token-mean",
                        "also takes a larger step on average."],
    },
    "zh": {
        "levels": {"very_hard": "很难", "hard": "难", "medium": "中等", "easy": "容易", "all": "全部"},
        "methods": {"none": "无基线（REINFORCE）", "learned": "学到的基线（每题一个 V）",
                    "rloo": "留一法基线（RLOO）", "group": "组内均值（不除标准差）",
                    "grpo": "GRPO（除以组内标准差）", "dr_grpo": "Dr. GRPO（均值，不除标准差）",
                    "grpo_unbiased_std": "GRPO，N-1 标准差（TRL/verl）", "batch_std": "批内标准差（TRL batch）",
                    "reinforce_pp_baseline": "REINFORCE++ 基线", "oracle": "理想基线 V = p",
                    "optimal": "最优常数基线", "pkpo_k2": "PKPO（k = 2）", "pkpo_k4": "PKPO（k = 4）",
                    "grpo_passk": "GRPO pass@k（verl）", "unlikeliness": "罕见奖励（unlikeliness）"},
        "demo1": "演示 1：参考模型（RL 之前）——{P} 道题，4 种难度",
        "demo1_head": ["难度", "题数"],
        "demo2": "演示 2：梯度估计的偏差与方差（参考模型，G = {G}，每种情况重复 {n} 次）",
        "demo2_case": "奖励偏移 {off:g}；一道{level}的题（π(正确) = {p:.2f}，真实梯度 π(1-π) = {g:.4f}）：",
        "demo2_head": ["方法", "梯度均值", "± 标准误", "精确均值", "z（对精确值）", "标准差", "精确标准差",
                       "整个梯度向量的总方差", "精确值"],
        "demo2_ratio": "GRPO 的梯度均值与真实梯度之比（各难度各取一道题）：",
        "demo2_ratio_row": "π(正确) = {p:.2f}   {method} / 真实梯度 = {r:.2f} ± {se:.2f}",
        "demo3": "演示 3：训练（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个随机种子的平均 ± 标准误）",
        "demo3_head": ["方法", "学习率", "格式分", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易"],
        "demo3_ref": "（参考模型：pass@1 = {p:.3f}）",
        "demo4": "演示 4：组的大小 G（总样本数固定：每步 {A} 个回答；{method}，学习率 {lr:g}；{steps} 步，{n} 个种子）",
        "demo4_head": ["G", "每步题数", "训练后 pass@1", "按难度：很难 / 难 / 中等 / 容易", "没有学习信号的组",
                       "预测 p^G + (1-p)^G"],
        "demo4_rloo": "（G = 2 时 GRPO 就是 RLOO：两个不同的奖励在两者中的优势都是 +1 和 -1）",
        "demo1_chen": "用每题 {n} 个样本的无偏估计（Chen 等 2021）与精确值对比，全部题目：",
        "demo1_chen_head": ["k", "精确值", "估计 ± 标准误"],
        "demo5": "演示 5：动态采样（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，每步最多 {R} 轮；{n} 个种子）",
        "demo5_head": ["运行", "步数", "抽取的回答数", "训练后 pass@1", "很难", "没有学习信号的组", "批次填满率"],
        "demo5_rows": ["动态采样", "普通，相同步数", "普通，相同回答数"],
        "demo5_reach": "精确 pass@1（全部题目）首次达到目标时已抽取的回答数（平均 ± 标准误；评估每 {every} 步一次，其间线性插值）：",
        "demo5_plain": "普通",
        "demo5_ratio": "普通 / 动态",
        "demo5_note": "（普通、相同回答数：从 {steps} 步的普通运行的曲线上，在动态采样的回答数处读出，评估点之间线性插值）",
        "demo6": "演示 6：训练前后的精确 pass@k（演示 3 的各行；{n} 个种子的平均）",
        "demo6_head": ["策略", "学习率", "格式分"],
        "reference": "参考模型",
        "demo7": "演示 7：训练后 pass@1 与学习率（每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo7_lr": "学习率",
        "demo7_best": "最佳学习率",
        "other": "其他设置",
        "demo12": "演示 12：每道题有多个正确回答；训练找到的是哪一个（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo12_head": ["策略", "μ", "ε_high", "训练后 pass@1", "正确回答间的熵", "相对 GRPO（μ = 1）之差",
                        "pass@1 = {t:g} 时", "相对 GRPO（μ = 1）之差"],
        "demo12_note": ["每道题 {C} 个正确回答，第 0 步时每个的概率是前一个的一半；此时每道题的 p(正确) 与 pass@k 都与演示 1 相同。",
                        "正确回答间的熵：π 限制在正确回答上并归一化后的精确熵（nats），对全部题目取平均（第 0 步为 {h0:.3f}，",
                        "全部相等时为 {hmax:.3f}）；“pass@1 = t 时”：在每次运行的曲线上，精确 pass@1 首次达到 t 之处读出",
                        "（评估点之间线性插值）。差：与同一种子的 GRPO（μ = 1）运行配对。"],
        "demo11": "演示 11：按回答策略类型共享的权重；RL 使 pass@k 变窄（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo11_head": ["策略", "共享学习率", "pass@{lo}", "pass@{hi}", "少数题：pass@{lo}", "少数题：pass@{hi}",
                        "从哪个 k 起低于参考模型"],
        "demo11_none": "从不",
        "demo11_some": "{k:.0f}（{N} 个种子中 {n} 个）",
        "demo11_note": ["logits = 每道题自己的 logits + 按回答类型、所有题共享的权重（共享学习率 0：表格策略）。",
                        "{P} 道题中有 {m} 道的正确回答需要少数策略；其余题的正确回答属于多数类型，错误回答两种都有。",
                        "“从哪个 k 起低于参考模型”：训练后策略在全部题目上的精确 pass@k 低于参考模型的最小 k（k <= 256，",
                        "对出现这种情况的种子取平均）。"],
        "demo8": "演示 8：每批 μ 次更新与 PPO 的比率裁剪（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo8_head": ["μ", "ε_low / ε_high", "训练后 pass@1", "与 μ = 1 之差", "熵（nats）", "与 μ = 1 之差", "被裁剪"],
        "demo8_note": ["差值按种子配对（同一种子抽到相同的第一批）。被裁剪：梯度被裁剪置零的（回答, 更新）对所占比例，",
                       "整个训练期间；每批的第一次更新是同策略的，从不裁剪，所以 μ = 1 从不裁剪（由构造决定），其各行是同一次运行。"],
        "demo9": "演示 9：对参考模型的 KL 惩罚（{method}，学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo9_head": ["β", "估计量", "位置", "训练后 pass@1", "pass@256", "KL(π‖π_ref)", "熵"],
        "demo9_none": "无",
        "demo9_grad": "各估计量的精确期望梯度的方向，在不加 KL 训练出的策略上（上表 β = 0）：与 KL(π‖π_ref) 和 KL(π_ref‖π) 梯度的余弦与范数之比，全部题目一起",
        "demo9_grad_head": ["估计量", "位置", "余弦，反向 KL", "|g| / |∇ 反向|", "余弦，正向 KL", "|g| / |∇ 正向|"],
        "demo9_note": ["位置 loss：把 β·k(y) 加进损失并求导（GRPO、TRL）；reward：在计算优势之前从奖励中减去（verl use_kl_in_reward）。",
                       "同策略下，k1 作损失的期望梯度为 0，k2 作损失与 k1 进奖励的期望梯度是 KL(π‖π_ref) 的梯度，",
                       "k3 作损失的是 KL(π_ref‖π) 的梯度：精确的恒等式（余弦为 1），测试精度 1e-12。"],
        "demo10": "演示 10：长度为 {lo}-{hi} 个 token 的回答的损失聚合（学习率 {lr:g}，每步 {pps} 道题 × {G} 个回答，{steps} 步；{n} 个种子的平均 ± 标准误）",
        "demo10_head": ["优势", "聚合方式", "训练后 pass@1", "pass@1 之差", "错误回答的 token 数", "之差",
                        "正确回答的 token 数", "之差", "平均权重"],
        "demo10_note": ["错误（正确）回答的 token 数：对均匀抽取的题目，错误（正确）回答的精确期望长度，训练前为 {start:.1f}（{start_c:.1f}）。",
                        "差值按种子配对，对照 seq-mean-token-sum-norm（每个回答一样，讲座的损失）。",
                        "平均权重：一个回答的权重在任务的全部回答上的均匀平均；按 1/|o| 加权会提高它，",
                        "所以 seq-mean-token-mean 平均来说步子也更大。"],
    },
}


def _se(x):
    """Standard error of the mean of x over seeds (0 for a single seed)."""
    x = np.asarray(x, float)
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def _method(L, m):
    """A method's name in the tables: the language's own, else the label it was registered with."""
    from .estimators import ESTIMATORS

    return L["methods"].get(m) or (ESTIMATORS[m].label if m in ESTIMATORS else m)


def _text_table(head, rows):
    """Left-aligned columns, each as wide as its widest cell plus two spaces."""
    widths = [max(display_width(c) for c in col) + 2 for col in zip(head, *rows)]
    lines = [head] + rows
    return ["  " + "".join(pad(c, w) for c, w in zip(line, widths)).rstrip() for line in lines]


def _md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _pm(x, digits=3):
    """'mean ± s.e.' over seeds."""
    return f"{np.mean(x):.{digits}f} ± {_se(x):.{digits}f}"


def _levels_str(sub):
    return " / ".join(f"{sub[f'final_pass1_{k}'].mean():.2f}" for k in LEVELS)


def demo1(frames, L):
    ref = frames["reference"]
    ks = sorted(ref["k"].unique())
    head = L["demo1_head"] + [f"pass@{k}" for k in ks]
    rows = []
    for level in list(LEVELS) + ["all"]:
        sub = ref[ref["level"] == level].set_index("k")
        if len(sub):
            rows.append([L["levels"][level], f"{int(sub['n_prompts'].iloc[0])}"]
                        + [f"{sub.loc[k, 'pass_at_k']:.3f}" for k in ks])
    parts = [("", head, rows)]
    if "pass_at_k_estimate" in ref:
        every = ref[(ref["level"] == "all") & ref["pass_at_k_estimate"].notna()]
        rows = [[f"{int(x['k'])}", f"{x['pass_at_k']:.4f}",
                 f"{x['pass_at_k_estimate']:.4f} ± {x['pass_at_k_estimate_se']:.4f}"] for _, x in every.iterrows()]
        parts.append((L["demo1_chen"].format(n=int(every["n_samples"].iloc[0])), L["demo1_chen_head"], rows))
    P = int(ref.loc[ref["level"] == "all", "n_prompts"].iloc[0])
    return ("demo1_reference", L["demo1"].format(P=P), parts, [])


def demo2(frames, L):
    gs = frames["gradstats"]
    parts = []
    # one block per (offset, probe level) that compares several methods ...
    for (off, level), sub in gs.groupby(["reward_offset", "level"], sort=False):
        if sub["method"].nunique() < 2:
            continue
        r = sub.iloc[0]
        title = L["demo2_case"].format(off=off, level=L["levels"][level], p=r["p_correct"],
                                       g=r["true_grad"])
        rows = [[_method(L, x["method"]), f"{x['grad_mean']:7.4f}", f"{x['grad_mean_se']:.4f}",
                 f"{x['exact_grad_mean']:7.4f}", f"{x['z_vs_exact']:+.1f}", f"{x['grad_std']:7.4f}",
                 f"{x['exact_grad_std']:7.4f}", f"{x['total_var']:7.4f}", f"{x['exact_total_var']:7.4f}"]
                for _, x in sub.iterrows()]
        parts.append((title, L["demo2_head"], rows))
    # ... and GRPO's mean over the true gradient on each level it was run on
    ratio = gs[(gs["method"] == "grpo") & (gs["reward_offset"] == 0)].copy()
    ratio["order"] = ratio["level"].map(LEVELS.index)
    ratio = ratio.sort_values("order")
    if len(ratio) > 1:
        rows = [[L["levels"][x["level"]],
                 L["demo2_ratio_row"].format(p=x["p_correct"], method="GRPO", r=x["mean_over_true"],
                                             se=x["grad_mean_se"] / x["true_grad"])
                 + f"  (exact {x['exact_mean_over_true']:.2f})"]
                for _, x in ratio.iterrows()]
        parts.append((L["demo2_ratio"], [L["demo1_head"][0], ""], rows))
    first = gs.iloc[0]
    return ("demo2_gradients", L["demo2"].format(G=int(first["G"]), n=int(first["n_reps"])), parts, [])


def demo3(frames, L):
    ref, runs = frames["reference"], frames["runs"]
    tr = runs[runs["experiment"] == "training"]
    if not len(tr):
        return None
    rows = [[_method(L, m), f"{lr:4.1f}", f"{off:3.0f}", _pm(sub["final_pass1"]), _levels_str(sub)]
            for (m, lr, off), sub in tr.groupby(["method", "lr", "reward_offset"], sort=False)]
    r0 = tr.iloc[0]
    n_seeds = tr.groupby(["method", "lr", "reward_offset"])["seed"].nunique().min()
    at1 = ref[(ref["level"] == "all") & (ref["k"] == 1)]["pass_at_k"]
    footer = [L["demo3_ref"].format(p=float(at1.iloc[0]))] if len(at1) else []
    return ("demo3_training", L["demo3"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                                                steps=int(r0["steps"]), n=int(n_seeds)),
            [("", L["demo3_head"], rows)], footer)


def demo4(frames, L):
    runs = frames["runs"]
    gz = runs[runs["experiment"] == "group_size"]
    if not len(gz):
        return None
    rows = [[f"{G:3d}", f"{int(sub['prompts_per_step'].iloc[0]):3d}", _pm(sub["final_pass1"]), _levels_str(sub),
             f"{sub['zero_signal_frac'].mean() * 100:5.1f}% ± {_se(sub['zero_signal_frac']) * 100:.1f}",
             f"{sub['zero_signal_pred_frac'].mean() * 100:5.1f}%"]
            for G, sub in gz.groupby("G", sort=True)]
    r0 = gz.iloc[0]
    # at G = 2 two different rewards give advantages ±1 under GRPO (up to EPS) and under RLOO alike
    footer = [L["demo4_rloo"]] if r0["method"] == "grpo" and 2 in set(gz["G"]) else []
    return ("demo4_group_size",
            L["demo4"].format(A=int(r0["G"] * r0["prompts_per_step"]), method=r0["method"], lr=r0["lr"],
                              steps=int(r0["steps"]), n=int(gz.groupby("G")["seed"].nunique().min())),
            [("", L["demo4_head"], rows)], footer)


def dynamic_comparison(runs, curves):
    """Per seed: the dynamic run's final pass@1 and answers, and the plain run's pass@1 at the
    dynamic run's number of steps and at its number of answers (linear in answers between
    evaluations). Returns a DataFrame with one row per seed."""
    import pandas as pd

    dyn = runs[(runs["experiment"] == "dynamic") & (runs["max_rounds"] > 0)]
    plain = curves[(curves["experiment"] == "dynamic") & (curves["max_rounds"] == 0)]
    rows = []
    for _, d in dyn.iterrows():
        c = plain[(plain["seed"] == d["seed"]) & (plain["level"] == "all")].sort_values("step")
        cv = plain[(plain["seed"] == d["seed"]) & (plain["level"] == "very_hard")].sort_values("step")
        if not len(c):
            continue
        at_steps = c[c["step"] <= d["steps"]].iloc[-1]
        rows.append({"seed": d["seed"], "dyn_pass1": d["final_pass1"],
                     "dyn_very_hard": d["final_pass1_very_hard"], "dyn_answers": d["answers"],
                     "dyn_zero": d["zero_signal_frac"], "dyn_kept": d["kept_frac"],
                     "steps_pass1": at_steps["pass1"], "steps_answers": at_steps["answers"],
                     "steps_very_hard": cv[cv["step"] == at_steps["step"]]["pass1"].iloc[0],
                     "budget_pass1": np.interp(d["answers"], c["answers"], c["pass1"]),
                     "budget_very_hard": np.interp(d["answers"], cv["answers"], cv["pass1"]),
                     "budget_steps": np.interp(d["answers"], c["answers"], c["step"])})
    return pd.DataFrame(rows)


def value_at_pass1(curves, experiment, column, target):
    """Per run of an experiment: column where the run's exact pass@1 (all prompts) first reaches
    target, linear between two evaluations (NaN if it never does): a DataFrame of the identifying
    columns, seed and the value."""
    import pandas as pd

    from .specs import TrainRow

    c = curves[(curves["experiment"] == experiment) & (curves["level"] == "all")]
    keys = [k for k in TrainRow.COLUMNS if k in c] + ["seed"]
    rows = []
    for key, run in c.groupby(keys, sort=False):
        run = run.sort_values("step")
        p, v = run["pass1"].to_numpy(), run[column].to_numpy()
        hit = np.flatnonzero(p >= target)
        if not len(hit):
            value = np.nan
        elif hit[0] == 0:
            value = v[0]
        else:
            i = hit[0]
            value = v[i - 1] + (target - p[i - 1]) / (p[i] - p[i - 1]) * (v[i] - v[i - 1])
        rows.append(dict(zip(keys, key), **{column: value}))
    return pd.DataFrame(rows, columns=keys + [column])


def answers_to_reach(curves, targets):
    """Per (max_rounds, seed) of the dynamic-sampling runs: the answers drawn until exact pass@1 on
    all prompts first reaches each target (value_at_pass1; NaN if never). One row per run."""
    out = None
    for t in targets:
        at = value_at_pass1(curves, "dynamic", "answers", t)[["max_rounds", "seed", "answers"]]
        at = at.rename(columns={"answers": t})
        out = at if out is None else out.merge(at, on=["max_rounds", "seed"])
    return out


def _answers_cell(x):
    x = np.asarray(x, float)
    if np.isnan(x).any():
        return L_NOT_REACHED
    return f"{x.mean():,.0f} ± {_se(x):,.0f}"


L_NOT_REACHED = "-"  # a seed never reached the target
TARGETS = (0.8, 0.9, 0.95)


def demo5(frames, L):
    runs, curves = frames["runs"], frames.get("curves")
    if curves is None or "max_rounds" not in runs or not (runs["experiment"] == "dynamic").any():
        return None
    cmp = dynamic_comparison(runs, curves)
    if not len(cmp):
        return None
    d0 = runs[(runs["experiment"] == "dynamic") & (runs["max_rounds"] > 0)].iloc[0]
    names = L["demo5_rows"]
    rows = [
        [names[0], f"{int(d0['steps'])}", f"{cmp['dyn_answers'].mean():,.0f}", _pm(cmp["dyn_pass1"]),
         _pm(cmp["dyn_very_hard"], 2), f"{cmp['dyn_zero'].mean() * 100:.1f}%", f"{cmp['dyn_kept'].mean() * 100:.0f}%"],
        [names[1], f"{int(d0['steps'])}", f"{cmp['steps_answers'].mean():,.0f}", _pm(cmp["steps_pass1"]),
         _pm(cmp["steps_very_hard"], 2), "", "100%"],
        [names[2], f"{cmp['budget_steps'].mean():.0f}", f"{cmp['dyn_answers'].mean():,.0f}",
         _pm(cmp["budget_pass1"]), _pm(cmp["budget_very_hard"], 2), "", "100%"],
    ]
    parts = [("", L["demo5_head"], rows)]
    reach = answers_to_reach(curves[curves["experiment"] == "dynamic"], TARGETS)
    dyn, plain = reach[reach["max_rounds"] > 0], reach[reach["max_rounds"] == 0]
    if len(dyn) and len(plain):
        ratio = [f"{plain[t].mean() / dyn[t].mean():.2f}"  # '-': a seed never reached it, or all at step 0
                 if dyn[t].notna().all() and plain[t].notna().all() and dyn[t].mean() > 0
                 else L_NOT_REACHED for t in TARGETS]
        parts.append((L["demo5_reach"].format(every=int(curves["step"].diff().abs().replace(0, np.nan).min())),
                      [L["demo5_head"][0]] + [f"pass@1 {t:g}" for t in TARGETS],
                      [[names[0]] + [_answers_cell(dyn[t]) for t in TARGETS],
                       [L["demo5_plain"]] + [_answers_cell(plain[t]) for t in TARGETS],
                       [L["demo5_ratio"]] + ratio]))
    return ("demo5_dynamic_sampling",
            L["demo5"].format(method=d0["method"], lr=d0["lr"], pps=int(d0["prompts_per_step"]), G=int(d0["G"]),
                              R=int(d0["max_rounds"]), n=len(cmp)),
            parts, [L["demo5_note"].format(steps=int(d0["steps"] * d0["max_rounds"]))])


def demo6(frames, L):
    ref, passk = frames["reference"], frames.get("passk")
    if passk is None:
        return None
    tr = trained_passk(passk, "training")
    ks = [k for k in (1, 8, 64, 256) if k in set(tr["k"])]
    if not len(tr) or not ks:
        return None
    parts = []
    for level in ("very_hard", "all"):
        head = L["demo6_head"] + [f"pass@{k}" for k in ks]
        r = ref[ref["level"] == level].set_index("k")["pass_at_k"]
        rows = [[L["reference"], "", ""] + [f"{r[k]:.3f}" for k in ks]]
        sub = tr[tr["level"] == level]
        for (m, lr, off), g in sub.groupby(["method", "lr", "reward_offset"], sort=False):
            means = g.groupby("k")["pass_at_k"].mean()
            rows.append([_method(L, m), f"{lr:g}", f"{off:g}"] + [f"{means[k]:.3f}" for k in ks])
        parts.append((L["levels"][level] + ":", head, rows))
    n = int(tr.groupby(["method", "lr", "reward_offset"])["seed"].nunique().min())
    return ("demo6_passk_after_training", L["demo6"].format(n=n), parts, [])


def lr_sweep_summary(runs):
    """Final pass@1 per (method, lr) of the lr sweep: mean, s.e. over seeds and seed count."""
    sweep = runs[runs["experiment"] == "lr_sweep"]
    return sweep.groupby(["method", "lr"], sort=False)["final_pass1"].agg(
        mean="mean", se=_se, n="count").reset_index()


def demo7(frames, L):
    runs = frames["runs"]
    summary = lr_sweep_summary(runs)
    if not len(summary):
        return None
    methods = list(dict.fromkeys(summary["method"]))
    cell = {(r.method, r.lr): f"{r.mean:.3f} ± {r.se:.3f}" for r in summary.itertuples()}
    rows = [[f"{lr:g}"] + [cell.get((m, lr), "") for m in methods] for lr in sorted(summary["lr"].unique())]
    best = summary.loc[summary.groupby("method", sort=False)["mean"].idxmax()].set_index("method")
    rows.append([L["demo7_best"]] + [f"{best.loc[m, 'lr']:g}: {best.loc[m, 'mean']:.3f} ± {best.loc[m, 'se']:.3f}"
                                     for m in methods])
    r0 = runs[runs["experiment"] == "lr_sweep"].iloc[0]
    return ("demo7_lr_sweep", L["demo7"].format(pps=int(r0["prompts_per_step"]), G=int(r0["G"]),
                                                steps=int(r0["steps"]), n=int(summary["n"].min())),
            [("", [L["demo7_lr"]] + [_method(L, m) for m in methods], rows)], [])


def trained_passk(passk, experiment):
    """The pass@k rows of an experiment's trained policies: without its step-0 ("reference") rows."""
    return passk[(passk["experiment"] == experiment) & (passk["method"] != "reference")]


def select_rows(df, **values):
    """The rows of df whose columns have these values (None: any value)."""
    keep = np.ones(len(df), bool)
    for column, value in values.items():
        if value is not None:
            keep &= (df[column] == value).to_numpy()
    return df[keep]


def _paired(runs, column, baseline):
    """Per row of runs: column minus the same seed's value in the baseline runs (a DataFrame of
    one configuration's seeds): [n]. Seeds without a baseline run are dropped."""
    base = baseline.set_index("seed")[column]
    keep = runs["seed"].isin(base.index)
    return runs.loc[keep, column].to_numpy() - base.loc[runs.loc[keep, "seed"]].to_numpy()


def _final_by_run(curves, experiment, column, level="all"):
    """The last recorded value of a curves column per run: a DataFrame of the identifying
    columns, seed and the value."""
    from .specs import TrainRow

    c = curves[(curves["experiment"] == experiment) & (curves["level"] == level)]
    keys = [k for k in TrainRow.COLUMNS if k in c] + ["seed"]
    return c.loc[c.groupby(keys, sort=False)["step"].idxmax(), keys + [column]]


def _experiment_runs(frames, experiment, columns):
    """The runs of an experiment, with columns of the final curves record joined on (None if the
    results hold none)."""
    from .specs import TrainRow

    runs, curves = frames["runs"], frames.get("curves")
    if curves is None or "epochs" not in runs or not (runs["experiment"] == experiment).any():
        return None
    out = runs[runs["experiment"] == experiment]
    keys = [k for k in TrainRow.COLUMNS if k in out] + ["seed"]
    for column in columns:
        out = out.merge(_final_by_run(curves, experiment, column), on=keys, how="left")
    return out


def _title(L, key, r, n, **more):
    return L[key].format(method=r["method"], lr=r["lr"], pps=int(r["prompts_per_step"]), G=int(r["G"]),
                         steps=int(r["steps"]), n=n, **more)


def _configs(runs, shown):
    """Group the runs of one experiment by configuration (every identifying column): yields
    (cfg dict, its runs, what else sets it apart: "kl_beta 0.3, ..." for the identifying columns
    outside `shown` that vary within the experiment, else "")."""
    from .specs import TrainRow

    keys = [k for k in TrainRow.COLUMNS if k in runs and k != "experiment"]
    others = [k for k in keys if k not in shown and runs[k].nunique() > 1]
    for key, g in runs.groupby(keys, sort=False):
        cfg = dict(zip(keys, key))
        yield cfg, g, ", ".join(f"{k} {cfg[k]:g}" if isinstance(cfg[k], float) else f"{k} {cfg[k]}"
                                for k in others)


def _delta(g, base, column, digits):
    """'Δ ± s.e.' of column against the same seeds of base (one configuration), '' without one."""
    if not len(base):
        return ""
    d = _paired(g, column, base)
    return f"{np.mean(d):+.{digits}f} ± {_se(d):.{digits}f}"


def _with_others(head, rows, label):
    """Add the 'other settings' column where any row has other settings."""
    if any(r[-1] for r in rows):
        return head + [label], rows
    return head, [r[:-1] for r in rows]


def demo8(frames, L):
    runs = _experiment_runs(frames, "clipping", ["entropy"])
    if runs is None:
        return None
    curves = frames["curves"]
    clip = curves[(curves["experiment"] == "clipping") & (curves["level"] == "all") & (curves["step"] > 0)]
    rows, n = [], []
    for cfg, g, other in _configs(runs, ("epochs", "clip_low", "clip_high", "clip_c")):
        # μ = 1 never clips: its runs under any clip settings are one run; the first is the baseline
        base = select_rows(runs, **dict(cfg, epochs=1, clip_low=None, clip_high=None, clip_c=None))
        base = select_rows(base, **{k: base[k].iloc[0] for k in ("clip_low", "clip_high", "clip_c")}) if len(base) else base
        dual = f" / c {cfg['clip_c']:g}" if cfg["clip_c"] else ""
        rows.append([f"{cfg['epochs']}", f"{cfg['clip_low']:g} / {cfg['clip_high']:g}{dual}", _pm(g["final_pass1"]),
                     _delta(g, base, "final_pass1", 4), _pm(g["entropy"]), _delta(g, base, "entropy", 4),
                     f"{select_rows(clip, **cfg)['clip_frac'].mean() * 100:.1f}%", other])
        n.append(g["seed"].nunique())
    head, rows = _with_others(L["demo8_head"], rows, L["other"])
    return ("demo8_clipping", _title(L, "demo8", runs.iloc[0], min(n)), [("", head, rows)], L["demo8_note"])


def demo9(frames, L):
    runs = _experiment_runs(frames, "kl_penalty", ["kl_ref", "entropy"])
    if runs is None:
        return None
    passk, klgrad = frames.get("passk"), frames.get("klgrad")
    top = (select_rows(trained_passk(passk, "kl_penalty"), level="all") if passk is not None else None)
    k_max = int(top["k"].max()) if top is not None and len(top) else None
    rows, n = [], []
    for cfg, g, other in _configs(runs, ("kl_beta", "kl_estimator", "kl_placement")):
        kl = cfg["kl_beta"] > 0
        pk = select_rows(top, **cfg, k=k_max)["pass_at_k"] if k_max else []
        rows.append([f"{cfg['kl_beta']:g}", cfg["kl_estimator"] if kl else L["demo9_none"],
                     cfg["kl_placement"] if kl else "", _pm(g["final_pass1"]), _pm(pk) if len(pk) else "",
                     _pm(g["kl_ref"]), _pm(g["entropy"]), other])
        n.append(g["seed"].nunique())
    head = L["demo9_head"][:4] + [f"pass@{k_max}" if k_max else ""] + L["demo9_head"][5:]
    head, rows = _with_others(head, rows, L["other"])
    parts = [("", head, rows)]
    if klgrad is not None:  # on the policies trained without a penalty (the first such configuration)
        free = klgrad[(klgrad["experiment"] == "kl_penalty") & (klgrad["kl_beta"] == 0)]
        first = next((cfg for cfg, _, _ in _configs(free, ("estimator", "placement", "seed"))), None)
        free = select_rows(free, **first) if first else free
        grad_rows = [[est, place] + [_pm(g[c], 2) for c in ("cos_reverse", "norm_ratio_reverse", "cos_forward",
                                                            "norm_ratio_forward")]
                     for (est, place), g in free.groupby(["estimator", "placement"], sort=False)]
        if grad_rows:
            parts.append((L["demo9_grad"], L["demo9_grad_head"], grad_rows))
    return ("demo9_kl_penalty", _title(L, "demo9", runs.iloc[0], min(n)), parts, L["demo9_note"])


def demo10(frames, L):
    runs = _experiment_runs(frames, "loss_aggregation", ["length_wrong", "length_correct"])
    if runs is None:
        return None
    curves, task = frames["curves"], frames.get("task")
    start = curves[(curves["experiment"] == "loss_aggregation") & (curves["level"] == "all")
                   & (curves["step"] == 0)]
    rows, n = [], []
    for cfg, g, other in _configs(runs, ("method", "loss_agg")):
        base = select_rows(runs, **dict(cfg, loss_agg="seq-mean-token-sum-norm"))
        rows.append([_method(L, cfg["method"]), cfg["loss_agg"], _pm(g["final_pass1"]),
                     _delta(g, base, "final_pass1", 3), _pm(g["length_wrong"], 1), _delta(g, base, "length_wrong", 1),
                     _pm(g["length_correct"], 1), _delta(g, base, "length_correct", 1),
                     f"{mean_weight(task, cfg['loss_agg']):.2f}" if task is not None else "", other])
        n.append(g["seed"].nunique())
    head, rows = _with_others(L["demo10_head"], rows, L["other"])
    lengths = task[[c for c in task if c.startswith("length_")]].to_numpy() if task is not None else np.zeros(1)
    note = [line.format(start=start["length_wrong"].mean(), start_c=start["length_correct"].mean())
            for line in L["demo10_note"]]
    return ("demo10_loss_aggregation", _title(L, "demo10", runs.iloc[0], min(n), lo=lengths.min(), hi=lengths.max()),
            [("", head, rows)], note)


def mean_weight(task, loss_agg):
    """An answer's aggregation weight averaged uniformly over the task's answers (task: the task
    table): 1 for the modes that weigh every answer of a batch alike, mean(L)·mean(1/L) for
    seq-mean-token-mean."""
    lengths = task[[c for c in task if c.startswith("length_")]].to_numpy(float)
    return float(lengths.mean() * (1 / lengths).mean()) if loss_agg == "seq-mean-token-mean" else 1.0


def demo11(frames, L):
    runs, passk, ref = frames["runs"], frames.get("passk"), frames["reference"]
    if passk is None or "shared_lr" not in runs or not (runs["experiment"] == "shared_policy").any():
        return None
    sp = runs[runs["experiment"] == "shared_policy"]
    top = trained_passk(passk, "shared_policy")
    ks = (int(top["k"].min()), int(top["k"].max()))  # pass@k at the smallest and largest k asked for
    has_minority = (top["level"] == "minority").any()

    def at(frame, level, k):
        return select_rows(frame, level=level, k=k)["pass_at_k"]

    blank = ["", ""] if not has_minority else None
    rows = [[L["reference"], ""] + [f"{at(ref, 'all', k).iloc[0]:.3f}" for k in ks]
            + (blank or [f"{at(ref, 'minority', k).iloc[0]:.3f}" for k in ks]) + ["", ""]]
    n = []
    for cfg, g, other in _configs(sp, ("method", "shared_lr")):
        pk = select_rows(top, **{c: cfg[c] for c in cfg})
        crossed = g["crossover_k"][g["crossover_k"] > 0]
        if not len(crossed):
            cross = L["demo11_none"]
        elif len(crossed) == len(g):
            cross = _pm(crossed, 0)
        else:
            cross = L["demo11_some"].format(k=crossed.mean(), n=len(crossed), N=len(g))
        rows.append([_method(L, cfg["method"]), f"{cfg['shared_lr']:g}"] + [_pm(at(pk, "all", k)) for k in ks]
                    + (blank or [_pm(at(pk, "minority", k)) for k in ks]) + [cross, other])
        n.append(g["seed"].nunique())
    head = [h.format(lo=ks[0], hi=ks[1]) for h in L["demo11_head"]]
    head, rows = _with_others(head, rows, L["other"])
    all_ref = select_rows(ref, level="all", k=ks[0])["n_prompts"].iloc[0]
    minority = select_rows(ref, level="minority", k=ks[0])["n_prompts"] if has_minority else []
    note = [line.format(m=int(minority.iloc[0]) if len(minority) else 0, P=int(all_ref)) for line in L["demo11_note"]]
    return ("demo11_shared_policy", _title(L, "demo11", sp.iloc[0], min(n)), [("", head, rows)], note)


def pass1_every_run_reaches(final_pass1):
    """The pass@1 at which demo 12 compares runs: the lowest final pass@1, down to a multiple of 0.05."""
    return np.floor(np.min(final_pass1) * 20) / 20


def demo12(frames, L):
    runs = _experiment_runs(frames, "rank_bias", ["entropy_correct"])
    if runs is None or "correct_answers" not in runs:
        return None
    curves = frames["curves"]
    target = pass1_every_run_reaches(runs["final_pass1"])
    at = value_at_pass1(curves, "rank_bias", "entropy_correct", target).rename(
        columns={"entropy_correct": "entropy_correct_at"})
    runs = runs.merge(at, on=[k for k in at.columns if k != "entropy_correct_at"], how="left")
    rows, n = [], []
    for cfg, g, other in _configs(runs, ("method", "epochs", "clip_high")):
        base = select_rows(runs, **dict(cfg, method="grpo", epochs=1, clip_low=None, clip_high=None, clip_c=None))
        base = select_rows(base, clip_high=base["clip_high"].iloc[0]) if len(base) else base
        rows.append([_method(L, cfg["method"]), f"{cfg['epochs']}", f"{cfg['clip_high']:g}", _pm(g["final_pass1"]),
                     _pm(g["entropy_correct"]), _delta(g, base, "entropy_correct", 3),
                     _pm(g["entropy_correct_at"]), _delta(g, base, "entropy_correct_at", 3), other])
        n.append(g["seed"].nunique())
    head = [h.format(t=target) for h in L["demo12_head"]]
    head, rows = _with_others(head, rows, L["other"])
    C = int(runs["correct_answers"].iloc[0])
    start = curves[(curves["experiment"] == "rank_bias") & (curves["level"] == "all") & (curves["step"] == 0)]
    note = [line.format(C=C, h0=start["entropy_correct"].mean(), hmax=np.log(C)) for line in L["demo12_note"]]
    return ("demo12_rank_bias", _title(L, "demo12", runs.iloc[0], min(n)), [("", head, rows)], note)


DEMOS = (demo1, demo2, demo3, demo4, demo5, demo6, demo7, demo8, demo9, demo10, demo11, demo12)
DEMO_NAMES = ("demo1_reference", "demo2_gradients", "demo3_training", "demo4_group_size",
              "demo5_dynamic_sampling", "demo6_passk_after_training", "demo7_lr_sweep", "demo8_clipping",
              "demo9_kl_penalty", "demo10_loss_aggregation", "demo11_shared_policy", "demo12_rank_bias")


def demo_tables(frames, lang="en"):
    """[(name, title, [(subtitle, head, rows)], footer lines)] for each demo the results hold."""
    L = LABELS[lang]
    return [d for d in (make(frames, L) for make in DEMOS) if d is not None]


def render_text(frames, lang="en"):
    """The demos as the lecture prints them."""
    return "\n".join(render_text_one(demo) for demo in demo_tables(frames, lang))


def render_markdown(demo):
    _, title, parts, footer = demo
    out = [f"## {title}", ""]
    for subtitle, head, rows in parts:
        if subtitle:
            out += [subtitle, ""]
        out += _md_table(head, rows) + [""]
    return "\n".join(out + footer) + "\n"


def write_tables(frames, outdir, lang="en", names=None):
    """Write the named demos (default: every demo the results hold) as .txt and .md under
    outdir, plus all.txt with them; remove the files of demos not named, so that a demo the
    config no longer asks for leaves no table behind. Returns the paths written."""
    demos = {demo[0]: demo for demo in demo_tables(frames, lang)}
    names = list(demos) if names is None else list(names)
    unknown = [n for n in names if n not in DEMO_NAMES]
    if unknown:
        raise ValueError(f"unknown tables {unknown}; the tables are: {', '.join(DEMO_NAMES)}")
    missing = [n for n in names if n not in demos]
    if missing:
        raise ValueError(f"the results hold no data for the tables {missing}")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in DEMO_NAMES:
        for suffix in (".txt", ".md"):
            path = outdir / f"{name}{suffix}"
            if name in names:
                body = render_text_one(demos[name]) if suffix == ".txt" else render_markdown(demos[name])
                io.write_bytes(path, body.encode())
                paths.append(path)
            else:
                path.unlink(missing_ok=True)
    path = outdir / "all.txt"
    io.write_bytes(path, ("\n".join(render_text_one(demos[n]) for n in names) + "\n").encode())
    return paths + [path]


def render_text_one(demo):
    _, title, parts, footer = demo
    out = ["=" * 78, title, "=" * 78]
    for subtitle, head, rows in parts:
        if subtitle:
            out += ["", subtitle]
        out += _text_table(head, rows)
    return "\n".join(out + ["  " + f for f in footer]) + "\n"
