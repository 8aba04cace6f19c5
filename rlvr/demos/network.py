"""The demo "the bridge: the toy's predictions on a network": its table (en, zh), figures and claims.

A small transformer writes the toy's answers token by token (rlvr/net/): taught the toy's
reference policy (the base), then trained from it with the toy's estimators and objective per
token. Each prediction below is a paired difference over seeds, computed once from the toy's
own rows (demos 3, 10 and 13) and once from the network's rows, and judged by the same rule:
the network's difference resolved (beyond 3 s.e.) with the toy's sign, resolved against it, or
not resolved. What each name below is: rlvr/demos/__init__.py.
"""

from typing import NamedTuple

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import style
from ..task import LEVEL_KEYS
from . import loss_aggregation, negative_samples, training

NUMBER = 17  # its place in the order; its table is demo17_network
TITLE = "the bridge: the toy's predictions on a network"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('runs', 'curves', 'passk', 'net_base', 'net_curves', 'net_passk')
ROWS = False
READS = ("training", "loss_aggregation", "negative_samples")  # the toy's rows its predictions read
DEFAULT_AGG = "seq-mean-token-sum-norm"


def check_section(section, task, checks):
    """Its section's problems (rlvr.config.Checks): an estimator the network can train (not one
    that needs a learned V or the policy over all answers), group sizes that suit it, no KL in
    the reward for an estimator that reads correctness off it, sizes that fit, no row twice."""
    from ..estimators import ESTIMATORS
    from ..knobs import expand_rows
    from ..net.specs import NET_FIELDS, NET_KNOBS, READ

    if not section["enabled"]:  # off: nothing of it runs, and a small task may not fit its sizes
        return
    model = section["model"]
    checks.need(model["d_model"] % model["n_head"] == 0, "network.model.d_model",
                f"{model['d_model']} must be a multiple of network.model.n_head = {model['n_head']}")
    checks.need(section["prompts_per_step"] <= task["P"], "network.prompts_per_step",
                f"{section['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")
    rows, seen = list(expand_rows(section["rows"], "network", NET_FIELDS)), {}
    checks.G("network.G", section["G"], [row["method"] for row, _ in rows])
    for row, keys in rows:
        method = row["method"]
        checks.method(keys["method"], method)
        needs = set(getattr(ESTIMATORS.get(method), "needs", ())) - set(READ)
        checks.need(not needs, keys["method"], f"{method!r} needs {', '.join(sorted(needs))}, which the "
                    f"network does not give (a learned V, the policy over all answers); allowed: estimators "
                    f"that read only {', '.join(READ)}")
        in_reward = row["kl_beta"] and row["kl_placement"] == "reward"
        checks.need(not (in_reward and "correctness" in getattr(ESTIMATORS.get(method), "needs", ())),
                    keys["row"], f"{method!r} reads each answer's correctness off its reward, which a KL "
                    "penalty in the reward would blur; put the KL in the loss")
        ident = tuple(NET_KNOBS[i].cast(row[f]) for i, f in enumerate(NET_FIELDS))
        checks.need(ident not in seen, keys["row"], f"duplicates {seen.get(ident)} {row}")
        seen.setdefault(ident, keys["row"])


class Prediction(NamedTuple):
    key: str  # the claim's name
    what: dict  # {"en": ..., "zh": ...}: the difference, as the table's first column says it
    toy: object  # frames -> (Difference, where in the toy) or None
    network: object  # frames -> (Difference, which network rows) or None


def _net_final(frames, column, level="all", **row):
    """{seed: (start, final)} of a network row's column in its curves (the row picked by its knobs)."""
    c = A.select_rows(frames["net_curves"], level=level, **row)
    if not len(c) or c[["method", "lr", "optimizer", "loss_agg"]].drop_duplicates().shape[0] != 1:
        return None
    last, first = c[c["step"] == c["step"].max()], c[c["step"] == c["step"].min()]
    return first.set_index("seed")[column], last.set_index("seed")[column]


