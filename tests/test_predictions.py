"""The exercises of understanding of notebooks 02 and 03 (helpers.exercises.predictions).

Each right option is computed from the inputs, so these tests change the
inputs and check that the answer follows, and that each named wrong option
is the one its misconception picks.
"""

import numpy as np
import pytest

from helpers.exercises import LeanOnExercise, SaturatedRowExercise, SpreadGrowthExercise

# Source 003's matrices (data/bank_river.json): bank's query [1, 3] scores a word x as x . (4, 2).
W_Q = np.array([[2.0, 0.0], [1.0, 3.0]])
W_K = np.array([[1.0, 1.0], [2.0, 0.0]])
TOKENS = ["The", "bank", "near", "canal", "flooded"]
X = np.array([[1.0, 0.0], [0.0, 1.0], [0.1, 1.3], [2.0, 0.5], [0.6, 2.7]])


def test_the_word_leaned_on_is_the_largest_score_and_each_trap_is_named():
    ex = LeanOnExercise(X, W_Q, W_K, TOKENS, query="bank")
    # By hand: scores x . (4, 2) = 4, 2, 3.0, 9, 7.8; keys x W_K, flooded's [6.0, 0.6] the longest;
    # The's key [1, 1] has the largest cosine with [1, 3] (0.894 against canal's 0.789); near's
    # vector is the most like bank's [0, 1] (cosine 0.997 against flooded's 0.976).
    assert np.allclose(ex.scores, [4, 2, 3.0, 9, 7.8])
    assert ex.answer == "canal"
    assert ex.named == {"flooded": "longest_key", "the": "direction_only", "near": "similar_vector", "bank": "itself"}
    assert ex.feedback("flooded").mistake == "longest_key"
    assert ex.feedback("The").mistake == "direction_only"
    assert ex.feedback("canal").correct
    # Any case is accepted; a word not in the sentence is told the words as they are written.
    assert ex.feedback("THE").mistake == "direction_only" and ex.feedback("Canal").correct
    told = ex.feedback("river")
    assert told.mistake == "not_a_choice" and "'The', 'bank', 'near', 'canal' or 'flooded'" in told.text


def test_the_answer_follows_an_instructors_edit():
    # Give flooded a vector along the query's favourite direction and length: it now wins.
    X2 = X.copy()
    X2[4] = [3.0, 0.5]           # score 13 > canal's 9
    ex = LeanOnExercise(X2, W_Q, W_K, TOKENS)
    assert ex.answer == "flooded" and "flooded" not in ex.named
    assert ex.feedback("canal").mistake in (None, "chose_canal", "longest_key", "direction_only", "similar_vector")
    assert not ex.feedback("canal").correct


@pytest.mark.parametrize("args, match", [
    ((X, W_Q, W_K, TOKENS[:4]), "tokens must be 5 distinct words"),
    ((X, W_Q, W_K, ["a", "a", "b", "c", "d"]), "tokens must be 5 distinct words"),
    ((X, W_Q, np.ones((3, 2)), TOKENS), "W_Q and W_K must both be"),
    ((X, W_Q, W_K, ["The", "x", "near", "canal", "flooded"]), "query must be one of the tokens"),
])
def test_lean_on_refuses_an_instructors_bad_inputs_by_name(args, match):
    with pytest.raises(ValueError, match=match):
        LeanOnExercise(*args)


@pytest.mark.parametrize("factor", [2, 4, 9, 16])
def test_the_spread_grows_by_the_square_root_of_the_factor(factor):
    ex = SpreadGrowthExercise(d_k=64, factor=factor)
    assert ex.answer == "a" and f"{np.sqrt(factor):g} times" in ex.OPTIONS["a"]
    # Measured, not only argued: unit-variance q and k, gap between two scores of a row.
    rng = np.random.default_rng(0)
    gaps = []
    for d in (64, 64 * factor):
        q, k = rng.standard_normal((4000, d)), rng.standard_normal((4000, 2, d))
        s = np.einsum("nd,nkd->nk", q, k)
        gaps.append(np.abs(s[:, 0] - s[:, 1]).mean())
    assert abs(gaps[1] / gaps[0] / np.sqrt(factor) - 1) < 0.08
    assert ex.feedback("b").mistake == "variance_for_spread" and ex.feedback("c").mistake == "no_growth"


@pytest.mark.parametrize("d_k, factor", [(0, 4), (64, 1), (64, 2.5), (True, 4)])
def test_spread_growth_refuses_bad_inputs_by_name(d_k, factor):
    with pytest.raises(ValueError, match="must be a whole number"):
        SpreadGrowthExercise(d_k=d_k, factor=factor)


