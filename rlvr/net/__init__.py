"""A small transformer that writes the toy's answers token by token (issue 35; not in the
pipeline yet).

tokens.py     the toy's prompts and candidates as token strings, and how a sampled string is rewarded
model.py      a decoder-only transformer with an ensemble dimension E on every parameter
sample.py     sampling G answers per prompt with a KV cache, a generator per model
exact.py      exact log-probs, P(correct) and pass@k by teacher forcing
base.py       the base policy: supervised learning on answers drawn from the toy's reference policy
objective.py  the toy's objective per token: clip, dual clip, KL, loss aggregation, one loss per model
train.py      GRPO-style training of a pack: rollouts, rewards, the registry's advantages, μ updates

Torch is imported by these modules only: `import rlvr` and the pipeline's jobs never load it.
"""
