"""The demo "the bridge: the toy's predictions on a network": its table (en, zh), figures and claims.

A small transformer writes the toy's answers token by token (rlvr/net/): taught the toy's
reference policy (a base a seed), then trained from it with the toy's estimators and objective
per token. Each prediction below is a paired difference over seeds, computed once from the toy's
own rows (demos 3, 4, 8, 9, 10, 11, 13 and 14) and once from the network's rows, and judged by the
same rule: the network's difference resolved (rlvr/claims.py resolved: a t test over seeds at
α = 0.01, on 5 seeds or more) with the toy's sign, resolved against it, or not resolved. A
network seed is a draw of its base and of its RL run together, so the spread over seeds holds
the base's; with 10 seeds or more the verdict must replicate on two disjoint sets (seed_sets).
What each name below is: rlvr/demos/__init__.py.
"""

from typing import NamedTuple

import numpy as np

from .. import analysis as A
from .. import claims as K
from .. import figures as F
from .. import style
from ..knobs import KNOBS
from ..net.specs import NET_OBJECTIVE
from ..task import LEVEL_KEYS

NUMBER = 17  # its place in the order; its table is demo17_network
TITLE = "the bridge: the toy's predictions on a network"
SWITCHABLE = True
# the results its table, claims and figures read (rlvr/io.py RESULT_FILES)
FRAMES = ('reference', 'runs', 'curves', 'passk', 'net_base', 'net_batches', 'net_curves', 'net_passk',
          'net_prompts')
ROWS = False
DEFAULT_AGG = "seq-mean-token-sum-norm"


def check_section(section, task, checks):
    """Its section's problems (rlvr.config.Checks): an estimator the network can train (not one
    that needs a learned V or the policy over all answers), group sizes that suit it, no KL in
    the reward for an estimator that reads correctness off it, sizes that fit, answers as long
    as the longest candidate, no row twice."""
    from ..estimators import ESTIMATORS
    from ..importance import IS_CORRECTIONS
    from ..knobs import expand_rows
    from ..net.specs import NET_FIELDS, NET_KNOBS, READ, net_budget
    from ..net.tokens import ANSWER_LEN
    from ..objective import Objective, minibatches_problem

    if not section["enabled"]:  # off: nothing of it runs, and a small task may not fit its sizes
        return
    model = section["model"]
    checks.need(model["d_model"] % model["n_head"] == 0, "network.model.d_model",
                f"{model['d_model']} must be a multiple of network.model.n_head = {model['n_head']}")
    checks.need(section["max_len"] >= ANSWER_LEN, "network.max_len",
                f"{section['max_len']} is shorter than the longest candidate ({ANSWER_LEN} tokens with its "
                "EOS, rlvr/net/tokens.py): the sampler could not write it, while the exact pass@k counts it")
    checks.need(section["prompts_per_step"] <= task["P"], "network.prompts_per_step",
                f"{section['prompts_per_step']} exceeds the number of prompts task.P = {task['P']}")
    rows, seen = list(expand_rows(section["rows"], "network", NET_FIELDS)), {}
    checks.G("network.G", section["G"], [row["method"] for row, _ in rows if row["G"] is None])
    for row, keys in rows:
        method = row["method"]
        if row["G"] is not None:  # a row's own group size, blamed on the row's key
            checks.G(keys["G"], row["G"], [method])
        checks.need(row["prompts_per_step"] is None or row["prompts_per_step"] <= task["P"],
                    keys["prompts_per_step"], f"{row['prompts_per_step']} exceeds the number of prompts "
                    f"task.P = {task['P']}")
        row = {**row, **net_budget(section, row)}  # two rows are the same row whoever sets G
        checks.method(keys["method"], method)
        needs = set(getattr(ESTIMATORS.get(method), "needs", ())) - set(READ)
        checks.need(not needs, keys["method"], f"{method!r} needs {', '.join(sorted(needs))}, which the "
                    f"network does not give (a learned V, the policy over all answers); allowed: estimators "
                    f"that read only {', '.join(READ)}")
        # Objective's own tests, as the toy rows' check in rlvr/config.py
        objective = Objective(**{k: KNOBS[k].cast(row[k]) for k in NET_OBJECTIVE})
        for field, why in objective.conflicts():
            checks.need(False, keys[field], why)
        problem = minibatches_problem(row["minibatches"], row["G"] or section["G"])
        checks.need(problem is None, keys["minibatches"], problem)
        checks.need(row["sampler_lag"] <= section["steps"], keys["sampler_lag"],
                    f"{row['sampler_lag']} exceeds network.steps = {section['steps']}: a lag of the steps "
                    "already draws every answer from the start's policy")
        checks.need(not (IS_CORRECTIONS[row["is_correction"]].renormalise and row["is_level"] != "sequence"),
                    keys["is_level"], f"is_correction {row['is_correction']!r} drops whole answers: "
                    "set is_level: sequence")
        in_reward = objective.kl_in_reward
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


# The network's rows are picked by knobs: a change against the base reads the row with the
# largest lr (the strongest push), a comparison of two rows the largest lr both have. The toy's
# rows are the lecture's lr 2, in the demo that shows the effect.


SECTION = "the section's"  # a row's G or prompts_per_step left at the section's (resolved by _rows)


def _section_budget(frame):
    """The section's (G, prompts_per_step): the pair most of frame's rows have."""
    return tuple(int(v) for v in frame.groupby(["G", "prompts_per_step"])["lr"].size().idxmax())


def _rows(frame, **row):
    """The network rows of frame with these knobs (None: any value); G and prompts_per_step at
    SECTION are the section's, the budget most rows share (a row that sets its own is the
    exception: demo 4's question)."""
    for key, value in zip(("G", "prompts_per_step"), _section_budget(frame)):
        if row.get(key) == SECTION:
            row[key] = value
    return A.select_rows(frame, **row)


def _net_lrs(frames, row):
    """The lrs of the network rows with these knobs (sorted)."""
    return sorted(set(_rows(frames["net_passk"], **row)["lr"]))


def _start_final(frame, column, **where):
    """(start, final) of a column by seed, from the first and last recorded step of one row."""
    f = _rows(frame, **where)
    first, last = f[f["step"] == f["step"].min()], f[f["step"] == f["step"].max()]
    return first.set_index("seed")[column], last.set_index("seed")[column]


def _net_value(frames, value, row):
    """(start, final) by seed of value ("pass1" at ("passk", k), or a curve's (column, level)) of
    one network row."""
    kind, arg = value
    if kind == "passk":
        return _start_final(frames["net_passk"], "pass_at_k", k=arg, **row)
    return _start_final(frames["net_curves"], kind, level=arg, **row)


# the knobs a row leaves at their defaults unless a prediction names them: the objective's and
# the sampler's (a row with another μ, clip or sampler lag is another row)
_AT_DEFAULT = (*NET_OBJECTIVE, "sampler_lag", "is_correction", "is_cap")


