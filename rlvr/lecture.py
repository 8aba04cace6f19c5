"""The lecture's script (examples/lecture_01_grpo.py), run on rlvr, its output in Chinese as the
lecture prints it or in English: `python -m rlvr lecture --lang en`.

The script stays the lecture's, word for word but its import (tests/test_api.py checks it), so
English is a translation of what it prints, line by line: the phrases below, longest first, each
keeping the columns of a table row (a phrase's trailing spaces absorb its new length). The numbers
are the script's own; a line with Chinese left in it after translation is an error, not output.
"""

import re
import runpy
import sys
from pathlib import Path

from .task import LEVEL_NAMES, LEVEL_NAMES_EN
from .text import display_width

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "lecture_01_grpo.py"
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")  # what must not remain in English

# what the script prints, Chinese -> English: whole lines' text first, then the fragments around
# the numbers of its formatted lines, then the table's cells
PHRASES = {
    "演示 1：参考模型（RL 之前）——200 道题，4 种难度": "Demo 1: the reference model (before RL): 200 prompts, 4 difficulty levels",  # noqa: E501
    "难度": "level",
    "题数": "prompts",
    "全部": "all",
    "观察：": "Observations:",
    "- pass@k = 1 - (1 - p)^k：多抽几次，总有一次能对。参考模型在\"很难\"的题上 pass@1 只有 1%，":
        "- pass@k = 1 - (1 - p)^k: draw a few more times and one of them is right. On the \"very hard\" "
        "prompts the reference model's pass@1 is only 1%,",
    "但 pass@64 有近一半——正确答案\"在模型的能力范围内\"，只是概率太低。":
        "but its pass@64 is nearly one half: the correct answer is \"within the model's reach\", only too unlikely.",  # noqa: E501
    "- RL 要做的，就是把 pass@k 中\"偶尔能对\"的那部分，变成 pass@1 中\"稳定地对\"。":
        "- What RL has to do is turn the \"sometimes right\" part of pass@k into \"reliably right\" in pass@1.",  # noqa: E501
    "演示 2：梯度估计的偏差与方差（参考模型，G = 8，每种情况重复 2 万次）":
        "Demo 2: bias and variance of the gradient estimates (the reference model, G = 8, 20,000 repetitions each)",  # noqa: E501
    "奖励：答对 1，答错 0": "reward: 1 if right, 0 if wrong",
    "奖励：答对 2，答错 1（每个回答都有 1 分\"格式分\"）":
        "reward: 2 if right, 1 if wrong (every answer gets a \"format bonus\" of 1)",
    "；一道中等难度的题（π(正确) = ": "; a medium prompt (π(correct) = ",
    "，真实梯度 π(1-π) = ": ", true gradient π(1-π) = ",
    "）：": "):",
    "方法": "method",
    "梯度均值": "gradient mean",
    "标准差": "std",
    "整个梯度向量的总方差": "total variance of the gradient vector",
    "无基线（REINFORCE）": "no baseline (REINFORCE)",
    "留一法基线（RLOO）": "leave-one-out baseline (RLOO)",
    "组内均值（不除标准差）": "group mean (no std)",
    "GRPO（除以组内标准差）": "GRPO (divided by the group std)",
    "GRPO 的梯度均值与真实梯度之比（各难度各取一道题）：":
        "GRPO's gradient mean over the true gradient (one prompt of each level):",
    "π(正确) = ": "π(correct) = ",
    "GRPO / 真实梯度 = ": "GRPO / true gradient = ",
    "- 无基线和 RLOO 都是**无偏**的（均值等于真实梯度）。\"组内均值\"把自己也算进了基线，":
        "- No baseline and RLOO are both **unbiased** (their mean is the true gradient). The \"group mean\" "
        "counts the answer itself in its baseline,",
    "梯度被整体缩小了 (G-1)/G = 7/8，有一点偏差。": "so the gradient shrinks by (G-1)/G = 7/8 overall: a small bias.",  # noqa: E501
    "- 奖励是 0/1 时，有没有基线，方差差别不大。但当所有回答都有一个共同的\"格式分\"时，":
        "- With 0/1 rewards, a baseline changes the variance little. But when every answer shares a "
        "common \"format bonus\",",
    "无基线的方差一下子大了十倍：它把每个被抽到的回答都往上推，推的方向主要由\"碰巧抽到了谁\"决定。":
        "the variance without a baseline grows tenfold: it pushes up every drawn answer, in a direction set "
        "mostly by \"which answers happened to be drawn\".",
    "有基线的方法完全不受影响——减去基线后，共同的部分被消掉了（第 6 讲的结论）。":
        "The methods with a baseline are not affected at all: subtracting the baseline removes the common "
        "part (lecture 6's conclusion).",
    "- GRPO 除以组内标准差，**不再是**梯度的无偏估计：它把每道题的梯度放大了约 1/std 倍。":
        "- Dividing by the group std, GRPO is **no longer** an unbiased estimate of the gradient: it scales "
        "each prompt's gradient by about 1/std.",
    "越难（或越容易）的题，组内标准差越小，被放大得越多——GRPO 隐含地对题目按难度加权。":
        "The harder (or easier) the prompt, the smaller the group std and the larger the scaling: GRPO "
        "implicitly weights the prompts by difficulty.",
    "演示 3：训练（每步 16 道题 × 8 个回答，300 步；5 个随机种子的平均）":
        "Demo 3: training (16 prompts x 8 answers a step, 300 steps; mean of 5 random seeds)",
    "学习率": "lr",
    "格式分": "bonus",
    "训练后 pass@1": "final pass@1",
    "按难度：很难 / 难 / 中等 / 容易": "by level: very hard / hard / medium / easy",
    "学到的基线（每题一个 V）": "learned baseline (a V per prompt)",
    "（参考模型：pass@1 = ": "(the reference model: pass@1 = ",
    "）": ")",
    "- 奖励是 0/1、学习率相同时，无基线、学到的基线、RLOO 几乎一样；GRPO 明显更快，尤其是在难题上。":
        "- With 0/1 rewards at the same lr, no baseline, the learned baseline and RLOO are nearly the same; "
        "GRPO is clearly faster, above all on the hard prompts.",
    "- 加上格式分之后，无基线的训练大受影响；学到的基线要花时间追上新的奖励水平，也受了影响；":
        "- With the format bonus, training without a baseline suffers badly; the learned baseline takes time "
        "to catch up with the new reward level, and suffers too;",
    "组内基线（RLOO、GRPO）完全不受影响——每组内部互相比较，共同的部分自动抵消。":
        "the group baselines (RLOO, GRPO) are not affected at all: each group is compared within itself, and "
        "the common part cancels.",
    "- GRPO 更快的主要原因是**更大的有效步长**（除以标准差），而不是更好的梯度方向：":
        "- GRPO is faster mainly because of a **larger effective step** (the division by the std), not a "
        "better gradient direction:",
    "把无基线方法的学习率调大到 8，它的结果和学习率 4 的 GRPO 相当。":
        "with its lr raised to 8, the method without a baseline does about as well as GRPO at lr 4.",
    "- 那 GRPO 为什么在大模型中流行？主要原因是**省掉了价值网络**：PPO 需要一个和策略一样大的 critic，":
        "- Why, then, is GRPO popular for large models? Mainly because it **drops the value network**: PPO "
        "needs a critic as large as the policy,",
    "训练、显存的开销都翻倍，而且给长文本的每个 token 估计价值本身就很难。":
        "which doubles the cost of training and memory, and estimating a value for every token of a long text "  # noqa: E501
        "is hard in itself.",
    "组内基线用\"同一道题的其他回答\"代替了 critic——便宜、针对每道题、而且自动适应奖励的尺度。":
        "A group baseline replaces the critic by \"the other answers to the same prompt\": cheap, per prompt, "  # noqa: E501
        "and adapting to the reward's scale by itself.",
    "演示 4：组的大小 G（总样本数固定：每步 128 个回答；GRPO，学习率 2；300 步，5 个种子）":
        "Demo 4: the group size G (a fixed number of answers: 128 a step; GRPO, lr 2; 300 steps, 5 seeds)",
    "每步题数": "prompts",
    "\"没有学习信号\"的组的比例": "share of groups \"without a learning signal\"",
    "- \"没有学习信号\"的组：一组回答全对或全错，组内基线下所有优势都是 0，这组样本白白浪费了。":
        "- A group \"without a learning signal\": all its answers right or all wrong, so under a group "
        "baseline every advantage is 0 and the group's answers are wasted.",
    "G 越小，这种组越多（G = 2 时，两个回答一样的概率很高）；训练后期大部分题都答对了，这个比例还会上升。":
        "The smaller G, the more such groups (at G = 2, two equal answers are likely); late in training, when "  # noqa: E501
        "most prompts are answered right, the share rises further.",
    "- 但在这个玩具问题上，总样本数固定时 G 越**小**反而越好：每步能覆盖更多的题、更新更频繁，":
        "- Yet on this toy problem, at a fixed number of answers, the **smaller** G the better: each step "
        "covers more prompts and updates more of them,",
    "\"浪费\"的样本被\"更多的题\"弥补了。**没有学习信号的比例高，不等于学得慢**。":
        "and \"more prompts\" make up for the \"wasted\" answers. **A high share without a learning signal "
        "does not mean slow learning**.",
    "- 实际训练大模型时常用 G = 8～64：同一道题的多个回答可以共享提示词的计算，并行生成很便宜；":
        "- Large models are usually trained with G = 8 to 64: the answers to one prompt share the prompt's "
        "computation, and generating them in parallel is cheap;",
    "而且真实的奖励更吵，太小的组给出的基线太不准。结论依赖于具体的开销结构，不能照搬。":
        "and real rewards are noisier, so too small a group gives too inaccurate a baseline. The conclusion "
        "depends on the cost structure and does not carry over as it is.",
    "- 一个常见的改进（DAPO 等）：动态地丢掉全对或全错的题，把计算留给\"有信息量\"的题。":
        "- A common improvement (DAPO and others): drop the all-right or all-wrong prompts on the fly, and "
        "spend the computation on the \"informative\" ones.",
}
# the level names are whole table cells: translated only where no other Chinese touches them
LEVELS = dict(zip(LEVEL_NAMES, LEVEL_NAMES_EN))
_PHRASE = re.compile("|".join(re.escape(p) for p in sorted(PHRASES, key=len, reverse=True))
                     + "|" + "|".join(rf"(?<![\u4e00-\u9fff]){re.escape(name)}(?![\u4e00-\u9fff])"
                                      for name in sorted(LEVELS, key=len, reverse=True)))


