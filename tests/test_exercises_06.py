"""Notebook 06's exercises: no answer is on the page above its exercise (issue 33, section 2).

Exercise 1 asks for the outputs of "flooded the river bank": its set-up cell prints the first order's
outputs (the input to reason from), and section 1 prints those of the reversed order, "flooded bank river
the"; the rows in the exercise's order, as numpy prints them, are printed nowhere above. Exercise 2 asks for
PE[8, 3] at d_model = 16: section 2 prints rows 0 and 1 of a d_model = 64 encoding and every entry of a
d_model = 2 one, and no number within the checker's tolerance of the answer, or of its sign flipped. Exercise 3
swaps the last two words under a causal mask: section 1 swapped the first two, and what it prints
(which words keep their outputs) is the other claim, not the answer. None was a read-off, so no input changed.
"""

import re

import nbformat
import numpy as np

from exercise_cases import numbers_above
from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.course import NOTEBOOKS_DIR
from helpers.examples import load_example
from helpers.exercises import CausalOrderExercise, SinusoidalEntryExercise
from helpers.exercises.feedback import EXACT_ATOL

NB06 = NOTEBOOKS_DIR / "06_order_and_position.ipynb"
RB = load_example("river_bank")
TOKENS = list(RB.tokens)


def _notebook():
    return nbformat.read(NB06, as_version=4)


def _shown(cell):
    return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def _above(nb, cell_id):
    end = next(k for k, c in enumerate(nb.cells) if c.get("id") == cell_id)
    return "\n".join(c.source if c.cell_type == "markdown" else _shown(c) for c in nb.cells[:end])


def _flat(text):
    return re.sub(r"\s+", " ", text)


def _printed(array):
    """``array`` as the notebook prints it (np.set_printoptions(precision=3, suppress=True)), on one line."""
    return _flat(np.array2string(array, precision=3, suppress_small=True))


def _outputs(order, mask=None):
    X = RB.X[[TOKENS.index(t) for t in order]]
    return scaled_dot_product_attention(X @ RB.W_Q, X @ RB.W_K, X @ RB.W_V, mask=mask)[0]


def test_exercise_1s_outputs_in_the_new_order_are_printed_nowhere_above_it():
    nb = _notebook()
    setup = next(c for c in nb.cells if c.get("id") == "order-67")
    order = eval(re.search(r"order_ex = (\[.*\])", setup.source).group(1))
    answer = _outputs(order)
    above = _flat(_above(nb, "order-68"))
    assert _printed(answer) not in above and _printed(answer[:2]) not in above, answer   # nor its first two rows
    assert _printed(_outputs(TOKENS)) in above             # the input to reason from: the first order's outputs


def test_exercise_2s_entry_is_printed_nowhere_above_it():
    nb = _notebook()
    setup = next(c for c in nb.cells if c.get("id") == "order-72")
    args = dict(re.findall(r"(\w+)=(\d+)", setup.source))
    ex = SinusoidalEntryExercise(**{k: int(v) for k, v in args.items()})
    answer = float(ex.expected)
    assert abs(answer - np.cos(8 / 10000 ** (2 / 16))) < 1e-12
    above = numbers_above(nb, "order-73")
    assert not [x for x in above if abs(abs(x) - abs(answer)) <= EXACT_ATOL], answer


def test_exercise_3s_claim_is_not_what_section_1_prints():
    nb = _notebook()
    setup = next(c for c in nb.cells if c.get("id") == "order-ex3")
    order = eval(re.search(r"tokens, (\[.*\])\)", setup.source).group(1))
    ex = CausalOrderExercise(RB.X, RB.W_Q, RB.W_K, RB.W_V, TOKENS, order)
    mask = causal_mask(4)
    first, moved = _outputs(TOKENS, mask), _outputs(order, mask)
    keeps = {t: bool(np.allclose(moved[order.index(t)], first[TOKENS.index(t)])) for t in TOKENS}
    assert keeps == {"the": True, "river": True, "bank": False, "flooded": False}     # claim (c), the answer
    assert ex.answer == "c" and ex.OPTIONS["c"].startswith("'the' and 'river' keep theirs")
    printed = dict(re.findall(r"one layer, (\w+) +unchanged: (True|False)", _above(nb, "order-ex3-answer")))
    assert printed and {t: v == "True" for t, v in printed.items()} != keeps          # section 1's swap, the other way
