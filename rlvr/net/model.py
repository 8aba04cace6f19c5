"""A small decoder-only transformer (GPT-2 style, pre-LayerNorm), E of them packed.

Every parameter has a leading ensemble dimension E: E independent models (seeds, or training
rows) run in one call, each on its own batch, `tokens: [E, B, T]`. Nothing mixes across E — every
matmul is a `bmm` over E (or over E·B·heads) and every loss is summed over models — so at one
thread a model's numbers are bit-identical whether it runs alone or packed (tested).

Parameters are a plain dict {name: tensor [E, ...]} and the forward pass a function, so a model is
picked out by indexing (`select(params, [e])`) and packs are built by `stack`. Model e is
initialised from its own torch.Generator seeded from its key (a tuple of ints such as
(row, seed)), so its init does not depend on what it is packed with.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .tokens import N_OUT, VOCAB


@dataclass(frozen=True)
class Config:
    n_layer: int = 2
    d_model: int = 64
    n_head: int = 4
    max_len: int = 14  # positions: a 6-token prompt and up to 8 answer tokens
    vocab: int = VOCAB  # embedded tokens (PAD included)
    n_out: int = N_OUT  # predicted tokens (PAD excluded)


def torch_seed(key):
    """A 64-bit seed for torch.Generator from a tuple of non-negative ints (e.g. (row, seed, stream)),
    through numpy's SeedSequence, so nearby keys give unrelated streams."""
    return int(np.random.SeedSequence(list(key)).generate_state(1, np.uint64)[0])


def generator(key):
    """A torch.Generator seeded from key (see torch_seed)."""
    g = torch.Generator()
    g.manual_seed(torch_seed(key))
    return g


def _init_one(cfg, g):
    """One model's parameters {name: tensor [...]} drawn from generator g (nanoGPT's init: N(0, 0.02),
    residual projections scaled by 1/√(2·n_layer), biases 0, LayerNorm gains 1)."""
    d, std = cfg.d_model, 0.02
    proj_std = std / math.sqrt(2 * cfg.n_layer)

    def normal(*shape, s=std):
        return torch.randn(shape, generator=g) * s

    p = {"wte": normal(cfg.vocab, d), "wpe": normal(cfg.max_len, d)}
    for i in range(cfg.n_layer):
        p |= {f"h{i}.ln1.w": torch.ones(d), f"h{i}.ln1.b": torch.zeros(d),
              f"h{i}.attn.w": normal(d, 3 * d), f"h{i}.attn.b": torch.zeros(3 * d),
              f"h{i}.proj.w": normal(d, d, s=proj_std), f"h{i}.proj.b": torch.zeros(d),
              f"h{i}.ln2.w": torch.ones(d), f"h{i}.ln2.b": torch.zeros(d),
              f"h{i}.fc.w": normal(d, 4 * d), f"h{i}.fc.b": torch.zeros(4 * d),
              f"h{i}.fc2.w": normal(4 * d, d, s=proj_std), f"h{i}.fc2.b": torch.zeros(d)}
    p |= {"lnf.w": torch.ones(d), "lnf.b": torch.zeros(d), "head.w": normal(d, cfg.n_out)}
    return p


def init_params(cfg, keys):
    """Parameters of len(keys) models {name: tensor [E, ...]}, model e drawn from generator(keys[e])."""
    if cfg.d_model % cfg.n_head:
        raise ValueError(f"d_model = {cfg.d_model} must be a multiple of n_head = {cfg.n_head}")
    return stack([_init_one(cfg, generator(key)) for key in keys])


def stack(models):
    """One pack {name: [E, ...]} from a list of single models {name: [...]}."""
    return {name: torch.stack([m[name] for m in models]) for name in models[0]}


def select(params, models):
    """The pack of the given model indices (a list), copied: {name: [len(models), ...]}."""
    idx = torch.as_tensor(models)
    return {name: p[idx].detach().clone() for name, p in params.items()}


def cat(packs):
    """One pack from several packs, along E."""
    return {name: torch.cat([p[name] for p in packs]) for name in packs[0]}


def diverged(params):
    """Which of the E packed models have a parameter outside the floating-point range: [E] bool
    numpy (an update that overflowed: every later step of that model is NaN)."""
    E = next(iter(params.values())).shape[0]
    bad = torch.zeros(E, dtype=torch.bool)
    for v in params.values():
        bad |= ~torch.isfinite(v.detach()).reshape(E, -1).all(dim=1)
    return bad.numpy()


def n_params(cfg):
    """Parameters per model."""
    return sum(v.numel() for v in _init_one(cfg, torch.Generator()).values())


def _linear(x, w, b):
    """x: [E, ..., din] @ w: [E, din, dout] + b: [E, dout] -> [E, ..., dout], one bmm over E."""
    E, din = x.shape[0], x.shape[-1]
    y = torch.baddbmm(b[:, None, :], x.reshape(E, -1, din), w)
    return y.reshape(*x.shape[:-1], w.shape[-1])


