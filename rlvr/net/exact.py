"""Exact quantities of a network policy by teacher forcing: no sampling.

The probability of a given answer string is the product of its tokens' next-token probabilities
(EOS included), so P(correct) of a prompt — the probability of the sum's digits then EOS, the one
correct string — is exact, and so is pass@k = 1 − (1 − P(correct))^k for every k (independent
draws), through the toy's own formula (rlvr.metrics.pass_at_k).
"""

import numpy as np
import torch

from ..metrics import pass_at_k
from .model import forward, picked, summed


def sequence_logprob(params, cfg, prompts, answers, answer_len, chunk=4096):
    """log π(answer | prompt) of given strings under each of the E models.

    prompts: [n, Lp] ids; answers: [n, K, La] ids (EOS included, anything after it ignored);
    answer_len: [n, K] tokens counted (EOS included). Returns [E, n, K] float64 (a tensor, with
    gradient if params require it). A prompt's K answers share its prefix: the prompt goes through
    the model once, its keys and values cached, and each answer from there (half the work of a
    full pass per answer; the same log-probs to float32 rounding, tested). At most `chunk`
    answers at a time.
    """
    prompts, answers = torch.as_tensor(prompts), torch.as_tensor(answers)
    answer_len = torch.as_tensor(answer_len)
    n, K, La = answers.shape
    E = params["wte"].shape[0]
    out = []
    step = max(1, chunk // K)  # prompts a chunk
    for s in range(0, n, step):
        p, a, counted = prompts[s : s + step], answers[s : s + step], answer_len[s : s + step]
        m = len(p)
        cache = []  # per layer (keys, values): [E, m, H, Lp, hd], then each answer's copy [E, m·K, ...]
        first = forward(params, cfg, p.expand(E, -1, -1), cache)[:, :, -1]  # [E, m, n_out]: answer token 0
        cache = [tuple(t[:, :, None].expand(-1, -1, K, -1, -1, -1).reshape(E, m * K, *t.shape[2:])
                       for t in kv) for kv in cache]
        seq = a.reshape(1, m * K, La).expand(E, -1, -1)  # [E, m·K, La]
        rest = forward(params, cfg, seq[..., :-1], cache)  # [E, m·K, La − 1, n_out]: answer tokens 1 ..
        logp = torch.cat([first[:, :, None].expand(-1, -1, K, -1).reshape(E, m * K, 1, -1), rest], dim=2)
        out.append(summed(picked(logp, seq, cfg), counted.reshape(1, m * K)).reshape(E, m, K))
    return torch.cat(out, dim=1)


@torch.no_grad()
def candidate_probs(params, cfg, ttask, prompts=None):
    """π(candidate j | prompt i) for the token task's candidates: [E, n, M] numpy (column 0 is
    P(correct)); prompts: ids (default all). Their sum over j is the mass on the candidates."""
    idx = np.arange(ttask["P"]) if prompts is None else np.asarray(prompts)
    lp = sequence_logprob(params, cfg, ttask["prompt"][idx], ttask["answers"][idx], ttask["answer_len"][idx])
    return lp.exp().numpy()


@torch.no_grad()
def p_correct(params, cfg, ttask, prompts=None):
    """Exact P(correct) per model and prompt: [E, n] numpy (the sum's string then EOS)."""
    idx = np.arange(ttask["P"]) if prompts is None else np.asarray(prompts)
    lp = sequence_logprob(params, cfg, ttask["prompt"][idx], ttask["answers"][idx, :1],
                          ttask["answer_len"][idx, :1])
    return lp[..., 0].exp().numpy()


def pass_k(p, ks):
    """Exact pass@k per prompt for P(correct) p: [..., n] and ks: [K] -> [..., n, K]; its mean
    over prompts is the policy's pass@k."""
    return pass_at_k(np.asarray(p)[..., None], np.asarray(ks))


def level_means(values, level, n_levels=4):
    """Mean of values [..., P] over each level's prompts: [..., n_levels]."""
    level = np.asarray(level)
    return np.stack([np.asarray(values)[..., level == k].mean(axis=-1) for k in range(n_levels)], axis=-1)
