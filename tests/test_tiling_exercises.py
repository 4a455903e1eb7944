"""The exercises of notebook 08, built from the notebook's own set-up cells, and the count exercise.

Only the cells the exercises need are run (the set-up without its line magics
and workbook, the scores of 'bank', section 5's head and the exercises' own
cells), not the notebook's timing and memory cells. The count exercise
(AttentionCountExercise) left the notebook in its rewrite (section 1 does the
same count); it is built here with the inputs it had there. Right answers come
from hand derivations written beside each test.
"""

import contextlib
import io
import math

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import AttentionCountExercise, KVCacheSizeExercise, OnlineSoftmaxStepExercise

NOTEBOOK = NOTEBOOKS_DIR / "08_cost_and_tiling.ipynb"
NEEDED = ("from helpers.attention import", "s = (Q @ K.T)[bank]", "X_dec = rng", "from helpers.exercises import",
          "Exercise(")
SETUP_ONLY = ("%", "import workbook", "from helpers.exercises import diagnose")   # the build sections' lines


def notebook_namespace():
    import matplotlib

    matplotlib.use("Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    namespace = {"__name__": "__notebook__"}
    for cell in nb.cells:
        if cell.cell_type == "code" and any(key in cell.source for key in NEEDED):
            source = "\n".join(line for line in cell.source.splitlines() if not line.startswith(SETUP_ONLY))
            with contextlib.redirect_stdout(io.StringIO()):
                exec(source, namespace)
    return namespace


NS = notebook_namespace()
EXERCISES = {name: NS[name] for name in ("ex_step", "ex_cache")}
EXERCISES["ex_count"] = AttentionCountExercise(n=1000, num_heads=12, num_layers=24)


def test_the_notebooks_exercises_have_the_hand_derived_answers():
    # 24 layers x 12 heads x 1000^2 = 288 x 1,000,000 = 288,000,000.
    assert float(EXERCISES["ex_count"].expected) == 288_000_000
    # 2 x 28 x 16 x 128 x 4096 = 469,762,048 numbers.
    assert float(NS["ex_cache"].expected) == 469_762_048
    # m = 0.955 ('flooded' alone), l = 1; the block 'river', 'bank' scores 1.061 and 0.795:
    # m' = 1.061, l' = exp(0.955 - 1.061) x 1 + exp(0) + exp(0.795 - 1.061) = 0.899 + 1 + 0.767 = 2.666.
    assert np.allclose(NS["ex_step"].expected, [S_RIVER, F + 1 + B], atol=1e-12)


# The scaled scores of 'river', 'bank' and 'flooded' in the row of 'bank' (source 000): q_bank = (0.75, 0.75),
# k_river = (2, 0), k_bank = (1, 0.5), k_flooded = (1.6, 0.2), d_k = 2.
S_RIVER, S_BANK, S_FLOODED = (0.75 * 2.0 / math.sqrt(2), (0.75 * 1.0 + 0.75 * 0.5) / math.sqrt(2),
                              (0.75 * 1.6 + 0.75 * 0.2) / math.sqrt(2))
F = math.exp(S_FLOODED - S_RIVER)     # the rescaling factor of the old sum, 0.899
B = math.exp(S_BANK - S_RIVER)        # bank's term against the new maximum, 0.767

CASES = {
    "ex_count": [
        (None, 24 * 12 * 1000 ** 2),
        (None, 288_000_000.0),
        ("one_head_one_layer", 1000 ** 2),
        ("heads_forgotten", 24 * 1000 ** 2),
        ("layers_forgotten", 12 * 1000 ** 2),
        ("linear_count", 24 * 12 * 1000),
        ("causal_half", 24 * 12 * 1000 * 1001 // 2),
        ("different", 12345),
        ("not_numbers", "288000000"),
        ("shape", [288000000]),
        ("other_exercise", 2 * 28 * 16 * 128 * 4096),
    ],
    "ex_step": [
        (None, [1.061, 2.666]),
        (None, np.array([1.0607, 2.6664])),
        ("not_rescaled", [S_RIVER, 1 + 1 + B]),
        ("factor_upside_down", [S_RIVER, 1 / F + 1 + B]),
        ("old_max_kept", [S_FLOODED, 1 + math.exp(S_RIVER - S_FLOODED) + math.exp(S_BANK - S_FLOODED)]),
        ("no_max_subtraction", [S_RIVER, F + math.exp(S_RIVER) + math.exp(S_BANK)]),
        ("no_max_subtraction", [S_RIVER, math.exp(S_FLOODED) + math.exp(S_RIVER) + math.exp(S_BANK)]),  # e^m l + e^s
        ("no_max_subtraction", [1.061, math.exp(0.955) + math.exp(1.061) + math.exp(0.795)]),  # from the printed ones
        ("scores_not_exponentiated", [S_RIVER, F + 0.0 + (S_BANK - S_RIVER)]),
        ("old_max_in_answer", [S_FLOODED, F + 1 + B]),     # the right l beside the old m
        ("old_sum_dropped", [S_RIVER, 1 + B]),              # the block's terms alone
        ("m_and_l_swapped", [F + 1 + B, S_RIVER]),          # [l', m']
        ("rounded", [1.06, 2.67]),
        ("shape", 2.666),
        ("different", [1.061, 2.5]),
    ],
    "ex_cache": [
        (None, 2 * 28 * 16 * 128 * 4096),
        ("keys_only", 28 * 16 * 128 * 4096),
        ("cache_heads_forgotten", 2 * 28 * 128 * 4096),
        ("cache_layers_forgotten", 2 * 16 * 128 * 4096),
        ("cache_n_squared", 2 * 28 * 16 * 128 * 4096 ** 2),
        ("cache_tokens_forgotten", 2 * 28 * 16 * 128),      # 114,688: one token's keys and values
        ("bytes_float64", 8 * 2 * 28 * 16 * 128 * 4096),
        ("bytes_float32", 4 * 2 * 28 * 16 * 128 * 4096),
        ("other_exercise", 24 * 12 * 1000 ** 2),
        ("nan_inf", float("inf")),
    ],
}
PHRASES = {
    None: "Correct!", "one_head_one_layer": "one head of one layer", "heads_forgotten": "but not the heads",
    "layers_forgotten": "but not the layers", "linear_count": "grows like n", "causal_half": "causal mask keeps",
    "not_rescaled": "as it was", "factor_upside_down": "exp(m' - m)", "old_max_kept": "kept the old maximum",
    "no_max_subtraction": "without subtracting", "scores_not_exponentiated": "the scores themselves",
    "keys_only": "the factor 2", "cache_heads_forgotten": "left out the heads",
    "cache_layers_forgotten": "left out the layers", "cache_n_squared": "counts n × n",
    "cache_tokens_forgotten": "left out the tokens", "old_max_in_answer": "still the old maximum",
    "old_sum_dropped": "counts only", "m_and_l_swapped": "The order is [m, l]",
    "bytes_float64": "8 bytes", "bytes_float32": "4 bytes", "rounded": "Rounded too far", "shape": "Wrong shape",
    "different": "Not yet", "not_numbers": "not numbers", "other_exercise": "another exercise", "nan_inf": "inf",
}


@pytest.mark.parametrize("name, key, answer",
                         [(name, key, answer) for name, cases in CASES.items() for key, answer in cases])
def test_each_answer_gets_the_feedback_that_names_it(name, key, answer):
    feedback = EXERCISES[name].feedback(answer)
    assert feedback.mistake == key, feedback.text
    assert feedback.correct == (key is None)
    assert PHRASES[key] in feedback.text


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_mistake_is_typed_in_a_case_and_none_coincide(name):
    ex = EXERCISES[name]
    assert set(ex.mistakes) <= {key for key, _ in CASES[name]}
    assert ex.coinciding == []
    for key, message, _ in ex._variants:   # each message names its own mistake and no other's
        assert PHRASES[key] in message
        assert not any(PHRASES[other] in message for other, _, _ in ex._variants if other != key)


@pytest.mark.parametrize("name", sorted(set(EXERCISES) - {"ex_count"}) + ["ex_encoder"])
def test_the_solution_is_accepted_and_binds_no_name_of_the_notebook(name):
    ex = NS[name]
    namespace = dict(NS)
    before = {k: v for k, v in namespace.items() if not k.startswith("__")}
    exec(ex.solution().text, namespace)
    assert ex.feedback(namespace["answer"]).correct
    bound = {k for k in namespace if not k.startswith("__")} - set(before) - {"answer"}
    assert all(k.startswith("my_") for k in bound), bound
    assert all(namespace[k] is v for k, v in before.items() if k != "answer")


answers = st.one_of(st.none(), st.text(max_size=3), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.lists(st.floats(allow_nan=True), max_size=4), st.dictionaries(st.text(max_size=2), st.integers()),
                    hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))


@pytest.mark.parametrize("name", sorted(EXERCISES))
@settings(max_examples=100, deadline=None)
@given(answer=answers)
def test_no_answer_makes_a_checker_raise(name, answer):
    feedback = EXERCISES[name].feedback(answer)
    assert feedback.text and feedback.correct in (True, False)


def test_an_instructor_who_changes_the_inputs_changes_nothing_else():
    # By hand: 6 layers x 12 heads x 512^2 = 18,874,368; 2 x 6 x 12 x 32 x 512 = 2,359,296.
    assert float(AttentionCountExercise(512, 12, 6).expected) == 18_874_368
    assert float(KVCacheSizeExercise(6, 12, 32, 512).expected) == 2_359_296
    # The maximum stays at 3 (the block's scores are lower): factor exp(0) = 1, l' = 1.5 + e^-1 + e^-2.
    step = OnlineSoftmaxStepExercise(3.0, 1.5, [2.0, 1.0])
    assert np.allclose(step.expected, [3.0, 1.5 + math.exp(-1) + math.exp(-2)])
    # The rescaling mistakes need a move; the others stay (l' = 2.0 differs from m' = 3, so a swap is named).
    assert step.mistakes == ["old_sum_dropped", "m_and_l_swapped", "no_max_subtraction", "scores_not_exponentiated"]
    assert step.feedback([3.0, math.exp(-1) + math.exp(-2)]).text == (
        "Your l counts only the new block; the old sum stays in it.")
    assert "np.array" not in step.feedback(list(step.expected)).text      # the question asks for a list


@pytest.mark.parametrize("make, pattern", [
    (lambda: AttentionCountExercise(0, 1, 1), "n must be a positive whole number; got 0"),
    (lambda: AttentionCountExercise(4, 2.5, 1), "num_heads must be a positive whole number; got 2.5"),
    (lambda: KVCacheSizeExercise(1, 1, True, 4), "d_k must be a positive whole number; got True"),
    (lambda: OnlineSoftmaxStepExercise(0.0, 0.5, [1.0]), "running_sum a number >= 1"),
    (lambda: OnlineSoftmaxStepExercise(0.0, 1.0, [np.nan]), "block_scores a list of finite scores"),
    (lambda: OnlineSoftmaxStepExercise("a", 1.0, [0.5]), "running_max must be a finite number.*got 'a'"),
])
def test_bad_inputs_from_an_instructor_raise_a_clear_value_error(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


# ------------------------------------------------------------ exercise 3: why an encoder keeps no KV cache

def test_the_encoder_measurement_is_what_the_algebra_says():
    # Layer 1's key of a token is x W_K: its own row alone, so adding a token never changes it, with or without
    # a mask. Layer 2's keys are computed from layer 1's output: without a mask every earlier query reads the new
    # key, so its output (and the key above it) moves; under the causal mask no earlier query may read it.
    assert NS["changed"] == {"encoder": [False, True], "decoder": [False, False]}


ENCODER = {"a": ("chose_a", "grows with n"), "b": ("chose_b", "depends on its own token alone"),
           "c": (None, "Every earlier query also reads the new key"), "d": ("chose_d", "would be stale")}


@pytest.mark.parametrize("answer", sorted(ENCODER))
def test_each_reason_for_the_encoder_gets_its_own_feedback(answer):
    key, phrase = ENCODER[answer]
    feedback = NS["ex_encoder"].feedback(answer)
    assert feedback.mistake == key, feedback.text
    assert feedback.correct == (key is None)
    assert phrase in feedback.text
    assert not any(other in feedback.text for a, (_, other) in ENCODER.items() if a != answer)


@settings(max_examples=100, deadline=None)
@given(answer=answers)
def test_no_answer_makes_the_encoder_checker_raise(answer):
    feedback = NS["ex_encoder"].feedback(answer)
    assert feedback.text and feedback.correct in (True, False)


@pytest.mark.parametrize("changed, pattern", [
    ({"encoder": [False, True]}, "changed must be"),
    ({"encoder": [False, True], "decoder": [False, "no"]}, "changed must be"),
    ({"encoder": [True, True], "decoder": [False, False]}, "layer-1 keys"),    # layer 1's keys cannot move
    ({"encoder": [False, False], "decoder": [False, False]}, "layer-2 keys changed"),
])
def test_a_measurement_that_shows_something_else_is_refused_by_name(changed, pattern):
    from helpers.exercises import EncoderCacheExercise
    with pytest.raises(ValueError, match=pattern):
        EncoderCacheExercise(changed)


# ------------------------------------------------------------ exercise 1 is no read-off (issue 33, section 2)

def test_exercise_1s_step_is_printed_nowhere_above_it_nor_in_any_explorer_state():
    """Section 3 and the explorer read the keys left to right: every running sum they print (the row of bank's
    1, 1.406, 2.173 and 3.072, and every row's in every state of the explorer) is another step's. The exercise
    reads the keys in another order, flooded first and then the block river, bank, so its l' is none of them."""
    import itertools

    from exercise_cases import numbers_above
    from helpers.exercises.feedback import EXACT_ATOL
    from helpers.explorers import tiling_state

    m_new, l_new = NS["ex_step"].expected
    nb = nbformat.read(NOTEBOOK, as_version=4)
    solution = next(c for c in nb.cells if c.cell_type == "code" and "ex_step.solution()" in c.source)
    assert f"{l_new:.3f}" in solution.outputs[0]["data"]["text/plain"]      # the exercise's own answer
    answer_cell = next(c for c in nb.cells if c.cell_type == "code" and "ex_step.check(answer)" in c.source)
    above = numbers_above(nb, answer_cell.id)
    assert not [x for x in above if abs(x - l_new) <= EXACT_ATOL], l_new
    assert [x for x in above if abs(x - 1.406) <= EXACT_ATOL]                  # the old exercise's answer is there
    sums = [v for b, causal in itertools.product(range(1, 5), (False, True)) for k in range(1, -(-4 // b) + 1)
            for state in [tiling_state(b, k, causal)] for v in (*state.sum_before, *state.sum_after)]
    assert len(sums) == 2 * 8 * 9
    assert not [v for v in sums if abs(v - l_new) <= EXACT_ATOL]


# ------------------------------------------------------------ exercise 4: the loop without its running maximum

MAXLESS = {"a": ("max_only_cancels", "It cancels only while"), "b": (None, "overflows to inf"),
           "c": ("underflow", "too large, not too small")}


@pytest.mark.parametrize("answer", sorted(MAXLESS))
def test_each_answer_on_the_running_maximum_gets_its_own_feedback(answer):
    key, phrase = MAXLESS[answer]
    feedback = NS["ex_max"].feedback(answer)
    assert feedback.mistake == key and feedback.correct == (key is None), feedback.text
    assert phrase in feedback.text
    assert not any(other in feedback.text for a, (_, other) in MAXLESS.items() if a != answer)


def test_the_running_maximum_exercise_measures_what_float64_gives():
    # By hand: bank's largest scaled score is 1.061 (source 000's row), x 1000 = 1061 > log(max float64) = 709.78,
    # so exp overflows to inf and acc / l = inf / inf is NaN; with the running maximum every exponent is <= 0 and
    # the output is the value of the largest score's key, nearly alone (its weight 1 to float64's precision).
    ex = NS["ex_max"]
    assert np.all(np.isnan(ex.without)) and np.all(np.isfinite(ex.with_max))
    assert np.allclose(ex.with_max, NS["V"][int(np.argmax(NS["s"]))], atol=1e-12)
    from helpers.exercises import RunningMaxExercise
    with pytest.raises(ValueError, match="must make exp of the largest score overflow"):
        RunningMaxExercise(NS["s"], NS["V"], factor=10)          # 10.61: nothing overflows, the max only cancels
    with pytest.raises(ValueError, match="factor must be a positive number"):
        RunningMaxExercise(NS["s"], NS["V"], factor=-1000)
    with pytest.raises(ValueError, match="scores must be"):
        RunningMaxExercise(NS["s"][:2], NS["V"], factor=1000)


@settings(max_examples=100, deadline=None)
@given(answer=answers)
def test_no_answer_makes_the_running_maximum_checker_raise(answer):
    feedback = NS["ex_max"].feedback(answer)
    assert feedback.text and feedback.correct in (True, False)
