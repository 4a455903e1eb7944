"""Notebook 07's exercises: two of understanding, and no answer on the page above its exercise (issue 33, section 2).

Exercise 1 (LayerNormCountExercise) carries LayerNorm to d_model = 2: the cells above normalise only the
derivation's tokens of four features, and no cell above applies LayerNorm to the river-bank vectors, so the
vectors it makes of them (the, bank -> (0, 0); river, flooded -> (1, -1)) are printed nowhere above. Exercise 2
(RandomStackExercise) asks for a prediction before the stacks of the model's shape run: the cell that runs them
comes after its check cell. Exercises 3 and 4 (hull, layout) are unchanged. Each new checker is checked against a
hand derivation or an independent run, each wrong option names its misconception, and no odd answer raises.
"""

import re

import nbformat
import numpy as np
import pytest

from helpers.course import NOTEBOOKS_DIR
from helpers.depth import stack_residuals
from helpers.examples import load_example
from helpers.exercises import LayerNormCountExercise, RandomStackExercise

NB07 = NOTEBOOKS_DIR / "07_limits.ipynb"
RB = load_example("river_bank")
TOKENS = list(RB.tokens)


def _notebook():
    return nbformat.read(NB07, as_version=4)


def _index(nb, text):
    return next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source)


def _shown(cell):
    return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def test_notebook_07_has_two_exercises_of_understanding_before_its_two_medium_ones():
    heads = [c.source.splitlines()[0] for c in _notebook().cells
             if c.cell_type == "markdown" and c.source.startswith("### Exercise")]
    assert [h.rsplit("(", 1)[1] for h in heads] == ["understanding)", "understanding)", "medium)", "medium)"]
    assert [re.search(r"Exercise (\d)", h).group(1) for h in heads] == ["1", "2", "3", "4"]


def test_layer_norm_of_the_river_bank_vectors_by_hand():
    # By hand: with two features, x - mean = (+-h, -+h) and the spread is h, so LayerNorm gives (1, -1) when the
    # first feature is larger, (-1, 1) when the second is, and (0, 0) when both are equal (eps in the root).
    # the (0.1, 0.1) and bank (0.5, 0.5) -> (0, 0); river (1, 0) and flooded (0.8, 0.2) -> (1, -1): 2 vectors.
    ex = LayerNormCountExercise(RB.X, TOKENS)
    np.testing.assert_allclose(ex.normalised, [[0, 0], [1, -1], [0, 0], [1, -1]], atol=1e-9)
    assert ex.answer == "b" and ex.feedback("b").correct and "(1, -1)" in ex.feedback("b").text
    assert ex.feedback("d").mistake == "norm_keeps_tokens_apart"
    assert ex.feedback("a").mistake == "norm_makes_tokens_equal"
    assert ex.feedback("c").mistake == "chose_c"


def test_editing_the_tokens_re_derives_the_count():
    # By hand: (1, 0), (0, 1), (2, 2) -> (1, -1), (-1, 1), (0, 0): three different vectors.
    ex = LayerNormCountExercise(np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]), ["p", "q", "r"])
    assert ex.answer == "c" and ex.feedback("c").correct and ex.feedback("a").mistake == "norm_makes_tokens_equal"


def test_no_cell_above_exercise_1_normalises_the_river_bank_vectors():
    nb = _notebook()
    end = _index(nb, "LayerNormCountExercise(")
    for cell in nb.cells[:end]:
        if cell.cell_type == "code":
            assert "layer_norm(X" not in cell.source and not re.search(r"x_hat.*\bX\b", cell.source), cell.source
    derive = next(c for c in nb.cells[:end] if c.cell_type == "code" and "x_hat" in c.source)
    assert not re.search(r"\bX\b", derive.source)                      # the derivation's own tokens, four features
    shown = "".join(_shown(c) for c in nb.cells[:end] if c.cell_type == "code")
    assert "(1, -1)" not in shown and "[ 1. -1.]" not in shown           # the vectors it makes, as the check writes them


def test_random_stacks_of_the_models_shape_run_only_after_exercise_2s_check():
    nb = _notebook()
    check = _index(nb, "ex_stack.check(answer)")
    runs = [k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "river.hidden_states[0]" in c.source
            and "stack_residuals" in c.source]
    assert runs and min(runs) > check
    above = "".join(_shown(c) for c in nb.cells[:check] if c.cell_type == "code")
    assert "stacks of its shape" not in above


@pytest.fixture(scope="module")
def small_stack():
    X = np.random.default_rng(7).standard_normal((6, 16))
    return X, RandomStackExercise(X, trained=0.5, num_layers=2, num_heads=2, scale=0.5, seeds=(0, 1))


def test_exercise_2s_right_option_is_measured_by_an_independent_run(small_stack):
    X, ex = small_stack
    ends = [stack_residuals(X, 2, "post-LN", num_heads=2, scale=0.5, seed=s).residual[-1] for s in (0, 1)]
    assert ex.ends == pytest.approx(ends)
    want = "a" if max(ends) < 0.01 else "b" if max(ends) <= 0.5 else "c"
    assert ex.answer == want and ex.feedback(want).correct
    for letter, key in {"a": "post_ln_collapses", "b": "training_keeps_apart", "c": "random_keeps_apart"}.items():
        if letter != want:
            assert ex.feedback(letter).mistake == key


def test_seeds_on_both_sides_of_an_option_are_refused():
    X = np.random.default_rng(7).standard_normal((6, 16))
    ends = [stack_residuals(X, 2, "post-LN", num_heads=2, scale=0.5, seed=s).residual[-1] for s in (0, 1)]
    between = float(np.mean(ends))
    if min(ends) < between < max(ends):
        with pytest.raises(ValueError, match="no single answer"):
            RandomStackExercise(X, trained=between, num_layers=2, num_heads=2, scale=0.5, seeds=(0, 1))


@pytest.mark.parametrize("answer", [None, 3, "e", "", [], ["b", "c"], float("nan"), object(), b"b", {"b": 1}])
def test_odd_answers_get_feedback_never_a_traceback(small_stack, answer):
    for ex in (small_stack[1], LayerNormCountExercise(RB.X, TOKENS)):
        feedback = ex.feedback(answer)
        assert not feedback.correct and feedback.mistake in ("not_a_choice", "container", "not_attempted")


@pytest.mark.parametrize("make, name", [
    (lambda: LayerNormCountExercise(np.ones(4), TOKENS), "X"),
    (lambda: LayerNormCountExercise(RB.X, TOKENS[:3]), "labels"),
    (lambda: LayerNormCountExercise(np.ones((9, 2)), list("abcdefghi")), "X"),
    (lambda: RandomStackExercise(np.ones((4, 8)), trained=1.5), "trained"),
    (lambda: RandomStackExercise(np.ones((4, 8)), trained=0.5, collapsed=0.9), "collapsed"),
    (lambda: RandomStackExercise(np.ones((4, 8)), trained=0.5, scale=0.0), "scale"),
    (lambda: RandomStackExercise(np.ones((4, 8)), trained=0.5, seeds="01"), "seeds"),
])
def test_an_instructors_bad_input_is_a_value_error_naming_it(make, name):
    with pytest.raises(ValueError, match=name):
        make()