def _net_passk(frames, k, **row):
    """(start, final) pass@k by seed of a network row."""
    p = A.select_rows(frames["net_passk"], k=k, **row)
    if not len(p):
        return None
    return (p[p["step"] == p["step"].min()].set_index("seed")["pass_at_k"],
            p[p["step"] == p["step"].max()].set_index("seed")["pass_at_k"])


def _adam(method, loss_agg=DEFAULT_AGG, optimizer="adam"):
    return {"method": method, "optimizer": optimizer, "loss_agg": loss_agg, "reward_offset": 0.0}


def _net_rows(frames, **row):
    """The network rows matching row's knobs (at most one lr: the smallest)."""
    runs = A.select_rows(frames["net_curves"], **row)
    if not len(runs):
        return None
    return {**row, "lr": float(runs["lr"].min())}


def _net_change(frames, k, method):
    """Final minus start of exact pass@k (k) for the network row of method (Adam, default loss)."""
    row = _net_rows(frames, **_adam(method))
    got = row and _net_passk(frames, k, **row)
    if not got:
        return None
    start, final = got
    return K.over_seeds((final - start).to_numpy()), f"{style.label(method)}, Adam lr {row['lr']:g}"


def _net_paired(frames, this, base, value):
    """this row minus base row, paired by seed, of value: ("passk", k) or (curve column, level)."""
    a, b = _net_rows(frames, **this), _net_rows(frames, **base)
    if a is None or b is None:
        return None
    kind, arg = value
    get = (lambda row: _net_passk(frames, arg, **row)) if kind == "passk" else \
        (lambda row: _net_final(frames, kind, level=arg, **row))
    x, y = get(a), get(b)
    if x is None or y is None:
        return None
    d = (x[1] - y[1]).dropna()
    return K.over_seeds(d.to_numpy()), (f"{style.label(this['method'])} − {style.label(base['method'])}, "
                                        f"{this['optimizer']} lr {a['lr']:g}")


def _toy_change(frames, experiment, method, k, lr=None):
    """Final exact pass@k of a toy row minus the reference's, over seeds."""
    got = A.passk_and_reference(frames, experiment)
    if got is None:
        return None
    top, ref, runs = got
    here = A.select_rows(top, k=k, method=method, reward_offset=0.0, shared_lr=0.0)
    if lr is None and len(here):
        lr = float(here["lr"].min())
    here = A.select_rows(here, lr=lr)
    if not len(here) or k not in ref.index:
        return None
    return K.over_seeds(here["pass_at_k"].to_numpy() - ref[k]), f"demo {_demo(experiment)}, lr {lr:g}"


def _toy_paired(frames, experiment, this, base, value, shown=""):
    """A toy experiment's this minus base (knob values), paired by seed, of value ("final_pass1"
    of its runs, ("passk", k), or ("length_wrong", level) of its curves' last step)."""
    if value == "final_pass1":
        runs = frames["runs"][frames["runs"]["experiment"] == experiment]
        if not len(A.select_rows(runs, **this)) or not len(A.select_rows(runs, **base)):
            return None
        return K.paired(runs, "final_pass1", this, base), f"demo {_demo(experiment)}{shown}"
    kind, arg = value
    if kind == "passk":
        got = A.passk_and_reference(frames, experiment)
        if got is None:
            return None
        frame = got[0][got[0]["k"] == arg]
        column = "pass_at_k"
    else:
        c = frames["curves"]
        c = c[(c["experiment"] == experiment) & (c["level"] == arg)]
        frame, column = c[c["step"] == c["step"].max()] if len(c) else c, kind
    if not len(A.select_rows(frame, **this)) or not len(A.select_rows(frame, **base)):
        return None
    return K.paired(frame, column, this, base), f"demo {_demo(experiment)}{shown}"


