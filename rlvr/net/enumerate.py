"""Every answer a network can draw, when answers are short: exact expectations over answers.

With answers of at most max_len tokens the sampler (rlvr/net/sample.py) can draw
Σ_{l ≤ max_len} 12^l strings a prompt (1,885 at max_len 3), so every expectation over answers
is a finite sum: lengths, the sequence entropy, the mass off the candidates, each KL estimator
summed over tokens and its gradient (answer_table), and the expected update of a group
estimator under per-answer loss weights (expected_update), which teacher forcing of the correct
string alone (rlvr/net/exact.py) cannot give. The tests hold each against Monte Carlo. No
pipeline job imports this module: a user's or a test's tool.
"""

import itertools

import numpy as np
import torch

from ..exact import advantage_given_reward
from ..objective import aggregation_weights
from .model import token_logprob
from .tokens import EOS, N_OUT, PAD, reward_correct

MAX_ANSWERS = 300_000  # a prompt's answers enumerated at most (max_len 5 with 13 outputs: 271,453)


def _longest(symbols):
    """The largest max_len whose answers number at most MAX_ANSWERS."""
    L = 0
    while sum(symbols**body for body in range(L + 2)) <= MAX_ANSWERS:
        L += 1
    return L


def all_answers(max_len, n_out=N_OUT):
    """Every answer the sampler (rlvr/net/sample.py) can draw with at most max_len tokens: each
    string of 0..max_len−1 tokens other than EOS followed by EOS, and each of max_len such tokens
    cut without it. (tokens [S, max_len] PAD after EOS, lengths [S] EOS counted); S =
    Σ_{l ≤ L} (n_out − 1)^l, 1,885 for the 13 outputs and max_len 3: their probabilities sum to 1."""
    symbols = [t for t in range(n_out) if t != EOS]
    count = sum(len(symbols) ** body for body in range(max_len + 1))
    if count > MAX_ANSWERS:
        raise ValueError(f"max_len = {max_len}: {count:,} answers a prompt, more than {MAX_ANSWERS:,} to "
                         f"enumerate; allowed: max_len <= {_longest(len(symbols))}")
    tokens, lengths = [], []
    for body in range(max_len + 1):
        strings = list(itertools.product(symbols, repeat=body))
        strings = np.array(strings, np.int64).reshape(len(strings), body)
        ends = [[EOS]] if body < max_len else []  # a string of max_len tokens is cut, without EOS
        row = np.concatenate([strings, np.full((len(strings), len(ends)), EOS, np.int64)], axis=1)
        tokens.append(np.concatenate([row, np.full((len(row), max_len - row.shape[1]), PAD)], axis=1))
        lengths.append(np.full(len(row), row.shape[1]))
    return np.concatenate(tokens), np.concatenate(lengths)


def answer_table(params, cfg, prompts, max_len, chunk=4096):
    """Each token's log-prob of every answer the sampler can draw (all_answers), under each of
    the E models, to every prompt: (tokens [S, L], lengths [S], logp [E, n, S, L] float64, 0 past
    each answer's length, with gradient if params require it). Σ_t logp is log π(y); exp of it sums
    to 1 over S for each prompt."""
    tokens, lengths = all_answers(max_len, cfg.n_out)
    prompts = torch.as_tensor(np.asarray(prompts))
    n, S, E = len(prompts), len(tokens), params["wte"].shape[0]
    seq_prompts = prompts[:, None].expand(n, S, -1).reshape(n * S, -1)
    seq_answers = torch.from_numpy(tokens)[None].expand(n, S, -1).reshape(n * S, max_len)
    counted = torch.from_numpy(np.arange(max_len) < lengths[:, None])  # [S, L]
    counted = counted[None].expand(n, S, -1).reshape(n * S, -1)
    out = [token_logprob(params, cfg, seq_prompts[s : s + chunk].expand(E, -1, -1),
                         seq_answers[s : s + chunk].expand(E, -1, -1)).double() * counted[s : s + chunk]
           for s in range(0, n * S, chunk)]
    return tokens, lengths, torch.cat(out, dim=1).reshape(E, n, S, max_len)


def expected_update(params, cfg, ttask, prompt, method, G, loss_agg, max_len, norm=None):
    """The exact expected update −E[∇loss] of a batch of groups of G answers to one prompt, at
    μ = 1 with no clip and no KL, as rlvr.net.objective.token_loss weighs them: [E, D] (the
    models' parameters flattened in params' order), enumerated over every answer (all_answers).

    An answer's tokens share its advantage, so its update is A·u(y)·∇log π(y) with u its loss
    weight per token summed (seq-mean-token-mean 1/|y|, seq-mean-token-sum-norm 1/C, C = norm,
    default max_len); by symmetry E[A | y] = c_{r(y)}, the estimator's mean advantage given the
    answer's reward (rlvr.exact.advantage_given_reward), so −E[∇loss] = Σ_y π(y) c_{r(y)} u(y)
    ∇log π(y). token-mean weighs an answer by the batch's token count, which couples the answers:
    not enumerable here, refused."""
    if loss_agg == "token-mean":
        raise ValueError("loss_agg 'token-mean' divides by the batch's tokens: its expectation couples "
                         "the answers and is not enumerable; allowed: seq-mean-token-mean, "
                         "seq-mean-token-sum-norm")
    params = {k: v.detach().clone().requires_grad_() for k, v in params.items()}
    tokens, lengths, logp = answer_table(params, cfg, ttask["prompt"][[prompt]], max_len)
    logp = logp[:, 0].sum(dim=-1)  # [E, S] log π(y)
    r = reward_correct(ttask, [prompt] * len(tokens), tokens[:, None], lengths[:, None])[:, 0]  # [S]
    C = float(max_len if norm is None else norm)
    share = aggregation_weights(loss_agg, lengths, None, 1, unit=C)  # [S] or None (every answer 1)
    u = torch.from_numpy((np.ones(len(lengths)) if share is None else np.asarray(share, float)) / C)
    out = []
    for e in range(logp.shape[0]):
        pi = logp[e].detach().exp()
        p = float((pi * torch.from_numpy(r)).sum())
        c_correct, c_wrong = advantage_given_reward(p, method, G)
        c = torch.from_numpy(np.where(r == 1, c_correct, c_wrong))
        grads = torch.autograd.grad((pi * c * u * logp[e]).sum(), list(params.values()), retain_graph=True)
        out.append(torch.cat([g[e].reshape(-1) for g in grads]).double())
    return torch.stack(out)
