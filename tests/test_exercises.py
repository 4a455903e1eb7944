"""The exercises of helpers.exercises, as the notebooks build them.

The notebooks' code cells are run in this process (exercise_cases.run_in_process),
so the exercises tested here are exactly the notebooks' own, built from the
inputs their cells show. Then every case of exercise_cases.CASES, typed as a
learner would type it, must get feedback naming its mistake.
"""

import contextlib
import io
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from exercise_cases import CASES, NAMED_IN_ISSUE, PHRASES, run_in_process
from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import (
    AttentionWeightsExercise,
    DkPredictionExercise,
    Feedback,
    OutputExercise,
    ProjectionExercise,
    Reveal,
    ScoreExercise,
    SoftmaxRowExercise,
)

NAMESPACES = {name: run_in_process(NOTEBOOKS_DIR / name) for name in CASES}
EXERCISES = {f"{nb}:{ex}": NAMESPACES[nb][ex] for nb in CASES for ex in CASES[nb]}
NUMERIC = {key: ex for key, ex in EXERCISES.items() if not isinstance(ex, DkPredictionExercise)}
ALL_CASES = [
    pytest.param(nb, ex, case, id=f"{nb[:2]}-{ex}-{case[0]}-{i}")
    for nb in CASES for ex in CASES[nb] for i, case in enumerate(CASES[nb][ex])
]


def _answer(notebook, code):
    namespace = dict(NAMESPACES[notebook])
    with np.errstate(all="ignore"):      # a learner's NaN-making code warns; that is not under test
        exec(code, namespace)
    return namespace["answer"]


# ------------------------------------------------------------ learners' answers

@pytest.mark.parametrize("notebook, exercise, case", ALL_CASES)
def test_each_answer_gets_the_feedback_that_names_it(notebook, exercise, case):
    key, code, *extra = case
    feedback = NAMESPACES[notebook][exercise].feedback(_answer(notebook, code))
    assert feedback.mistake == key, feedback.text
    assert feedback.correct == (key is None)
    for phrase in [PHRASES[key], *extra]:
        assert phrase in feedback.text


def test_every_mistake_the_issue_names_is_exercised_in_the_notebooks():
    typed = {case[0] for nb in CASES for ex in CASES[nb] for case in CASES[nb][ex]}
    assert set(NAMED_IN_ISSUE.values()) <= typed


@pytest.mark.parametrize("key", sorted(NUMERIC))
def test_every_mistake_an_exercise_can_name_is_typed_in_a_case(key):
    notebook, exercise = key.split(":")
    typed = {case[0] for case in CASES[notebook][exercise]}
    assert set(NUMERIC[key].mistakes) <= typed


@pytest.mark.parametrize("key", sorted(NUMERIC))
def test_mistakes_are_told_apart_by_far_more_than_the_tolerance(key):
    ex = NUMERIC[key]
    values = [("right answer", ex.expected)] + [(k, v) for k, _, v in ex._variants]
    for (a, x), (b, y) in itertools.combinations(values, 2):
        if x.shape == y.shape:
            assert np.max(np.abs(x - y) - 10 * np.asarray(ex.atol)) > 0, f"{a} and {b} are too close"


@pytest.mark.parametrize("key", sorted(NUMERIC))
def test_each_message_carries_only_its_own_phrase(key):
    ex = NUMERIC[key]
    for k, message, _ in ex._variants:
        assert PHRASES[k] in message
        for other, _, _ in ex._variants:
            if other != k:
                assert PHRASES[other] not in message, f"{k}'s message contains {other}'s phrase"


def test_sqrt_d_model_is_named_only_where_d_model_differs_from_d_k():
    causal = NAMESPACES["01_river_bank.ipynb"]["ex_causal"]       # d_model = d_k = 2
    three = NAMESPACES["02_two_senses.ipynb"]["ex_attention"]     # d_model = 3, d_k = 2
    assert ("sqrt_d_model", "the right answer") in causal.coinciding
    assert "sqrt_d_model" not in causal.mistakes
    assert "sqrt_d_model" in three.mistakes and three.coinciding == []


