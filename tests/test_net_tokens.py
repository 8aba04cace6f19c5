"""The toy's task as token strings (rlvr/net/tokens.py): prompts, candidates, rewards."""

import numpy as np
import pytest

from rlvr.net.tokens import (
    ANSWER_LEN,
    EOS,
    PAD,
    PROMPT_LEN,
    VOCAB,
    candidate_index,
    decode,
    encode,
    make_token_task,
    reward_correct,
)
from rlvr.task import make_task


def test_prompts_and_candidates_keep_the_toy_and_write_the_sum():
    task = make_task()
    tt = make_token_task(task, seed=0)
    assert tt["prompt"].shape == (200, PROMPT_LEN) and tt["answers"].shape == (200, 16, ANSWER_LEN)
    assert VOCAB == 14 and tt["prompt"].max() < PAD and tt["answers"].max() <= PAD
    assert len(set(zip(tt["a"], tt["b"]))) == 200  # distinct prompts
    np.testing.assert_array_equal(tt["level"], task["level"])
    np.testing.assert_array_equal(tt["logits"], task["logits"])
    for i in range(200):
        a, b = tt["a"][i], tt["b"][i]
        assert decode(tt["prompt"][i]) == f"{a:02d}+{b:02d}="
        texts = tt["answer_text"][i]
        assert texts[0] == str(a + b) and len(set(texts)) == 16
        assert all(1 <= len(s) <= 6 and (s == "0" or s[0] != "0") and s.isdigit() for s in texts)
        for j, s in enumerate(texts):
            assert decode(tt["answers"][i, j]) == s + "$" + "_" * (ANSWER_LEN - len(s) - 1)
            assert tt["answer_len"][i, j] == len(s) + 1
    wrong_digits = tt["answer_len"][:, 1:].mean() - 1
    assert 3.2 < wrong_digits < 3.8  # uniform on 1..6: 3.5 (s.e. ~0.04 over 3,000 strings)
    assert tt["answer_len"][:, 0].mean() - 1 < 3  # sums of two numbers below 100: 1–3 digits


def test_the_strings_are_deterministic_and_follow_the_seed():
    task = make_task()
    one, two, other = make_token_task(task, 0), make_token_task(task, 0), make_token_task(task, 1)
    np.testing.assert_array_equal(one["answers"], two["answers"])
    np.testing.assert_array_equal(one["prompt"], two["prompt"])
    assert (one["prompt"] != other["prompt"]).any()
    with pytest.raises(ValueError, match="10,000 distinct prompts"):
        make_token_task({"P": 10_004, "M": 16, "level": None, "logits": None})


def test_a_sampled_string_is_rewarded_iff_it_is_the_sum_then_eos():
    tt = make_token_task(make_task(P=4), seed=0)
    s, wrong = tt["answer_text"][0][0], tt["answer_text"][0][3]
    cases = [  # (string over 8 tokens, its length with EOS, candidate index)
        (s + "$" + "7" * (7 - len(s)), len(s) + 1, 0),  # what follows EOS is ignored
        (s + "1$" + "_" * (6 - len(s)), len(s) + 2, -1),  # the sum with a digit more: off the candidates
        (s + "+" * (8 - len(s)), 8, -1),  # cut at the maximum length without EOS
        (wrong + "$" + "_" * (7 - len(wrong)), len(wrong) + 1, 3),
        ("$" + "_" * 7, 1, -1),  # the empty answer
    ]
    tokens = np.stack([encode(c[0]) for c in cases])[None]  # [1, G, 8]
    length = np.array([[c[1] for c in cases]])
    np.testing.assert_array_equal(candidate_index(tt, [0], tokens, length)[0], [c[2] for c in cases])
    np.testing.assert_array_equal(reward_correct(tt, [0], tokens, length)[0], [1, 0, 0, 0, 0])
    assert EOS == 12 and encode("$")[0] == EOS
