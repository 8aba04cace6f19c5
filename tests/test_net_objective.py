"""The toy's objective at token level (rlvr/net/objective.py) and the network's training step
(rlvr/net/train.py), on micro models, one thread.

The exact tests of issue 35 item 3: with 0/1 rewards and answers summed, a group estimator's
expected update is G·(c1 − c0)·∇P(correct), c1 − c0 = E[A | correct] − E[A | wrong], which the
toy's exact expected gradient gives (rlvr.exact.exact_moments: E[ĝ_0] = (c1 − c0)·p(1 − p));
Monte Carlo over many groups against autograd of the exact P(correct) by teacher forcing. With
answers of at most 3 tokens every answer is enumerable (rlvr.net.enumerate.all_answers), so the
expected update under per-answer length weights and the expected gradient of each KL estimator
summed over tokens are exact too, each against Monte Carlo. Then each aggregation mode's token
weights by hand, the clip and the dual clip per token by hand, the loss against the peers'
formulas written out (verl b178a3c, TRL f2cd577), and packing.
"""

import numpy as np
import pytest
import torch

from rlvr.estimators import advantages
from rlvr.exact import exact_moments, uniform_wrong_prompt
from rlvr.kl import kl_estimate, kl_estimate_slope
from rlvr.net.base import train_base
from rlvr.net.enumerate import answer_table, expected_update
from rlvr.net.model import Config, answer_logprob, generator, init_params, token_logprob
from rlvr.net.objective import token_loss, token_mask, token_weights
from rlvr.net.sample import sample_answers
from rlvr.net.tokens import make_token_task, reward_correct
from rlvr.net.train import BATCH_STATS, train
from rlvr.objective import Objective
from rlvr.task import make_task

torch.set_num_threads(1)  # bit-identity across packings holds at one thread
MICRO = Config(n_layer=1, d_model=16, n_head=2)


@pytest.fixture(scope="module")
def micro():
    """A micro model after 100 SFT steps on 8 easy prompts (P(correct) 0.12–0.63), as in
    tests/test_net_exact.py: (token task, parameters [1, ...])."""
    ttask = make_token_task(make_task(P=8, level_logodds=(-1.0, 0.0, 1.0, 2.0)), seed=0)
    params, _ = train_base(MICRO, ttask, [(0, 0)], steps=100, batch=64, lr=1e-2, warmup=10)
    return ttask, params


def _flat(grads):
    """Gradients of a pack {name: [E, ...]} as one vector per model: [E, D] float64."""
    return torch.cat([g.reshape(g.shape[0], -1) for g in grads], dim=1).double()


SHORT = 3  # answer tokens at most: every answer enumerable (1,885), and the prompt's sum fits


@pytest.fixture(scope="module")
def groups(micro):
    """Many groups of one prompt (P(correct) 0.36, its sum 2 digits then EOS), answers of at most
    SHORT tokens: B = 20 batches of n = 120 groups of G = 4 answers, each batch drawn by its own
    copy of the model (a pack of B, so one forward and one backward give the B batch gradients),
    and the exact ∇P(correct) by autograd of teacher forcing: a dict."""
    ttask, base = micro
    prompt, B, n, G = 2, 20, 120, 4
    pack = {k: v.expand(B, *v.shape[1:]).clone().requires_grad_() for k, v in base.items()}
    prompts = torch.from_numpy(ttask["prompt"][[prompt] * n])  # [n, Lp]
    tokens, lengths = sample_answers(pack, MICRO, prompts, G, [generator((35, b)) for b in range(B)], SHORT)
    r = np.stack([reward_correct(ttask, [prompt] * n, tokens[b].numpy(), lengths[b].numpy())
                  for b in range(B)])  # [B, n, G]
    one = {k: v.clone().requires_grad_() for k, v in base.items()}
    # a full teacher-forced pass, as rlvr.net.enumerate's (sequence_logprob caches the prompt: the
    # same value to float32 rounding, by another sum)
    p = answer_logprob(one, MICRO, torch.from_numpy(ttask["prompt"][[prompt]])[None],
                       torch.from_numpy(ttask["answers"][[prompt], 0])[None],
                       torch.as_tensor(ttask["answer_len"][[prompt], 0])[None])[0, 0].exp()
    grad_p = _flat(torch.autograd.grad(p, list(one.values())))[0]
    p = float(p.detach())
    assert 0.3 < p < 0.4 and abs(r.mean() - p) < 4 * np.sqrt(p * (1 - p) / r.size)
    return dict(pack=pack, prompts=prompts, tokens=tokens, lengths=lengths, r=r, p=p, grad_p=grad_p,
                B=B, n=n, G=G, M=ttask["M"], prompt=prompt, ttask=ttask, base=base)


def _mean_updates(groups, method, loss_agg):
    """Each batch's mean over its groups of a group's update −G·∇loss at μ = 1, no clip, no KL, the
    Dr. GRPO constant 1: [B, D]. With seq-mean-token-sum-norm the loss is
    −(1/(nG)) Σ_i A_i Σ_t log π(o_it), so this is a group's summed update Σ_i A_i ∇log π(o_i)."""
    B, n, G = groups["B"], groups["n"], groups["G"]
    tokens, pack = groups["tokens"], groups["pack"]
    L = tokens.shape[-1]
    seq_prompts = groups["prompts"][None, :, None].expand(B, n, G, -1).reshape(B, n * G, -1)
    logp = token_logprob(pack, MICRO, seq_prompts, tokens.reshape(B, n * G, L)).reshape(B, n, G, L)
    A = np.stack([advantages(groups["r"][b], method) for b in range(B)])  # [B, n, G]
    loss, _ = token_loss(logp, logp.detach(), A, token_mask(groups["lengths"], L),
                         Objective(loss_agg=loss_agg), norm=1)
    return -G * _flat(torch.autograd.grad(loss.sum(), list(pack.values())))