def test_no_two_mistakes_coincide_in_the_notebooks():
    for key, ex in NUMERIC.items():
        assert all(twin == "the right answer" for _, twin in ex.coinciding), key


# ------------------------------------------------------------ right answers

def _loop_weights(X, W_Q, W_K, mask=None):
    """Attention weights with Python loops and math.exp, sharing no code with the helpers."""
    Q = [[sum(x[m] * W_Q[m][c] for m in range(len(x))) for c in range(len(W_Q[0]))] for x in X]
    K = [[sum(x[m] * W_K[m][c] for m in range(len(x))) for c in range(len(W_K[0]))] for x in X]
    rows = []
    for i, q in enumerate(Q):
        s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(len(k)) for k in K]
        e = [math.exp(v) if mask is None or mask[i][j] else 0.0 for j, v in enumerate(s)]
        rows.append([v / sum(e) for v in e])
    return np.array(rows)


def test_the_right_answers_are_computed_from_the_inputs():
    nb1, nb2 = NAMESPACES["01_river_bank.ipynb"], NAMESPACES["02_two_senses.ipynb"]
    # By hand: q_flooded = (0.8 + 0.1, 0.4 + 0.2) = (0.9, 0.6), k_bank = (1.0, 0.5): 0.9 + 0.3 = 1.2.
    assert np.isclose(nb1["ex_score"].expected, 1.2)
    # By hand: k_interest = (3 - 2, 3) = (1, 3).
    assert np.allclose(nb2["ex_key"].expected, [1, 3])
    # Source-free reference: the hand-derived output stored in data/bank_interest.json.
    assert np.allclose(nb2["ex_output"].expected, [2.779, -1.589], atol=5e-4)
    assert np.allclose(nb1["ex_causal"].expected,
                       _loop_weights(nb1["X"].tolist(), nb1["W_Q"].tolist(), nb1["W_K"].tolist(), nb1["mask"].tolist()))
    assert np.allclose(nb2["ex_attention"].expected,
                       _loop_weights(nb2["X3"].tolist(), nb2["W_Q3"].tolist(), nb2["W_K3"].tolist()))


def test_an_instructor_who_edits_the_inputs_edits_nothing_else():
    X = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 0.0], [2.0, 2.0, 1.0], [1.0, 1.0, 1.0]])
    W_Q = np.array([[1.0, 0.0], [0.5, 1.0], [0.0, 1.0]])
    W_K = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    mask = np.tril(np.ones((4, 4), dtype=bool))
    ex = AttentionWeightsExercise(X, W_Q, W_K, list("abcd"), mask=mask)
    right = _loop_weights(X.tolist(), W_Q.tolist(), W_K.tolist(), mask.tolist())
    assert ex.feedback(right).correct
    assert ex.feedback(right.T).mistake == "transposed"
    assert not ex.feedback(NAMESPACES["01_river_bank.ipynb"]["ex_causal"].expected).correct


def test_the_attention_solution_runs_and_passes():
    nb2 = NAMESPACES["02_two_senses.ipynb"]
    ex = nb2["ex_attention"]
    code = ex.solution().text.split("# gives")[0]
    namespace = {"np": np, "X3": nb2["X3"], "W_Q3": nb2["W_Q3"], "W_K3": nb2["W_K3"]}
    exec(code, namespace)
    assert ex.feedback(namespace["weights"]).correct


def test_answers_rounded_to_three_decimals_are_accepted():
    for key, ex in NUMERIC.items():
        assert ex.feedback(np.round(ex.expected, 3)).correct, key


def test_the_prediction_is_measured_not_stored():
    assert NAMESPACES["02_two_senses.ipynb"]["ex_predict"].answer == "a"
    assert DkPredictionExercise(scaled=True).answer == "c"


# ------------------------------------------------------------ output