def _net(method, optimizer="adam", **knobs):
    """A network row's knobs: the method and optimizer, the verifier's rewards with no offset, the
    section's G and prompts a step, and the objective's and the sampler's knobs at their defaults
    unless given."""
    return {"method": method, "optimizer": optimizer, "reward": "verifier", "reward_offset": 0.0,
            "G": SECTION, "prompts_per_step": SECTION,
            **{name: KNOBS[name].spec_default for name in _AT_DEFAULT}, **knobs}


COLLAPSE = 0.5  # a row whose mass on the candidates ends below this share of its start's has collapsed


def _collapsed(frames, *rows):
    """What collapsed among these network rows (knobs with their lr): '<row>: mass on the candidates
    start → final' for each whose mass on the candidates (all prompts, mean over seeds) ends below
    COLLAPSE of its start's, joined; '' where none did. Its difference is then not the toy's
    effect but the collapse's: the verdict names the collapse."""
    out = []
    for row in rows:
        start, final = (v.mean() for v in _net_value(frames, ("mass_on_candidates", "all"), row))
        if final < COLLAPSE * start:
            out.append(f"{_row_label(row)}: mass on the candidates {start:.3f} → {final:.3f}")
    return "; ".join(out)


def _shown(value):
    """A knob's value as the table shows it: a float by %g."""
    return f"{value:g}" if isinstance(value, float) else f"{value}"


def _row_label(row):
    """A network row as the table names it: optimizer, lr, method and the knobs away from _net's."""
    usual = _net(row["method"])
    own = [f"{_KNOB_NAMES.get(k, k)} {_shown(v)}" for k, v in row.items()
           if k not in ("method", "optimizer", "lr") and v != usual.get(k)]
    return " ".join([style.OPTIMIZER_LABELS[row["optimizer"]], f"lr {row['lr']:g}",
                     style.label(row["method"]), *own])


def _net_change(frames, value, row):
    """Final minus start of value for the network row with these knobs at its largest lr: (the
    difference over seeds, the row, what collapsed)."""
    lrs = _net_lrs(frames, row)
    if not lrs:
        return None
    row = {**row, "lr": lrs[-1]}
    start, final = _net_value(frames, value, row)
    return (K.over_seeds((final - start).to_numpy()),
            f"{style.OPTIMIZER_LABELS[row['optimizer']]} lr {lrs[-1]:g}: {style.label(row['method'])}",
            _collapsed(frames, row))


def _net_paired(frames, value, this, base):
    """Final value of this row minus base row, paired by seed, at the largest lr both have."""
    lrs = sorted(set(_net_lrs(frames, this)) & set(_net_lrs(frames, base)))
    if not lrs:
        return None
    this, base = ({**row, "lr": lrs[-1]} for row in (this, base))
    a, b = (_net_value(frames, value, row)[1] for row in (this, base))
    d = (a - b).dropna()
    if this["method"] != base["method"]:
        which = f"{style.label(this['method'])} − {style.label(base['method'])}"
    else:  # the knobs the two rows differ in
        which = f"{style.label(this['method'])}, " + ", ".join(
            f"{_KNOB_NAMES.get(k, k)} {_shown(this[k])} − {_shown(base[k])}"
            for k in this if this[k] != base[k])
    return (K.over_seeds(d.to_numpy()),
            f"{style.OPTIMIZER_LABELS[this['optimizer']]} lr {lrs[-1]:g}: {which}",
            _collapsed(frames, this, base))


_KNOB_NAMES = {"reward_offset": "offset", "epochs": "μ", "prompts_per_step": "prompts", "kl_beta": "β",
               "minibatches": "m"}


def _group_sizes(frames):
    """The smallest and largest G of the GRPO rows (Adam, the default objective) that draw as many
    answers a step as the section: ({"G", "prompts_per_step"} of each), or None with fewer than
    two such sizes."""
    c = frames["net_passk"]
    rows = A.select_rows(c, **{**_net("grpo"), "G": None, "prompts_per_step": None})
    G, n = _section_budget(c)
    sizes = rows.loc[rows["G"] * rows["prompts_per_step"] == G * n, ["G", "prompts_per_step"]]
    sizes = sizes.drop_duplicates().sort_values("G")
    if len(sizes) < 2:
        return None
    return tuple({"G": int(r.G), "prompts_per_step": int(r.prompts_per_step)}
                 for r in sizes.iloc[[0, -1]].itertuples())


def _kl_beta(frames):
    """The largest β of the GRPO rows (Adam) with the default KL (k3, in the loss), or None."""
    c = frames["net_passk"]
    knobs = {**_net("grpo"), "kl_beta": None}
    betas = _rows(c, **knobs)["kl_beta"]
    return float(betas.max()) if (betas > 0).any() else None


def _kl_prediction(frames, value, net):
    """A KL penalty (k3 in the loss, the network's β) against none, GRPO: the toy's (demo 14's
    rows at that β: shared weights, the policy on which the toy's pass@k crossover happens) or the
    network's, per `net`."""
    beta = _kl_beta(frames)
    if beta is None:
        return None
    if net:
        return _net_paired(frames, value, _net("grpo", kl_beta=beta), _net("grpo"))
    k3_loss = {name: KNOBS[name].spec_default for name in ("kl_estimator", "kl_placement")}
    experiment, shared = _KL_TOY
    return _toy_paired(frames, experiment, value, {**shared, "kl_beta": beta, **k3_loss},
                       {**shared, "kl_beta": 0.0, "correct_answers": 1})


def _kl_placement_prediction(frames, net):
    """k3 in the reward (verl b178a3c's algorithm.use_kl_in_reward) against in the loss at the
    network's β, GRPO's pass@1: the network's rows, or the toy's demo 9 rows (tabular) at that β."""
    beta = _kl_beta(frames)
    if beta is None:
        return None
    if net:
        return _net_paired(frames, ("passk", 1), _net("grpo", kl_beta=beta, kl_placement="reward"),
                           _net("grpo", kl_beta=beta))
    experiment, k3 = _KL_PLACEMENT_TOY
    k3 = {**k3, "kl_beta": beta}
    return _toy_paired(frames, experiment, ("passk", 1), {**k3, "kl_placement": "reward"},
                       {**k3, "kl_placement": "loss"})


def _group_prediction(frames, net):
    """Smaller against larger groups at a fixed number of answers a step, GRPO's pass@1: the
    network's rows, or the toy's demo 4 rows at the same two G."""
    sizes = _group_sizes(frames)
    if sizes is None:
        return None
    small, large = sizes
    if net:
        return _net_paired(frames, ("passk", 1), _net("grpo", **small), _net("grpo", **large))
    experiment, grpo = _GROUP_TOY
    return _toy_paired(frames, experiment, ("passk", 1), {**grpo, "G": small["G"]}, {**grpo, "G": large["G"]})


def _toy_change(frames, experiment, k, row):
    """Final exact pass@k of a toy row minus the reference's, over seeds."""
    got = A.passk_and_reference(frames, experiment)
    if got is None or k not in got[1].index:
        return None
    top, ref, _ = got
    here = A.select_rows(top, k=k, **row)
    if not len(here):
        return None
    shared = f", shared lr {row['shared_lr']:g}" if row.get("shared_lr") else ""
    where = f"demo {_demo(experiment)}, lr {row['lr']:g}{shared}"
    return K.over_seeds(here["pass_at_k"].to_numpy() - ref[k]), where


