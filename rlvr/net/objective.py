"""The toy's objective at token level: the network's policy-gradient loss for a batch of sampled
answers (issue 35, "What to build" item 2).

Nothing here restates the toy's definitions; each is called where it applies per token:
- the advantages come from the estimator registry on rewards [n, G] (rlvr.estimators.advantages,
  called by rlvr/net/train.py), one per answer, shared by its tokens;
- the clip decides per token with the toy's rule (rlvr.objective.clipped_surrogate_weights on the
  token's ratio ρ_t = π(o_t)/π_old(o_t) and its answer's A): a clipped token's term is constant
  in θ (the value the clip holds it at), any other's is A·ρ_t, as PPO's min(ρA, clip(ρ)A) and
  verl's dual clip max(·, c·A) for A < 0;
- GSPO's ratio is the answer's s = exp(mean_t log ρ_t) on every token of it, with the gradient of
  log π(o_t) (verl b178a3c's gspo: sg(s)·π(o_t)/sg(π(o_t))), clipped per answer; CISPO's token
  costs −sg(clip(ρ_t))·A·log π(o_t) (verl b178a3c's cispo): the clip caps, never zeroes;
- the KL to the reference is Schulman's estimator of rlvr.kl per token, ℓ_t = log π(o_t)/π_ref(o_t),
  added to the loss as GRPO and TRL do: its value is kl_estimate(ℓ_t) and its gradient
  kl_estimate_slope(ℓ_t)·∇ℓ_t, which is what autograd of the estimator would give;
- the aggregation is rlvr.objective.aggregation_weights per answer, in units of a constant C
  (Dr. GRPO's, the sampler's maximum length by default), spread over the answer's tokens
  (token_weights).

The peers, read at verl b178a3c (verl/trainer/ppo/core_algos.py: agg_loss,
compute_policy_loss_vanilla, kl_penalty_forward) and TRL f2cd577 (trl/trainer/grpo_trainer.py,
_compute_loss), with ℓ_it the loss of token t of answer i, N answers, T tokens in the batch:
- token-mean (verl's default; TRL "dapo", "bnpo"): Σ_it ℓ_it / T;
- seq-mean-token-mean (TRL "grpo"): (1/N) Σ_i (Σ_t ℓ_it / |o_i|);
- seq-mean-token-sum-norm (TRL "dr_grpo"): Σ_it ℓ_it / (N·C), C = max_completion_length. verl
  divides by C only (loss_scale_factor, by default the padded response length), not by N: the
  same direction, its scale N times ours (an lr N times smaller matches). Here the toy's
  convention holds: every mode weighs a token 1/(N·C) in a batch of answers of C tokens, so an
  lr means the same under each.
Each model e of a pack has its own batch and its own loss; the caller sums the losses over E,
so no gradient mixes between models.
"""

import numpy as np
import torch

from ..kl import kl_estimate, kl_estimate_slope
from ..objective import Objective, aggregation_weights, clipped_surrogate_weights

TOKEN_POLICY_LOSSES = ("ppo", "gspo", "cispo")  # the toy's POLICY_LOSSES that token_loss writes per token


def token_mask(lengths, L):
    """Which of L answer positions are counted: lengths [...] (EOS included) -> [..., L] bool."""
    return torch.arange(L) < torch.as_tensor(lengths)[..., None]


def token_weights(mode, mask, norm=None):
    """Each token's weight in the loss under an aggregation mode: mask [E, n, G, L] bool ->
    [E, n, G, L] float64 (0 off the mask), the loss being Σ weight · (token's loss) per model.

    An answer's share is rlvr.objective.aggregation_weights(mode, |o|, T_e, N, unit=C) with
    |o| its tokens, T_e the tokens of model e's batch, N = n·G its answers and C = norm
    (default L), spread over its tokens as share / (N·C): token-mean 1/T_e, seq-mean-token-mean
    1/(N·|o|), seq-mean-token-sum-norm 1/(N·C). Every answer must have a token (EOS counts).
    """
    mask = torch.as_tensor(mask)
    E, L = mask.shape[0], mask.shape[-1]
    C = float(L if norm is None else norm)
    length = mask.sum(dim=-1).double().numpy()  # [E, n, G]
    N = length[0].size
    batch_tokens = length.reshape(E, -1).sum(axis=1).reshape(E, 1, 1)  # [E, 1, 1]: each model's own
    share = aggregation_weights(mode, length, batch_tokens, N, unit=C)  # [E, n, G] or None (all 1)
    share = (torch.ones(length.shape, dtype=torch.float64) if share is None
             else torch.from_numpy(np.array(share)))
    return (share / (N * C))[..., None] * mask


