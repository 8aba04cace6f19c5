"""The knobs of a training row, declared once: name, default, what values are allowed, what it
means, and how it shows in the row's file names.

Everything else is derived from ROW_KNOBS: the config schema's row (rlvr/config.py adds it to
workflow/schemas/config.schema.yaml when it loads it), the order a grid expands in, the finite
checks, the values a job's spec holds (rlvr/specs.py's TrainRow), the objective's fields and
defaults (rlvr/objective.py's Objective) and the check that refuses a bad one before training,
and the row's path under results/. A new knob of the objective: one Knob here, and the code in
rlvr/objective.py or rlvr/training.py that reads it.
"""

import itertools
import math
from typing import NamedTuple

REQUIRED = "required"  # the default of a knob every row must set


class Knob(NamedTuple):
    name: str
    default: object  # as the config writes it (REQUIRED: no default)
    help: str
    value: dict  # the JSON schema of one value (a row may give a list of them: a grid)
    token: str | None = None  # in the row's path as _<token><value> where it is not the default
    objective: bool = False  # a field of rlvr.objective.Objective
    none: object = None  # the spec's value for a config null, and what it means ("0: no dual clip")

    def cast(self, value):
        """A config value as a job's spec holds it: numbers as float (or int), null as `none`."""
        if value is None:
            return self.none[0]
        return {"number": float, "integer": int}.get(self.kind, str)(value)

    @property
    def kind(self):
        types = self.value["type"]
        return next(t for t in ([types] if isinstance(types, str) else types) if t != "null")

    @property
    def spec_default(self):
        return self.cast(self.default)

    def problem(self, value):
        """Why value is not allowed, as "<name> = <value> must be ..." (None if it is allowed)."""
        v = self.value
        if self.none is not None and value == self.none[0]:
            return None
        if "registry" in v:
            allowed = choices(self)
            return None if value in allowed else f"{self.name} = {value!r}; allowed: {', '.join(allowed)}"
        if self.kind == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
            return f"{self.name} = {value!r} must be a whole number"
        if not math.isfinite(value):
            return f"{self.name} = {value!r} must be a finite number"
        lo, hi = v.get("minimum", v.get("exclusiveMinimum")), v.get("maximum", v.get("exclusiveMaximum"))
        ok = ((lo is None or value > lo or ("minimum" in v and value == lo))
              and (hi is None or value < hi or ("maximum" in v and value == hi)))
        return None if ok else f"{self.name} = {value!r} must be {bounds(self)}"


# a JSON-schema bound and its sign in words (also rlvr/config.py's plain-language errors)
BOUND_SIGNS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def bounds(knob):
    """The allowed values in words: "a whole number >= 1", "in (0, 1)", "> 1 (or 0: no dual clip)"."""
    v = knob.value
    if "exclusiveMinimum" in v and "exclusiveMaximum" in v:
        words = f"in ({v['exclusiveMinimum']:g}, {v['exclusiveMaximum']:g})"
    else:
        words = " and ".join(f"{sign} {v[key]:g}" for key, sign in BOUND_SIGNS.items() if key in v)
    if knob.kind == "integer":
        words = f"a whole number {words}"
    return words + (f" (or {knob.none[1]})" if knob.none is not None else "")


def choices(knob):
    """The values a knob with a fixed set of them allows: the names of its registry, "module.NAME"
    in rlvr/ (read when asked: rlvr/objective.py reads this module)."""
    from importlib import import_module

    module, _, name = knob.value["registry"].rpartition(".")
    return tuple(getattr(import_module(f".{module}", __package__), name))


