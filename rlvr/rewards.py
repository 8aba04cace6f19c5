"""Reward functions: what a sampled answer earns, before the row's reward_offset is added.

Every reward is one function in REWARDS. To add one (a noisy verifier, partial credit), write

    @reward("my_reward", "what it pays")
    def my_reward(y, C, pi, u):
        return ...  # [..., G], 0/1 or any real number

y: [..., G] the sampled answers (0 .. C−1 are the correct ones; on the network, M for a string
that is none of the M candidates), pi: [..., M] the policy that sampled them over the candidates
(given only to a reward registered with reads_pi=True, else None: the network computes it by
teacher forcing), u: [..., G] uniforms in [0, 1) from the seed's own reward generator (drawn
only for a reward registered with random=True, else None). Its name is then a value of the row
knob `reward` (rlvr/knobs.py), for the toy's rows and the network's.
"""

from typing import NamedTuple

from .policy import correct_mass


class Reward(NamedTuple):
    fn: object
    help: str
    random: bool  # reads u: uniforms from a generator of its own, so the answers drawn stay the same
    reads_pi: bool  # reads pi, the sampler's probabilities of the candidates


REWARDS: dict[str, Reward] = {}


def reward(name, help, random=False, reads_pi=False):
    def register(fn):
        REWARDS[name] = Reward(fn, help, random, reads_pi)
        return fn

    return register


@reward("verifier", "1 for a correct answer, else 0 (the lecture's)")
def verifier(y, C, pi, u):
    return y < C


@reward("random_half", "1 with probability ½ whatever the answer (Shao et al. 2025's random reward)",
        random=True)
def random_half(y, C, pi, u):
    return u < 0.5


@reward("random_mean", "1 with probability π(correct) of the prompt whatever the answer: the verifier's "
        "mean reward, without its information", random=True, reads_pi=True)
def random_mean(y, C, pi, u):
    return u < correct_mass(pi, C)[..., None]
