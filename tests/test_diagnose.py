"""diagnose(fn): each named fault, written as a learner would write it, is named; a right function passes;
whatever the function does, diagnose answers and never raises."""

import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import scaled_dot_product_attention
from helpers.checkers.diagnose import ATOL, BATTERY, FAULTS, RTOL, Diagnosis, diagnose
from helpers.exercises import Feedback
from helpers.exercises import diagnose as diagnose_from_exercises


# --------------------------------------------------------------------------
# Learners' functions. Each is written the way a learner writes it, not built
# from diagnose's own models.
# --------------------------------------------------------------------------

def right(Q, K, V, mask=None):
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))     # a row of -inf: zeros, not NaN
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total == 0, 1.0, total)
    return weights @ V, weights


def unguarded(Q, K, V, mask=None):
    """Right on every row with a key to read; NaN on a query with nothing to attend to (notebook 04, section 4)."""
    scores = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), -np.inf) if mask is not None \
        else Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def right_with_loops(Q, K, V, mask=None):
    """Right, but with Python loops, a -1e9 fill and only the output returned."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if mask is not None:                  # a mask shared by queries or sentences, entry by entry
        mask = np.broadcast_to(mask, Q.shape[:-1] + K.shape[-2:-1])
    if Q.ndim > 2:                        # each leading axis in turn: a batch, then heads (notebook 05)
        return np.stack([right_with_loops(Q[b], K[b], V[b], None if mask is None else mask[b])
                         for b in range(Q.shape[0])])
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        s = [float(Q[i] @ K[j]) / K.shape[1] ** 0.5 for j in range(K.shape[0])]
        if mask is not None:
            s = [x if mask[i, j] else -1e9 for j, x in enumerate(s)]
        m = max(s)
        e = [np.exp(x - m) for x in s]
        out[i] = sum(w / sum(e) * V[j] for j, w in enumerate(e))
    return out


def right_float32(Q, K, V, mask=None):
    out, _ = right(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), mask)
    return out


def no_scaling(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def divided_by_d_k(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / K.shape[-1]
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


D_MODEL = 64


def sqrt_d_model(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(D_MODEL)      # a model width, not the keys' width
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def hard_coded_two(Q, K, V, mask=None):
    """Divides by 2, the sqrt(d_k) of the first example it was written for (d_k = 4)."""
    scores = Q @ np.swapaxes(K, -1, -2) / 2
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def mask_added(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores + mask
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def wrong_axis(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=-2, keepdims=True))
    return e / e.sum(axis=-2, keepdims=True) @ V


def mask_after_softmax(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = weights * mask
    return weights @ V


def mask_multiplied(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores * mask                 # "multiply by 0 to hide"
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def mask_flipped(Q, K, V, mask=None):
    """The torch.nn.MultiheadAttention habit: True = hidden, filled with -inf."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def mask_flipped_additive(Q, K, V, mask=None):
    """The same habit with an additive -1e9 mask."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores + mask * -1e9
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def max_over_everything(Q, K, V, mask=None):
    """One maximum of the whole array subtracted (issue 32, section 3): the battery's rows 1000 apart catch it."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max())
    return e / e.sum(axis=-1, keepdims=True) @ V


def no_max_subtraction(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True) @ V


def scores_transposed(Q, K, V, mask=None):
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def batch_transpose(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def mask_indexed(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores[~mask] = -np.inf                  # boolean indexing: a mask that broadcasts raises IndexError
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def scale_after_softmax(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) / np.sqrt(K.shape[-1]) @ V


def fixed_axes_transpose(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, 1, 2) / np.sqrt(K.shape[-1])      # torch's K.transpose(1, 2), kept as it stands
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def scale_by_n_keys(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(len(K))       # the number of keys, not their width
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def scale_by_d_v(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])  # the values' width, not the keys'
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def scale_by_shape(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-2])  # the number of queries, not the keys' width
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def two_faults(Q, K, V, mask=None):
    """No scaling and the softmax down the columns."""
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True) @ V


def _softmax_along(max_axis, sum_axis, name):
    def fn(Q, K, V, mask=None):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -1e9)
        e = np.exp(scores - scores.max(axis=max_axis, keepdims=True))
        return e / e.sum(axis=sum_axis, keepdims=True) @ V
    fn.__name__ = name
    return fn