def _layer_norm(x, w, b):
    """LayerNorm over the last dim with per-model gain and bias w, b: [E, d]."""
    shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    return F.layer_norm(x, x.shape[-1:]) * w.reshape(shape) + b.reshape(shape)


def forward(params, cfg, tokens, cache=None):
    """Log-probabilities of the next token after each position.

    tokens: [E, B, T] ids; returns logp: [E, B, T, n_out] (log-softmax over the N_OUT tokens).
    cache: None for a full pass from position 0; or a list (one per layer) to extend: the
    tokens then sit at positions past .. past+T−1, where past is the cached length, and the
    cache is extended in place with their keys and values. An empty list starts one.
    """
    E, B, T = tokens.shape
    H, d = cfg.n_head, cfg.d_model
    hd = d // H
    past = cache[0][0].shape[-2] if cache else 0
    if past + T > cfg.max_len:
        raise ValueError(f"{past + T} positions, the model has {cfg.max_len}")
    pos = torch.arange(past, past + T)
    x = params["wte"][torch.arange(E)[:, None, None], tokens] + params["wpe"][:, pos][:, None]  # [E, B, T, d]
    # causal: position past+i sees keys 0 .. past+i
    mask = torch.arange(past + T)[None, :] > (past + torch.arange(T))[:, None]  # [T, past+T]
    for i in range(cfg.n_layer):
        h = _layer_norm(x, params[f"h{i}.ln1.w"], params[f"h{i}.ln1.b"])
        qkv = _linear(h, params[f"h{i}.attn.w"], params[f"h{i}.attn.b"])  # [E, B, T, 3d]
        # [E, B, H, T, hd] each
        q, k, v = (t.reshape(E, B, T, H, hd).transpose(2, 3) for t in qkv.split(d, dim=-1))
        if cache is not None:
            if len(cache) <= i:
                cache.append((k, v))
            else:
                k = torch.cat([cache[i][0], k], dim=-2)
                v = torch.cat([cache[i][1], v], dim=-2)
                cache[i] = (k, v)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))  # [E, B, H, T, past+T]
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(2, 3).reshape(E, B, T, d)
        x = x + _linear(y, params[f"h{i}.proj.w"], params[f"h{i}.proj.b"])
        h = _layer_norm(x, params[f"h{i}.ln2.w"], params[f"h{i}.ln2.b"])
        h = F.gelu(_linear(h, params[f"h{i}.fc.w"], params[f"h{i}.fc.b"]))
        x = x + _linear(h, params[f"h{i}.fc2.w"], params[f"h{i}.fc2.b"])
    x = _layer_norm(x, params["lnf.w"], params["lnf.b"])
    logits = torch.bmm(x.reshape(E, B * T, d), params["head.w"]).reshape(E, B, T, cfg.n_out)
    return logits.log_softmax(dim=-1)


def token_logprob(params, cfg, prompts, answers):
    """log π(answer token t | prompt, answer tokens before t) by teacher forcing, each model on its
    own batch: [E, B, La] float32, with the gradient.

    prompts: [E, B, Lp] ids; answers: [E, B, La] ids. Positions at and after PAD hold the log-prob
    of token N_OUT − 1 instead (PAD is never predicted): mask them by the answers' lengths.
    """
    Lp = prompts.shape[-1]
    seq = torch.cat([prompts, answers], dim=-1)[..., :-1]  # the last token is only predicted, never read
    return picked(forward(params, cfg, seq)[:, :, Lp - 1 :], answers, cfg)  # logp: [E, B, La, n_out]


def picked(logp, answers, cfg):
    """The log-prob each answer token got: logp [E, B, La, n_out], the next-token log-probs at the
    answers' positions, read at answers [E, B, La] -> [E, B, La]. At PAD it holds token N_OUT − 1's
    (PAD is never predicted): `summed` masks it by the answer's length."""
    return logp.gather(-1, answers.clamp(max=cfg.n_out - 1)[..., None])[..., 0]


def summed(tok, answer_len):
    """log π(answer): the first answer_len [E, B] of its token log-probs tok [E, B, La] summed in
    float64 -> [E, B] (EOS counted; whatever follows it, PAD, not)."""
    counted = torch.arange(tok.shape[-1]) < answer_len[..., None]  # [E, B, La]
    return (tok.double() * counted).sum(dim=-1)


def answer_logprob(params, cfg, prompts, answers, answer_len):
    """log π(answer | prompt) by teacher forcing, each model on its own batch: [E, B] float64.

    prompts: [E, B, Lp] ids; answers: [E, B, La] ids, of which the first answer_len: [E, B] are
    counted (EOS included; whatever follows, PAD, is ignored). Keeps the gradient.
    """
    return summed(token_logprob(params, cfg, prompts, answers), answer_len)
