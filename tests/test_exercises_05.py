"""Notebook 05's exercises: no answer is on the page above its exercise (issue 33, section 2).

Exercise 1 splits x6 (4 x 6) into 3 heads: no output above prints that split (section 1 cuts a 4 x 4 X W_Q
into 2 heads). Exercise 2 counts the weights of 8 heads over 2,048 tokens: section 3's table stops at
n = 1,024. Exercise 3 asks what 24 heads in place of 12 change at d_model = 768: the counts its solution
gives are printed nowhere above.
"""

import re

import nbformat
import numpy as np

from helpers.course import NOTEBOOKS_DIR

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


def test_exercise_1s_split_is_printed_nowhere_above_it():
    cells = _cells()
    scope = {"np": np}
    exec(cells["ex-split-setup"].source.splitlines()[0], scope)           # x6 = ...
    answer = scope["x6"].reshape(4, 3, 2).transpose(1, 0, 2)
    above = _above("ex-split-try")
    for head in answer:      # no head of the answer, as numpy prints it, anywhere above
        assert str(head).replace("\n", "") not in above.replace("\n", ""), head


def test_exercise_2s_count_is_printed_nowhere_above_it():
    cells = _cells()
    answer = float(re.search(r"= ([\d,]+)\s*$", _shown(cells["ex-count-solution"])).group(1).replace(",", ""))
    assert answer == 8 * 2048 * 2048
    assert answer not in _numbers(_above("ex-count-try"))


def test_exercise_3s_counts_are_printed_nowhere_above_it():
    cells = _cells()
    counts = {float(x.replace(",", "")) for x in re.findall(r"\d{1,3}(?:,\d{3})+", _shown(cells["ex-heads-solution"]))}
    # parameters, multiply-adds (projections and output, then scores and mixing), weights at 12 and 24 heads
    assert counts == {4 * 768**2, 4 * 512 * 768**2 + 2 * 512**2 * 768, 12 * 512**2, 24 * 512**2}, counts
    assert not counts & _numbers(_above("ex-heads-try")), counts & _numbers(_above("ex-heads-try"))