def _toy_paired(frames, experiment, value, this, base):
    """A toy experiment's this row minus base row (knob values), paired by seed: value is
    ("passk", k) or a curve's (column, level) at its last step."""
    kind, arg = value
    if kind == "passk":
        got = A.passk_and_reference(frames, experiment)
        frame, column = (None, None) if got is None else (got[0][got[0]["k"] == arg], "pass_at_k")
    else:
        c = frames["curves"]
        c = c[(c["experiment"] == experiment) & (c["level"] == arg)]
        frame, column = c[c["step"] == c["step"].max()], kind
    if frame is None or not len(A.select_rows(frame, **this)) or not len(A.select_rows(frame, **base)):
        return None
    shared = f", shared lr {this['shared_lr']:g}" if this.get("shared_lr") else ""
    optimizer = this.get("optimizer", "sgd")
    shared += f", {style.OPTIMIZER_LABELS[optimizer]}" if optimizer != "sgd" else ""
    return K.paired(frame, column, this, base), f"demo {_demo(experiment)}, lr {this['lr']:g}{shared}"


def _demo(name):
    """The number of the toy demo (one of READS) whose rows a prediction reads."""
    from importlib import import_module

    return import_module(f"{__package__}.{name}").NUMBER


def _top_k(frames):
    return int(frames["net_passk"]["k"].max())


def _what(p, frames, lang):
    """A prediction's difference in words, with the results' own numbers: {hi}, the largest k of
    pass@k, and {steps}, the network rows' steps."""
    return p.what[lang].format(hi=_top_k(frames), steps=int(frames["net_curves"]["steps"].iloc[0]))


TOP = "the network's largest k"  # a toy pass@k at the k the network's rows go up to


class ToyChange(NamedTuple):
    """A toy row's final exact pass@k minus the reference's (k: a number or TOP)."""
    experiment: str
    k: object
    row: dict  # knob: value

    def __call__(self, frames):
        return _toy_change(frames, self.experiment, _top_k(frames) if self.k == TOP else self.k, self.row)

    @property
    def rows(self):
        return ((self.experiment, self.row),)


class ToyPaired(NamedTuple):
    """A toy experiment's this row minus its base row, paired by seed, both with the knobs of
    `common` and each with its own (`this`, `base`: where they differ): value ("passk", k) with k
    a number or TOP, or a curve's (column, level) at its last step."""
    experiment: str
    value: tuple
    common: dict
    this: dict
    base: dict

    def __call__(self, frames):
        kind, arg = self.value
        value = (kind, _top_k(frames) if arg == TOP else arg)
        return _toy_paired(frames, self.experiment, value, *(knobs for _, knobs in self.rows))

    @property
    def rows(self):
        return tuple((self.experiment, {**self.common, **own}) for own in (self.this, self.base))


class ToyOf(NamedTuple):
    """A toy difference whose rows depend on the network's (its group sizes, its β): fn(frames),
    reading toy rows that rows describe with those knobs left open."""
    fn: object
    rows: tuple  # ((experiment, {knob: value}), ...)

    def __call__(self, frames):
        return self.fn(frames)


TOY_LR = 2.0  # the lecture's lr (SGD): every toy row a prediction reads but Adam's
TOY_ADAM_LR = 0.03  # demo 7's Adam rows: the middle of its grid, where GRPO is still far from its plateau
_SGD = {"lr": TOY_LR, "optimizer": "sgd"}
_TABULAR = {**_SGD, "shared_lr": 0.0}
_GRPO = {"method": "grpo", **_SGD}
# demo 3's GRPO against REINFORCE (no baseline) at offset 0, the toy's side under SGD
_GRPO_AGAINST_NONE = ToyPaired("training", ("passk", 1), {**_SGD, "reward_offset": 0.0},
                               {"method": "grpo"}, {"method": "none"})