def test_the_saturated_row_is_judged_after_the_division():
    # By hand: A / sqrt(1024) = [1.875, 0.625, 1.094, 0], largest weight about 0.53;
    # B / sqrt(4) = [7, 1, 1.5, 0.5], largest weight e^7 / (e^7 + e + e^1.5 + e^0.5) = 0.992.
    ex = SaturatedRowExercise({"A": ([60.0, 20.0, 35.0, 0.0], 1024), "B": ([14.0, 2.0, 3.0, 1.0], 4)})
    assert ex.answer == "b"
    assert abs(ex.largest["b"] - 0.992) < 5e-4
    # Undivided, both saturate: A's gap of 25 gives 1 / (1 + e^-25 + ...), B's of 11 gives 0.99997.
    assert ex.feedback("both").mistake == "no_scaling"
    assert ex.feedback("a").mistake == "width_saturates"     # the wide row, whose lead is 25 / 32 once divided
    assert "0.781" in ex.feedback("a").text
    # The weights that decide the answer (0.527, 0.992) come only with the right answer.
    assert "0.527" in ex.feedback("b").text and "0.992" in ex.feedback("b").text
    for wrong in ("a", "both", "neither"):
        text = ex.feedback(wrong).text
        assert "0.527" not in text and "0.992" not in text, (wrong, text)
        assert "Compute each row's largest weight" in text
    # Same rows, both at d_k = 1: now A saturates too.
    both = SaturatedRowExercise({"A": ([60.0, 20.0, 35.0, 0.0], 1), "B": ([14.0, 2.0, 3.0, 1.0], 1)})
    assert both.answer == "both" and both.named == {}


@pytest.mark.parametrize("rows, threshold, match", [
    ({"A": ([1.0, 2.0], 4)}, 0.99, "rows must map two"),
    ({"A": ([1.0], 4), "B": ([1.0, 2.0], 4)}, 0.99, "at least two finite"),
    ({"A": ([1.0, np.inf], 4), "B": ([1.0, 2.0], 4)}, 0.99, "at least two finite"),
    ({"A": ([1.0, 2.0], 0), "B": ([1.0, 2.0], 4)}, 0.99, "d_k must be a positive whole"),
    ({"A": [1.0, 2.0, 3.0], "B": ([1.0, 2.0], 4)}, 0.99, "must be \\(scores, d_k\\)"),
    ({"A": ([1.0, 2.0], 4), "B": ([1.0, 2.0], 4)}, 1.5, "threshold must be between"),
])
def test_saturated_row_refuses_bad_inputs_by_name(rows, threshold, match):
    with pytest.raises(ValueError, match=match):
        SaturatedRowExercise(rows, threshold=threshold)


@pytest.mark.parametrize("answer", [None, 3.5, ["a", "b"], object(), np.nan, "", b"a"])
def test_odd_answers_get_feedback_not_a_traceback(answer):
    for ex in (LeanOnExercise(X, W_Q, W_K, TOKENS), SpreadGrowthExercise(),
               SaturatedRowExercise({"A": ([6.0, 0.0], 4), "B": ([1.0, 0.0], 4)})):
        assert not ex.feedback(answer).correct


# ------------------------------------------------------------ designing W_K over every other word (notebook 02's until issue 33)

from helpers.examples import load_example  # noqa: E402
from helpers.exercises import KeyDesignExercise  # noqa: E402

RIVER = load_example("bank_river")


def _design(**kw):
    return KeyDesignExercise(RIVER.X, RIVER.W_Q, RIVER.W_K, list(RIVER.tokens), **{"query": "bank", "prefer": "The", **kw})


def test_any_w_k_that_makes_bank_read_the_is_right_and_the_solution_is_one():
    ex = _design()
    # By hand: W_K = [[1, 0], [0, -1]] gives W_K q = (1, -3); scores x . (1, -3) = 1, -3, -1 for The, bank, river.
    assert ex.feedback(np.array([[1.0, 0.0], [0.0, -1.0]])).correct
    namespace = {"np": np}
    exec(ex.solution().text, namespace)
    assert ex.feedback(namespace["answer"]).correct
    assert ex.feedback(RIVER.W_K).mistake == "unchanged"       # today's W_K: river wins


@pytest.mark.parametrize("c", [0.5, 3.0, 100.0])
def test_a_rescaled_w_k_keeps_the_order_and_is_named(c):
    feedback = _design().feedback(c * RIVER.W_K)
    assert feedback.mistake == "scaled_all" and "'bank' still prefers 'river'" in feedback.text