def _demo(name):
    """The number of the toy demo whose rows a prediction reads."""
    return {"training": training, "loss_aggregation": loss_aggregation,
            "negative_samples": negative_samples}[name].NUMBER


def _top_k(frames):
    return int(frames["net_passk"]["k"].max())


PREDICTIONS = (
    Prediction("crossover_pass1", {"en": "GRPO raises pass@1 (final − start)", "zh": "GRPO 提高 pass@1（训练后 − 训练前）"},
               lambda f: _toy_change(f, "training", "grpo", 1, lr=2.0),
               lambda f: _net_change(f, 1, "grpo")),
    Prediction("crossover_passk", {"en": "GRPO lowers pass@{hi} (final − start)",
                                   "zh": "GRPO 降低 pass@{hi}（训练后 − 训练前）"},
               lambda f: _toy_change(f, "training", "grpo", _top_k(f), lr=2.0),
               lambda f: _net_change(f, _top_k(f), "grpo")),
    Prediction("nsr_against_psr", {"en": "NSR ends above PSR at pass@{hi}", "zh": "NSR 的 pass@{hi} 高于 PSR"},
               lambda f: _toy_paired(f, "negative_samples", {"method": "nsr", "lr": 2.0, "shared_lr": 0.0},
                                     {"method": "psr", "lr": 2.0, "shared_lr": 0.0}, ("passk", _top_k(f)),
                                     ", lr 2"),
               lambda f: _net_paired(f, _adam("nsr"), _adam("psr"), ("passk", _top_k(f)))),
    Prediction("grpo_against_reinforce_sgd", {"en": "GRPO ends above REINFORCE at pass@1, SGD",
                                              "zh": "GRPO 的 pass@1 高于 REINFORCE（SGD）"},
               lambda f: _toy_paired(f, "training", {"method": "grpo", "lr": 2.0, "reward_offset": 0.0},
                                     {"method": "none", "lr": 2.0, "reward_offset": 0.0}, "final_pass1",
                                     ", lr 2"),
               lambda f: _net_paired(f, _adam("grpo", optimizer="sgd"), _adam("none", optimizer="sgd"),
                                     ("pass1", "all"))),
    Prediction("grpo_against_reinforce_adam", {"en": "GRPO ends above REINFORCE at pass@1, Adam",
                                               "zh": "GRPO 的 pass@1 高于 REINFORCE（Adam）"},
               lambda f: _toy_paired(f, "training", {"method": "grpo", "lr": 2.0, "reward_offset": 0.0},
                                     {"method": "none", "lr": 2.0, "reward_offset": 0.0}, "final_pass1",
                                     ", lr 2 (SGD: the toy has no Adam)"),
               lambda f: _net_paired(f, _adam("grpo"), _adam("none"), ("pass1", "all"))),
    Prediction("length_wrong", {"en": "per-answer 1/|o| lengthens wrong answers (seq-mean-token-mean − "
                                      "seq-mean-token-sum-norm, expected tokens)",
                                "zh": "按回答 1/|o| 归一化使错误回答变长（seq-mean-token-mean − "
                                      "seq-mean-token-sum-norm，期望长度）"},
               lambda f: _toy_paired(f, "loss_aggregation", {"method": "grpo", "loss_agg": "seq-mean-token-mean"},
                                     {"method": "grpo", "loss_agg": DEFAULT_AGG}, ("length_wrong", "all"),
                                     ", GRPO lr 2"),
               lambda f: _net_paired(f, _adam("grpo", "seq-mean-token-mean"), _adam("grpo"),
                                     ("length_wrong", "all"))),
)


def sign(d):
    return 0 if d is None or not d.resolved else (1 if d.mean > 0 else -1)


def verdict(toy, net, L):
    """The network's verdict on the toy's prediction, by the same 3-s.e. rule on both."""
    if not sign(net):
        return L["unresolved"]
    if sign(toy) == 0:
        return L["toy_none"]
    return L["transfers"] if sign(net) == sign(toy) else L["fails"]