def _in_english(match):
    """A phrase with the spaces after it, in English, keeping the column its spaces ended at."""
    zh, spaces = match.group(1), match.group(2)
    en = PHRASES.get(zh) or LEVELS[zh]
    if not spaces:
        return en
    return en + " " * max(1, display_width(zh) + len(spaces) - len(en))


_WITH_SPACES = re.compile(f"({_PHRASE.pattern})( *)")


def translate(text):
    """The script's output in English: text -> text (ValueError naming a line left in Chinese)."""
    out = _WITH_SPACES.sub(_in_english, text)
    left = [line for line in out.splitlines() if CJK.search(line)]
    if left:
        raise ValueError(f"the lecture printed a line rlvr/lecture.py cannot translate: {left[0]!r}")
    return out


class _Translated:
    """A stream that writes each finished line of what it is given translated (stdout)."""

    def __init__(self, stream):
        self.stream, self.pending = stream, ""

    def write(self, text):
        self.pending += text
        lines, newline, self.pending = self.pending.rpartition("\n")
        if newline:  # the finished lines (an empty one too)
            self.stream.write(translate(lines + newline))
            self.stream.flush()
        return len(text)

    def flush(self):
        self.stream.flush()


def run(lang="zh"):
    """Run the lecture's script, its output in `lang` (zh: as it prints, en: translated)."""
    if not SCRIPT.is_file():
        raise FileNotFoundError(f"{SCRIPT} is not there: `python -m rlvr lecture` runs the script of a "
                                "checkout (pip install -e .), which a wheel does not hold")
    stdout = sys.stdout
    if lang == "en":
        sys.stdout = _Translated(stdout)
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        if lang == "en" and sys.stdout.pending:
            stdout.write(translate(sys.stdout.pending))
        sys.stdout = stdout
