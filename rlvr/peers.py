"""Your trainer's settings as a toy row: a TRL GRPOConfig or a verl config, by the peers' own
names, becomes the knobs of an rlvr row (rlvr/knobs.py), so the toy trains what your trainer's
objective would (`python -m rlvr row --from trl my_grpo.yaml`).

Read in the peers' code at TRL f2cd577 (trl/trainer/grpo_config.py) and verl b178a3c
(verl/trainer/config/ppo_trainer.yaml, actor/actor.yaml, rollout/rollout.yaml,
data/legacy_data.yaml, algorithm/rollout_correction.yaml; core_algos.py), with GUIDE.md's table
"The peers' names for these knobs" for what each means here. A setting the file leaves out takes
the peer's default, not rlvr's (verl's dual clip at 3, TRL's token-mean loss). Every setting the
file gives is mapped, mapped with a note where the toy approximates it, or listed as having no
toy counterpart: none is dropped silently. A setting with no counterpart that would change the
objective the row names (verl's `gae`, TRL's `sapo`) is refused. The toy's lr, steps and prompts
a step stay the demo's: a real model's lr means nothing to a tabular softmax.
"""

import json
import re
import shlex
from pathlib import Path
from typing import NamedTuple


class Translation(NamedTuple):
    row: dict  # rlvr knob: value
    notes: list  # "setting: what the toy does with it", where it approximates
    unmapped: list  # settings the file gives that have no toy counterpart


def _flatten(cfg, prefix=""):
    """A nested dict as {dotted key: leaf value}; dotted keys (Hydra overrides) kept as they are."""
    out = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= _flatten(value, f"{name}.")
        else:
            out[name] = value
    return out


class _Reader:
    """The settings a file gives, read by name with the peer's default; what was read is counted, so
    the rest can be listed."""

    def __init__(self, settings):
        self.given, self.read = settings, set()

    def __call__(self, name, default=None):
        self.read.add(name)
        return self.given.get(name, default)

    def has(self, name):
        return name in self.given

    def unread(self):
        return sorted(set(self.given) - self.read)


def _refuse(setting, value, allowed):
    raise ValueError(f"{setting} = {value!r} has no counterpart on the toy; allowed: {allowed}")


# --- TRL (GRPOConfig at f2cd577) ----------------------------------------------------------------

TRL_SCALE = {"group": "grpo_unbiased_std", True: "grpo_unbiased_std", "batch": "batch_std",
             "none": "dr_grpo", False: "dr_grpo"}  # the peers divide by the N−1 std: rlvr's grpo_unbiased_std
TRL_LOSS_AGG = {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "bnpo": "token-mean",
                "dr_grpo": "seq-mean-token-sum-norm", "cispo": "token-mean"}
TRL_IS_MODES = {"sequence_mask": "masked", "sequence_truncate": "truncated", "token_mask": "masked",
                "token_truncate": "truncated"}
TRL_NOT_READ = {"learning_rate": "the toy's lr is its own (a tabular softmax)"}