def test_check_prints_the_feedback_and_returns_nothing(capsys):
    ex = NAMESPACES["01_river_bank.ipynb"]["ex_score"]
    assert ex.check(...) is None
    assert capsys.readouterr().out == ex.feedback(...).text + "\n"


def test_hint_and_solution_fold_in_html_and_read_plainly():
    ex = NAMESPACES["01_river_bank.ipynb"]["ex_score"]
    for reveal, label in ((ex.hint(), "Hint"), (ex.solution(), "Solution (spoiler)")):
        assert isinstance(reveal, Reveal)
        assert reveal._repr_html_().startswith(f"<details><summary><b>{label}</b>")
        assert repr(reveal).startswith(label + ":\n")
    assert "&#x27;flooded&#x27;" in ex.hint()._repr_html_()   # text is escaped


# ------------------------------------------------------------ never raises

class ArrayRefuses:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array for you")


class FloatRefuses:
    def __float__(self):
        raise ValueError("no float for you")


class LenRefuses:
    def __len__(self):
        raise TypeError("no len for you")

    def __getitem__(self, i):
        raise IndexError(i)


ODD = [ArrayRefuses(), FloatRefuses(), LenRefuses(), object(), print, len, np.sum, int, Ellipsis, None,
       np.float64("nan"), np.datetime64("2024-01-01"), np.array([], dtype=float), 10 ** 400, -(10 ** 400),
       float("inf"), 1 + 2j, b"\x00", "", np.ma.masked]
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10 ** 300),
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(), st.text(max_size=4),
    st.binary(max_size=4), st.fractions(), st.decimals(), st.sampled_from(ODD),
)
nested = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=2), inner, max_size=2),
                            st.frozensets(st.integers(), max_size=3)),
    max_leaves=12,
)
any_array = hnp.arrays(
    dtype=st.one_of(hnp.scalar_dtypes(), hnp.byte_string_dtypes(), hnp.unicode_string_dtypes()),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
)
float_array = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=6),
                         elements=st.floats(allow_nan=True, allow_infinity=True))
answers = st.one_of(nested, any_array, float_array)


@pytest.mark.parametrize("key", sorted(EXERCISES))
@settings(max_examples=150, deadline=None)
@given(answer=answers)
def test_no_answer_makes_a_checker_raise(key, answer):
    ex = EXERCISES[key]
    feedback = ex.feedback(answer)
    assert isinstance(feedback, Feedback) and isinstance(feedback.text, str) and feedback.text
    assert feedback.correct in (True, False)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert ex.check(answer) is None
    assert out.getvalue() == feedback.text + "\n"       # deterministic


@pytest.mark.parametrize("key", sorted(EXERCISES))
@pytest.mark.parametrize("answer", ODD, ids=lambda a: type(a).__name__)
def test_odd_answers_get_feedback_not_a_traceback(key, answer):
    feedback = EXERCISES[key].feedback(answer)
    assert not feedback.correct and feedback.mistake is not None


# ------------------------------------------------------------ instructors' errors

def test_bad_inputs_from_an_instructor_raise_a_clear_value_error():
    X = np.eye(2)
    with pytest.raises(ValueError, match="query must be one of the tokens"):
        ScoreExercise(X, X, X, ["a", "b"], query="c", key="a")
    with pytest.raises(ValueError, match="role must be"):
        ProjectionExercise(X, X, X, X, ["a", "b"], token="a", role="keys")
    with pytest.raises(ValueError, match="labels must name the 2 tokens"):
        AttentionWeightsExercise(X, X, X, ["a"])
    with pytest.raises(ValueError, match="mask must be a boolean"):
        AttentionWeightsExercise(X, X, X, ["a", "b"], mask=np.ones((2, 2)))
    with pytest.raises(ValueError, match="scores must be one row"):
        SoftmaxRowExercise(np.ones((2, 2)), 2, ["a", "b"])
    with pytest.raises(ValueError, match="W_V must be a matrix"):
        OutputExercise(X, X, X, np.ones(2), ["a", "b"], token="a")