def _cosine(x, y):
    return float(x @ y / (x.norm() * y.norm()))


@pytest.mark.parametrize("method", ["none", "rloo", "grpo"])
def test_a_group_estimators_expected_update_is_g_c1_minus_c0_times_grad_p(groups, method):
    """Answers summed (seq-mean-token-sum-norm, constant 1), 0/1 rewards: the mean update over
    2,400 groups against G·(c1 − c0)·∇P, c1 − c0 = E[ĝ_0]/(p(1 − p)) from the toy's exact_moments.

    Tolerances: cosine ≥ 0.99; the projection ĝ·g*/|g*|² (the norm ratio along g*) within 4 s.e.
    of 1, its s.e. from the B = 20 batch means (< 0.03, so the test can fail); the norm ratio
    |ĝ|/|g*| is that projection divided by the cosine, so within [1 − 4 s.e., (1 + 4 s.e.)/cos].
    REINFORCE's cosine is 1 by construction (A = r: every update is a multiple of
    ∇log P(correct)); only its norm is tested."""
    B, G, p = groups["B"], groups["G"], groups["p"]
    updates = _mean_updates(groups, method, "seq-mean-token-sum-norm")  # [B, D]
    c1_minus_c0 = exact_moments(uniform_wrong_prompt(p, groups["M"]), method, G)[0] / (p * (1 - p))
    if method in ("none", "rloo"):
        assert c1_minus_c0 == pytest.approx(1.0, rel=1e-12)  # unbiased for ∇p: E[A|1] − E[A|0] = 1
    exact = G * c1_minus_c0 * groups["grad_p"]

    mean = updates.mean(dim=0)
    cos = _cosine(mean, exact)
    proj = (updates @ exact / (exact @ exact)).numpy()  # [B]: each batch's component along the exact update
    se = proj.std(ddof=1) / np.sqrt(B)
    norm_ratio = float(mean.norm() / exact.norm())
    print(f"{method}: cos {cos:.5f}, projection {proj.mean():.4f} ± {se:.4f}, norm ratio {norm_ratio:.4f}")
    assert cos >= 0.99, cos
    assert se < 0.03 and abs(proj.mean() - 1) < 4 * se, (proj.mean(), se)
    assert 1 - 4 * se <= norm_ratio <= (1 + 4 * se) / cos, (norm_ratio, se, cos)


def _along(updates, exact):
    """Each batch's component along the exact vector, in units of it: (mean, s.e.) over batches."""
    proj = (updates @ exact / (exact @ exact)).numpy()  # [B]
    return proj.mean(), proj.std(ddof=1) / np.sqrt(len(proj))