_SHARED_GRPO = {**_GRPO, "shared_lr": 0.05}  # demo 11's most shared
_GROUP_TOY = ("group_size", _GRPO)  # at the network's two G
_KL_TOY = ("narrowing_remedies", _SHARED_GRPO)  # at the network's β, and without KL
_KL_PLACEMENT_TOY = ("kl_penalty", {**_GRPO, "kl_estimator": "k3"})  # at the network's β
PREDICTIONS = (
    # Yue et al.: RL raises pass@1 and lowers pass@k at large k; the toy shows it with shared weights
    Prediction("crossover_pass1", {"en": "GRPO's pass@1 − the start's",
                                   "zh": "GRPO 的 pass@1 − 训练前"},
               ToyChange("shared_policy", 1, _SHARED_GRPO),
               lambda f: _net_change(f, ("passk", 1), _net("grpo"))),
    Prediction("crossover_passk", {"en": "GRPO's pass@{hi} − the start's",
                                   "zh": "GRPO 的 pass@{hi} − 训练前"},
               ToyChange("shared_policy", TOP, _SHARED_GRPO),
               lambda f: _net_change(f, ("passk", _top_k(f)), _net("grpo"))),
    # Zhu et al.: training on the wrong answers alone keeps pass@k at large k
    Prediction("nsr_against_psr", {"en": "pass@{hi}: NSR − PSR", "zh": "pass@{hi}：NSR − PSR"},
               ToyPaired("negative_samples", ("passk", TOP), _TABULAR, {"method": "nsr"}, {"method": "psr"}),
               lambda f: _net_paired(f, ("passk", _top_k(f)), _net("nsr"), _net("psr"))),
    # the lecture's demo 3: a baseline and normalisation against none, at equal lr
    Prediction("grpo_against_reinforce_sgd", {"en": "pass@1: GRPO − REINFORCE, SGD",
                                              "zh": "pass@1：GRPO − REINFORCE（SGD）"},
               _GRPO_AGAINST_NONE,
               lambda f: _net_paired(f, ("passk", 1), _net("grpo", "sgd"), _net("none", "sgd"))),
    # ... and under Adam, which rescales each parameter's step: the toy's own Adam rows (demo 7)
    Prediction("grpo_against_reinforce_adam", {"en": "pass@1: GRPO − REINFORCE, Adam",
                                               "zh": "pass@1：GRPO − REINFORCE（Adam）"},
               ToyPaired("lr_sweep", ("passk", 1),
                         {"lr": TOY_ADAM_LR, "optimizer": "adam", "reward_offset": 0.0},
                         {"method": "grpo"}, {"method": "none"}),
               lambda f: _net_paired(f, ("passk", 1), _net("grpo"), _net("none"))),
    # the lecture's demo 3: a reward offset of 5 stalls REINFORCE, which has no baseline to remove it
    Prediction("offset_stalls_reinforce", {"en": "REINFORCE's pass@1: offset 5 − offset 0, SGD",
                                           "zh": "REINFORCE 的 pass@1：格式分 5 − 格式分 0（SGD）"},
               ToyPaired("training", ("passk", 1), {"method": "none", **_SGD},
                         {"reward_offset": 5.0}, {"reward_offset": 0.0}),
               lambda f: _net_paired(f, ("passk", 1), {**_net("none", "sgd"), "reward_offset": 5.0},
                                     _net("none", "sgd"))),
    # the lecture's demo 4: at a fixed number of answers a step, smaller groups (more prompts)
    Prediction("smaller_groups", {"en": "GRPO's pass@1: a smaller G − a larger, at fixed answers a step",
                                  "zh": "GRPO 的 pass@1：每步回答数固定时，较小的 G − 较大的 G"},
               ToyOf(lambda f: _group_prediction(f, net=False), (_GROUP_TOY,)),
               lambda f: _group_prediction(f, net=True)),
    # the objective: a second clipped update on each batch (μ = 2, ε 0.2) against one
    Prediction("more_updates", {"en": "GRPO's pass@1: μ = 2 − μ = 1 updates a batch",
                                "zh": "GRPO 的 pass@1：每批 μ = 2 − μ = 1 次更新"},
               ToyPaired("clipping", ("passk", 1), {**_GRPO, "clip_high": 0.2}, {"epochs": 2}, {"epochs": 1}),
               lambda f: _net_paired(f, ("passk", 1), _net("grpo", epochs=2), _net("grpo"))),
    # the policy loss where π has moved from π_old: CISPO caps a moved answer's weight, PPO zeroes it
    # the toy's effect came at μ = 4, where the clip acts: the network's rows are at μ = 4 too
    Prediction("cispo_against_ppo", {"en": "GRPO's pass@1: CISPO − PPO's clip, μ = 4",
                                     "zh": "GRPO 的 pass@1：CISPO − PPO 裁剪（μ = 4）"},
               # the toy's PPO clips (and CISPO caps) the whole answer's ratio: its log-ratio on one token
               ToyPaired("policy_losses", ("passk", 1),
                         {**_GRPO, "epochs": 4, "minibatches": 1, "ratio_tokens": "one"},
                         {"policy_loss": "cispo"}, {"policy_loss": "ppo"}),
               lambda f: _net_paired(f, ("passk", 1), _net("grpo", epochs=4, policy_loss="cispo"),
                                     _net("grpo", epochs=4))),
    # like with like: 4 updates a batch either way, from 4 passes over its answers or 4 minibatches
    # of them (each answer once): what reusing answers adds beyond the optimizer's steps
    Prediction("reuse_at_equal_updates", {"en": "GRPO's pass@1: μ = 4 passes − m = 4 minibatches (4 "
                                                "updates a batch each)",
                                          "zh": "GRPO 的 pass@1：μ = 4 次遍历 − m = 4 个小批"
                                                "（每批都是 4 次更新）"},
               ToyPaired("policy_losses", ("passk", 1),
                         {**_GRPO, "policy_loss": "ppo", "ratio_tokens": "one"},
                         {"epochs": 4, "minibatches": 1}, {"epochs": 1, "minibatches": 4}),
               lambda f: _net_paired(f, ("passk", 1), _net("grpo", epochs=4), _net("grpo", minibatches=4))),
    # asynchronous training: answers drawn by the policy of some steps before, uncorrected (demo 15)
    Prediction("stale_sampler", {"en": "GRPO's pass@1: a stale sampler, uncorrected − on-policy (the toy: 16 "
                                       "of 300 steps stale; the network: 4 of {steps})",
                                 "zh": "GRPO 的 pass@1：过时的采样器（不校正）− 同策略（玩具模型：落后 300 步"
                                       "中的 16 步；网络：{steps} 步中的 4 步）"},
               ToyPaired("off_policy", ("passk", 1), {**_GRPO, "sampler_noise": 0.0, "is_correction": "none"},
                         {"sampler_lag": 16}, {"sampler_lag": 0}),
               lambda f: _net_paired(f, ("passk", 1), _net("grpo", sampler_lag=4), _net("grpo"))),
    # the KL to the reference (k3 in the loss, GRPO's and TRL's), at the network's β, against none
    Prediction("kl_costs_pass1", {"en": "GRPO's pass@1: a KL penalty (k3, in the loss) − none",
                                  "zh": "GRPO 的 pass@1：KL 惩罚（k3，加在损失上）− 无"},
               ToyOf(lambda f: _kl_prediction(f, ("passk", 1), net=False), (_KL_TOY,)),
               lambda f: _kl_prediction(f, ("passk", 1), net=True)),
    Prediction("kl_keeps_passk", {"en": "GRPO's pass@{hi}: a KL penalty (k3, in the loss) − none",
                                  "zh": "GRPO 的 pass@{hi}：KL 惩罚（k3，加在损失上）− 无"},
               ToyOf(lambda f: _kl_prediction(f, ("passk", _top_k(f)), net=False), (_KL_TOY,)),
               lambda f: _kl_prediction(f, ("passk", _top_k(f)), net=True)),
    Prediction("kl_in_the_reward", {"en": "GRPO's pass@1: the KL penalty (k3) in the reward − in the loss",
                                    "zh": "GRPO 的 pass@1：KL 惩罚（k3）加在奖励上 − 加在损失上"},
               ToyOf(lambda f: _kl_placement_prediction(f, net=False), (_KL_PLACEMENT_TOY,)),
               lambda f: _kl_placement_prediction(f, net=True)),
    # Dr. GRPO: per-answer 1/|o| weighting lengthens wrong answers
    # the network's wrong answers are every wrong string it draws, off the candidates too (sampled at
    # each record); the toy's are its wrong candidates, all it has
    Prediction("length_wrong", {"en": "GRPO, a wrong answer's expected tokens: seq-mean-token-mean − "
                                      "seq-mean-token-sum-norm (the network: every wrong string, sampled)",
                                "zh": "GRPO，错误回答的期望长度：seq-mean-token-mean − "
                                      "seq-mean-token-sum-norm（网络：采样的所有错误字符串）"},
               ToyPaired("loss_aggregation", ("length_wrong", "all"), _GRPO,
                         {"loss_agg": "seq-mean-token-mean"}, {"loss_agg": DEFAULT_AGG}),
               lambda f: _net_paired(f, ("length_wrong_all", "all"),
                                     _net("grpo", loss_agg="seq-mean-token-mean"), _net("grpo"))),
)


# every claim the demo makes, by key: a sentence per prediction, and two of the network alone
CLAIMS = ("base_levels", "base_fit", *(p.key for p in PREDICTIONS), "verdict_by_lr",
          "nsr_against_psr_at_equal_pass1", "fell_below_the_start", "mass_off_the_candidates",
          "sampled_off_the_candidates", "predicted_zero_signal")
_FELL_TOY = ("negative_samples", _TABULAR)  # fell_below_the_start's toy rows: every method's
_SIDE_BY_SIDE = (("shared_policy", _SHARED_GRPO), ("negative_samples", {"method": "psr", **_TABULAR}),
                 ("negative_samples", {"method": "nsr", **_TABULAR}))  # the figure's toy lines

# the toy rows it reads, (experiment, knobs), from the predictions, the claims and the figure: a
# rendering job reads these rows' files alone, so a changed toy row renders this demo again only
# if it reads it
TOY_ROWS = (*(rows for p in PREDICTIONS for rows in p.toy.rows), _FELL_TOY, *_SIDE_BY_SIDE)
READS = tuple(dict.fromkeys(experiment for experiment, _ in TOY_ROWS))  # the demos whose rows those are