def from_trl(settings):
    """A TRL GRPOConfig's settings {name: value} (its YAML or JSON, or its keyword arguments) as a
    Translation."""
    get, notes = _Reader(dict(settings)), []
    row = {"G": int(get("num_generations", 8)), "epochs": int(get("num_iterations", 1))}
    scale = get("scale_rewards", "group")
    row["method"] = TRL_SCALE.get(scale) or _refuse("scale_rewards", scale, "group, batch, none")
    steps = get("steps_per_generation") or get("gradient_accumulation_steps", 1)
    row["minibatches"] = int(steps)
    epsilon = float(get("epsilon", 0.2))
    high = get("epsilon_high")
    high = epsilon if high is None else float(high)
    loss = get("loss_type", "dapo")
    row["loss_agg"] = TRL_LOSS_AGG.get(loss) or _refuse("loss_type", loss, ", ".join(TRL_LOSS_AGG))
    if loss == "bnpo":
        notes.append("loss_type bnpo: token-mean over the local batch; the toy has one batch, so token-mean")
    if loss == "cispo":  # TRL caps the ratio from above at epsilon_high itself (GUIDE.md)
        row |= {"policy_loss": "cispo", "clip_low": None, "clip_high": high - 1}
    else:
        row |= {"clip_low": epsilon, "clip_high": high}
    level = get("importance_sampling_level", "token")
    if level == "sequence":
        if loss not in ("grpo",):
            raise ValueError(f"importance_sampling_level sequence with loss_type {loss!r}: TRL refuses it "
                             "(allowed with grpo)")
        row["policy_loss"] = "gspo"
    elif level == "token":
        notes.append("importance_sampling_level token: each token's ratio; on the toy an answer's log-ratio "
                     "sits on ratio_tokens of its tokens, left at 'one' (demo 18 shows one, few and even)")
    else:
        _refuse("importance_sampling_level", level, "token, sequence")
    delta = get("delta")
    if delta is not None:
        if float(delta) <= 1 + high:
            raise ValueError(f"delta = {delta!r}: rlvr's dual clip clip_c is TRL's delta where delta > 1 + "
                             f"epsilon_high ({1 + high:g}); below it the two differ")
        row["clip_c"] = float(delta)
    beta = float(get("beta", 0.0))
    if beta:
        row |= {"kl_beta": beta, "kl_estimator": "k3", "kl_placement": "loss"}  # TRL: k3, in the loss
    if get("use_vllm", False) and get("vllm_importance_sampling_correction", True):
        mode = get("vllm_importance_sampling_mode", "sequence_mask")
        correction = TRL_IS_MODES.get(mode) or _refuse("vllm_importance_sampling_mode", mode,
                                                        ", ".join(TRL_IS_MODES))
        cap = get("vllm_importance_sampling_clip_max", get("vllm_importance_sampling_cap", 3.0))
        low = get("vllm_importance_sampling_clip_min")
        row |= {"is_correction": correction, "is_cap": float(cap), "is_cap_low": float(low or 0.0)}
        notes.append(f"vllm_importance_sampling_mode {mode}: the toy's sampler matches the policy unless a "
                     "row "
                     "sets sampler_lag or sampler_noise (demo 15), so the correction acts only then"
                     + ("; per token on TRL, per answer here (one choice)" if mode.startswith("token")
                        else ""))
    unmapped = [f"{name} ({TRL_NOT_READ[name]})" if name in TRL_NOT_READ else name for name in get.unread()]
    return Translation(row, notes, unmapped)


# --- verl (b178a3c) -----------------------------------------------------------------------------

ACTOR = "actor_rollout_ref.actor."
VERL_ESTIMATORS = {"rloo": "rloo", "rloo_vectorized": "rloo",
                   "reinforce_plus_plus_baseline": "reinforce_pp_baseline"}
VERL_LOSS_MODES = {"vanilla": "ppo", "gspo": "gspo", "cispo": "cispo"}
VERL_KL = {"kl": "k1", "k1": "k1", "mse": "k2", "k2": "k2", "low_var_kl": "k3", "k3": "k3"}
VERL_AGG = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
VERL_NOT_READ = {"actor_rollout_ref.actor.optim.lr": "the toy's lr is its own (a tabular softmax)"}