ROW_KNOBS = (
    Knob("method", REQUIRED, "an estimator registered in rlvr/estimators.py, or a list of them",
         {"type": "string"}),
    Knob("lr", REQUIRED, "learning rate (> 0), or a list of them", {"type": "number", "exclusiveMinimum": 0}),
    Knob("reward_offset", 0.0, "constant added to every reward, or a list of them", {"type": "number"}),
    Knob("shared_lr", 0.0, "step of the shared weights per answer strategy type (task.minority), added to "
         "every prompt's logits; 0 (the default) is the tabular policy, one logit per (prompt, answer)",
         {"type": "number", "minimum": 0}, token="shared"),
    Knob("correct_answers", 1, "how many answers of each prompt are correct (answers 0 .. n−1): the prompt's "
         "p(correct) stays the reference's, split among them, each half as likely as the one before; 1 (the "
         "default) is the task as it is", {"type": "integer", "minimum": 1}, token="correct"),
    Knob("reward", "verifier", "what an answer earns: a reward function registered in rlvr/rewards.py "
         "(verifier: 1 if correct; random_half, random_mean: rewards that ignore the answer)",
         {"type": "string", "registry": "rewards.REWARDS"}, token="reward"),
    # off-policy rollouts: the sampler that draws the answers is not the policy being trained
    Knob("sampler_lag", 0, "answers drawn from the policy of this many steps ago (asynchronous training); "
         "0: the current one", {"type": "integer", "minimum": 0}, token="lag"),
    Knob("sampler_noise", 0.0, "σ of a fixed Gaussian perturbation of the sampler's logits, drawn once per "
         "seed (a sampler-trainer precision mismatch); 0: none", {"type": "number", "minimum": 0},
         token="noise"),
    Knob("is_correction", "none", "how the update corrects for the sampler, with ρ = π_old(y)/π_sampler(y) "
         "per answer: none, full (weight ρ), truncated (min(ρ, is_cap): verl's rollout_is), masked "
         "(ρ, and 0 where ρ leaves [1/is_cap, is_cap]: verl's rollout_rs) or masked_renorm (masked, and "
         "the dropped answers leave the loss's count, as verl's rejection does)",
         {"type": "string", "registry": "importance.IS_CORRECTIONS"}, token="is"),
    Knob("is_cap", 2.0, "C of the truncated and masked corrections (verl rollout_is_threshold, default 2)",
         {"type": "number", "exclusiveMinimum": 1}, token="is_cap"),
    Knob("is_cap_low", None, "the lower bound of the truncated and masked corrections: truncated clamps ρ "
         "to [is_cap_low, is_cap] (OpenRLHF's tis: 0.5 and 5), masked drops an answer whose ρ is below it "
         "(TRL's sequence_mask: 0 and 3); null: the correction's own, none for truncated and 1/is_cap "
         "for masked", {"type": ["number", "null"], "minimum": 0, "exclusiveMaximum": 1}, token="is_low",
         none=(-1.0, "null: the correction's own")),
    # the rest of the objective (rlvr/objective.py); the defaults are the lecture's loss
    Knob("epochs", 1, "μ: updates on each batch of answers (TRL num_iterations, verl ppo_epochs); from the "
         "second on, the ratio π/π_old is clipped", {"type": "integer", "minimum": 1}, token="epochs",
         objective=True),
    # null: no clip on that side, as ε = 1 (a ratio is never below 0) and ε = ∞ (never above)
    Knob("clip_low", 0.2, "ε_low: a ratio below 1 − ε_low stops pushing down an answer with a negative "
         "advantage; null: none", {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1},
         token="clip_low", objective=True, none=(1.0, "null: no lower clip")),
    Knob("clip_high", 0.2, "ε_high: a ratio above 1 + ε_high stops pushing up an answer with a positive "
         "advantage (DAPO's clip-higher: 0.28); null: none",
         {"type": ["number", "null"], "exclusiveMinimum": 0}, token="clip_high", objective=True,
         none=(math.inf, "null: no upper clip")),
    Knob("clip_c", None, "verl's dual clip: a ratio above c (> 1) stops pushing down an answer with a "
         "negative advantage; null: none", {"type": ["number", "null"], "exclusiveMinimum": 1},
         token="clip_c", objective=True, none=(0.0, "0: no dual clip")),
    Knob("kl_beta", 0.0, "β of the KL to the reference policy (0: none)", {"type": "number", "minimum": 0},
         token="kl_beta", objective=True),
    Knob("kl_estimator", "k3", "estimator of KL(π‖π_ref) at the sampled answer: k1 = log π/π_ref, "
         "k2 = ½ (log π/π_ref)², k3 = π_ref/π − 1 − log π_ref/π",
         {"type": "string", "registry": "kl.KL_ESTIMATORS"}, token="kl_estimator", objective=True),
    Knob("kl_placement", "loss", "where β·k goes: added to the loss (GRPO, TRL) or subtracted from the "
         "reward (verl use_kl_in_reward)", {"type": "string", "registry": "kl.KL_PLACEMENTS"},
         token="kl_placement", objective=True),
    Knob("loss_agg", "seq-mean-token-sum-norm", "how answers of different lengths (task.answer_length) "
         "share the loss: seq-mean-token-sum-norm (Dr. GRPO; every answer alike, the lecture's loss), "
         "seq-mean-token-mean (GRPO, TRL \"grpo\": an answer's tokens averaged) or token-mean (DAPO, and "
         "verl's and TRL's default: every token of the batch alike)",
         {"type": "string", "registry": "objective.LOSS_AGGREGATIONS"}, token="loss_agg", objective=True),
    Knob("policy_loss", "ppo", "the update's form where π has moved from π_old (rlvr/objective.py's "
         "POLICY_LOSSES; verl policy_loss.loss_mode): ppo (the clipped surrogate of ρ = π(y)/π_old(y), "
         "GRPO's), gspo (GSPO: the length-normalised sequence ratio ρ^(1/|y|), clipped per answer; with "
         "loss_agg seq-mean-token-mean) or cispo (CISPO: every answer weighs clip(ρ)·A, the clip caps the "
         "weight and never zeroes the gradient)", {"type": "string", "registry": "objective.POLICY_LOSSES"},
         token="policy_loss", objective=True),
    Knob("minibatches", 1, "m: each batch's groups split into m minibatches of G/m answers, one update each, "
         "each answer once per epoch (TRL steps_per_generation); with μ epochs a batch makes μ·m updates, "
         "and all but the first see a ratio", {"type": "integer", "minimum": 1}, token="minibatches",
         objective=True),
    Knob("ratio_tokens", "one", "where an answer's log-ratio log ρ lies among its tokens, for the clip of "
         "ppo and the cap of cispo, which act on a token's ratio (rlvr/objective.py's RATIO_TOKENS): one "
         "(all on one token: a token's ratio is ρ, the toy's answer as one choice), few (shared by 4 "
         "tokens: ρ^(1/4) each) or even (spread over all its tokens: ρ^(1/|y|), GSPO's ratio, on every "
         "token)", {"type": "string", "registry": "objective.RATIO_TOKENS"}, token="tokens", objective=True),
    Knob("optimizer", "sgd", "how an update's gradient moves the logits (rlvr/optimizers.py): sgd (the "
         "lecture's: lr times the gradient, so an estimator's scale is its step's) or adam "
         "(torch.optim.Adam's update on every logit, betas 0.9 and 0.999: a constant scale of the gradient "
         "cancels; the network's default); adam with shared_lr 0 only",
         {"type": "string", "registry": "optimizers.OPTIMIZERS"}, token="opt"),
)
KNOBS = {knob.name: knob for knob in ROW_KNOBS}
ROW_FIELDS = tuple(knob.name for knob in ROW_KNOBS)
OBJECTIVE = tuple(knob.name for knob in ROW_KNOBS if knob.objective)