@pytest.mark.parametrize("loss_agg", ["seq-mean-token-sum-norm", "seq-mean-token-mean"])
@pytest.mark.parametrize("method", ["none", "rloo", "grpo"])
def test_the_enumerated_expected_update_equals_monte_carlo_under_per_answer_weights(groups, method,
                                                                                    loss_agg):
    """rlvr.net.enumerate.expected_update, Σ_y π(y) c_{r(y)} u(y) ∇log π(y) over the 1,885 answers,
    against the mean update of the 2,400 groups: the projection within 4 s.e. of 1 (s.e. < 0.03)
    and cosine ≥ 0.99. Answers summed, it is exactly G·(c1 − c0)·∇P (to float32's rounding);
    each answer's tokens averaged (seq-mean-token-mean, 1/|y|), the exact update turns off ∇P:
    a wrong answer's push is divided by its own length (the prototype's Monte Carlo cosine was
    0.943; here it is exact)."""
    G = groups["G"]
    updates = _mean_updates(groups, method, loss_agg)  # [B, D]
    exact = G * expected_update(groups["base"], MICRO, groups["ttask"], groups["prompt"], method, G, loss_agg,
                                SHORT, norm=1)[0]
    mean, se = _along(updates, exact)
    cos = _cosine(updates.mean(dim=0), exact)
    off_grad_p = _cosine(exact, groups["grad_p"])
    print(f"{method} {loss_agg}: projection {mean:.4f} ± {se:.4f}, cos {cos:.4f}, "
          f"exact cos with ∇P {off_grad_p:.4f}")
    assert se < 0.03 and abs(mean - 1) < 4 * se, (mean, se)
    assert cos >= 0.99, cos
    if loss_agg == "seq-mean-token-sum-norm":
        c1_minus_c0 = exact_moments(uniform_wrong_prompt(groups["p"], groups["M"]), method, G)[0] / (
            groups["p"] * (1 - groups["p"]))
        torch.testing.assert_close(exact, G * c1_minus_c0 * groups["grad_p"], rtol=1e-4, atol=1e-7)
    elif method != "none":  # REINFORCE pushes only correct answers, all of one length here
        assert off_grad_p < 0.999, off_grad_p  # summed answers: 1 to within 1e-6


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
def test_the_kl_per_tokens_enumerated_expected_gradient_equals_monte_carlo(groups, estimator):
    """The gradient of β Σ_t k(ℓ_t) as token_loss takes it (value k, gradient k'(ℓ)∇ℓ; A = 0, β = 1,
    answers summed, C = 1), for π_ref the base plus N(0, 0.05²) noise: its exact expectation over
    the 1,885 answers, ∇ of Σ_y π(y) Σ_t k(ℓ_t(y)) with π(y) held, against the mean over 20
    batches of 480 sampled answers, the projection within 4 s.e. of 1 (s.e. < 0.08; k3's was 0.03–0.05
    over four sets of seeds) and cosine ≥ 0.99. k1's is
    exactly 0 (E over each next token of ∇log π is 0), so its Monte Carlo mean is tested against
    0 along k2's, within 4 s.e."""
    B, n, G, tokens = groups["B"], groups["n"], groups["G"], groups["tokens"]
    g = generator((7, 7))
    base = groups["base"]
    ref = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in base.items()}

    def exact_of(k):
        params = {name: v.clone().requires_grad_() for name, v in base.items()}
        prompt = groups["ttask"]["prompt"][[groups["prompt"]]]
        _, lengths, logp = answer_table(params, MICRO, prompt, SHORT)
        with torch.no_grad():
            _, _, logp_ref = answer_table(ref, MICRO, prompt, SHORT)
        ell = (logp - logp_ref)[0, 0]  # [S, SHORT], 0 past each answer's length
        value = torch.from_numpy(kl_estimate(ell.detach().numpy(), k))
        slope = torch.from_numpy(np.asarray(kl_estimate_slope(ell.detach().numpy(), k), float))
        counted = torch.from_numpy(np.arange(SHORT) < lengths[:, None])
        pi = logp[0, 0].sum(-1).detach().exp()  # [S]
        total = (pi[:, None] * counted * (value + slope * (ell - ell.detach()))).sum()
        return _flat(torch.autograd.grad(total, list(params.values())))[0]

    pack = groups["pack"]
    seq_prompts = groups["prompts"][None, :, None].expand(B, n, G, -1).reshape(B, n * G, -1)
    seq_answers = tokens.reshape(B, n * G, SHORT)
    logp = token_logprob(pack, MICRO, seq_prompts, seq_answers).reshape(B, n, G, SHORT)
    with torch.no_grad():
        refs = {k: v.expand(B, *v.shape[1:]) for k, v in ref.items()}
        logp_ref = token_logprob(refs, MICRO, seq_prompts, seq_answers).reshape(B, n, G, SHORT)
    loss, _ = token_loss(logp, logp.detach(), torch.zeros((B, n, G)), token_mask(groups["lengths"], SHORT),
                         Objective(kl_beta=1.0, kl_estimator=estimator), logp_ref, norm=1)
    updates = _flat(torch.autograd.grad(loss.sum(), list(pack.values())))  # [B, D]: per batch
    exact = exact_of(estimator)
    if estimator == "k1":
        along = exact_of("k2")
        assert exact.norm() < 1e-5 * along.norm()
        mean, se = _along(updates, along)
        assert abs(mean) < 4 * se, (mean, se)
        return
    mean, se = _along(updates, exact)
    cos = _cosine(updates.mean(dim=0), exact)
    print(f"{estimator}: projection {mean:.4f} ± {se:.4f}, cos {cos:.4f}")
    assert se < 0.08 and abs(mean - 1) < 4 * se, (mean, se)  # k3's slope 1 − π_ref/π has a heavy tail
    assert cos >= 0.99, cos


def test_each_aggregation_modes_token_weights_by_hand():
    """Two models, one prompt, G = 2, L = 4: model 0's answers have 1 and 3 tokens, model 1's 4 and 2."""
    mask = token_mask(torch.tensor([[[1, 3]], [[4, 2]]]), 4)  # [2, 1, 2, 4]
    want = {  # per answer: each of its tokens' weight
        "token-mean": [[1 / 4, 1 / 4], [1 / 6, 1 / 6]],  # 1 / (tokens of the model's batch)
        "seq-mean-token-mean": [[1 / 2, 1 / 6], [1 / 8, 1 / 4]],  # 1 / (N·|o|), N = 2 answers
        "seq-mean-token-sum-norm": [[1 / 8, 1 / 8], [1 / 8, 1 / 8]],  # 1 / (N·C), C = L = 4
    }
    for mode, per_answer in want.items():
        w = token_weights(mode, mask)
        np.testing.assert_allclose(w, torch.tensor(per_answer, dtype=torch.float64)[:, None, :, None] * mask,
                                   rtol=1e-15, err_msg=mode)
    np.testing.assert_allclose(token_weights("seq-mean-token-sum-norm", mask, norm=1), mask / 2.0, rtol=1e-15)
    # every mode weighs a token alike, 1/(N·C), in a batch of answers of C tokens
    full = token_mask(torch.full((2, 3, 2), 4), 4)
    for mode in want:
        np.testing.assert_allclose(token_weights(mode, full), np.full(full.shape, 1 / 24.0), rtol=1e-15)
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        token_weights("seq-sum", mask)


