"""The base policy by supervised learning on the toy's reference (rlvr/net/base.py): its loss
falls, and its parameters are the same bits on a rerun and alone or packed (one thread)."""

import torch

from rlvr.net.base import train_base
from rlvr.net.model import Config
from rlvr.net.tokens import make_token_task
from rlvr.task import make_task

torch.set_num_threads(1)
MICRO = Config(n_layer=1, d_model=16, n_head=2)


def test_sft_loss_falls_and_reruns_packed_or_alone_give_the_same_bits():
    ttask = make_token_task(make_task(P=8), seed=0)
    run = dict(steps=40, batch=32, lr=1e-2, warmup=5)
    packed, losses = train_base(MICRO, ttask, [(0, 0), (4, 1)], **run)  # [40, 2]
    again, losses_again = train_base(MICRO, ttask, [(0, 0), (4, 1)], **run)
    alone, losses_alone = train_base(MICRO, ttask, [(4, 1)], **run)
    # from ~9.4 nats (13 tokens near uniform over ~4.5 tokens) towards π_ref's entropy, ~2 nats
    assert (losses[-5:].mean(axis=0) < losses[:5].mean(axis=0) - 1.5).all(), losses
    assert all(torch.equal(packed[k], again[k]) for k in packed)
    assert all(torch.equal(packed[k][1:], alone[k]) for k in packed)
    assert (losses_again == losses).all() and (losses_alone[:, 0] == losses[:, 1]).all()
    assert not torch.equal(packed["wte"][0], packed["wte"][1])