def row_schema(knobs=ROW_KNOBS):
    """The JSON schema of a config row: every knob, each a value or a non-empty list (a grid)."""
    properties = {}
    for knob in knobs:
        one = {k: v for k, v in knob.value.items() if k != "registry"}
        if "registry" in knob.value:
            one["enum"] = list(choices(knob))
        types = one["type"] if isinstance(one["type"], list) else [one["type"]]
        entry = {"description": knob.help, "type": [*types, "array"], "minItems": 1, "items": one}
        entry.update({k: one[k] for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
                      if k in one})
        if "enum" in one:  # a single value is checked against the choices here, a list by `items`
            entry.update({"if": {"type": "string"}, "then": {"enum": one["enum"]}})
        if knob.default != REQUIRED:
            entry["default"] = knob.default
        properties[knob.name] = entry
    return {"description": "one training configuration; a list in place of any value makes the row a grid: "
                           "every combination, in the order written (the knobs: rlvr/knobs.py)",
            "type": "object", "additionalProperties": False,
            "required": [k.name for k in knobs if k.default == REQUIRED], "properties": properties}


# the knobs a row may leave at their defaults, named in its path only where it does not: the
# objective's first (the order of TrainRow's fields and of the Parquet files' columns)
OPTIONAL = tuple([k for k in ROW_KNOBS if k.objective]
                 + [k for k in ROW_KNOBS if not k.objective and k.token])


def path_tokens(values):
    """The part of a row's path that names its knobs away from their defaults: values, {knob: spec
    value} -> "_epochs2_clip_high0.28..." ("" for a row of the lecture's)."""
    return "".join(f"_{k.token}{v if isinstance(v, str) else repr(v)}" for k in OPTIONAL
                   if (v := values[k.name]) != k.spec_default)


def expand_rows(rows, section, fields=ROW_FIELDS):
    """Yield (row, keys) for every row of a `rows:` list, grids expanded: a row with a list in
    place of a value stands for every combination, in the order written.
    keys names each value's place in the config (for error messages); fields: the row's knobs."""
    for i, row in enumerate(rows):
        axes = {}
        for field in fields:
            value = row[field]
            if isinstance(value, list):
                axes[field] = [(v, f"{section}.rows[{i}].{field}[{j}]") for j, v in enumerate(value)]
            else:
                axes[field] = [(value, f"{section}.rows[{i}].{field}")]
        for combo in itertools.product(*axes.values()):
            values = dict(zip(axes, combo))
            keys = {field: key for field, (_, key) in values.items()}
            keys["row"] = f"{section}.rows[{i}]"
            yield {field: v for field, (v, _) in values.items()}, keys
