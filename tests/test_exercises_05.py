"""Notebook 05's exercises: no answer is on the page above its exercise (issue 33, section 2).

Exercise 1 asks what 24 heads in place of 12 change at d_model = 768. It comes before section 3 counts a
layer's cost, so neither the table nor the sentence after it ("Parameters and multiply-adds are the same in
every row") is above it, nor does the introduction say so any more; the counts its solution gives are printed
nowhere above. Exercise 2 counts the weights of 8 heads over 2,048 tokens: section 3's table stops at
n = 1,024. Exercise 3 asks the largest rank of one head's scores over 40 tokens of 5 distinct words: section
6 printed ranks of random tokens only, each token its own vector. (Exercise 1 once split x6 into heads by
hand, what the split_heads build had just asked: gone.)
"""

import re

import nbformat
import numpy as np

from helpers.attention import split_heads
from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import ScoreRankExercise

NB05 = NOTEBOOKS_DIR / "05_multi_head.ipynb"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _cells():
    return {c.get("id"): c for c in nbformat.read(NB05, as_version=4).cells}


def _shown(cell):
    return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def _above(cell_id):
    """What the page shows above the cell ``cell_id``: its prose and every text output, digits' commas removed."""
    nb = nbformat.read(NB05, as_version=4)
    end = next(k for k, c in enumerate(nb.cells) if c.get("id") == cell_id)
    texts = [c.source if c.cell_type == "markdown" else _shown(c) for c in nb.cells[:end]]
    return re.sub(r"(?<=\d),(?=\d{3})", "", "\n".join(texts))


def _numbers(text):
    return {float(x) for x in NUMBER.findall(re.sub(r"(?<=\d),(?=\d{3})", "", text))}


def test_no_exercise_asks_for_the_split_the_build_asked():
    cells = _cells()
    assert not [c for c in cells.values() if c.cell_type == "code" and "SplitHeadsExercise" in c.source]


def test_exercise_2s_count_is_printed_nowhere_above_it():
    cells = _cells()
    answer = float(re.search(r"= ([\d,]+)\s*$", _shown(cells["ex-count-solution"])).group(1).replace(",", ""))
    assert answer == 8 * 2048 * 2048
    assert answer not in _numbers(_above("ex-count-try"))


def test_exercise_1s_counts_and_rule_are_printed_nowhere_above_it():
    cells = _cells()
    counts = {float(x.replace(",", "")) for x in re.findall(r"\d{1,3}(?:,\d{3})+", _shown(cells["ex-heads-solution"]))}
    # parameters, multiply-adds (projections and output, then scores and mixing), weights at 12 and 24 heads
    assert counts == {4 * 768**2, 4 * 512 * 768**2 + 2 * 512**2 * 768, 12 * 512**2, 24 * 512**2}, counts
    above = _above("ex-heads-try")
    assert not counts & _numbers(above), counts & _numbers(above)
    # the rule itself: the table and the sentence that states it come after the exercise, and no line above says it
    before = _above("ex-heads-md")
    assert "multiply-adds are the same" not in before and "multiply-adds of one head" not in before
    assert "h · n²" not in before
    nb = nbformat.read(NB05, as_version=4)
    ids = [c.get("id") for c in nb.cells]
    table = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "def layer_cost(" in c.source)
    assert ids.index("ex-heads-solution") < table


def test_exercise_3s_rank_is_measured_and_printed_as_a_rank_nowhere_above_it():
    cells = _cells()
    scope = {"ScoreRankExercise": ScoreRankExercise}
    exec(cells["ex-rank-setup"].source.splitlines()[0], scope)                 # ex_rank = ScoreRankExercise(...)
    ex = scope["ex_rank"]
    rng = np.random.default_rng(0)          # the claim, measured: random words, repeated, random projections
    words = rng.standard_normal((ex.distinct, ex.d_model))
    X = words[np.arange(ex.n) % ex.distinct]
    W_Q, W_K = (rng.standard_normal((ex.d_model, ex.d_model)) / np.sqrt(ex.d_model) for _ in range(2))
    Q, K = split_heads(X @ W_Q, ex.num_heads), split_heads(X @ W_K, ex.num_heads)
    ranks = {int(np.linalg.matrix_rank(q @ k.T)) for q, k in zip(Q, K)}
    assert ranks == {int(ex.expected)} == {min(ex.distinct, ex.d_k)}
    assert ex.distinct < min(ex.n, ex.d_k)            # neither n nor d_k: the repeated rows set the bound
    assert ex.feedback(int(ex.expected)).correct and ex.feedback(float(ex.expected)).correct
    assert not any(ex.feedback(ex.expected + d).correct for d in (-0.5, 0.4, 0.5))   # a rank is whole (fresh review)
    printed = re.findall(r"rank of every head's \d+ x \d+ scores: \[([\d, ]+)\]", _above("ex-rank-try"))
    assert printed and int(ex.expected) not in {int(r) for line in printed for r in line.split(",")}


def test_heads_are_numbered_from_0_as_the_code_does():
    # issue 33, section 3: 05 once said "head 1" and "head 2" of the two-head layer and "counting heads from 0"
    # of W_O's blocks. Every "head N" the page says or prints names a head that exists, counted from 0.
    nb = nbformat.read(NB05, as_version=4)
    two_heads = next(k for k, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## 2 ·" in c.source)
    said = lambda cells: "\n".join(c.source if c.cell_type == "markdown" else _shown(c) for c in cells)
    first = [int(n) for n in re.findall(r"\b[Hh]ead (\d+)\b", said(nb.cells[:two_heads]))]
    assert first and set(first) == {0, 1}, sorted(set(first))                # the two-head layer: heads 0 and 1
    eight = [int(n) for n in re.findall(r"\bhead (\d+): mean entropy", said(nb.cells))]
    assert eight == list(range(8))                                           # the random layer's 8 heads: 0 to 7