def _verdicts(frames):
    """[(prediction, toy (Difference, where) or None, network (Difference, rows))] where the network's
    results hold the prediction's rows."""
    out = []
    for p in PREDICTIONS:
        net = p.network(frames)
        if net is not None:
            out.append((p, p.toy(frames), net))
    return out


TEXT = {
    "en": {
        "title": "Demo {number}: the toy's predictions on a {layers}-layer transformer (d {d}; base taught the toy's reference; {steps} steps of {pps} prompts x {G} answers; mean ± s.e. over {n} seeds)",  # noqa: E501
        "head": ["prediction", "toy", "toy: where", "network", "network: rows", "verdict"],
        "transfers": "transfers", "fails": "does not transfer", "unresolved": "not resolved on the network",
        "toy_none": "the toy predicts no difference",
        "base_head": ["level", "toy reference P(correct)", "network base P(correct)", "base's mass on the candidates"],
        "note": [
            "Each difference is paired over seeds and counts as resolved beyond 3 standard errors. toy: the",
            "toy's own rows (exact pass@k against its reference; paired rows of one demo). network: final",
            "minus the base (start), or one row minus another, same seeds. A verdict compares the signs.",
        ],
    },
    "zh": {
        "title": "演示 {number}：玩具模型的预测在 {layers} 层 transformer 上是否成立（d {d}；基座学习玩具的参考策略；{steps} 步，每步 {pps} 道题 × {G} 个回答；{n} 个种子的平均 ± 标准误）",  # noqa: E501
        "head": ["预测", "玩具模型", "玩具模型：来源", "网络", "网络：行", "结论"],
        "transfers": "成立", "fails": "不成立", "unresolved": "网络上未分辨", "toy_none": "玩具模型预测无差别",
        "base_head": ["难度", "玩具参考 P(正确)", "网络基座 P(正确)", "基座在候选上的概率"],
        "note": [
            "每个差值按种子配对，超过 3 个标准误才算分辨。玩具模型：它自己的行（精确 pass@k 与参考模型比较；",
            "同一演示的配对行）。网络：训练后减基座（起点），或一行减另一行，种子相同。结论比较两者的符号。",
        ],
    },
}


def table(frames, L):
    c, base = frames["net_curves"], frames["net_base"]
    hi = _top_k(frames)
    rows = []
    for p, toy, net in _verdicts(frames):
        rows.append([p.what[L["lang"]].format(hi=hi), K.signed(toy[0]) if toy else "–", toy[1] if toy else "",
                     K.signed(net[0]), net[1], verdict(toy and toy[0], net[0], L)])
    levels = []
    for i, key in enumerate(LEVEL_KEYS):
        sub = base[base["level"] == i]
        if len(sub):
            levels.append([L["levels"][key], f"{sub['toy_p_correct'].mean():.4f}", f"{sub['p_correct'].mean():.4f}",
                           f"{sub['mass_on_candidates'].mean():.3f}"])
    first = c.iloc[0]
    title = L["title"].format(layers=int(first["n_layer"]), d=int(first["d_model"]), steps=int(first["steps"]),
                              pps=int(first["prompts_per_step"]), G=int(first["G"]), n=c["seed"].nunique())
    return title, [("", L["head"], rows), ("", L["base_head"], levels)], L["note"]


def claims(frames):
    """A sentence per prediction the network's rows test: both differences and the verdict."""
    L = {**TEXT["en"], "lang": "en"}
    hi = _top_k(frames)
    out = []
    for p, toy, net in _verdicts(frames):
        toy_part = f"the toy: {K.signed(toy[0])} ({toy[1]}, {toy[0].seeds} seeds)" if toy else "the toy: no rows"
        out.append(K.Claim(p.key, (f"{p.what['en'].format(hi=hi)}: {toy_part}; the network: {K.signed(net[0])} "
                                   f"({net[1]}, {net[0].seeds} seeds): {verdict(toy and toy[0], net[0], L)}"),
                           tuple(d for d in (toy and toy[0], net[0]) if d is not None)))
    return out