def _clip_case(ratios, A):
    """One model, one prompt, G answers with these token ratios [G, L] (the last token of each
    answer off its mask, its ratio absurd) and advantages A [G]: (logp leaf, logp_old, A, mask)."""
    ratios = torch.tensor(ratios, dtype=torch.float64)
    G, L = ratios.shape
    logp_old = torch.full((1, 1, G, L + 1), -1.0, dtype=torch.float64)
    logp_old[..., -1] = -60.0  # off the mask: ρ = e^59 there, which must change nothing
    off = torch.full((1, 1, G, 1), -1.0, dtype=torch.float64)
    logp = torch.cat([logp_old[..., :-1] + ratios.log(), off], dim=-1).requires_grad_()
    mask = token_mask(torch.full((1, 1, G), L), L + 1)
    return logp, logp_old, torch.tensor([[A]], dtype=torch.float64), mask


def test_the_clip_and_the_dual_clip_hold_exactly_the_tokens_they_should():
    """Answer 0 (A = +1) has ratios 1.1, 1.3, 1.25; answer 1 (A = −1) 0.9, 0.7, 3.5. With ε_low 0.2,
    ε_high 0.28 and the dual clip c = 3: held are 1.3 (> 1.28, A > 0), 0.7 (< 0.8, A < 0) and 3.5
    (> c, A < 0); 1.25 and 0.9 are not. A held token's gradient is 0, any other's −w·A·ρ
    (w = 1/(N·C) = 1/2 with C = 1); the loss's value is PPO's: held tokens at 1.28, 0.8 and c."""
    logp, old, A, mask = _clip_case([[1.1, 1.3, 1.25], [0.9, 0.7, 3.5]], [1.0, -1.0])
    obj = Objective(clip_low=0.2, clip_high=0.28, clip_c=3.0)
    loss, clipped = token_loss(logp, old, A, mask, obj, norm=1)
    (grad,) = torch.autograd.grad(loss.sum(), logp)
    assert clipped[0, 0].tolist() == [[False, True, False, False], [False, True, True, False]]
    np.testing.assert_allclose(grad[0, 0], [[-0.55, 0, -0.625, 0], [0.45, 0, 0, 0]], rtol=1e-12, atol=0)
    assert float(loss.detach()) == pytest.approx(-0.5 * (1.1 + 1.28 + 1.25 - 0.9 - 0.8 - 3.0), rel=1e-12)
    # without the dual clip 3.5 pushes down again (−A·ρ), the rest as before
    loss, clipped = token_loss(logp, old, A, mask, obj._replace(clip_c=0.0), norm=1)
    (grad,) = torch.autograd.grad(loss.sum(), logp)
    assert clipped[0, 0].tolist() == [[False, True, False, False], [False, True, False, False]]
    np.testing.assert_allclose(grad[0, 0, 1], [0.45, 0, 1.75, 0], rtol=1e-12, atol=0)
    # a case that must not bind: every ratio within [0.8, 1.28] (or A = 0): nothing held, each −w·A·ρ
    logp, old, A, mask = _clip_case([[1.27, 0.81, 1.0], [0.81, 1.27, 5.0]], [2.0, 0.0])
    loss, clipped = token_loss(logp, old, A, mask, obj, norm=1)
    (grad,) = torch.autograd.grad(loss.sum(), logp)
    assert not clipped.any()
    np.testing.assert_allclose(grad[0, 0], [[-1.27, -0.81, -1.0, 0], [0, 0, 0, 0]], rtol=1e-12, atol=0)


def _verl_loss(logp, old, A, mask, mode, eps_low, eps_high, clip_c, ref=None, beta=0.0):
    """verl b178a3c, written out: compute_policy_loss_vanilla (its pg_losses) + agg_loss, and the
    actor's KL loss agg_loss(kl_penalty(k3)) · kl_coef. One model: [B, T] tensors, A [B, 1]."""
    ratio = torch.exp(logp - old)
    pg1, pg2 = -A * ratio, -A * torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    clip1 = torch.maximum(pg1, pg2)
    pg = torch.where(A < 0, torch.min(-A * clip_c, clip1), clip1)

    def agg(x):
        if mode == "token-mean":
            return (x * mask).sum() / mask.sum()
        if mode == "seq-mean-token-mean":
            return ((x * mask).sum(-1) / mask.sum(-1)).mean()
        return (x * mask).sum() / mask.shape[-1]  # seq-mean-token-sum-norm: no division by the answers

    loss = agg(pg)
    if beta:
        kl = ref - logp
        loss = loss + beta * agg(torch.exp(kl) - kl - 1)
    return loss


def _trl_loss(logp, old, A, mask, loss_type, eps_low, eps_high, ref, beta):
    """TRL f2cd577 GRPOTrainer._compute_loss, written out (token-level ratio, k3 KL in the loss)."""
    coef_1 = torch.exp(logp - old)
    coef_2 = torch.clamp(coef_1, 1 - eps_low, 1 + eps_high)
    per_token = -torch.min(coef_1 * A, coef_2 * A)
    per_token = per_token + beta * (torch.exp(ref - logp) - (ref - logp) - 1)
    if loss_type == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (per_token.shape[0] * mask.shape[-1])
    return (per_token * mask).sum() / mask.sum()  # dapo, bnpo: the batch's tokens


