"""GRPO-style training of E packed network models on the token task, top to bottom (issue 35).

Each step, each model e draws n prompts and G answers to each from its own generator (seeded from
its key, e.g. (row, seed)), rewards them (a reward of rlvr/rewards.py, by default the verifier: 1
iff the sum then EOS), takes the advantages from the toy's estimator registry on its own rewards
[n, G], and makes μ·m = obj.epochs × obj.minibatches updates of rlvr.net.objective.token_loss, each on a
minibatch of every group's answers. With sampler_lag L the answers are drawn by the policy of L
steps before (asynchronous training) and the update weighs them by is_correction of ρ =
π_old/π_sampler, per answer or per token (correct_advantages). The models share nothing but the
Python loop: their losses are summed, so each gets its own gradient, and SGD and Adam act
elementwise, so at one thread a model's numbers are the same bits alone or packed (tested). π_ref,
for the KL, is the start.
"""

from collections import deque

import numpy as np
import torch

from ..estimators import ESTIMATORS, advantages
from ..importance import IS_CORRECTIONS, is_weights
from ..kl import kl_estimate
from ..objective import Objective, minibatch_columns
from ..rewards import REWARDS
from .exact import candidate_probs
from .model import diverged, generator, init_params, token_logprob
from .objective import TOKEN_POLICY_LOSSES, token_loss, token_mask
from .sample import sample_answers
from .specs import READ
from .tokens import candidate_index

SAMPLE_STREAM = 2  # a model's sampling generator is generator((*key, SAMPLE_STREAM))
REWARD_STREAM = 3  # a random reward's uniforms: generator((*key, REWARD_STREAM)), the answers left alone
# a record's sampled answers (record_sample): their own stream, so recording leaves training's bits alone
RECORD_STREAM = 4
RECORD_ANSWERS = 4  # answers a prompt sampled at each record: 800 a model over the 200 prompts
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}  # rlvr/net/specs.py names them
# per step and model (train_step); not "reward", the name of the row's reward function in its files
BATCH_STATS = ("mean_reward", "reward_zero_std", "clip_share", "length")


def check(method, obj, optimizer, reward="verifier", correction=("none", 2.0, "sequence")):
    """ValueError for what this trainer cannot run yet (or ever)."""
    obj.check()
    if obj.policy_loss not in TOKEN_POLICY_LOSSES:
        raise ValueError(f"policy_loss {obj.policy_loss!r} has no per-token form on the network yet "
                         f"(rlvr/net/objective.py token_loss); allowed: {', '.join(TOKEN_POLICY_LOSSES)}")
    if reward not in REWARDS:
        raise ValueError(f"reward {reward!r}; allowed: {', '.join(REWARDS)}")
    missing = set(ESTIMATORS[method].needs) - set(READ) if method in ESTIMATORS else set()
    if method not in ESTIMATORS or missing:
        raise ValueError(f"method {method!r}: unknown, or needs {', '.join(sorted(missing))}, which the "
                         "network does not give yet (a learned V, the policy over all answers)")
    if obj.kl_in_reward and "correctness" in ESTIMATORS[method].needs:
        raise ValueError(f"method {method!r} reads correctness off the reward: no KL in the reward")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}; allowed: {', '.join(OPTIMIZERS)}")
    if IS_CORRECTIONS[correction[0]].renormalise and correction[2] != "sequence":
        raise ValueError(f"is_correction {correction[0]!r} drops whole answers: set is_level: sequence")


def _token_logp(params, cfg, prompts, answers, shape):
    """Each answer token's log-prob under params, [E, n·G, ·] sequences -> shape [E, n, G, L]."""
    return token_logprob(params, cfg, prompts, answers).reshape(shape)


def _sequences(prompt_tokens, tokens):
    """_token_logp's inputs for the answers tokens [E, n, g, L] to the prompts prompt_tokens
    [E, n, ·]: (prompts [E, n·g, ·], answers [E, n·g, L], shape [E, n, g, L])."""
    E, n, g, L = tokens.shape
    prompts = prompt_tokens[:, :, None].expand(E, n, g, -1).reshape(E, n * g, -1)
    return prompts, tokens.reshape(E, n * g, L), tokens.shape