# A fixed axis=1: the keys' axis for one sentence, the queries' axis once heads or a batch come first (the real
# model calls attention with Q, K, V of shape (12, n, 32): notebook 11's finale); and a softmax that subtracts
# each row's maximum but sums down the columns.
softmax_axis_1 = _softmax_along(1, 1, "softmax_axis_1")
max_on_rows_sum_down_columns = _softmax_along(-1, -2, "max_on_rows_sum_down_columns")


NAMED = [
    (softmax_axis_1, "wrong_axis", "axis=1"),
    (max_on_rows_sum_down_columns, "wrong_axis", "axis=-1"),
    (unguarded, "neg_inf_nan", "nothing to attend to"),
    (no_scaling, "no_scaling", "sqrt(d_k)"),
    (divided_by_d_k, "divided_by_d_k", "square root"),
    (sqrt_d_model, "constant_scale", "divide the scores by 8 whatever d_k is, which is right only when d_k = 64"),
    (hard_coded_two, "constant_scale", "divide the scores by 2 whatever d_k is, which is right only when d_k = 4"),
    (mask_added, "mask_added", "np.where(mask, scores, -np.inf)"),
    (wrong_axis, "wrong_axis", "axis=-1"),
    (mask_after_softmax, "mask_after_softmax", "before the softmax"),
    (mask_multiplied, "mask_multiplied", "exp(0) = 1"),
    (mask_flipped, "mask_flipped", "wrong way round"),
    (mask_flipped_additive, "mask_flipped", "wrong way round"),
    (no_max_subtraction, "no_max_subtraction", "maximum"),
    (max_over_everything, "max_over_everything", "one maximum for the whole array"),
    (scores_transposed, "scores_transposed", "Q @ K^T"),
    (batch_transpose, "batch_transpose", "np.swapaxes(K, -1, -2)"),
    (two_faults, "no_scaling+wrong_axis", "axis=-1"),
    (scale_by_n_keys, "scale_by_n_keys", "number of keys"),
    (scale_by_d_v, "scale_by_d_v", "values' width"),
    (scale_by_shape, "scale_by_shape", "sqrt(n_q) = sqrt(3)"),
    (mask_indexed, "mask_indexed", "np.broadcast_to(mask, scores.shape)"),
    (scale_after_softmax, "scale_after_softmax", "before the softmax"),
    (fixed_axes_transpose, "axes_permuted", "np.swapaxes(K, 1, 2)"),
]


@pytest.mark.parametrize("fn, key, words", NAMED, ids=[f.__name__ for f, _, _ in NAMED])
def test_each_fault_is_named(fn, key, words):
    verdict = diagnose(fn)
    assert isinstance(verdict, Feedback) and isinstance(verdict, Diagnosis)
    assert verdict.correct is False
    assert verdict.mistake == key, verdict.text
    assert words in verdict.text
    assert "It first goes wrong on" in verdict.text
    assert "First differing row" in verdict.text or "It raised" in verdict.text


def test_the_verdict_names_the_input_and_shows_the_first_differing_row():
    verdict = diagnose(mask_flipped)
    assert verdict.case == "causal mask"
    case = next(c for c in BATTERY if c.name == "causal mask")
    with np.errstate(invalid="ignore"):              # its last row hides every key: NaN, as the learner gets
        yours = mask_flipped(case.Q, case.K, case.V, case.mask)
    expected, _ = scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)
    row = next(i for i in range(len(yours)) if not np.allclose(yours[i], expected[i]))
    assert f"First differing row, row {row}:" in verdict.text
    assert case.words in verdict.text


def test_the_batch_fault_names_the_batch_input():
    verdict = diagnose(batch_transpose)
    assert verdict.case == "batch"
    assert "raised ValueError" in verdict.text      # numpy's matmul refuses (4, 3, 2) against (2, 3, 4)


@pytest.mark.parametrize("fn", [right, right_with_loops, right_float32], ids=lambda f: f.__name__)
def test_a_right_function_is_accepted(fn):
    verdict = diagnose(fn)
    assert verdict.correct is True and verdict.mistake is None
    assert verdict.text.startswith("Correct!")
    assert f"all {len(BATTERY)} inputs" in verdict.text


