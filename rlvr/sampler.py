"""The perturbed sampler of off-policy rollouts (the knob sampler_noise): the logits it draws
answers from are the policy's plus a fixed σ·ε, ε ~ N(0, 1) per (prompt, answer), drawn once per
seed from a generator of its own, so a seed's perturbation is the same in training
(rlvr/training.py) and in demo 15's exact part, whatever the seeds beside it."""

import numpy as np


def sampler_noise_logits(seeds, shape, sigma):
    """The sampler's fixed logit perturbation of each seed, σ·N(0, 1) from default_rng((seed, 1))
    (apart from the seed's sampling generator): [S, *shape], or 0 for σ = 0."""
    if not sigma:
        return 0.0
    return sigma * np.stack([np.random.default_rng((s, 1)).standard_normal(shape) for s in seeds])
