"""The names and signatures the lecture script uses, and the script itself run on rlvr."""

import re

import numpy as np
import pytest
from conftest import PYTHON, REPO, run

from rlvr import LEVEL_NAMES, Policy, make_task, pad, pass_at_k, train


def test_make_task_matches_the_lecture():
    task = make_task()
    assert task["P"] == 200 and task["M"] == 16
    assert task["level"].shape == (200,) and set(np.bincount(task["level"])) == {50}
    p = Policy(task).probs()[:, 0]
    very_hard = p[task["level"] == 0]
    assert 0.005 < very_hard.mean() < 0.02  # pass@1 about 1%
    assert 0.4 < pass_at_k(very_hard, 64).mean() < 0.6  # pass@64 near one half
    means = [p[task["level"] == k].mean() for k in range(4)]
    assert means == sorted(means)  # levels increasingly easy


def test_make_task_is_deterministic_in_its_seed():
    np.testing.assert_array_equal(make_task(seed=1)["logits"], make_task(seed=1)["logits"])
    assert not np.array_equal(make_task(seed=1)["logits"], make_task(seed=2)["logits"])


def test_pass_at_k_is_exact_and_elementwise():
    np.testing.assert_allclose(pass_at_k(np.array([0.0, 0.5, 1.0]), 2), [0.0, 0.75, 1.0])
    np.testing.assert_allclose(pass_at_k(0.1, np.array([1, 2])), [0.1, 0.19])


def test_train_history_fields():
    out = train(make_task(), "grpo", 10, 16, 8, 2.0, 0)
    last = out["history"][-1]
    assert last[1] == last.pass1 and 0 < last.pass1 < 1
    assert len(last[4]) == 4 and np.all((0 <= last[4]) & (last[4] <= 1))
    assert last.step == 10 and 0 <= out["zero_frac"] <= 1


def test_pad_counts_cjk_as_two_columns():
    assert pad("很难", 6) == "很难  "
    assert pad("ab", 4) == "ab  "
    assert pad("全部内容", 4) == "全部内容"
    assert len(LEVEL_NAMES) == 4


def test_restored_script_is_the_lecture():
    """examples/ holds the lecture's script with its newlines restored and only its import changed."""
    # shared/ (the lecture) lies beside the checkout, or beside one of its parent folders
    found = [d / "shared" / "lecture" / "01_grpo.original.txt" for d in REPO.parents]
    original = next((p for p in found if p.exists()), None)
    if original is None:
        pytest.skip("the lecture's original, shared/lecture/01_grpo.original.txt, is not beside this "
                    "checkout or its parents")
    script = (REPO / "examples" / "lecture_01_grpo.py").read_text()
    restored = re.sub(r"\n\(rlvr: .*?\)\n", "\n", script, flags=re.S)  # minus our note
    restored = restored.replace("  # noqa: E501", "")  # and the line-length waivers on its long lines
    lecture = original.read_text().replace("from toy_rlvr import", "from rlvr import")
    assert " ".join(restored.split()) == " ".join(lecture.split())


@pytest.mark.slow
def test_lecture_script_runs_on_rlvr():
    """The lecture's script runs on rlvr; its English (`python -m rlvr lecture --lang en`) is the
    same lines with the same numbers, and no Chinese left."""
    import re

    from rlvr.lecture import CJK, translate

    out = run([PYTHON, str(REPO / "examples" / "lecture_01_grpo.py")]).stdout
    for title in ("演示 1", "演示 2", "演示 3", "演示 4"):
        assert title in out
    assert out.count("GRPO / 真实梯度") == 4
    english = translate(out)
    assert not CJK.search(english) and english.count("\n") == out.count("\n")
    for title in ("Demo 1", "Demo 2", "Demo 3", "Demo 4"):
        assert title in english
    numbers = re.compile(r"\d+\.\d+")  # every printed value, in order
    assert numbers.findall(english) == numbers.findall(out) and len(numbers.findall(out)) > 100
    with pytest.raises(ValueError, match="cannot translate: '  新的一行'"):
        translate("  新的一行\n")
    assert "--lang {zh,en}" in run([PYTHON, "-m", "rlvr", "lecture", "--help"]).stdout