def reads(row):
    """Whether it reads this row of a demo it READS (anything with the knobs as attributes: a
    TrainRow, a row of a results frame)."""
    return any(row.experiment == experiment and all(getattr(row, k) == v for k, v in knobs.items())
               for experiment, knobs in TOY_ROWS)


def sign(d):
    """+1 or −1 where a Difference is resolved (rlvr/claims.py resolved), else 0."""
    return 0 if d is None or not d.resolved else (1 if d.mean > 0 else -1)


def verdict(toy, net, L, sets=(), collapsed=""):
    """Whether the toy's difference transfers to the network: both resolved with one sign
    ("transfers"), with opposite signs ("does not transfer"), or the network's not resolved; a
    toy difference that is not resolved predicts nothing. sets: the network's difference on each
    disjoint set of its seeds (seed_sets), where it has two: the verdict is theirs where they
    agree, else "not replicated". collapsed: what collapsed among the network's rows (_collapsed):
    the verdict names it, whatever the signs (a collapse is not the toy's effect)."""
    if collapsed:
        return L["collapse"].format(what=collapsed)
    if toy is None or not sign(toy):
        return L["toy_none"]
    if sets:
        each = {verdict(toy, d, L) for d, _ in sets}
        return each.pop() if len(each) == 1 else L["unreplicated"]
    if not sign(net):
        return L["few"].format(n=net.seeds, least=K.MIN_SEEDS) if net.seeds < K.MIN_SEEDS else L["unresolved"]
    return L["transfers"] if sign(net) == sign(toy) else L["fails"]


def seed_sets(frames):
    """The network's seeds (each its own base) in the disjoint sets a verdict must replicate on:
    the first and second half in seed order where each half has at least MIN_SEEDS, else one
    set of all of them."""
    seeds = sorted(int(s) for s in frames["net_passk"]["seed"].unique())
    half = len(seeds) // 2
    return [seeds[:half], seeds[half:]] if half >= K.MIN_SEEDS else [seeds]


def _on_seeds(frames, seeds):
    """frames with the network's rows of these seeds only (the toy's untouched)."""
    return {k: v[v["seed"].isin(seeds)] if k.startswith("net_") else v for k, v in frames.items()}


def _span(seeds):
    """Seeds as the table names a set: '0–4', or '0, 2, 5' where they are not consecutive."""
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _at_lr(frames, lr):
    """frames with the network's rows at this lr only: a prediction read from them compares its
    rows at this lr, or is None where they do not all have it."""
    return {k: v[v["lr"] == lr] if k.startswith("net_") and k != "net_base" else v for k, v in frames.items()}


_NO_SEEDS = K.Difference(float("nan"), float("nan"), 0)  # a set of seeds a prediction's rows lack


def _judged(p, frames, sets):
    """(network (Difference, rows), per set of seeds [(Difference, the set)]) of one prediction, or
    None where the results lack its rows; a set its rows lack (a row trained on fewer seeds)
    counts as none of its seeds, so the verdict cannot replicate there."""
    net = p.network(frames)
    if net is None:
        return None
    parts = [((p.network(_on_seeds(frames, s)) or (_NO_SEEDS,))[0], s) for s in sets] if len(sets) > 1 else []
    return net, parts


def _verdicts(frames):
    """(verdicts, by lr): verdicts [(prediction, toy (Difference, where) or None, network
    (Difference, rows), per set of seeds [(Difference, the set)] or [] with one set)] for each
    prediction whose network rows the results hold, at the largest lr its rows share; by lr, the
    same at every lr its rows share, for each prediction whose rows share more than one. The table
    and the claims of one rendering read the same frames: computed once for them (~1 s, ~500
    toy rows filtered per prediction)."""
    key = tuple(map(id, frames.values()))
    if _LAST[0] is not frames or _LAST[1] != key:  # the frames it holds kept alive: their ids stay theirs
        sets = seed_sets(frames)
        out, toys = [], {}
        for p in PREDICTIONS:
            judged = _judged(p, frames, sets)
            if judged is not None:
                toys[p.key] = p.toy(frames)
                out.append((p, toys[p.key], *judged))
        lrs = sorted(set(frames["net_passk"]["lr"]))
        by_lr = [(p, toys[p.key], *judged) for p, *_ in out for lr in lrs
                 if (judged := _judged(p, _at_lr(frames, lr), sets)) is not None]
        scanned = [p.key for p, *_ in by_lr]  # a prediction at one lr: the table above says it all
        by_lr = [v for v in by_lr if scanned.count(v[0].key) > 1]
        _LAST[:] = [frames, key, (out, by_lr)]
    return _LAST[2]


_LAST = [None, (), None]  # _verdicts' last (frames, ids of its values, (verdicts, by lr))


TEXT = {
    "en": {
        "title": "Demo {number}: the toy's predictions on a {layers}-layer transformer (d {d}; each seed its own base, taught the toy's reference, then {steps} steps of {pps} prompts x {G} answers; mean ± s.e. over {n} seeds, so over bases too)",  # noqa: E501
        "head": ["difference (final)", "toy", "toy's rows", "network", "network's rows", "verdict"],
        "on_set": "network, seeds {seeds}", "and": " and ",
        "scan": "The verdict at each lr a prediction's rows share (the table above: the largest)",
        "scan_head": ["difference (final)", "network's rows", "network", "verdict"],
        "replication": ["Replication: the seeds (each its own base) split into two disjoint sets, {sets};",
                        "a verdict is the sets' where they agree, else 'not replicated'. 'network' is over",
                        "all the seeds."],
        "transfers": "transfers", "fails": "does not transfer", "unresolved": "not resolved on the network",
        "unreplicated": "not replicated: the seed sets differ",
        "few": "not resolved: {n} network seeds, fewer than {least}",
        "toy_none": "the toy predicts no sign",
        "collapse": "collapse, not the toy's effect: {what}",
        "base_head": ["level", "toy reference: P(correct)", "network bases: P(correct)",
                      "bases: |log-odds error|", "bases: least P(correct) (toy's)",
                      "bases: mass on the candidates"],
        "note": [
            "Each difference is over seeds (paired where two rows are compared) and counts where a t test",
            "over its seeds rejects 'no difference' at α = {alpha}, on {least} seeds or more. toy: final − the",  # noqa: E501 ({alpha}: 0.01 when rendered)
            "reference, or one row − another, at lr 2 (SGD). network: final − the base, or one row −",
            "another, same seeds. What each holds fixed: the steps (the last one), the lr and the",
            "optimizer, and every knob but the one it names; not the pass@1 reached, the KL to the start",
            "or the optimizer steps (μ = 2 makes twice as many). The verdict compares the two signs; a",
            "row whose mass on the candidates ends below half its start's is named a collapse instead.",
            "Why a difference does or does not transfer is not measured here.",
        ],
    },
    "zh": {
        "title": "演示 {number}：玩具模型的预测在 {layers} 层 transformer 上是否成立（d {d}；每个种子有自己的基座，学习玩具的参考策略，然后 {steps} 步，每步 {pps} 道题 × {G} 个回答；{n} 个种子（也即基座）的平均 ± 标准误）",  # noqa: E501
        "head": ["差值（训练后）", "玩具模型", "玩具模型的行", "网络", "网络的行", "结论"],
        "on_set": "网络，种子 {seeds}", "and": " 与 ",
        "scan": "各学习率下的结论（上表：最大的学习率）",
        "scan_head": ["差值（训练后）", "网络的行", "网络", "结论"],
        "replication": ["复现：种子（各有自己的基座）分成两组互不相交的种子 {sets}；两组结论一致时取其结论，",
                        "否则为“未复现”。“网络”一列是全部种子的结果。"],
        "transfers": "成立", "fails": "不成立", "unresolved": "网络上未分辨",
        "unreplicated": "未复现：两组种子结论不同",
        "few": "未分辨：网络只有 {n} 个种子，少于 {least} 个",
        "toy_none": "玩具模型未给出符号",
        "collapse": "崩溃，而非玩具模型的效应：{what}",
        "base_head": ["难度", "玩具参考：P(正确)", "网络基座：P(正确)", "基座：|对数几率误差|",
                      "基座：最小 P(正确)（玩具的）", "基座：候选上的概率"],
        "note": [
            "每个差值对种子取平均（两行比较时按种子配对），种子间 t 检验在 α = {alpha} 拒绝“无差异”",
            "且至少 {least} 个种子才算分辨。",
            "玩具模型：训练后 − 参考模型，或一行 − 另一行，学习率 2（SGD）。",
            "网络：训练后 − 基座，或一行 − 另一行，种子相同。每个差值固定步数（最后一步）、学习率、",
            "优化器以及所比较的旋钮之外的一切；不固定达到的 pass@1、与起点的 KL 或优化器步数",
            "（μ = 2 的步数是两倍）。结论比较两者的符号；候选答案上的概率最终低于起点一半的行，",
            "结论为“崩溃”。",
            "为什么成立或不成立，这里没有测量。",
        ],
    },
}


