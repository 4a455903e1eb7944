"""Notebook 07's exercise of understanding: which layout keeps a random stack's tokens apart (LayoutExercise).

The right option is measured by the exercise; these tests check it against runs of
helpers.depth written out here, against a table decided by hand, and that every wrong
option names its misconception and no odd answer makes the checker raise.
"""

import numpy as np
import pytest

from helpers.depth import LAYOUTS, stack_residuals
from helpers.exercises import LayoutExercise
from helpers.exercises.limits import MISCONCEPTIONS, the_one_that_keeps

X0 = np.random.default_rng(0).standard_normal((8, 32))


@pytest.fixture(scope="module")
def ex():
    return LayoutExercise(X0, num_layers=24, scale=4.0, num_heads=4, seeds=(0, 1, 2))


def test_the_right_option_is_the_layout_whose_every_run_keeps_its_tokens_apart(ex):
    finals = {layout: [stack_residuals(X0, 24, layout, num_heads=4, scale=4.0, seed=s).residual[-1] for s in range(3)]
              for layout in LAYOUTS}
    kept = [layout for layout, ends in finals.items() if min(ends) >= 0.1]
    assert len(kept) == 1
    letter = dict(zip(LAYOUTS, "abcd"))[kept[0]]
    assert ex.answer == letter and ex.feedback(letter).correct
    assert ex.lowest == {layout: min(ends) for layout, ends in finals.items()}


def test_the_one_that_keeps_by_hand():
    # By hand: only 'b' is at least 0.1; two or none above it leave the question without one answer.
    assert the_one_that_keeps({"a": 0.0, "b": 0.5, "c": 0.09}, 0.1) == "b"
    with pytest.raises(ValueError, match="2 do"):
        the_one_that_keeps({"a": 0.2, "b": 0.5}, 0.1)
    with pytest.raises(ValueError, match="0 do"):
        the_one_that_keeps({"a": 0.0, "b": 0.05}, 0.1)


def test_every_wrong_option_names_its_misconception(ex):
    named = {"a": "fresh_weights_separate", "b": "skip_guarantees", "c": "layer_norm_keeps_apart",
             "d": "pre_ln_always_holds"}
    for letter, key in named.items():
        if letter == ex.answer:
            continue
        feedback = ex.feedback(letter)
        assert not feedback.correct and feedback.mistake == key
        layout = dict(zip("abcd", LAYOUTS))[letter]
        assert MISCONCEPTIONS[layout][1] in feedback.text


def test_a_layout_name_is_read_as_its_letter(ex):
    assert ex.feedback("pre-LN").correct and ex.feedback(" Pre-LN ").correct
    assert ex.feedback("attention + skip").mistake == "skip_guarantees"
    assert ex.feedback("post-ln").mistake == "layer_norm_keeps_apart"


@pytest.mark.parametrize("answer", [None, 3, "e", "", [], ["d", "a"], float("nan"), object(), b"d", {"d": 1}])
def test_odd_answers_get_feedback_never_a_traceback(ex, answer):
    feedback = ex.feedback(answer)
    assert not feedback.correct and feedback.mistake in ("not_a_choice", "container", "not_attempted")


def test_the_solution_prints_bounds_not_rounding_noise(ex):
    text = ex.solution_text
    assert "answer = 'd'" in text and "below 1e-12" in text
    assert "e-13" not in text and "e-16" not in text and "e-17" not in text


def test_settings_with_no_single_answer_are_refused():
    # 12 layers at scale 0.5: notebook 07's table keeps skip, post-LN and pre-LN all far above 0.1.
    with pytest.raises(ValueError, match="exactly one layout"):
        LayoutExercise(X0, num_layers=12, scale=0.5)


@pytest.mark.parametrize("kwargs, name", [
    ({"X": np.ones(4)}, "X"),
    ({"X": X0, "num_layers": 0}, "num_layers"),
    ({"X": X0, "num_layers": 2.5}, "num_layers"),
    ({"X": X0, "scale": -1.0}, "scale"),
    ({"X": X0, "scale": float("nan")}, "scale"),
    ({"X": X0, "keep": 2.0}, "keep"),
    ({"X": X0, "seeds": []}, "seeds"),
    ({"X": X0, "seeds": "012"}, "seeds"),
    ({"X": X0, "seeds": [-1]}, "seeds"),
    ({"X": X0, "num_heads": 5}, "num_heads"),
])
def test_bad_instructor_input_is_a_value_error_naming_it(kwargs, name):
    with pytest.raises(ValueError, match=name):
        LayoutExercise(**kwargs)
