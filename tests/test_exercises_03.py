"""Notebook 03's exercises: no answer is on the page above its exercise, nor in the d_k explorer (issue 33, section 2).

Exercise 1 asked for the variance of q . k at d_k = 256 with unit-variance entries: section 1's table prints a row
for d_k = 256 (measured 253.00) and the prose says Var(q . k) = d_k, so the answer was read off the page. It now
asks for entries of variance 2 (queries) and 3 (keys) at d_k = 40, a width the page never measures: 40 x 2 x 3 =
240 by hand, a number printed nowhere above it, nor by the explorer, nor by a later notebook. Exercise 2 asked how the gap between unscaled scores grows when
d_k quadruples: the explorer's stored states print the spread sqrt(64) = 8 and sqrt(256) = 16, and section 1's
table has both widths, so the answer (2 times) was two moves of the slider away. It now multiplies d_k by 9, and
no two widths the page or the explorer shows are 9 apart as a factor. Exercise 3 (two rows of raw scores, each
divided by its own sqrt(d_k)) was no read-off: the largest scaled weights that decide it are printed nowhere above.
No earlier notebook asks any of the three (01 and 02 ask scores, weights, designs of W_K and a predicted word).
"""

import re

import nbformat
import numpy as np

from exercise_cases import NUMBER, numbers_above
from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import SaturatedRowExercise, ScoreVarianceExercise, SpreadGrowthExercise
from helpers.exercises.feedback import EXACT_ATOL
from helpers.explorers import DK_CHOICES, dk_state

NB03 = NOTEBOOKS_DIR / "03_scaling.ipynb"


def _notebook():
    return nbformat.read(NB03, as_version=4)


def _setup(nb, cell_id):
    """The exercise the set-up cell ``cell_id`` builds, run from its own source (the inputs an instructor edits)."""
    names = {"ScoreVarianceExercise": ScoreVarianceExercise, "SpreadGrowthExercise": SpreadGrowthExercise,
             "SaturatedRowExercise": SaturatedRowExercise, "print": lambda *a, **k: None}
    source = next(c for c in nb.cells if c.get("id") == cell_id).source
    exec(source.replace(".question()", ""), names)
    return names


def _explorer_numbers(nb):
    """Every number the d_k explorer's stored output shows (its still picture and its whole grid), and every
    number of its state function's messages over the slider, scaled and not."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and "dk_explorer(" in c.source)
    texts = [str(o.get("data", {}).get("text/html", "")) + str(o.get("data", {}).get("text/plain", ""))
             for o in cell.outputs]
    texts += [m for d_k in DK_CHOICES for scaled in (True, False) for m in dk_state(d_k, scaled).messages]
    return [float(x) for t in texts for x in NUMBER.findall(t)]


def test_exercise_1s_variance_is_printed_nowhere_above_it_nor_by_the_explorer():
    nb = _notebook()
    ex = _setup(nb, "ex-var-setup")
    d_k, var_q, var_k = ex["d_k_ex"], ex["var_q"], ex["var_k"]
    assert (d_k, var_q, var_k) == (40, 2.0, 3.0)
    assert float(ex["ex_variance"].expected) == 240.0          # 40 x 2 x 3, by hand
    assert d_k not in DK_CHOICES and var_q * var_k != 1        # a width the page never measures, other variances
    atol = ex["ex_variance"].atol
    above = numbers_above(nb, "ex-var-setup")
    for where, numbers in (("above", above), ("explorer", _explorer_numbers(nb)), ("later", _later_numbers())):
        assert not [x for x in numbers if abs(x - 240.0) <= atol], where
    assert [x for x in above if abs(x - 256.0) <= atol]       # why d_k = 256 was a read-off: its row is printed


def _later_numbers():
    """Every number the stored outputs of notebooks 04 on print."""
    found = []
    for path in sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        if path.name[:2] > "03":
            for cell in nbformat.read(path, as_version=4).cells:
                for o in cell.get("outputs", []):
                    found += NUMBER.findall(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")))
    return [float(x) for x in found]


def test_exercise_2s_factor_is_no_ratio_of_two_widths_the_page_shows():
    nb = _notebook()
    ex = _setup(nb, "ex-spread-setup")["ex_spread"]
    assert ex.factor == 9 and ex.OPTIONS["a"].startswith("it grows about 3 times")
    setup = next(c for c in nb.cells if c.cell_type == "code" and "widths = [" in c.source).source
    widths = set(eval(re.search(r"widths = (\[[^\]]*\])", setup).group(1)))
    shown = widths | set(DK_CHOICES)                            # section 1's table, the explorer's slider
    assert not [(d, d * ex.factor) for d in shown if d * ex.factor in shown]
    assert (64, 256) in {(d, d * 4) for d in shown if d * 4 in shown}    # why factor 4 was a read-off


def test_exercise_3s_deciding_weights_are_printed_nowhere_above_it():
    nb = _notebook()
    ex = _setup(nb, "ex-saturate-setup")["ex_saturate"]
    largest = list(ex.largest.values())
    assert np.round(largest, 3).tolist() == [0.527, 0.992]    # softmax([60, 20, 35, 0] / 32), ([14, 2, 3, 1] / 2)
    assert ex.answer == "b"                                    # only row B passes 0.99
    above = numbers_above(nb, "ex-saturate-setup")
    assert not [x for x in above for w in largest if abs(x - w) <= EXACT_ATOL]