def token_loss(logp, logp_old, A, mask, obj=None, logp_ref=None, norm=None):
    """Each model's loss over its batch of answers, to minimise: (loss [E], clipped [E, n, G, L]).

    logp: [E, n, G, L] log π(o_t) of each answer token under the policy being updated (with
    gradient); logp_old: the same under π_old, the sampler (no gradient; at the first of μ updates
    it equals logp, ρ = 1 and nothing is clipped); A: [E, n, G] each answer's advantage, or
    [E, n, G, L] each token's (an off-policy correction per token weighs it: train_step); mask:
    [E, n, G, L] the answers' tokens (token_mask); obj: rlvr.objective.Objective (None: the
    lecture's defaults), whose clip_low, clip_high, clip_c, kl_beta, kl_estimator and loss_agg
    are read here (its epochs by the caller); logp_ref: [E, n, G, L] under π_ref (read when
    obj.kl_beta); norm: Dr. GRPO's constant C (token_weights). clipped: the counted tokens the
    clip held (cispo: capped).

    Token t of answer i costs −A_i ρ_t (or the clip's constant) + β k(ℓ_t), weighted by
    token_weights; obj.policy_loss gspo puts the answer's sequence ratio in ρ_t's place, cispo
    costs −sg(clip(ρ_t)) A_i log π(o_t). A KL in the reward is shaped into the rewards before the
    advantages (not here).
    """
    obj = Objective() if obj is None else obj
    mask = torch.as_tensor(mask)
    logp = logp.double()
    A = torch.as_tensor(A, dtype=torch.float64)
    A = A[..., None] if A.dim() == mask.dim() - 1 else A  # [E, n, G, 1]: shared by an answer's tokens
    # off the mask ρ = 1 and ℓ = 0 exactly: whatever a PAD position holds, it adds nothing, not even NaN
    log_ratio = torch.where(mask, logp - torch.as_tensor(logp_old, dtype=torch.float64), 0.0)
    if obj.policy_loss == "gspo":  # the answer's mean log-ratio as value, each token's own gradient
        mean = log_ratio.detach().sum(dim=-1, keepdim=True) / mask.sum(dim=-1, keepdim=True)
        log_ratio = torch.where(mask, mean + log_ratio - log_ratio.detach(), 0.0)
    ratio = log_ratio.exp()
    held = ratio.detach()
    if obj.policy_loss == "cispo":
        held = held.clamp(1 - obj.clip_low, 1 + obj.clip_high)
        clipped = (held != ratio.detach()) & mask
        per_token = -A * held * torch.where(mask, logp, 0.0)
    else:
        _, clipped = clipped_surrogate_weights(A.numpy(), held.numpy(), obj.clip_low, obj.clip_high,
                                               obj.clip_c)
        clipped = torch.from_numpy(np.asarray(clipped)) & mask
        # the value a clipped token is held at: the clipped ratio, or c where the dual clip took over
        held = held.clamp(1 - obj.clip_low, 1 + obj.clip_high)
        if obj.clip_c:
            held = torch.where((A < 0) & (ratio.detach() > obj.clip_c), obj.clip_c, held)
        per_token = -torch.where(clipped, A * held, A * ratio)
    if obj.kl_beta:
        if obj.kl_placement != "loss":
            raise ValueError(f"kl_placement = {obj.kl_placement!r}: token_loss puts the KL in the loss; "
                             "in the reward it belongs in the rewards, before the advantages")
        ell = torch.where(mask, logp - torch.as_tensor(logp_ref, dtype=torch.float64), 0.0)
        at = ell.detach().numpy()
        k = torch.from_numpy(kl_estimate(at, obj.kl_estimator))
        slope = torch.from_numpy(np.asarray(kl_estimate_slope(at, obj.kl_estimator), float))
        per_token = per_token + obj.kl_beta * (k + slope * (ell - ell.detach()))  # value k, gradient k'·∇ℓ
    weights = token_weights(obj.loss_agg, mask, norm)
    return (weights * per_token).sum(dim=(1, 2, 3)), clipped