def correct_advantages(A, logp_old, logp_sampler, mask, correction, cap, level):
    """The advantages A [E, n, G] of answers a stale sampler drew, weighed by is_weights of
    ρ = π_old/π_sampler (rlvr/importance.py): per answer, ρ = Π_t ρ_t over its tokens (level
    "sequence") -> [E, n, G]; or per token, each token's ρ_t (level "token", verl b178a3c's
    rollout_is="token") -> [E, n, G, L]. logp_old, logp_sampler: [E, n, G, L]; mask: its tokens.
    Returns (the weighed advantages, the weights)."""
    ell = np.where(mask, np.asarray(logp_old, float) - np.asarray(logp_sampler, float), 0.0)  # log ρ_t
    if level == "sequence":
        w = is_weights(np.exp(ell.sum(axis=-1)), correction, cap)
        return A * w, w
    w = is_weights(np.exp(ell), correction, cap)
    return A[..., None] * w, w


def kept_share(mask, kept, loss_agg):
    """[E] the count of each model's minibatch over the count of the answers a correction kept
    (masked_renorm, verl's rejection): in tokens under token-mean, in answers under
    seq-mean-token-mean, 1 under seq-mean-token-sum-norm (a constant normaliser). mask:
    [E, n, g, L] the answers' tokens; kept: [E, n, g] bool."""
    if loss_agg == "seq-mean-token-sum-norm":
        return np.ones(len(kept))
    counted = np.asarray(mask).sum(axis=-1) if loss_agg == "token-mean" else np.ones(kept.shape)  # [E, n, g]
    return counted.sum(axis=(1, 2)) / np.maximum((counted * kept).sum(axis=(1, 2)), 1)


def pay(reward, ttask, params, cfg, prompts, y, reward_gens):
    """Rewards [E, n, G] of a reward of rlvr/rewards.py for the candidates y [E, n, G] that the
    policy of params drew for prompts [E, n] (−1 off the candidates: handed to the reward as M,
    which no reward reads as correct); its π over the candidates, by teacher forcing, only for a
    reward that reads it."""
    spec, (E, n, G), M = REWARDS[reward], y.shape, ttask["answers"].shape[1]
    pi = (np.concatenate([candidate_probs({k: v[e : e + 1] for k, v in params.items()}, cfg, ttask,
                                          prompts[e]) for e in range(E)])  # model e alone
          if spec.reads_pi else None)  # [E, n, M]
    u = (np.stack([torch.rand((n, G), generator=g, dtype=torch.float64).numpy() for g in reward_gens])
         if spec.random else None)  # [E, n, G]
    return np.asarray(spec.fn(np.where(y < 0, M, y), 1, pi, u), dtype=float)


