"""Notebook 06's exercises: no answer is on the page above its exercise (issue 33, section 2).

Exercise 1 asks for the outputs of "flooded the river bank": its set-up cell prints the first order's
outputs (the input to reason from), and section 1 prints those of the reversed order, "flooded bank river
the"; the rows in the exercise's order, as numpy prints them, are printed nowhere above. Exercise 2 (it
replaced PE[8, 3] by hand, which repeated the Build it) reverses section 3's padded source and keeps its mask
in place: no cell above runs it (section 1 reorders pairs with no mask, where a query's output stays).
Exercise 3 swaps the last two words under a causal mask: section 1 swapped the first two, and what it
prints (which words keep their outputs) is the other claim, not the answer. Exercise 4 adds positions and
reverses the sentence: no cell above prints a mean with positions, and section 1's prose no
longer says that positions keep the mean from being blind to order.
"""

import re

import nbformat
import numpy as np

from exercise_cases import numbers_above
from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.course import NOTEBOOKS_DIR
from helpers.examples import load_example
from helpers.exercises import CausalOrderExercise

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


def test_exercise_2s_padded_source_reordered_under_its_mask_is_run_nowhere_above_it():
    # By hand: the mask [True] * 4 + [False] stays at its positions while the pairs are reversed, so position 0
    # now holds the [PAD] pair (value (9, 9)), which is read, and position 4 the real pair of 'the', which is
    # hidden: each French query's weighted sum has another term, and its output changes (option "c"), though
    # without the mask the same reversal keeps every output (section 1's set of pairs).
    from helpers.exercises import ReversedSourceExercise
    nb = _notebook()
    setup = next(c for c in nb.cells if c.get("id") == "order-ex2")
    assert "ReversedSourceExercise(Q_fr, K_pad, V_pad, targets, order=[4, 3, 2, 1, 0], mask=source_real" in setup.source
    code_above = [c.source for c in nb.cells[:nb.cells.index(setup)] if c.cell_type == "code"]
    assert not any("[::-1]" in c or "[4, 3, 2, 1, 0]" in c for c in code_above if "K_pad" in c)
    K, V = RB.X @ RB.W_K, RB.X @ RB.W_V
    K_pad, V_pad = np.vstack([K, [[5.0, 5.0]]]), np.vstack([V, [[9.0, 9.0]]])
    mask = np.array([True, True, True, True, False])
    Q = np.array([[-2.0, -2.0], [0.5, 3.0]])
    out = scaled_dot_product_attention(Q, K_pad, V_pad, mask=mask[None, :])[0]
    moved = scaled_dot_product_attention(Q, K_pad[::-1], V_pad[::-1], mask=mask[None, :])[0]
    assert np.abs(moved - out).max() > 1.0 and not np.allclose(moved, out[::-1])
    ex = ReversedSourceExercise(Q, K_pad, V_pad, ["la", "berge"], [4, 3, 2, 1, 0], mask=mask,
                                sources=TOKENS + ["[PAD]"])
    assert ex.answer == "c" and "'[PAD] flooded bank river the'" in ex.question_text
    assert ReversedSourceExercise(Q, K, V, ["la", "berge"], [3, 2, 1, 0]).answer == "a"   # no mask: a set
    assert ReversedSourceExercise(Q, K_pad, V_pad, ["la", "berge"], [3, 2, 1, 0, 4], mask=mask).answer == "a"
    above = _flat(_above(nb, "order-ex2"))
    assert _printed(moved) not in above and _printed(moved[0]) not in above


def test_exercise_4s_mean_with_positions_is_printed_nowhere_above_it():
    from helpers.positions import sinusoidal_positional_encoding
    nb = _notebook()
    PE = sinusoidal_positional_encoding(4, 2)
    perm = [3, 2, 1, 0]
    means = [_outputs_of(RB.X[p] + PE).mean(axis=0) for p in (list(range(4)), perm)]
    assert np.abs(means[0] - means[1]).max() > 0.1           # the answer: another mean
    above = _flat(_above(nb, "order-ex4-answer"))
    assert not any(_printed(m) in above for m in means), means
    assert "blind to order" not in above                     # the prose that gave the answer away is gone


def _outputs_of(X):
    return scaled_dot_product_attention(X @ RB.W_Q, X @ RB.W_K, X @ RB.W_V)[0]


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
