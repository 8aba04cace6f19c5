"""A small transformer that writes the toy's answers token by token: demo 17's network, trained
by the pipeline's network jobs (rlvr/jobs/net_base.py, net_train.py).

tokens.py     the toy's prompts and candidates as token strings, and how a sampled string is rewarded
model.py      a decoder-only transformer with an ensemble dimension E on every parameter
sample.py     sampling G answers per prompt with a KV cache, a generator per model
exact.py      exact log-probs, P(correct) and pass@k by teacher forcing
base.py       the base policy: supervised learning on answers drawn from the toy's reference policy
objective.py  the toy's objective per token: clip, dual clip, KL, loss aggregation, one loss per model
train.py      GRPO-style training of a pack: rollouts, rewards, the registry's advantages, μ updates
enumerate.py  exact expectations over every answer of at most a few tokens (the tests' reference)
results.py    what a network training job writes, as columns
specs.py      what a network job computes, spelled without torch (the config and the Snakefile read it)

Torch is imported by these modules only: `import rlvr` and the toy's jobs never load it.
"""