def train_step(params, ref, opt, gens, cfg, ttask, method, obj, n, G, max_len=8, norm=None,
               reward_offset=0.0, reward="verifier", reward_gens=None, sampler=None,
               correction=("none", 2.0, "sequence")):
    """One step of E packed models: rollouts, rewards, advantages, μ·m = obj.epochs·obj.minibatches
    updates of params (in place, by opt), each on one minibatch of every group's answers. ref:
    π_ref's parameters (read when obj.kl_beta); gens: E generators; reward_offset: added to every
    reward the estimator sees (the lecture's demo 3); reward: its name in rlvr/rewards.py,
    reward_gens: E generators of a random reward's uniforms; sampler: the parameters that draw the
    answers (None: params, on-policy), correction: (is_correction, is_cap, is_level) of the answers
    it drew (correct_advantages).
    Returns {name: [E]} for BATCH_STATS: the batch's mean reward, the share of its groups whose
    rewards are all equal (no signal: TRL's frac_reward_zero_std), the share of (token, update)
    pairs the clip held, the answers' mean tokens (EOS included)."""
    E = len(gens)
    prompt_tok = torch.from_numpy(ttask["prompt"])
    # rollouts: n prompts and G answers each, per model from its own generator
    prompts = torch.stack([torch.randint(ttask["P"], (n,), generator=g) for g in gens])  # [E, n]
    drawn_by = params if sampler is None else sampler
    tokens, lengths = sample_answers(drawn_by, cfg, prompt_tok[prompts], G, gens, max_len)  # [E, n, G, L]
    y = np.stack([candidate_index(ttask, prompts[e].numpy(), tokens[e].numpy(), lengths[e].numpy())
                  for e in range(E)])  # [E, n, G]: which candidate each answer is, −1 none
    r = pay(reward, ttask, drawn_by, cfg, prompts.numpy(), y, reward_gens)  # [E, n, G]: π the sampler's
    mask = token_mask(lengths, max_len)  # [E, n, G, L]
    batch = _sequences(prompt_tok[prompts], tokens)  # the whole batch's sequences
    # the first update's log-probs, with gradient; the sampler is π_old
    logp = _token_logp(params, cfg, *batch)
    logp_old = logp.detach()
    logp_ref = None
    if obj.kl_beta:
        with torch.no_grad():
            logp_ref = _token_logp(ref, cfg, *batch)
    # advantages: the registry, on each model's own batch
    r_adv = r + reward_offset
    if obj.kl_in_reward:  # verl use_kl_in_reward: β Σ_t k(ℓ_t) off each answer's reward
        ell = (logp_old.double() - logp_ref.double()).numpy()
        r_adv = r_adv - obj.kl_beta * (kl_estimate(ell, obj.kl_estimator) * mask.numpy()).sum(axis=-1)
    seq_logp = (logp_old.double() * mask).sum(dim=-1).numpy()  # [E, n, G] log π_old(answer)
    A = np.stack([advantages(r_adv[e], method, logp=seq_logp[e], offset=reward_offset)
                  for e in range(E)])  # [E, n, G]
    if sampler is not None:  # off-policy: weigh what the stale sampler drew ([E, n, G] or [E, n, G, L])
        with torch.no_grad():
            logp_sampler = _token_logp(sampler, cfg, *batch)
        A, w = correct_advantages(A, logp_old.double().numpy(), logp_sampler.double().numpy(), mask.numpy(),
                                  *correction)
        kept = w > 0 if IS_CORRECTIONS[correction[0]].renormalise else None  # [E, n, G] (level sequence)
    else:
        kept = None
    loss_obj = obj._replace(kl_beta=0.0) if obj.kl_in_reward else obj
    # μ passes over this batch in m minibatches of every group's answers; the first is on-policy (ρ = 1)
    parts = minibatch_columns(G, obj.minibatches)
    # each minibatch's sequences, built once for the μ passes (one minibatch: the batch's own)
    inputs = [batch] if len(parts) == 1 else [_sequences(prompt_tok[prompts], tokens[:, :, mb])
                                              for mb in parts]
    clipped_tokens = torch.zeros(E)
    for update in range(obj.epochs * len(parts)):
        mb = parts[update % len(parts)]
        # the first update's log-probs are the batch's; a later one's, its minibatch's under π now
        logp = _token_logp(params, cfg, *inputs[update % len(parts)]) if update else logp[:, :, mb]
        loss, clipped = token_loss(logp, logp_old[:, :, mb], A[:, :, mb], mask[:, :, mb], loss_obj,
                                   None if logp_ref is None else logp_ref[:, :, mb], norm)
        if kept is not None:  # the dropped answers leave the loss's count
            loss = loss * torch.from_numpy(kept_share(mask[:, :, mb], kept[:, :, mb], loss_obj.loss_agg))
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()  # each model's loss has only its own parameters
        opt.step()
        clipped_tokens += clipped.sum(dim=(1, 2, 3))
    clip_share = clipped_tokens / (mask.sum(dim=(1, 2, 3)) * obj.epochs)
    return {"mean_reward": r.mean(axis=(1, 2)), "reward_zero_std": (r.std(axis=2) == 0).mean(axis=1),
            "clip_share": clip_share.numpy(), "length": lengths.double().mean(dim=(1, 2)).numpy()}


