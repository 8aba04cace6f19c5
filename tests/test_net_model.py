"""The packed transformer (rlvr/net/model.py) and its sampler (rlvr/net/sample.py): the KV cache
gives the full pass's numbers, and a model's init, log-probs, gradients and samples are the same
bits alone or packed with others (one thread)."""

import numpy as np
import pytest
import torch

from rlvr.net.model import Config, answer_logprob, forward, generator, init_params, select
from rlvr.net.sample import sample_answers
from rlvr.net.tokens import EOS, PAD, make_token_task
from rlvr.task import make_task

torch.set_num_threads(1)  # bit-identity across packings holds at one thread
MICRO = Config(n_layer=2, d_model=16, n_head=2)
KEYS = [(0, 0), (0, 1), (3, 7)]


@pytest.fixture(scope="module")
def ttask():
    return make_token_task(make_task(P=8), seed=0)


def test_a_models_init_does_not_depend_on_its_pack():
    packed = init_params(MICRO, KEYS)
    alone = init_params(MICRO, [KEYS[2]])
    assert all(torch.equal(packed[k][2:], alone[k]) for k in packed)
    assert not torch.equal(packed["wte"][0], packed["wte"][1])  # different keys, different models


def test_the_kv_cache_gives_the_full_passs_log_probs(ttask):
    params = init_params(MICRO, KEYS)
    with torch.no_grad():  # weights 3× the init's, so the attention is far from uniform
        for v in params.values():
            v.mul_(3)
    tokens = torch.randint(0, 13, (3, 5, MICRO.max_len), generator=generator((9,)))
    full = forward(params, MICRO, tokens)  # [E, B, T, n_out]
    cache = []
    steps = [forward(params, MICRO, tokens[..., :6], cache)]  # the prompt at once, then a token a step
    steps += [forward(params, MICRO, tokens[..., t : t + 1], cache) for t in range(6, MICRO.max_len)]
    cached = torch.cat(steps, dim=2)
    # float32 sums in another order: log-probs down to about −5 agree within 1e-5 (measured 1.2e-6),
    # probabilities within 1e-6 (measured 1.2e-7)
    assert full.min() < -4 and (cached - full).abs().max() < 1e-5
    assert (cached.exp() - full.exp()).abs().max() < 1e-6
    assert full.exp().sum(-1).sub(1).abs().max() < 1e-5
    with pytest.raises(ValueError, match="positions"):
        forward(params, MICRO, tokens[..., :1], cache)


def test_log_probs_and_gradients_are_the_same_bits_alone_or_packed(ttask):
    packed = {k: v.requires_grad_() for k, v in init_params(MICRO, KEYS).items()}
    alone = {k: v[1:2].detach().clone().requires_grad_() for k, v in packed.items()}
    g = generator((5,))
    p = torch.randint(0, 8, (3, 40), generator=g)
    j = torch.randint(0, 16, (3, 40), generator=g)
    prompts, answers = torch.from_numpy(ttask["prompt"]), torch.from_numpy(ttask["answers"])
    lens = torch.from_numpy(ttask["answer_len"])
    lp_packed = answer_logprob(packed, MICRO, prompts[p], answers[p, j], lens[p, j])  # [3, 40]
    lp_alone = answer_logprob(alone, MICRO, prompts[p[1:2]], answers[p[1:2], j[1:2]], lens[p[1:2], j[1:2]])
    assert torch.equal(lp_packed[1:2], lp_alone)
    lp_packed.sum().backward()
    lp_alone.sum().backward()
    assert all(torch.equal(packed[k].grad[1:2], alone[k].grad) for k in packed)


def test_samples_are_the_same_bits_alone_or_packed_and_well_formed(ttask):
    params = init_params(MICRO, KEYS)
    with torch.no_grad():
        params["head.w"][:, :, EOS] += 0.3  # answers of a few tokens, some cut at max_len
    tok, lens = sample_answers(params, MICRO, ttask["prompt"], 6, [generator((*k, 2)) for k in KEYS])
    tok1, lens1 = sample_answers(select(params, [2]), MICRO, ttask["prompt"], 6, [generator((*KEYS[2], 2))])
    assert tok.shape == (3, 8, 6, 8) and lens.shape == (3, 8, 6)
    assert torch.equal(tok[2:], tok1) and torch.equal(lens[2:], lens1)
    assert not torch.equal(tok[0], tok[1])
    tok, lens = tok.numpy(), lens.numpy()
    pos = np.arange(8)
    assert ((tok == PAD) == (pos >= lens[..., None])).all()  # PAD exactly after the answer
    ended = (tok == EOS).any(-1)
    assert ended.any() and (~ended).any()
    assert (lens[~ended] == 8).all()
    assert (np.take_along_axis(tok, lens[..., None] - 1, -1)[..., 0][ended] == EOS).all()
    assert ((tok[..., :-1] == EOS) & (tok[..., 1:] != PAD)).sum() == 0  # nothing follows EOS