def test_exercises_offers_the_same_diagnose():
    assert diagnose_from_exercises(no_scaling).mistake == "no_scaling"
    assert diagnose_from_exercises(right).correct


def test_every_named_fault_has_a_learner_function():
    keys = {k for _, key, _ in NAMED for k in key.split("+")}
    # returned_weights and weights_wrong: tests/test_fitted_attention.py (their verdicts show no differing row)
    assert keys | {"multiplied_by_sqrt_d_k", "softmax_over_everything", "mask_ignored", "returned_weights",
                   "weights_wrong"} == set(FAULTS)


def test_the_battery_tells_every_single_fault_from_the_right_answer_and_from_each_other():
    """No two single-fault models give the same numbers on every input, so a named fault is the only one."""
    from helpers.checkers.diagnose import _SINGLE, RIGHT, _Model

    models = [RIGHT] + [_Model(**{p: v}) for p, v in _SINGLE] + [_Model(scale=1 / 8)]

    def signature(model):
        out = []
        for case in BATTERY:
            pred = model.predict(case)
            out.append(None if pred is None else np.round(pred[0][0], 3).tobytes())
        return tuple(out)

    named = {}
    for model in models:
        named.setdefault(signature(model), set()).add(tuple(model.faults()))
    assert all(len(keys) == 1 for keys in named.values()), named   # no signature shared by two faults


def test_the_large_scores_overflow_a_softmax_without_max_subtraction():
    case = next(c for c in BATTERY if c.name == "large scores")
    scaled = case.Q @ case.K.T / np.sqrt(case.K.shape[-1])
    assert scaled.max() > np.log(np.finfo(float).max)       # exp of it is inf: about 709.8
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(no_max_subtraction(case.Q, case.K, case.V)))


# --------------------------------------------------------------------------
# The stage of notebook 02: no masks, no batches
# --------------------------------------------------------------------------

def right_without_mask(Q, K, V):
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ V


def test_before_masks_and_batches_a_2d_function_without_mask_passes():
    verdict = diagnose(right_without_mask, masks=False, batches=False)
    assert verdict.correct, verdict.text
    assert "Masks and batches were not tried" in verdict.text


def test_before_masks_and_batches_faults_are_still_named():
    verdict = diagnose(no_scaling, masks=False, batches=False)
    assert verdict.mistake == "no_scaling"


def test_with_the_full_battery_a_function_without_mask_is_told_to_take_one():
    verdict = diagnose(right_without_mask)
    assert verdict.mistake == "no_mask_argument"
    assert "mask=None" in verdict.text


# --------------------------------------------------------------------------
# Odd functions: diagnose answers and names what happened
# --------------------------------------------------------------------------

def raises(Q, K, V, mask=None):
    raise RuntimeError("my bug")


def exits(Q, K, V, mask=None):
    sys.exit(1)


def returns_none(Q, K, V, mask=None):
    right(Q, K, V, mask)


def returns_text(Q, K, V, mask=None):
    return "the output"


def returns_weights(Q, K, V, mask=None):
    return right(Q, K, V, mask)[1]


def returns_weights_then_output(Q, K, V, mask=None):
    out, w = right(Q, K, V, mask)
    return w, out


def returns_nan(Q, K, V, mask=None):
    return np.full((*Q.shape[:-1], V.shape[-1]), np.nan)


def wrong_shape(Q, K, V, mask=None):
    return right(Q, K, V, mask)[0].ravel()


def prints(Q, K, V, mask=None):
    print("scores:", Q @ np.swapaxes(K, -1, -2))
    return right(Q, K, V, mask)


def mutates(Q, K, V, mask=None):
    Q /= np.sqrt(K.shape[-1])                     # in place: changes the caller's Q
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ V


def wrong_weights(Q, K, V, mask=None):
    out, w = right(Q, K, V, mask)
    return out, w.T


def unknown(Q, K, V, mask=None):
    return right(Q, K, V, mask)[0] + 0.5