def record_sample(params, cfg, ttask, gens, per_prompt=RECORD_ANSWERS, max_len=8, chunk=50):
    """per_prompt answers to every prompt drawn from each of the E models, as the sampler draws
    them (any string, not only the candidates): (which candidate each is [E, P, per_prompt], −1
    off the candidates; its tokens, EOS counted [E, P, per_prompt]). What exact teacher forcing
    of the candidates cannot give: where the mass off the candidates goes, and how long those
    strings are. gens: E generators of their own stream (RECORD_STREAM); `chunk` prompts a call,
    which bounds the memory and fixes the draws' order."""
    P = ttask["P"]
    prompt_tok = torch.from_numpy(ttask["prompt"])
    ys, lengths = [], []
    for s in range(0, P, chunk):
        idx = np.arange(s, min(P, s + chunk))
        tokens, length = sample_answers(params, cfg, prompt_tok[idx], per_prompt, gens, max_len)
        ys.append(np.stack([candidate_index(ttask, idx, tokens[e].numpy(), length[e].numpy())
                            for e in range(len(gens))]))
        lengths.append(length.numpy())
    return np.concatenate(ys, axis=1), np.concatenate(lengths, axis=1)


def train(cfg, ttask, keys, method, start=None, steps=100, n=32, G=8, lr=1e-4, obj=None,
          optimizer="adam", max_len=8, norm=None, record_every=10, reward_offset=0.0, reward="verifier",
          sampler_lag=0, correction=("none", 2.0, "sequence")):
    """Train len(keys) = E models packed from `start` (parameters {name: [E or 1, ...]}, e.g. the
    base; None: a fresh init from the keys) for `steps` steps of n prompts × G answers (train_step).

    Returns {name: [steps, E] for each of BATCH_STATS (train_step), "record_steps": [R] the steps
    before which (and after the last) "probs": [R, E, P, M], each candidate's exact probability
    (rlvr.net.exact.candidate_probs: column 0 is P(correct)), "pass1": [R, E], P(correct)
    averaged over the prompts, and "sampled", "sampled_len": [R, E, P, RECORD_ANSWERS], answers
    drawn at each record (record_sample), were taken, "params": the final parameters}.
    obj: rlvr.objective.Objective (None: the lecture's, μ = 1, no KL, every answer alike); reward:
    a reward's name in rlvr/rewards.py (the verifier by default); sampler_lag: the answers of step
    t drawn by the parameters at the start of step max(0, t − sampler_lag), weighed by correction
    (is_correction, is_cap, is_level: correct_advantages).
    """
    obj = Objective() if obj is None else obj
    check(method, obj, optimizer, reward, correction)
    E = len(keys)
    if start is None:
        start = init_params(cfg, keys)
    params = {k: v.detach().expand(E, *v.shape[1:]).clone().requires_grad_() for k, v in start.items()}
    ref = {k: v.detach().clone() for k, v in params.items()}  # π_ref: where training starts
    opt = OPTIMIZERS[optimizer](params.values(), lr=lr)
    gens = [generator((*key, SAMPLE_STREAM)) for key in keys]
    reward_gens = [generator((*key, REWARD_STREAM)) for key in keys] if REWARDS[reward].random else None
    record_gens = [generator((*key, RECORD_STREAM)) for key in keys]
    past = deque(maxlen=sampler_lag + 1)  # the parameters at the start of the last L + 1 steps
    out = {name: np.zeros((steps, E)) for name in BATCH_STATS}
    record_steps, probs, sampled = sorted({*range(0, steps, record_every), steps}), [], []
    for step in range(steps + 1):
        if step in record_steps:
            probs.append(candidate_probs(params, cfg, ttask))
            sampled.append(record_sample(params, cfg, ttask, record_gens, max_len=max_len))
        if step < steps:
            if sampler_lag:
                past.append({k: v.detach().clone() for k, v in params.items()})
            stats = train_step(params, ref, opt, gens, cfg, ttask, method, obj, n, G, max_len, norm,
                               reward_offset, reward, reward_gens, past[0] if sampler_lag else None,
                               correction)
            for name in BATCH_STATS:
                out[name][step] = stats[name]
            if (bad := diverged(params)).any():  # as the toy: an error, never NaN results
                raise FloatingPointError(
                    f"training diverged at step {step + 1} (seed {keys[bad.argmax()][-1]}): the network's "
                    f"parameters under {method} at lr {lr:g} ({optimizer}) left the floating-point range; "
                    "lower lr")
    probs = np.stack(probs)
    return out | {"record_steps": np.array(record_steps), "probs": probs, "pass1": probs[..., 0].mean(axis=2),
                  "sampled": np.stack([y for y, _ in sampled]),
                  "sampled_len": np.stack([n for _, n in sampled]),
                  "params": {k: v.detach() for k, v in params.items()}}