def table(frames, L):
    c, base = frames["net_curves"], frames["net_base"]
    verdicts, by_lr = _verdicts(frames)
    sets = [s for _, s in verdicts[0][3]] if verdicts else []
    head = L["head"][:4] + [L["on_set"].format(seeds=_span(s)) for s in sets] + L["head"][4:]
    rows = [[_what(p, frames, L["lang"]), K.signed(toy[0]) if toy else "–", toy[1] if toy else "",
             K.signed(net[0]), *(K.signed(d) if d.seeds else "–" for d, _ in each), net[1].partition(":")[0],
             verdict(toy and toy[0], net[0], L, each, net[2])]
            for p, toy, net, each in verdicts]
    scan = [[_what(p, frames, L["lang"]), net[1].partition(":")[0], K.signed(net[0]),
             verdict(toy and toy[0], net[0], L, each, net[2])] for p, toy, net, each in by_lr]
    levels = [[L["levels"][key], f"{fit.toy:.4f}", f"{fit.net:.4f}", f"{fit.logodds_error:.3f}",
               f"{fit.least:.2g} ({fit.toy_least:.2g})", f"{fit.mass:.3f}"] for key, fit in _base_fit(base)]
    first, (G, pps) = c.iloc[0], _section_budget(c)  # the section's group size; a row may set its own
    title = L["title"].format(layers=int(first["n_layer"]), d=int(first["d_model"]),
                              steps=int(first["steps"]), pps=pps, G=G, n=c["seed"].nunique())
    named = L["and"].join(_span(s) for s in sets)
    note = ([line.format(alpha=K.ALPHA, least=K.MIN_SEEDS) for line in L["note"]]
            + ([line.format(sets=named) for line in L["replication"]] if sets else []))
    tables = [("", head, rows)] + ([(L["scan"], L["scan_head"], scan)] if scan else [])
    return title, tables + [("", L["base_head"], levels)], note


def claims(frames):
    """A sentence per prediction the network's rows test: both differences and the verdict."""
    L = {**TEXT["en"], "lang": "en"}
    out = []
    verdicts, by_lr = _verdicts(frames)
    for p, toy, net, each in verdicts:
        toy_part = (f"the toy {K.signed(toy[0])} ({toy[1]}, {toy[0].seeds} seeds)" if toy
                    else "the toy has no rows")
        net_part = f"the network {K.signed(net[0])} ({net[1]}, {net[0].seeds} seeds)"
        if each:
            net_part += " (" + "; ".join(f"seeds {_span(s)}: {K.signed(d)}, {verdict(toy and toy[0], d, L)}"
                                         for d, s in each) + ")"
        out.append(K.Claim(p.key, (f"{_what(p, frames, 'en')}: {toy_part}; {net_part}: "
                                   f"{verdict(toy and toy[0], net[0], L, each, net[2])}"),
                           tuple(d for d in (toy and toy[0], net[0], *(d for d, _ in each))
                                 if d is not None)))
    if by_lr:
        scan = [f"{_what(p, frames, 'en')} at {net[1].partition(':')[0]} {K.signed(net[0])}, "
                f"{verdict(toy and toy[0], net[0], L, each, net[2])}" for p, toy, net, each in by_lr]
        out.append(K.Claim("verdict_by_lr", "The network's verdict at each lr a prediction's rows share: "
                           + "; ".join(scan), tuple(net[0] for _, _, net, _ in by_lr)))
    base = frames["net_base"]  # a row per (seed, prompt)
    by_level = _base_fit(base)
    levels = [f"{F.LEVEL_LABELS[key]} {fit.net:.4f} (the toy's {fit.toy:.4f})" for key, fit in by_level]
    mass = base.groupby("seed")["mass_on_candidates"].mean()
    out.insert(0, K.Claim("base_levels", f"The network's bases, P(correct) by level (mean over {len(mass)} "
                          f"base{'s' * (len(mass) != 1)}, one a seed): " + ", ".join(levels)
                          + "; their mass on the candidates "
                          f"{mass.mean():.3f} (mean over prompts, from {mass.min():.3f} to {mass.max():.3f} "
                          f"by base; the least of a prompt {base['mass_on_candidates'].min():.3f})", ()))
    fits = [f"{F.LEVEL_LABELS[key]} {fit.logodds_error:.3f} (least P(correct) {fit.least:.2g}, the toy's "
            f"{fit.toy_least:.2g}; mass on the candidates {fit.mass:.3f})" for key, fit in by_level]
    out.insert(1, K.Claim("base_fit", "How closely the bases fit the toy's reference, by level: the mean "
                          "over prompts and bases of |log-odds of the base's P(correct) − the toy's|: "
                          + ", ".join(fits), ()))
    # what the network alone shows, each where its rows are in the results
    return out + [claim for claim in (_nsr_against_psr_at_equal_pass1(frames), _fell_below_the_start(frames),
                                      _mass_off_the_candidates(frames), _off_the_candidates(frames),
                                      _predicted_zero_signal(frames)) if claim is not None]