def passk_side_by_side(frames):
    """Exact pass@k against k after training minus before, the toy (left: its rows the predictions
    read) beside the network (right: its Adam rows at the default loss), mean over seeds with a
    95% band; the dashed zero line is the start (the toy's reference, the network's base)."""
    fig, axes = F.subplots(1, 2, height=2.5)  # each its own y: the network moves less
    toy, net = axes[0]
    got = A.passk_and_reference(frames, "training")
    drawn = []
    if got is not None:
        top, ref, _ = got
        for method in ("none", "rloo", "grpo"):
            here = A.select_rows(top, method=method, lr=2.0, reward_offset=0.0, shared_lr=0.0)
            if len(here):
                here = here.assign(change=here["pass_at_k"] - here["k"].map(ref))
                s = A.over_seeds(here, "k", "change")
                F.line(toy, s.index, s, method, label=style.label(method))
                drawn.append(method)
    ns = A.passk_and_reference(frames, "negative_samples")
    if ns is not None:
        top, ref, _ = ns
        for method in ("psr", "nsr"):
            here = A.select_rows(top, method=method, lr=2.0, shared_lr=0.0)
            if len(here):
                here = here.assign(change=here["pass_at_k"] - here["k"].map(ref))
                F.line(toy, here["k"].unique(), A.over_seeds(here, "k", "change"), method, label=style.label(method))
                drawn.append(method)
    p = frames["net_passk"]
    p = p[(p["optimizer"] == "adam") & (p["loss_agg"] == DEFAULT_AGG) & (p["reward_offset"] == 0.0)]
    for method in dict.fromkeys(p["method"]):
        here = p[p["method"] == method]
        here = here[here["lr"] == here["lr"].min()]
        start = here[here["step"] == here["step"].min()]
        final = here[here["step"] == here["step"].max()]
        d = A.paired(final, start, "pass_at_k", on=("seed", "k"))
        F.line(net, d["k"].unique(), A.over_seeds(d, "k", "pass_at_k"), method,
               label=None if method in drawn else style.label(method))
    for ax, title in ((toy, "toy (demos 3, 13; SGD, lr 2)"), (net, "network (Adam)")):
        ax.axhline(0, color="black", ls="--", lw=0.8)
        F.log_ticks(ax, sorted(set(frames["net_passk"]["k"])))
        ax.set_xlabel("k")
        ax.set_title(title)
    toy.set_ylabel("pass@k, final − start")
    handles = [h for ax in (toy, net) for h in ax.get_legend_handles_labels()[0]]
    F.legend_below(fig, handles, ncol=5)
    return fig


def base_against_toy(frames):
    """Each prompt's exact P(correct) under the network's base against the toy reference's, log
    scales, a colour per level; the diagonal is equality."""
    fig, axes = F.subplots(1, 1, height=2.6)
    ax = axes[0][0]
    b = frames["net_base"]
    shades = F.matplotlib().colormaps["viridis"](np.linspace(0, 0.8, len(LEVEL_KEYS)))  # as demo 1's
    for i, (key, colour) in enumerate(zip(LEVEL_KEYS, shades)):
        sub = b[b["level"] == i]
        ax.scatter(sub["toy_p_correct"], sub["p_correct"].clip(lower=1e-6), s=6, color=colour,
                   label=F.LEVEL_LABELS[key])
    lo = 1e-6
    ax.plot([lo, 1], [lo, 1], color="black", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("toy reference: P(correct)")
    ax.set_ylabel("network base: P(correct)")
    F.legend_below(fig, ncol=4)
    return fig


FIGURES = {
    "network_passk": (passk_side_by_side, ("runs", "passk", "net_passk")),
    "network_base": (base_against_toy, ("net_base",)),
}
