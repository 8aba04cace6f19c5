"""Autoregressive sampling of G answers per prompt, with a KV cache, E models at once.

Model e draws all its uniforms from its own generator, one block [n, G, max_len] per call,
before anything else, and turns them into tokens by inverse CDF (in float64, row by row): so its
answers depend only on its parameters, its generator and the prompts, not on what it is packed
with (bit-identical at one thread, tested).
"""

import torch

from .model import forward
from .tokens import EOS, PAD


@torch.no_grad()
def sample_answers(params, cfg, prompts, G, generators, max_len=8):
    """G answers to each prompt from each of the E models.

    prompts: [n, Lp] or [E, n, Lp] token ids (the same prompts for every model, or each its own);
    generators: E torch.Generators, one per model; max_len: answer tokens at most, EOS included.
    Returns tokens [E, n, G, max_len] (PAD after EOS) and lengths [E, n, G] (tokens up to and
    including EOS; max_len for an answer cut without EOS, which is wrong).
    """
    E = len(generators)
    prompts = torch.as_tensor(prompts)
    if prompts.dim() == 2:
        prompts = prompts.expand(E, *prompts.shape)
    n, Lp = prompts.shape[1:]
    u = torch.stack([torch.rand((n, G, max_len), generator=g, dtype=torch.float64)
                     for g in generators]).reshape(E, n * G, max_len)
    seq = prompts[:, :, None, :].expand(E, n, G, Lp).reshape(E, n * G, Lp)
    cache = []
    logp = forward(params, cfg, seq, cache)[:, :, -1]  # [E, n·G, n_out]: the first answer token
    out = torch.full((E, n * G, max_len), PAD, dtype=torch.long)
    done = torch.zeros((E, n * G), dtype=torch.bool)
    for t in range(max_len):
        cdf = logp.double().exp().cumsum(dim=-1)
        cdf = cdf / cdf[..., -1:]  # the rounding of exp/cumsum must never leave u past the last token
        tok = (cdf <= u[..., t : t + 1]).sum(dim=-1).clamp_(max=cfg.n_out - 1)
        out[..., t] = torch.where(done, PAD, tok)
        done = done | (tok == EOS)
        if t + 1 == max_len or bool(done.all()):
            break
        logp = forward(params, cfg, out[..., t : t + 1], cache)[:, :, -1]
    ended = (out == EOS).any(dim=-1)
    lengths = torch.where(ended, (out == EOS).int().argmax(dim=-1) + 1, max_len)
    return out.reshape(E, n, G, max_len), lengths.reshape(E, n, G)
