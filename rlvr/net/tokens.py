"""The toy task as token strings ("the toy distilled", issue 35).

Prompt i of the toy becomes `aa+bb=`, two numbers a, b in 0..99 written with two digits each
(`07+45=`), so every prompt is exactly PROMPT_LEN = 6 tokens and every answer starts at
position 6: no prompt padding and no attention mask beyond the causal one. Its M candidate
answers become digit strings without leading zeros: candidate 0 is the sum a + b (1–3 digits),
candidates 1..M−1 are distinct wrong numbers of 1–6 digits (length uniform on 1..6, so wrong
answers are longer on average, 3.5 against ~2.5 digits). Each string is followed by EOS. Prompt
levels, reference logits and candidate order are the toy's, so toy and network compare prompt by
prompt; the toy's answer lengths (100–1000 "tokens") and strategy types are not used: a
network's answer is as long as its tokens.

Vocabulary (VOCAB = 14): ids 0–9 the digits, PLUS, EQUALS, EOS, and PAD last. PAD only fills
arrays after an answer's EOS; the network never predicts it, so its output has N_OUT = 13 logits
(ids 0..12). There is no BOS: every sequence starts with a prompt.

Any sampled string is a legal answer. It is rewarded 1 (correct) iff it is the sum's digits then
EOS (within the sampler's maximum length); anything else — another candidate, a string off the
candidates, one that contains PLUS or EQUALS, one cut at the maximum length without EOS — is
wrong.
"""

import numpy as np

DIGITS = "0123456789"
PLUS, EQUALS, EOS, PAD = 10, 11, 12, 13
VOCAB = 14
N_OUT = 13  # the network's outputs: every token but PAD
PROMPT_LEN = 6  # "aa+bb="
MAX_DIGITS = 6  # the longest candidate
ANSWER_LEN = MAX_DIGITS + 1  # a candidate's tokens with its EOS, at most
SYMBOLS = DIGITS + "+=$_"  # for printing: EOS as '$', PAD as '_'

# a seed word, so the numbers' stream differs from the toy's make_task(seed) stream
_STREAM = 0x70CE


def encode(text):
    """Token ids [len(text)] of a string over SYMBOLS."""
    return np.array([SYMBOLS.index(c) for c in text], np.int64)


def decode(tokens):
    """The string of token ids (EOS as '$', PAD as '_')."""
    return "".join(SYMBOLS[int(t)] for t in tokens)


def _wrong_numbers(rng, correct, n):
    """n distinct digit strings of 1..MAX_DIGITS digits, none equal to `correct`, in draw order."""
    out = []
    while len(out) < n:
        length = int(rng.integers(1, MAX_DIGITS + 1))
        lo = 0 if length == 1 else 10 ** (length - 1)
        s = str(int(rng.integers(lo, 10**length)))
        if s != correct and s not in out:
            out.append(s)
    return out


def make_token_task(task, seed=0):
    """The toy `task` (rlvr.task.make_task's mapping) as token arrays; `seed` is the task's seed
    (task.seed of the config), from which the numbers are drawn.

    Returns {"P", "M", "level": [P], "logits": [P, M] (the toy's reference logits),
             "a", "b": [P] the prompts' numbers (the P pairs (a, b) are distinct),
             "prompt": [P, PROMPT_LEN] token ids,
             "answers": [P, M, ANSWER_LEN] token ids (digits, EOS, then PAD),
             "answer_len": [P, M] tokens of each candidate including its EOS,
             "prompt_text": [P] str, "answer_text": [P][M] str (digits only)}.
    """
    P, M = task["P"], task["M"]
    if P > 100 * 100:
        raise ValueError(f"task.P = {P}: at most 10,000 distinct prompts a+b with a, b in 0..99")
    rng = np.random.default_rng([seed, _STREAM])
    pair = rng.choice(100 * 100, size=P, replace=False)  # distinct prompts
    a, b = pair // 100, pair % 100
    prompt_text = [f"{x:02d}+{y:02d}=" for x, y in zip(a, b)]
    answer_text = [[str(x + y), *_wrong_numbers(rng, str(x + y), M - 1)] for x, y in zip(a, b)]
    answers = np.full((P, M, ANSWER_LEN), PAD, np.int64)
    answer_len = np.zeros((P, M), np.int64)
    for i, row in enumerate(answer_text):
        for j, s in enumerate(row):
            answers[i, j, : len(s) + 1] = encode(s + "$")
            answer_len[i, j] = len(s) + 1
    return {"P": P, "M": M, "level": np.asarray(task["level"]), "logits": np.asarray(task["logits"]),
            "a": a, "b": b, "prompt": np.stack([encode(s) for s in prompt_text]),
            "answers": answers, "answer_len": answer_len,
            "prompt_text": prompt_text, "answer_text": answer_text}


def pad_to(tokens, width):
    """tokens [..., L] padded with PAD (or cut) to [..., width]."""
    L = tokens.shape[-1]
    if L >= width:
        return tokens[..., :width]
    fill = np.full((*tokens.shape[:-1], width - L), PAD, tokens.dtype)
    return np.concatenate([tokens, fill], axis=-1)


def canonical(tokens, length):
    """Sampled answers tokens [..., L] with lengths [...] (tokens kept, EOS included if any), every
    position from `length` on set to PAD: two answers are the same string iff their canonical
    forms are equal."""
    tokens = np.asarray(tokens)
    keep = np.arange(tokens.shape[-1]) < np.asarray(length)[..., None]
    return np.where(keep, tokens, PAD)


def candidate_index(ttask, prompts, tokens, length):
    """Which candidate each sampled answer is: [..., n, G] in 0..M−1, or −1 off the candidates.

    prompts: [n] prompt ids; tokens: [..., n, G, L] sampled answers with lengths [..., n, G]
    (EOS counted). A string cut at L without EOS matches no candidate (candidates end in EOS).
    """
    tokens = canonical(tokens, length)
    L = max(tokens.shape[-1], ANSWER_LEN)
    cands = pad_to(ttask["answers"][np.asarray(prompts)], L)  # [n, M, L]
    tokens = pad_to(tokens, L)[..., None, :]  # [..., n, G, 1, L]
    same = (tokens == cands[:, None]).all(axis=-1)  # [..., n, G, M]: at most one true
    return np.where(same.any(axis=-1), same.argmax(axis=-1), -1)


def reward_correct(ttask, prompts, tokens, length):
    """1.0 where a sampled answer is the sum then EOS, else 0.0: [..., n, G] (see candidate_index
    for the shapes). Candidate 0 is the one correct string."""
    return (candidate_index(ttask, prompts, tokens, length) == 0).astype(float)