def _mass_off_the_candidates(frames):
    """What the toy cannot do: put mass on a string off its candidates (each answer is one of
    them). The change of the mass on the candidates of NSR's, PSR's and GRPO's rows."""
    moved = [(m, _net_change(frames, ("mass_on_candidates", "all"), _net(m))) for m in ("nsr", "psr", "grpo")]
    moved = [(m, got) for m, got in moved if got is not None]
    if not moved:
        return None
    parts = [f"{style.label(m)} {K.signed(d)} ({where.partition(':')[0]})" for m, (d, where, _) in moved]
    return K.Claim("mass_off_the_candidates", (
        "The network's mass on the 16 candidates, final − the base's: " + ", ".join(parts)
        + f" ({moved[0][1][0].seeds} seeds); the toy's is 1 by construction (an answer is one of its "
        "candidates)"), tuple(d for _, (d, _, _) in moved))


PREDICT_ANSWERS = 16  # answers sampled a prompt from each base, as a user's eval would, for rlvr predict


def _predicted_zero_signal(frames):
    """`rlvr predict` tried on a model no one tuned by hand: from 16 answers sampled a prompt from
    each base (rlvr.predict.sample_counts of its exact P(correct)), the share of groups without a
    signal at each G of the network's rows, against the base's exact share (mean over prompts of
    p^G + (1 − p)^G) and the share its rows' first batch saw (every row of a seed at one G draws the
    same first batch: one a seed), each over the seeds (bases), and observed − predicted paired by
    seed."""
    import pandas as pd  # not at the top: the config's parse imports this module (and no pandas)

    from .. import predict as Pr

    batches, base = frames.get("net_batches"), frames["net_base"]
    if batches is None or not len(batches):
        return None
    first = batches[batches["step"] == 0].drop_duplicates(["seed", "G"])
    first = first.set_index(["G", "seed"])["reward_zero_std"]
    parts, diffs = [], []
    for G in sorted(first.index.get_level_values(0).unique()):
        observed = first.loc[G]
        predicted, exact = {}, {}
        for seed in observed.index:
            p = base[base["seed"] == seed].sort_values("prompt")["p_correct"].to_numpy()
            c = Pr.sample_counts(p, PREDICT_ANSWERS, seed)
            a, b, _ = Pr.posterior(np.full(len(p), PREDICT_ANSWERS), c)
            predicted[seed] = Pr.zero_signal(a, b, int(G))[0]
            exact[seed] = float((p**G + (1 - p) ** G).mean())
        predicted, exact = (pd.Series(v) for v in (predicted, exact))
        d = K.over_seeds((observed - predicted).to_numpy())
        diffs.append(d)
        parts.append(f"G = {int(G)}: predicted {A.pm(predicted)}, the bases' exact {A.pm(exact)}, their "
                     f"rows' first batch {A.pm(observed)} (observed − predicted {K.signed(d)})")
    return K.Claim("predicted_zero_signal", (
        f"`rlvr predict` on {PREDICT_ANSWERS} answers sampled a prompt from each base (the fitted prior), "
        f"the share of groups without a signal over {diffs[0].seeds} bases: " + "; ".join(parts)),
        tuple(diffs))


def _off_the_candidates(frames):
    """What the network draws off the candidates, at the base and at the end of each row with the
    default objective at the section's budget: the share of its sampled answers off them and their
    mean tokens (EOS counted), from the answers sampled at the records (mean over seeds)."""
    c = frames["net_curves"]
    if "off_share" not in c:
        return None
    # the rows with the default objective and sampler, at the section's budget: any method, optimizer,
    # lr and offset
    c = _rows(c, level="all", **{**_net(None), "optimizer": None, "reward_offset": None})
    start, last = c[c["step"] == c["step"].min()], c[c["step"] == c["step"].max()]
    if not len(last):
        return None
    at_base = f"{start['off_share'].mean():.3f} of the answers, {start['length_off'].mean():.2f} tokens"
    ends = last.groupby(["method", "optimizer", "lr", "reward_offset"])[["off_share", "length_off"]].mean()
    ends = ends.sort_values("off_share")
    parts = [f"{style.label(m)} {style.OPTIMIZER_LABELS[o]} lr {lr:g}{f' offset {off:g}' if off else ''} "
             f"{v.off_share:.3f}" for (m, o, lr, off), v in ends.iterrows()]
    return K.Claim("sampled_off_the_candidates", (
        f"Answers the network draws off its candidates (sampled at each record, {int(c['seed'].nunique())} "
        f"seeds): at the base {at_base} on average (a candidate has "
        f"{_candidate_tokens(frames):.2f}); at the end of each row with the default objective, the share off "
        "them (the least to the most): " + ", ".join(parts)), ())


def _candidate_tokens(frames):
    """A candidate's mean tokens (EOS counted), over every prompt's 16: the net_base frame has its
    strings."""
    answers = frames["net_base"].drop_duplicates("prompt")["answers"]
    return float(np.mean([len(a) + 1 for row in answers for a in row.split()]))


class Fit(NamedTuple):
    toy: float  # the toy reference's P(correct), mean over the level's prompts
    net: float  # the bases', mean over prompts and bases
    logodds_error: float  # mean over prompts and bases of |logit(net) − logit(toy)|
    least: float  # the least P(correct) of a prompt on a base
    toy_least: float  # the toy's least
    mass: float  # the bases' mass on the candidates, mean over prompts and bases


def _base_fit(base):
    """[(level key, Fit)] of the bases' frame (a row per seed and prompt), for each level it has."""
    def logit(p):
        p = np.asarray(p, float)
        return np.log(p) - np.log1p(-p)

    out = []
    for i, key in enumerate(LEVEL_KEYS):
        sub = base[base["level"] == i]
        if len(sub):
            error = np.abs(logit(sub["p_correct"]) - logit(sub["toy_p_correct"])).mean()
            out.append((key, Fit(sub["toy_p_correct"].mean(), sub["p_correct"].mean(), error,
                                 sub["p_correct"].min(), sub["toy_p_correct"].min(),
                                 sub["mass_on_candidates"].mean())))
    return out


def _at_pass1(frames, row, k, target):
    """Per seed of one network row: its exact pass@k where its pass@1 (all prompts) first reaches
    target [seeds], linear between two records; NaN where it never does."""
    curve = _rows(frames["net_curves"], level="all", **row).set_index(["seed", "step"])["pass1"]
    passk = _rows(frames["net_passk"], k=k, **row).set_index(["seed", "step"])["pass_at_k"]
    return np.array([A.where_first_reached(curve.loc[seed].sort_index().to_numpy(),
                                           passk.loc[seed].sort_index().to_numpy(), p)
                     for seed, p in target.items()])


