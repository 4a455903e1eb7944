"""Notebook 04's exercises (issue 33, section 2): their answers are on no line above them, nor in the explorer.

Exercise 1 asks for the row sums of "the bank flooded" alone when the causal mask zeroes its weights after
the softmax. The first row keeps one weight, W_alone[0, 0], which its own set-up cell prints (the input to
reason from), and the last row hides nothing, so it sums to 1. Every other row's sum adds two or more kept
weights: that is the prediction, and it must be printed nowhere above the exercise, nor be a row sum in
any state of the mask explorer (section 2's sums and the explorer's are those of "the river bank
flooded", another sentence). One of the explorer's states shows 0.566 as a weight (bank to river with
'the' hidden): a weight of another sentence, not a row sum, so not a read-off of this answer.
"""

import itertools

import nbformat
import numpy as np

from exercise_cases import numbers_above
from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.course import NOTEBOOKS_DIR
from helpers.examples import load_example
from helpers.exercises.feedback import EXACT_ATOL
from helpers.explorers import mask_state

NB04 = NOTEBOOKS_DIR / "04_masking.ipynb"


def test_exercise_1s_prediction_is_printed_nowhere_above_it():
    ex = load_example("river_bank")
    X = np.array([ex.X[ex.index(t)] for t in ["the", "bank", "flooded"]])
    _, W_alone = scaled_dot_product_attention(X @ ex.W_Q, X @ ex.W_K, X @ ex.W_V)
    kept = np.where(causal_mask(3), W_alone, 0.0).sum(axis=-1)
    nb = nbformat.read(NB04, as_version=4)
    solution = next(c for c in nb.cells if c.get("id") == "ex-sums-solution")
    assert np.array2string(kept, precision=3) in solution.outputs[0]["data"]["text/plain"]   # the exercise's own answer
    above = numbers_above(nb, "ex-sums-try")
    summed = kept[1:-1]                                  # the rows that add two or more kept weights
    assert summed.size and not [x for x in above for s in summed if abs(x - s) <= EXACT_ATOL], summed
    assert any(abs(x - W_alone[0, 0]) <= EXACT_ATOL for x in above)   # why row 0 is left out: its input is shown
    explorer_sums = [mask_state(causal, hidden, where).row_sums
                     for causal, where in itertools.product((True, False), ("before", "after"))
                     for k in range(5) for hidden in itertools.combinations(range(4), k)]   # every state it stores
    assert len(explorer_sums) == 2 ** 4 * 4
    assert not [x for sums in explorer_sums for x in sums for s in summed if abs(x - s) <= EXACT_ATOL]


def test_exercise_2s_fill_is_measured_and_no_cell_above_fills_a_row_with_keys_left():
    # issue 33, section 2: a prediction. Section 4 fills only the pad's row, which has no key left, with -1e9
    # (even weights); bank's causal row keeps three keys, and there the fill gives exactly the -inf weights
    from helpers.exercises import FillExercise
    ex = load_example("river_bank")
    Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K
    row, allowed = (Q @ K.T / np.sqrt(ex.d_k))[ex.index("bank")], causal_mask(4)[ex.index("bank")]
    e = np.exp(np.where(allowed, row, -1e9) - row[allowed].max())
    filled = e / e.sum()
    _, expected = scaled_dot_product_attention(Q, K, ex.X @ ex.W_V, mask=causal_mask(4))
    assert np.array_equal(filled[~allowed], [0.0]) and np.allclose(filled, expected[ex.index("bank")])
    fill = FillExercise(row, allowed, fill=-1e9, query="bank")
    assert fill.answer == "a" and np.array_equal(fill.with_fill, fill.with_inf)
    assert [fill.feedback(k).mistake for k in "bcd"] == ["uniform_like_empty_row", "nan_like_empty_row", "fill_leaks"]
    assert FillExercise(row, allowed, fill=-1.0).answer == "d"               # a fill near the scores does leak
    nb = nbformat.read(NB04, as_version=4)
    end = next(k for k, c in enumerate(nb.cells) if c.get("id") == "ex-fill-md")
    fills = [c for c in nb.cells[:end] if c.cell_type == "code" and "-1e9" in c.source]
    assert fills and all("allowed[0]" in line for c in fills for line in c.source.splitlines() if "-1e9" in line)
    left_padded = causal_mask(4) & np.array([False, True, True, True])[None, :]   # section 4's `allowed`
    assert not left_padded[0].any()                                   # its row 0, the one filled: nothing left