@pytest.mark.parametrize("fn, key", [
    (raises, "raised"), (exits, "exit"), (returns_none, "returned_none"), (returns_text, "not_numbers"),
    (returns_weights, "returned_weights"), (returns_weights_then_output, "returned_weights"),
    (returns_nan, "nan_inf"), (wrong_shape, "wrong_shape"), (mutates, "mutates_inputs"),
    (wrong_weights, "weights_wrong"), (unknown, "different"), (unguarded, "neg_inf_nan"),
], ids=lambda x: getattr(x, "__name__", x))
def test_odd_functions_are_named(fn, key):
    verdict = diagnose(fn)
    assert verdict.correct is False
    assert verdict.mistake == key, verdict.text


def filled_with_minus_1e9(Q, K, V, mask=None):
    """Right, the way many learners write it: hidden scores filled with -1e9, and (output, weights) returned.
    A query with no key left gets even weights 1/n_k (and the mean of V) instead of zeros."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights


def test_a_minus_1e9_fill_returning_its_weights_passes_and_is_told_its_empty_rows_differ():
    # Its output is accepted on the rows that count, so its weights are too: it must never be told that its
    # weights are not the ones its output came from (a learner's report: "return weights @ V, weights", which
    # the code already did).
    case = next(c for c in BATTERY if c.mask is not None and not np.broadcast_to(c.mask, c.mask.shape).any(-1).all())
    _, weights = filled_with_minus_1e9(case.Q, case.K, case.V, case.mask)
    assert not np.allclose(weights, scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)[1])
    verdict = diagnose(filled_with_minus_1e9)
    assert verdict.correct, verdict.text
    assert "weights it returns" not in verdict.text
    assert "spreads its weight evenly" in verdict.text and "gives zeros there" in verdict.text
    assert "spreads its weight evenly" not in diagnose(right).text


def test_weights_wrong_on_a_row_that_counts_are_still_named():
    def weights_of_the_wrong_row(Q, K, V, mask=None):
        out, w = right(Q, K, V, mask)
        return out, np.flip(w, axis=-2)
    assert diagnose(weights_of_the_wrong_row).mistake == "weights_wrong"


def test_printing_is_kept_out_of_sight_and_does_not_fault_a_right_function(capsys):
    verdict = diagnose(prints)
    assert verdict.correct
    assert "prints while it runs" in verdict.text
    assert capsys.readouterr().out == ""


def test_inputs_are_fresh_copies_on_every_call():
    """A function that mutates its inputs must not spoil the battery for the next function."""
    before = [c.Q.copy() for c in BATTERY]
    assert diagnose(mutates).mistake == "mutates_inputs"
    assert all(np.array_equal(b, c.Q) for b, c in zip(before, BATTERY))
    assert diagnose(right).correct


def test_a_mutation_is_also_reported_beside_a_wrong_output():
    def mutates_and_no_scaling(Q, K, V, mask=None):
        V *= 1.0
        K[...] = K                                 # writes, same values: not a change
        Q += 0.0
        out = no_scaling(Q, K, V, mask)
        Q += 1.0
        return out
    verdict = diagnose(mutates_and_no_scaling)
    assert verdict.mistake == "no_scaling"
    assert "Also, it changes its input Q in place" in verdict.text


def test_a_slow_function_is_left_behind_after_the_time_limit():
    def slow(Q, K, V, mask=None):
        time.sleep(1.0)
        return right(Q, K, V, mask)
    started = time.perf_counter()
    verdict = diagnose(slow, time_limit=0.1)
    assert time.perf_counter() - started < 0.9
    assert verdict.mistake == "too_slow" and verdict.case == "plain"


def test_not_a_function():
    assert diagnose(right(BATTERY[0].Q, BATTERY[0].K, BATTERY[0].V)).mistake == "not_a_function"


@pytest.mark.parametrize("kwargs, name", [
    ({"masks": "yes"}, "masks"), ({"batches": 1}, "batches"), ({"time_limit": 0}, "time_limit"),
    ({"time_limit": float("nan")}, "time_limit"), ({"time_limit": True}, "time_limit"),
])
def test_bad_options_are_a_clear_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        diagnose(right, **kwargs)


def test_the_tolerance_is_far_tighter_than_any_fault():
    """The smallest difference a named fault makes on its first wrong input dwarfs the tolerance."""
    for fn, _, _ in NAMED:
        for case in BATTERY:
            kwargs = {} if case.mask is None else {"mask": case.mask}
            try:
                with np.errstate(all="ignore"):
                    got = np.asarray(fn(np.array(case.Q), np.array(case.K), np.array(case.V), **kwargs), dtype=float)
            except Exception:
                break
            expected, _ = scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)
            if got.shape != expected.shape or not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
                if got.shape == expected.shape and np.all(np.isfinite(got)):
                    # 300: the closest fault, scale_by_n_keys, divides the first input's scores by sqrt(3)
                    # instead of sqrt(4) and moves its output by 0.034, about 580 times the tolerance
                    assert np.abs(got - expected).max() > 300 * (ATOL + RTOL * np.abs(expected).max())
                break


# --------------------------------------------------------------------------
# Never raises: hypothesis throws odd functions at it
# --------------------------------------------------------------------------

class Weird:
    def __array__(self, *a, **k):
        raise RuntimeError("no array for you")

    def __len__(self):
        raise RuntimeError("no len either")


class BadMessage(Exception):
    def __str__(self):
        raise RuntimeError("the message itself raises")


returns = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.floats(), max_size=4), st.builds(Weird),
    hnp.arrays(st.sampled_from([np.float64, np.int8, np.bool_, np.complex128, np.float32]),
               hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)),
    st.tuples(st.none(), st.none()), st.tuples(st.integers(), st.text(max_size=2)),
)
exceptions = st.sampled_from([ValueError("x"), TypeError("mask"), SystemExit(2), KeyboardInterrupt(),
                              BadMessage(), RecursionError(), MemoryError(), GeneratorExit()])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=returns)
def test_never_raises_whatever_the_function_returns(value):
    verdict = diagnose(lambda Q, K, V, mask=None: value)
    assert isinstance(verdict, Feedback) and verdict.correct is False
    assert isinstance(verdict.text, str) and verdict.text


@settings(max_examples=30, deadline=None)
@given(exc=exceptions, after=st.integers(0, 8))
def test_never_raises_whatever_the_function_raises(exc, after):
    calls = []

    def fn(Q, K, V, mask=None):
        calls.append(1)
        if len(calls) > after:
            raise exc
        return right(Q, K, V, mask)

    verdict = diagnose(fn)
    assert isinstance(verdict, Feedback)
    assert verdict.correct is (after >= len(BATTERY))


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.sampled_from(["scale", "T", "neg", "mask_inf", "square", "exp", "sum", "nan", "swap",
                                     "drop_row", "mutate_K"]), max_size=4))
def test_never_raises_on_functions_that_compute_something(ops):
    def fn(Q, K, V, mask=None):
        out, _ = right(Q, K, V, mask)
        for op in ops:
            if op == "scale":
                out = out * 3
            elif op == "T":
                out = out.T
            elif op == "neg":
                out = -out
            elif op == "mask_inf" and mask is not None:
                out = np.where(mask[..., : out.shape[-1]] if mask.shape[-1] >= out.shape[-1] else True, out, np.inf)
            elif op == "square":
                out = out @ out.T if out.ndim == 2 else out
            elif op == "exp":
                out = np.exp(out * 1000)
            elif op == "sum":
                out = out.sum()
            elif op == "nan":
                out = out / 0
            elif op == "swap":
                out = (out, out)
            elif op == "drop_row":
                out = out[..., 1:, :] if np.ndim(out) >= 2 else out
            elif op == "mutate_K":
                K[...] = 0
        return out

    verdict = diagnose(fn)
    assert isinstance(verdict, Feedback)
    assert isinstance(verdict.correct, bool) and isinstance(verdict.text, str)


def test_attention_calling_an_unwritten_softmax_says_to_build_softmax_first():
    """The workbook's stubs raise NotImplementedError("<piece>: not written yet") (solutions.workbook_source)."""
    def softmax(x, axis=-1):
        raise NotImplementedError("softmax: not written yet")

    def attention(Q, K, V, mask=None):
        weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]))
        return weights @ V, weights

    def stub(Q, K, V, mask=None):
        raise NotImplementedError("attention: not written yet")

    verdict = diagnose(attention, masks=False, batches=False)
    assert verdict.mistake == "not_attempted" and not verdict.correct
    assert "attention calls softmax, which is not written yet" in verdict.text, verdict.text
    plain = diagnose(stub, masks=False, batches=False)
    assert plain.mistake == "not_attempted" and "calls" not in plain.text, plain.text