def test_the_loss_and_its_gradient_are_the_peers():
    """Random answers of 1–5 tokens (L = 5), ratios around 1 that the clip binds on, A of both signs:
    the value and the gradient of token_loss equal verl's (with the dual clip; its
    seq-mean-token-sum-norm is ours times the N answers) and TRL's (with k3 in the loss)."""
    g = generator((35, 3))
    N, L = 12, 5
    mask = token_mask(torch.randint(1, L + 1, (1, 1, N), generator=g), L)
    old = -torch.rand((1, 1, N, L), generator=g, dtype=torch.float64) * 3
    ref = old - 0.3 * torch.randn((1, 1, N, L), generator=g, dtype=torch.float64)
    A = torch.randn((1, 1, N), generator=g, dtype=torch.float64) * 2
    logp = (old + 0.4 * torch.randn((1, 1, N, L), generator=g, dtype=torch.float64)).requires_grad_()
    flat = [x.reshape(N, L) for x in (old, ref)] + [A.reshape(N, 1), mask.reshape(N, L).double()]
    for mode, loss_type in (("token-mean", "dapo"), ("seq-mean-token-mean", "grpo"),
                            ("seq-mean-token-sum-norm", "dr_grpo")):
        for obj, peer in ((Objective(clip_low=0.2, clip_high=0.28, clip_c=3.0, loss_agg=mode), "verl"),
                          (Objective(clip_low=0.2, clip_high=0.28, kl_beta=0.05, loss_agg=mode), "trl")):
            ours, clipped = token_loss(logp, old, A, mask, obj, ref)
            assert clipped.any() and not clipped.all()
            (g_ours,) = torch.autograd.grad(ours.sum(), logp)
            o, r, a, m = flat
            if peer == "verl":
                theirs = _verl_loss(logp.reshape(N, L), o, a, m, mode, 0.2, 0.28, 3.0)
                if mode == "seq-mean-token-sum-norm":
                    theirs = theirs / N
            else:
                theirs = _trl_loss(logp.reshape(N, L), o, a, m, loss_type, 0.2, 0.28, r, 0.05)
            (g_theirs,) = torch.autograd.grad(theirs, logp)
            assert float(ours[0].detach()) == pytest.approx(float(theirs.detach()), rel=1e-12), (mode, peer)
            torch.testing.assert_close(g_ours, g_theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
def test_the_kl_per_token_is_the_estimator_and_its_autograd(estimator):
    """β·k(ℓ_t) per token, ℓ = log π/π_ref: value and gradient equal autograd of the formula
    written out (k1 = ℓ, k2 = ℓ²/2, k3 = e^−ℓ − 1 + ℓ), A = 0 so only the KL is left."""
    g = generator((35, 4))
    mask = token_mask(torch.tensor([[[2, 3, 1]]]), 3)
    logp = (-torch.rand((1, 1, 3, 3), generator=g, dtype=torch.float64) * 2).requires_grad_()
    ref = logp.detach() + torch.randn((1, 1, 3, 3), generator=g, dtype=torch.float64)
    loss, _ = token_loss(logp, logp.detach(), torch.zeros((1, 1, 3)), mask,
                         Objective(kl_beta=0.3, kl_estimator=estimator, loss_agg="token-mean"), ref)
    (grad,) = torch.autograd.grad(loss.sum(), logp)
    ell = logp - ref
    k = {"k1": ell, "k2": ell**2 / 2, "k3": torch.exp(-ell) - 1 + ell}[estimator]
    want = 0.3 * (k * mask).sum() / 6
    (want_grad,) = torch.autograd.grad(want, logp)
    assert float(loss.detach()) == pytest.approx(float(want.detach()), rel=1e-12)
    torch.testing.assert_close(grad, want_grad, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="in the reward"):
        token_loss(logp, logp.detach(), torch.zeros((1, 1, 3)), mask,
                   Objective(kl_beta=0.3, kl_placement="reward"), ref)


def test_a_models_loss_gradient_is_the_same_bits_alone_or_packed(micro):
    """Three models, each its own batch (token-mean: a batch-wide normaliser; a stale π_old, so the
    clip binds; k3 in the loss): model 1's gradient alone equals its slice of the pack's."""
    ttask, _ = micro
    keys = [(0, 0), (0, 1), (3, 7)]
    packed = {k: v.requires_grad_() for k, v in init_params(MICRO, keys).items()}
    alone = {k: v[1:2].detach().clone().requires_grad_() for k, v in packed.items()}
    gens = [generator((*key, 2)) for key in keys]
    prompts = torch.stack([torch.randint(8, (4,), generator=g) for g in gens])  # [3, 4]
    prompt_tok = torch.from_numpy(ttask["prompt"])[prompts]  # [3, 4, Lp]
    tokens, lengths = sample_answers(packed, MICRO, prompt_tok, 3, gens, max_len=5)
    seq_prompts = prompt_tok[:, :, None].expand(3, 4, 3, -1).reshape(3, 12, -1)
    answers, mask = tokens.reshape(3, 12, 5), token_mask(lengths, 5)
    A = torch.randn((3, 4, 3), generator=generator((9,)), dtype=torch.float64)
    obj = Objective(clip_c=3.0, kl_beta=0.1, loss_agg="token-mean")
    grads, losses = [], []
    for params, e in ((packed, slice(None)), (alone, slice(1, 2))):
        logp = token_logprob(params, MICRO, seq_prompts[e], answers[e]).reshape(-1, 4, 3, 5)
        old = logp.detach() + 0.3  # as after an update: ratios e^−0.3 = 0.74, below 1 − ε_low
        loss, clipped = token_loss(logp, old, A[e], mask[e], obj, old - 0.1)
        loss.sum().backward()
        grads.append({k: v.grad for k, v in params.items()})
        losses.append(loss)
    assert clipped.any()
    assert torch.equal(losses[0][1:2], losses[1])
    assert all(torch.equal(grads[0][k][1:2], grads[1][k]) for k in grads[1])


def test_training_reruns_and_packs_give_the_same_bits_and_learn(micro):
    """Three steps of E = 2 models (μ = 2, clip, k3 KL, SGD) against model 1 alone: every record and
    parameter the same bits; and 30 Adam steps of GRPO raise the exact pass@1 of the 8 prompts."""
    ttask, base = micro
    run = dict(start=base, steps=3, n=4, G=4, lr=1e-2, obj=Objective(epochs=2, kl_beta=0.05), optimizer="sgd",
               record_every=2)
    packed = train(MICRO, ttask, [(0, 0), (1, 0)], "grpo", **run)
    alone = train(MICRO, ttask, [(1, 0)], "grpo", **run)
    assert packed["pass1"].shape == (3, 2) and packed["record_steps"].tolist() == [0, 2, 3]
    for name in (*BATCH_STATS, "pass1"):
        assert np.array_equal(packed[name][:, 1:], alone[name]), name
    assert np.array_equal(packed["probs"][:, 1:], alone["probs"])
    assert all(torch.equal(packed["params"][k][1:], alone["params"][k]) for k in alone["params"])
    assert not np.array_equal(packed["mean_reward"][:, 0], packed["mean_reward"][:, 1])  # their own samples
    out = train(MICRO, ttask, [(0, 0)], "grpo", start=base, steps=30, n=8, G=8, lr=3e-3, record_every=30)
    assert out["pass1"][-1, 0] > out["pass1"][0, 0] + 0.2, out["pass1"]  # measured 0.36 -> 0.84
    with pytest.raises(ValueError, match="needs baseline"):
        train(MICRO, ttask, [(0, 0)], "learned", start=base, steps=1)
    with pytest.raises(ValueError, match="no KL in the reward"):
        train(MICRO, ttask, [(0, 0)], "nsr", start=base, steps=1,
              obj=Objective(kl_beta=0.1, kl_placement="reward"))
    with pytest.raises(ValueError, match="optimizer"):
        train(MICRO, ttask, [(0, 0)], "grpo", start=base, steps=1, optimizer="rmsprop")


def test_every_registered_reward_pays_the_networks_answers():
    """rlvr/rewards.py on the network: the verifier pays exactly the sum then EOS (a string off the
    candidates, candidate −1, is wrong); random_half pays u < ½ from the reward's own generator,
    whatever the answer; random_mean pays u < P(correct) of the prompt, by teacher forcing."""
    from rlvr.net.exact import candidate_probs
    from rlvr.net.train import REWARD_STREAM, pay
    from rlvr.rewards import REWARDS

    ttask = make_token_task(make_task(P=8, level_logodds=(-1.0, 0.0, 1.0, 2.0)), seed=0)
    params = init_params(MICRO, [(5, 0), (6, 0)])  # two models, E = 2
    prompts = np.array([[0, 3, 3], [7, 1, 2]])  # [E, n]
    y = np.array([[[0, -1, 2, 0]] * 3, [[1, 0, -1, 15]] * 3])  # [E, n, G] candidate indices
    assert set(REWARDS) == {"verifier", "random_half", "random_mean"}  # each tested below
    assert np.array_equal(pay("verifier", ttask, params, MICRO, prompts, y, None), (y == 0).astype(float))

    def gens():  # each model's reward generator, from its key (e,)
        return [generator((e, REWARD_STREAM)) for e in range(2)]

    def uniforms():  # what they draw: [E, n, G]
        return np.stack([torch.rand((3, 4), generator=g, dtype=torch.float64).numpy() for g in gens()])

    assert np.array_equal(pay("random_half", ttask, params, MICRO, prompts, y, gens()), uniforms() < 0.5)
    alone = [{k: v[e : e + 1] for k, v in params.items()} for e in range(2)]
    p = np.stack([candidate_probs(alone[e], MICRO, ttask, prompts[e])[0, :, 0] for e in range(2)])  # [E, n]
    paid = pay("random_mean", ttask, params, MICRO, prompts, y, gens())
    assert np.array_equal(paid, uniforms() < p[..., None]) and 0 < p.min() and p.max() < 1


def test_a_random_reward_trains_the_network_on_the_answers_the_verifier_would_have_drawn(micro):
    """The reward's uniforms come from a generator of their own: the first step draws the same
    answers as under the verifier (the same lengths), and random_half's mean reward over 20 steps
    of 8 × 8 answers is ½ within 4 s.e. (s.e. 0.5 / √1280 = 0.014)."""
    ttask, base = micro
    run = dict(start=base, steps=20, n=8, G=8, lr=1e-3, record_every=20)
    paid = {reward: train(MICRO, ttask, [(0, 0)], "grpo", reward=reward, **run)
            for reward in ("verifier", "random_half")}
    assert paid["verifier"]["length"][0, 0] == paid["random_half"]["length"][0, 0]
    assert abs(paid["random_half"]["mean_reward"].mean() - 0.5) < 4 * 0.5 / np.sqrt(20 * 64)
    with pytest.raises(ValueError, match="reward 'oracle'; allowed: verifier"):
        train(MICRO, ttask, [(0, 0)], "grpo", start=base, steps=1, reward="oracle")


def test_an_off_policy_correction_weighs_each_answer_or_each_token_by_hand():
    from rlvr.net.train import correct_advantages

    rng = np.random.default_rng(4)
    A = rng.normal(size=(2, 3, 4))  # [E, n, G]
    old, sampler = rng.normal(size=(2, 3, 4, 5)) - 2, rng.normal(size=(2, 3, 4, 5)) - 2  # [E, n, G, L]
    mask = rng.random((2, 3, 4, 5)) < 0.7
    log_rho = np.where(mask, old - sampler, 0.0)
    rho_seq, rho_tok = np.exp(log_rho.sum(axis=-1)), np.exp(log_rho)
    def kept(rho):
        return np.where((rho >= 0.5) & (rho <= 2), rho, 0)

    cases = {"none": (np.ones_like(rho_seq), np.ones_like(rho_tok)), "full": (rho_seq, rho_tok),
             "truncated": (np.minimum(rho_seq, 2.0), np.minimum(rho_tok, 2.0)),
             "masked": (kept(rho_seq), kept(rho_tok))}
    for correction, (w_seq, w_tok) in cases.items():
        np.testing.assert_allclose(correct_advantages(A, old, sampler, mask, correction, 2.0, "sequence")[0],
                                   A * w_seq, rtol=1e-12)
        np.testing.assert_allclose(correct_advantages(A, old, sampler, mask, correction, 2.0, "token")[0],
                                   A[..., None] * w_tok, rtol=1e-12)
    assert 0 < (rho_seq > 2).mean() < 1 and 0 < (rho_tok > 2).mean() < 1  # both sides of the cap occur


def test_a_stale_sampler_trains_on_policy_at_first_then_off_and_packs_bit_for_bit(micro):
    """sampler_lag L: step t's answers come from the parameters of step max(0, t − L), so the first
    step is on-policy whatever the correction (ρ = 1 exactly: the same parameters after it); then
    the runs part; a lagged row's seeds are the same bits alone or packed, per token or per answer."""
    ttask, base = micro
    run = dict(start=base, n=4, G=4, lr=1e-2, optimizer="sgd", record_every=3)
    on = train(MICRO, ttask, [(0, 0)], "grpo", steps=1, **run)
    for level in ("sequence", "token"):
        lag = train(MICRO, ttask, [(0, 0)], "grpo", steps=1, sampler_lag=2, correction=("full", 2.0, level),
                    **run)
        assert all(torch.equal(on["params"][k], lag["params"][k]) for k in on["params"])
    truncated, masked = ("truncated", 2.0, "token"), ("masked", 2.0, "token")
    late = {lag: train(MICRO, ttask, [(0, 0)], "grpo", steps=3, sampler_lag=lag, correction=truncated, **run)
            for lag in (0, 2)}
    assert not np.array_equal(late[0]["probs"][-1], late[2]["probs"][-1])
    packed = train(MICRO, ttask, [(0, 0), (1, 0)], "grpo", steps=3, sampler_lag=2, correction=masked, **run)
    alone = train(MICRO, ttask, [(1, 0)], "grpo", steps=3, sampler_lag=2, correction=masked, **run)
    assert np.array_equal(packed["probs"][:, 1:], alone["probs"])
    assert all(torch.equal(packed["params"][k][1:], alone["params"][k]) for k in alone["params"])


def test_gspo_and_cispo_per_token_are_their_papers_losses():
    """Random answers of 1–5 tokens, ratios the clip binds on: token_loss's gradient under gspo is
    that of GSPO's loss written directly, −(1/N) Σ_i min(s_i A_i, clip(s_i) A_i) with s_i =
    exp(mean_t log ρ_it) differentiated through s_i (Zheng et al. 2025, eq. 5), and under cispo
    that of −(1/T) Σ_it sg(clip(ρ_it)) A_i log π(o_it) (MiniMax-M1 2025, eq. 4; token-mean)."""
    g = generator((36, 1))
    N, L = 12, 5
    mask = token_mask(torch.randint(1, L + 1, (1, 1, N), generator=g), L)
    old = -torch.rand((1, 1, N, L), generator=g, dtype=torch.float64) * 3
    A = torch.randn((1, 1, N), generator=g, dtype=torch.float64) * 2
    logp = (old + 0.4 * torch.randn((1, 1, N, L), generator=g, dtype=torch.float64)).requires_grad_()
    m = mask.double()
    # GSPO, its tiny ε as in the paper's order of magnitude, so that some answers clip and some not
    obj = Objective(clip_low=0.05, clip_high=0.08, policy_loss="gspo", loss_agg="seq-mean-token-mean")
    ours, clipped = token_loss(logp, old, A, mask, obj)
    s = (((logp - old) * m).sum(-1) / m.sum(-1)).exp()  # [1, 1, N], with gradient through the mean
    theirs = -torch.minimum(s * A, s.clamp(0.95, 1.08) * A).mean()
    assert clipped.any() and not clipped[mask].all()
    torch.testing.assert_close(torch.autograd.grad(ours.sum(), logp)[0], torch.autograd.grad(theirs, logp)[0],
                               rtol=1e-12, atol=1e-15)
    # CISPO: every token keeps a gradient, its weight the capped ratio
    obj = Objective(clip_low=0.2, clip_high=0.28, policy_loss="cispo", loss_agg="token-mean")
    ours, clipped = token_loss(logp, old, A, mask, obj)
    held = (logp.detach() - old).exp().clamp(0.8, 1.28)
    theirs = -(held * A[..., None] * logp * m).sum() / m.sum()
    assert clipped.any() and not clipped[mask].all()
    grad = torch.autograd.grad(ours.sum(), logp)[0]
    torch.testing.assert_close(grad, torch.autograd.grad(theirs, logp)[0], rtol=1e-12, atol=1e-15)
    assert (grad[mask] != 0).all()  # no token's gradient is zeroed


def test_minibatches_on_the_network_clip_only_after_the_first_and_pack_bit_for_bit(micro):
    """m = 2, μ = 1: two Adam steps a batch, the first on-policy (no clip), so at most half the
    tokens clipped; packed with another model, the same bits as alone; m = 1 is μ = 1's run."""
    ttask, base = micro
    run = dict(start=base, steps=3, n=4, G=4, lr=3e-3, record_every=3)
    mb = dict(run, obj=Objective(minibatches=2, clip_low=0.01, clip_high=0.01))
    packed = train(MICRO, ttask, [(0, 0), (1, 0)], "grpo", **mb)
    alone = train(MICRO, ttask, [(1, 0)], "grpo", **mb)
    for name in (*BATCH_STATS, "pass1"):
        assert np.array_equal(packed[name][:, 1:], alone[name]), name
    assert (packed["clip_share"] > 0).any() and (packed["clip_share"] <= 0.5).all()
    one = train(MICRO, ttask, [(1, 0)], "grpo", **run)
    same = train(MICRO, ttask, [(1, 0)], "grpo", **run, obj=Objective(minibatches=1))
    assert all(torch.equal(one["params"][k], same["params"][k]) for k in one["params"])
    assert not all(torch.equal(one["params"][k], alone["params"][k]) for k in one["params"])
    with pytest.raises(ValueError, match="loss_agg"):
        train(MICRO, ttask, [(0, 0)], "grpo", start=base, steps=1, obj=Objective(policy_loss="gspo"))


def test_masked_renorm_on_the_network_divides_by_what_it_kept(micro):
    """kept_share by hand: tokens under token-mean, answers under seq-mean-token-mean, 1 under
    seq-mean-token-sum-norm; a run under token-mean parts from masked's after the lag, under the
    default aggregation is masked's bit for bit; per token it is refused."""
    from rlvr.net.train import kept_share

    mask = token_mask(torch.tensor([[[2, 3], [1, 4]]]), 4)  # [E=1, n=2, g=2, L=4]
    kept = np.array([[[True, False], [True, True]]])
    np.testing.assert_allclose(kept_share(mask, kept, "token-mean"), [10 / 7])
    np.testing.assert_allclose(kept_share(mask, kept, "seq-mean-token-mean"), [4 / 3])
    np.testing.assert_allclose(kept_share(mask, kept, "seq-mean-token-sum-norm"), [1.0])
    ttask, base = micro
    run = dict(start=base, n=4, G=4, lr=0.1, optimizer="sgd", record_every=4, steps=4, sampler_lag=2)
    seq = {c: train(MICRO, ttask, [(0, 0)], "grpo", correction=(c, 1.2, "sequence"), **run)
           for c in ("masked", "masked_renorm")}
    assert all(torch.equal(seq["masked"]["params"][k], seq["masked_renorm"]["params"][k]) for k in base)
    tok = {c: train(MICRO, ttask, [(0, 0)], "grpo", correction=(c, 1.2, "sequence"),
                    obj=Objective(loss_agg="token-mean"), **run) for c in ("masked", "masked_renorm")}
    assert not np.array_equal(tok["masked"]["probs"][-1], tok["masked_renorm"]["probs"][-1])
    with pytest.raises(ValueError, match="drops whole answers: set is_level: sequence"):
        train(MICRO, ttask, [(0, 0)], "grpo", correction=("masked_renorm", 2.0, "token"), **run)


def test_a_reward_that_reads_pi_reads_the_samplers(micro, monkeypatch):
    """random_mean pays by π(correct): with sampler_lag L the π it gets at step t is the policy that
    drew the answers, the parameters of step max(0, t − L), not the current ones."""
    import rlvr.net.train as T

    ttask, base = micro
    name = next(iter(base))
    paid_with, current = [], []
    pay, train_step = T.pay, T.train_step

    def recording_pay(reward, ttask, params, *rest):
        paid_with.append(params[name].detach().clone())
        return pay(reward, ttask, params, *rest)

    def recording_step(params, *rest):
        current.append(params[name].detach().clone())
        return train_step(params, *rest)

    monkeypatch.setattr(T, "pay", recording_pay)
    monkeypatch.setattr(T, "train_step", recording_step)
    T.train(MICRO, ttask, [(0, 0)], "grpo", start=base, steps=4, n=4, G=4, lr=0.1, optimizer="sgd",
            record_every=4, reward="random_mean", sampler_lag=2)
    assert len(paid_with) == len(current) == 4
    for t in range(4):
        assert torch.equal(paid_with[t], current[max(0, t - 2)]), t
    assert not torch.equal(paid_with[3], current[3])  # the lagged policy, not the one being trained