def _nsr_against_psr_at_equal_pass1(frames):
    """NSR's final pass@k (the largest k) against PSR's where PSR's pass@1 equals NSR's final one
    (PSR's curve interpolated, per seed; Adam, their largest common lr): like compared with like,
    where at equal steps NSR has gained less pass@1 than PSR. None without both rows."""
    nsr, psr = _net("nsr"), _net("psr")
    lrs = sorted(set(_net_lrs(frames, nsr)) & set(_net_lrs(frames, psr)))
    if not lrs:
        return None
    nsr, psr, k = {**nsr, "lr": lrs[-1]}, {**psr, "lr": lrs[-1]}, _top_k(frames)
    gains = {m: _net_value(frames, ("passk", 1), row) for m, row in (("nsr", nsr), ("psr", psr))}
    gain = {m: K.over_seeds((final - start).to_numpy()) for m, (start, final) in gains.items()}
    final_p1 = gains["nsr"][1]
    nsr_k = _net_value(frames, ("passk", k), nsr)[1].loc[final_p1.index].to_numpy()
    psr_k = _at_pass1(frames, psr, k, final_p1)
    kept = ~np.isnan(psr_k)
    d = K.over_seeds(nsr_k[kept] - psr_k[kept])
    return K.Claim("nsr_against_psr_at_equal_pass1", (
        f"On the network (Adam lr {lrs[-1]:g}), NSR gains {K.number(gain['nsr'], 3)} of pass@1 in "
        f"{int(frames['net_curves']['steps'].iloc[0])} steps and PSR {K.number(gain['psr'], 3)}; at equal "
        f"pass@1 (PSR's curve read where its pass@1 reaches NSR's final one, per seed) NSR − PSR at "
        f"pass@{k} is {K.signed(d)} ({d.seeds} seeds, paired; {int((~kept).sum())} where PSR never "
        "reaches it)"), (d,))


def _fell_below_the_start(frames, level="very_hard"):
    """The share of a level's prompts whose P(correct) ends below the start's, per seed, for NSR
    and PSR: on the network (against its base, Adam at their largest common lr) and on the toy
    (demo 13's runs' fell_frac, against the reference, lr 2, tabular); None without NSR rows."""
    p, base = frames["net_prompts"], frames["net_base"]
    lrs = sorted(set(_net_lrs(frames, _net("nsr"))) & set(_net_lrs(frames, _net("psr"))))
    if not lrs:
        return None
    prompts = set(base.loc[base["level"] == LEVEL_KEYS.index(level), "prompt"])
    parts, diffs = [], []
    for method in ("nsr", "psr"):
        rows = _rows(p, lr=lrs[-1], **_net(method))
        rows = rows[rows["prompt"].isin(prompts)]
        start, final = rows[rows["step"] == rows["step"].min()], rows[rows["step"] == rows["step"].max()]
        both = final.merge(start[["seed", "prompt", "p_correct"]], on=["seed", "prompt"],
                           suffixes=("", "_start"))
        share = (both["p_correct"] < both["p_correct_start"]).groupby(both["seed"]).mean()
        d = K.over_seeds(share.to_numpy())
        parts.append(f"{style.label(method)} {K.number(d, 2)}")
        diffs.append(d)
    experiment, tabular = _FELL_TOY
    toy = frames["runs"]
    toy = A.select_rows(toy[toy["experiment"] == experiment], **tabular)
    column = f"fell_frac_{level}"
    toy_parts = [f"{style.label(m)} {K.number(K.over_seeds(toy.loc[toy['method'] == m, column]), 2)}"
                 for m in ("nsr", "psr") if column in toy and (toy["method"] == m).any()]
    seeds = diffs[0].seeds
    text = (f"The share of the {level.replace('_', ' ')} prompts whose P(correct) ends below the start's: "
            f"on the network (Adam lr {lrs[-1]:g}, against the base, {seeds} seeds) " + ", ".join(parts))
    if toy_parts:
        text += (f"; on the toy (demo 13, lr {TOY_LR:g}, against the reference, {toy['seed'].nunique()} "
                 "seeds) " + ", ".join(toy_parts))
    return K.Claim("fell_below_the_start", text, ())


def passk_side_by_side(frames):
    """Exact pass@k after training minus before against k: the toy's rows that the predictions
    read (left) beside the network's Adam rows at the default loss (right), mean over seeds with
    a 95% band; the dashed zero line is the start (the toy's reference, the network's base)."""
    fig, axes = F.subplots(1, 2, height=2.5)  # each its own y: the network moves less
    toy, net = axes[0]
    for experiment, row in _SIDE_BY_SIDE:
        got = A.passk_and_reference(frames, experiment)
        here = None if got is None else A.select_rows(got[0], **row)
        if here is not None and len(here):
            here = here.assign(change=here["pass_at_k"] - here["k"].map(got[1]))
            s = A.over_seeds(here, "k", "change")
            label = style.label(row["method"]) + (" (the toy's: shared weights)" if row["shared_lr"] else "")
            F.line(toy, s.index, s, row["method"], label=label)
    p = frames["net_passk"]
    p = _rows(p, **{k: v for k, v in _net(None).items() if k != "method"})  # Adam, the default loss
    lrs = {}
    for method in [m for m in ("grpo", "psr", "nsr") if (p["method"] == m).any()]:
        here = p[p["method"] == method]
        here = here[here["lr"] == here["lr"].max()]  # the row the crossover reads
        lrs.setdefault(float(here["lr"].iloc[0]), []).append(style.label(method))
        d = A.paired(here[here["step"] == here["step"].max()], here[here["step"] == here["step"].min()],
                     "pass_at_k", on=("seed", "k"))
        s = A.over_seeds(d, "k", "pass_at_k")
        F.line(net, s.index, s, method, label=None)
    net_title = "network (Adam; " + ", ".join(f"{' and '.join(ms)} lr {lr:g}" for lr, ms in lrs.items()) + ")"
    for ax, title in ((toy, f"toy (demos 11, 13; SGD, lr {TOY_LR:g})"), (net, net_title)):
        ax.axhline(0, color="black", ls="--", lw=0.8)
        F.log_ticks(ax, sorted(set(frames["net_passk"]["k"])))
        ax.set_xlabel("k")
        ax.set_title(title)
    toy.set_ylabel("pass@k, final − start")
    F.legend_below(fig, ncol=3)
    return fig


def base_against_toy(frames):
    """Each prompt's exact P(correct) under the network's bases (the mean over the seeds' bases)
    against the toy reference's, log scales, a colour per level; the diagonal is equality."""
    fig, axes = F.subplots(1, 1, height=2.6)
    ax = axes[0][0]
    b = frames["net_base"]  # a row per (seed, prompt): each prompt's mean over the seeds' bases
    b = b.groupby("prompt")[["level", "toy_p_correct", "p_correct"]].mean()
    shades = F.matplotlib().colormaps["viridis"](np.linspace(0, 0.8, len(LEVEL_KEYS)))  # as demo 1's
    for i, (key, colour) in enumerate(zip(LEVEL_KEYS, shades)):
        sub = b[b["level"] == i]
        ax.scatter(sub["toy_p_correct"], sub["p_correct"].clip(lower=1e-6), s=6, color=colour,
                   label=F.LEVEL_LABELS[key])
    lo = min(b["toy_p_correct"].min(), b["p_correct"].clip(lower=1e-6).min()) / 2
    ax.plot([lo, 1], [lo, 1], color="black", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("toy reference: P(correct)")
    ax.set_ylabel(f"network: P(correct),\nmean of {frames['net_base']['seed'].nunique()} bases")
    F.legend_below(fig, ncol=4)
    return fig


FIGURES = {
    "network_passk": (passk_side_by_side, ("reference", "runs", "passk", "net_passk")),
    "network_base": (base_against_toy, ("net_base",)),
}