def test_the_other_wrong_designs_are_named():
    ex = _design()
    assert ex.feedback(-RIVER.W_K).mistake == "itself"       # scores -4, -2, -10: bank's own key is highest
    # W_K.T: W_K q = (7, 1), scores 7, 1, 15 for The, bank, river (by hand): river still wins, and is named
    feedback = ex.feedback(RIVER.W_K.T)
    assert feedback.mistake == "still_prefers" and "still prefers 'river' to 'The'" in feedback.text
    # W_K q = (1, 2): scores 1, 2, 4; bank beats The, but river is the word with the highest score: named
    feedback = ex.feedback(np.array([[1.0, 0.0], [-1.0, 1.0]]))
    assert feedback.mistake == "still_prefers" and "'river'" in feedback.text, feedback.text
    assert ex.feedback(np.zeros((2, 2))).mistake == "tie"      # every word scores 0: a tie is not a win
    # W_K q = (-1, -1) gives scores -1, -1, -3: The and bank tie (by hand)
    assert ex.feedback(np.array([[-0.25, -0.25], [-0.25, -0.25]])).mistake == "tie"
    assert ex.feedback(np.ones(2)).mistake == "shape"
    assert ex.feedback(RIVER.X @ RIVER.W_K).mistake == "keys_given"   # (3, 2): one row per word


def test_key_design_refuses_an_instructors_impossible_or_empty_task():
    with pytest.raises(ValueError, match="already prefers 'river' over every other word"):
        _design(prefer="river")
    with pytest.raises(ValueError, match="prefer must be one of the tokens"):
        _design(prefer="steep")
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])        # c lies between a and b: c . u is their mean
    with pytest.raises(ValueError, match="no W_K was found"):
        KeyDesignExercise(X, np.eye(2), np.eye(2), ["a", "b", "c"], query="a", prefer="c")


def test_one_class_serves_both_notebooks_and_over_none_means_every_other_word():
    # notebook 02's exercise with over given: 'The' over 'river' alone is a weaker property than over every word
    pair = _design(over="river")
    W = np.array([[1.0, 0.0], [-1.0, 1.0]])                   # scores 1, 2, 4 as above: The still below river
    assert pair.feedback(W).mistake == "still_prefers"
    W = np.array([[0.0, 0.0], [-0.25, -0.25]])                # W_K q = (0, -1): scores 0, -1, -1
    assert pair.feedback(W).correct and _design().feedback(W).correct
    W = np.array([[0.25, 0.25], [-0.5, -0.5]])                # W_K q = (1, -2): scores 1, -2, 0: The wins
    assert pair.feedback(W).correct and _design().feedback(W).correct
    W = np.array([[-0.25, -0.25], [0.0, 0.0]])                # W_K q = (-1, 0): scores -1, 0, -2
    assert pair.feedback(W).correct                            # The above river ...
    assert _design().feedback(W).mistake == "itself"           # ... but bank's own key is highest
    for ex in (pair, _design()):
        assert "Many other matrices are right too" in ex.solution().text
        namespace = {"np": np}
        exec(ex.solution().text, namespace)
        assert ex.feedback(namespace["answer"]).correct


def test_the_solution_is_searched_for_when_the_simple_construction_fails():
    # a = (0, 3), b = (-1, 0), c = (-2, -1); a's query with W_Q = I is (0, 3). The simple u, b minus the mean of the
    # others, (0, -1), scores a -3, b 0, c 1: c wins. By hand, the widest u is the point of the segment from b - a =
    # (-1, -3) to b - c = (1, 1) nearest 0, (0.4, -0.2), margin 0.2; divided by it, u = (2, -1): scores -3, -2, -3.
    X = np.array([[0.0, 3.0], [-1.0, 0.0], [-2.0, -1.0]])
    ex = KeyDesignExercise(X, np.eye(2), np.eye(2), ["a", "b", "c"], query="a", prefer="b")
    assert ex.feedback(np.outer([0.0, -1.0], [0.0, 3.0]) / 9).mistake == "still_prefers"
    assert "u = [ 2. -1.]" in ex.solution().text
    namespace = {"np": np}
    exec(ex.solution().text, namespace)
    assert ex.feedback(namespace["answer"]).correct


@pytest.mark.parametrize("answer", [None, 3.5, [[1, 2], [3]], object(), "W_K", np.full((2, 2), np.inf), [[None, 1], [2, 3]]])
def test_odd_designs_get_feedback_not_a_traceback(answer):
    assert not _design().feedback(answer).correct