def from_verl(settings):
    """A verl config's settings (its YAML as a nested dict, or Hydra overrides {dotted key: value})
    as a Translation."""
    get, notes = _Reader(_flatten(dict(settings))), []
    row = {"G": int(get("actor_rollout_ref.rollout.n", 1)), "epochs": int(get(ACTOR + "ppo_epochs", 1))}
    estimator = get("algorithm.adv_estimator", "gae")
    if estimator in ("grpo", "grpo_vectorized"):
        row["method"] = "grpo_unbiased_std" if get("algorithm.norm_adv_by_std_in_grpo", True) else "dr_grpo"
    else:
        row["method"] = VERL_ESTIMATORS.get(estimator) or _refuse(
            "algorithm.adv_estimator", estimator, "grpo, grpo_vectorized, " + ", ".join(VERL_ESTIMATORS))
    batch, mini = int(get("data.train_batch_size", 1024)), int(get(ACTOR + "ppo_mini_batch_size", 256))
    if batch % mini:
        raise ValueError(f"data.train_batch_size {batch} is not a multiple of {ACTOR}ppo_mini_batch_size "
                         f"{mini}")
    row["minibatches"] = batch // mini
    notes.append(f"minibatches {batch // mini}: data.train_batch_size / ppo_mini_batch_size; verl keeps a "
                 "group's answers in one minibatch, rlvr spreads them evenly (GUIDE.md)")
    clip = float(get(ACTOR + "clip_ratio", 0.2))
    row["clip_low"] = float(get(ACTOR + "clip_ratio_low", clip))
    row["clip_high"] = float(get(ACTOR + "clip_ratio_high", clip))
    mode = get(ACTOR + "policy_loss.loss_mode", "vanilla")
    row["policy_loss"] = VERL_LOSS_MODES.get(mode) or _refuse(ACTOR + "policy_loss.loss_mode", mode,
                                                               ", ".join(VERL_LOSS_MODES))
    c = float(get(ACTOR + "clip_ratio_c", 3.0))
    if mode == "vanilla":  # compute_policy_loss_vanilla always applies the dual clip
        row["clip_c"] = c
    agg = get(ACTOR + "loss_agg_mode", "token-mean")
    if agg not in VERL_AGG:
        _refuse(ACTOR + "loss_agg_mode", agg, ", ".join(VERL_AGG))
    row["loss_agg"] = "seq-mean-token-mean" if mode == "gspo" else agg  # verl's gspo ignores the mode
    if mode == "gspo" and agg != "seq-mean-token-mean":
        notes.append(f"loss_agg_mode {agg}: verl's gspo aggregates by seq-mean-token-mean whatever it says")
    in_loss, in_reward = get(ACTOR + "use_kl_loss", False), get("algorithm.use_kl_in_reward", False)
    if in_loss and in_reward:
        raise ValueError("use_kl_loss and algorithm.use_kl_in_reward both set: a toy row takes the KL in one "
                         "place (kl_placement: loss or reward)")
    if in_loss or in_reward:
        kind = get(ACTOR + "kl_loss_type", "low_var_kl") if in_loss else get("algorithm.kl_penalty", "kl")
        name = ACTOR + "kl_loss_type" if in_loss else "algorithm.kl_penalty"
        row |= {"kl_beta": float(get(ACTOR + "kl_loss_coef", 0.001) if in_loss
                                 else get("algorithm.kl_ctrl.kl_coef", 0.001)),
                "kl_estimator": VERL_KL.get(kind) or _refuse(name, kind, ", ".join(VERL_KL)),
                "kl_placement": "loss" if in_loss else "reward"}
        if kind in ("low_var_kl", "k3"):
            notes.append(f"{name} {kind}: verl clamps k3 to at most 10 and the log-ratio to ±20; rlvr clamps "
                         "neither")
    level = get("algorithm.rollout_correction.rollout_is")
    if level is not None:
        row |= {"is_correction": "truncated",
                "is_cap": float(get("algorithm.rollout_correction.rollout_is_threshold", 2.0))}
        notes.append(f"rollout_is {level}: truncated weights; on the toy an answer is one choice, so per "
                     "token and per sequence coincide, and the correction acts only where a row sets "
                     "sampler_lag or sampler_noise (demo 15)")
    unmapped = [f"{name} ({VERL_NOT_READ[name]})" if name in VERL_NOT_READ else name for name in get.unread()]
    return Translation(row, notes, unmapped)


PEERS = {"trl": from_trl, "verl": from_verl}


def read_settings(path):
    """A trainer's settings from a file: YAML or JSON (a dict), or a command line written out (.sh,
    .txt: TRL's `--name value` / `--name=value`, verl's Hydra `dotted.name=value`), values parsed
    as YAML scalars."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file")
    text = path.read_text()
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        settings = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        if not isinstance(settings, dict):
            raise ValueError(f"{path}: not a mapping of settings")
        return settings
    words = shlex.split(re.sub(r"\\\n", " ", text), comments=True)
    settings, i = {}, 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if not eq:  # `--name value`, or a flag
                nxt = words[i + 1] if i + 1 < len(words) else None
                value, i = ("true", i) if nxt is None or nxt.startswith("--") else (nxt, i + 1)
            settings[name.replace("-", "_")] = yaml.safe_load(value)
        elif re.fullmatch(r"[+~]?[A-Za-z_][\w.]*=.*", word):
            name, _, value = word.lstrip("+~").partition("=")
            settings[name] = yaml.safe_load(value) if value else None
        i += 1
    if not settings:
        raise ValueError(f"{path}: no settings found (a YAML or JSON mapping, or --name value / name=value "
                         "words)")
    return settings


def translate(path, peer):
    """The Translation of a trainer's settings file (read_settings) by one of PEERS."""
    if peer not in PEERS:
        raise ValueError(f"--from {peer!r}; allowed: {', '.join(PEERS)}")
    try:
        return PEERS[peer](read_settings(path))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: {err}") from None


def run(a):
    """`rlvr row --from PEER FILE`: the row as YAML for a config's `rows:`, then the notes and the
    settings with no toy counterpart."""
    import yaml

    got = translate(a.file, a.peer)
    row = {"method": got.row["method"], "lr": 2.0,
           **{k: v for k, v in got.row.items() if k not in ("method", "G")}}
    print(f"# {a.file} ({a.peer}) as a row of rlvr's config (rows: [...]; GUIDE.md, 'The config'); lr is the "
          "lecture's, the toy's own; G is a section's key:")
    print(yaml.safe_dump([row], sort_keys=False, default_flow_style=True, allow_unicode=True).rstrip())
    print(f"# G: {got.row['G']} (a demo section's G, or rlvr.train's G=)")
    for note in got.notes:
        print(f"# note: {note}")
    if got.unmapped:
        print(f"# no toy counterpart, not used: {', '.join(got.unmapped)}")
