"""Issue 32 for softmax, softmax_backward, online_softmax_update and tiled_attention: faults with a parameter
named with the learner's own value, the causes behind symptoms, no false alarm and no false pass.

Each wrong function is written the way public code writes it (the report it comes from is named beside it).
"""

import time

import numpy as np
import pytest

from helpers.exercises import diagnose
from helpers.checkers.battery import SOFTMAX
from helpers.checkers.solutions import WORKED

inf = np.inf


# --------------------------------------------------------------------------
# softmax: -inf replaced by a finite number inside (hyunwoongko/transformer #10)
# --------------------------------------------------------------------------

def softmax_fill(value):
    def softmax(x, axis=-1):
        x = np.where(np.isneginf(x), value, x)            # scores.masked_fill(mask == 0, value), inside the softmax
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    return softmax


def softmax_nan_to_num(x, axis=-1):
    x = np.nan_to_num(x)                                  # -inf becomes -1.8e308
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_the_softmax_battery_hides_keys_in_slices_of_two_sizes():
    hidden = {np.moveaxis(c.args["x"], c.args.get("axis", -1), -1).shape[-1] for c in SOFTMAX
              if np.isneginf(c.args["x"]).all(axis=-1).any()}
    mixed = {c.args["x"].shape for c in SOFTMAX
             if (np.isneginf(c.args["x"]).any(axis=-1) & ~np.isneginf(c.args["x"]).all(axis=-1)).any()}
    assert hidden == {3, 7} and len(mixed) >= 2


@pytest.mark.parametrize("value", [-5.0, -7.5, 0.0])
def test_a_small_fill_is_named_with_its_value_on_both_sizes(value):
    verdict = diagnose(softmax_fill(value), piece="softmax")
    assert verdict.mistake == "finite_fill", verdict.text
    assert f"replaces -inf by {value:g} before the exp" in verdict.text
    assert "1/3 = 0.333 each in a slice of 3, 1/7 = 0.143 each in a slice of 7" in verdict.text
    assert "the contract says all zeros" in verdict.text


@pytest.mark.parametrize("fn", [softmax_fill(-1e9), softmax_fill(-1e4), softmax_nan_to_num],
                         ids=["-1e9", "-1e4", "nan_to_num"])
def test_a_large_fill_is_named_as_a_large_negative_number_the_weights_cannot_tell(fn):
    verdict = diagnose(fn, piece="softmax")
    assert verdict.mistake == "finite_fill" and verdict.case == "all -inf row", verdict.text
    assert "replaces -inf by a large negative number" in verdict.text and "cannot tell which" in verdict.text
    assert "1/3 = 0.333 each" in verdict.text


def test_the_fill_family_fits_one_value_across_sizes_not_a_member_per_input():
    from helpers.checkers.checker_softmax import FILL
    fn = softmax_fill(-5.0)
    for case in SOFTMAX:
        with np.errstate(all="ignore"):
            want = fn(np.array(case.args["x"]), case.args.get("axis", -1))
        np.testing.assert_allclose(FILL.predict(case.args, -5.0)[0], want, rtol=1e-12, atol=1e-300)
    # -5 shows in the weights of the (2, 3) input and of the (5, 7) one: each reads -5 back
    from helpers.checkers.checker_softmax import _fit_fill
    from helpers.checkers.runner import Run
    for name in ("-inf entries", "random (5, 7)"):
        case = next(c for c in SOFTMAX if c.name == name)
        out = fn(np.array(case.args["x"]))
        assert -5.0 in _fit_fill([Run(case, out=out)]), name


# --------------------------------------------------------------------------
# softmax: the causes behind raised and nan_inf
# --------------------------------------------------------------------------

def softmax_sum_no_keepdims(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)                       # raises on (3, 4); silently wrong on (2, 2)


def softmax_neither_keepdims(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis))
    return e / e.sum(axis=axis)


def softmax_axis_1(x, axis=-1):
    """An axis hard-coded to 1, as for a (n_q, n_k) matrix of scores: one row has no axis 1."""
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    s = e.sum(axis=1, keepdims=True)
    return e / np.where(s == 0, 1, s)


def softmax_transposed(x, axis=-1):
    return (np.exp(x).T / np.exp(x).sum(-1)).T


@pytest.mark.parametrize("fn, words", [
    (softmax_sum_no_keepdims, "Your sum along the axis drops that axis (no keepdims=True)"),
    (softmax_neither_keepdims, "Your maximum and your sum along the axis drop that axis"),
], ids=["sum", "max and sum"])
def test_a_softmax_without_keepdims_is_no_keepdims_not_raised(fn, words):
    verdict = diagnose(fn, piece="softmax")
    assert verdict.mistake == "no_keepdims", verdict.text
    assert words in verdict.text and "keepdims=True" in verdict.text
    assert "It raised ValueError: operands could not be broadcast" in verdict.text    # the learner's own error


def test_an_axis_hard_coded_to_1_is_axis_ignored_naming_the_axis():
    verdict = diagnose(softmax_axis_1, piece="softmax")
    assert verdict.mistake == "axis_ignored" and verdict.case == "one row", verdict.text
    assert "it always sums along axis 1 (axis=1 written in)" in verdict.text
    assert "AxisError" in verdict.text or "out of bounds" in verdict.text


def test_nan_from_overflow_in_a_transposed_form_is_no_max_subtraction():
    from helpers.checkers.checker_softmax import FAULTS, FIRST_ONLY
    verdict = diagnose(softmax_transposed, piece="softmax")
    assert verdict.mistake == "no_max_subtraction" and verdict.case == "large scores", verdict.text
    assert FAULTS["no_max_subtraction"] in verdict.text and FIRST_ONLY in verdict.text


def test_a_function_that_raises_its_own_error_everywhere_is_raised_not_a_model_that_numpy_refuses():
    def fn(x, axis=-1):
        raise RuntimeError("my bug")
    assert diagnose(fn, piece="softmax").mistake == "raised"

    def axis_error(x, axis=-1):                          # an AxisError of its own, on every input: not axis=1's
        raise np.exceptions.AxisError("no such axis")
    assert diagnose(axis_error, piece="softmax").mistake == "raised"


# --------------------------------------------------------------------------
# softmax: no false alarm, no false pass
# --------------------------------------------------------------------------

def softmax_ax(z, ax=-1):
    m = np.max(z, axis=ax, keepdims=True)
    e = np.exp(z - np.where(np.isfinite(m), m, 0))
    s = e.sum(axis=ax, keepdims=True)
    return e / np.where(s == 0, 1, s)


def softmax_d(logits, d=-1, temperature=1.0):
    return softmax_ax(np.asarray(logits) / temperature, d)


def softmax_temperature_only(x, temperature=1.0):
    return WORKED["softmax"](np.asarray(x) / temperature)


@pytest.mark.parametrize("fn", [softmax_ax, softmax_d], ids=["ax", "d"])
def test_an_axis_of_any_name_is_read_by_its_place_and_default(fn):
    started = time.perf_counter()
    verdict = diagnose(fn, piece="softmax")
    assert verdict.correct and verdict.mistake is None, verdict.text
    assert time.perf_counter() - started < 1.0


def test_a_float_in_the_second_place_is_not_taken_for_the_axis():
    verdict = diagnose(softmax_temperature_only, piece="softmax")
    assert verdict.mistake == "no_axis_argument", verdict.text


def softmax_one_max_unguarded(x, axis=-1):
    e = np.exp(x - np.max(x))                             # one maximum for the whole array
    return e / e.sum(axis=axis, keepdims=True)


def softmax_one_max_guarded(x, axis=-1):
    e = np.exp(x - x.max())
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, 1, s)


@pytest.mark.parametrize("fn, key", [(softmax_one_max_guarded, "max_over_everything"),
                                     (softmax_one_max_unguarded, "max_over_everything+neg_inf_nan")],
                         ids=["guarded", "unguarded"])
def test_one_maximum_for_the_whole_array_no_longer_passes(fn, key):
    verdict = diagnose(fn, piece="softmax")
    assert verdict.mistake == key and verdict.case == "rows far apart", verdict.text
    assert "one maximum for the whole array" in verdict.text
    case = next(c for c in SOFTMAX if c.name == "rows far apart")
    top = case.args["x"].max(axis=-1)
    assert top.max() - top.min() > 745                   # exp of the gap underflows to 0


def test_a_wrong_softmax_is_diagnosed_within_two_seconds():
    for fn in (softmax_transposed, softmax_fill(-5.0), lambda x, axis=-1: WORKED["softmax"](x, axis) * 0.9):
        started = time.perf_counter()
        diagnose(fn, piece="softmax")
        assert time.perf_counter() - started < 2.0


# --------------------------------------------------------------------------
# softmax_backward: any wrong axis, any factor (issue 32: "softmax_backward doubled")
# --------------------------------------------------------------------------

def backward_scaled(factor):
    def softmax_backward(weights, grad_weights):
        return factor * weights * (grad_weights - np.sum(weights * grad_weights, axis=-1, keepdims=True))
    return softmax_backward


def backward_over_n(weights, grad_weights):
    """The gradient averaged over the keys: divided by n, a size, not a constant."""
    n = weights.shape[-1]
    return weights * (grad_weights - (weights * grad_weights).sum(-1, keepdims=True)) / n


def backward_axis(axis):
    def softmax_backward(w, g):
        return w * (g - np.sum(w * g, axis=axis, keepdims=True))
    return softmax_backward


def _battery_sizes():
    from helpers.checkers.battery import SOFTMAX_BACKWARD
    return {c.args["weights"].shape for c in SOFTMAX_BACKWARD}


@pytest.mark.parametrize("factor, words", [(2.0, "2 times the right one (doubled)"),
                                           (0.5, "half the right one (divided by 2)"),
                                           (3.0, "3 times the right one"), (-2.0, "-2 times the right one")])
def test_a_scaled_gradient_is_named_with_its_factor(factor, words):
    from helpers.checkers.checker_backward import FAULTS
    verdict = diagnose(backward_scaled(factor), piece="softmax_backward")
    assert verdict.mistake == "gradient_scaled", verdict.text
    assert words in verdict.text and FAULTS["gradient_scaled"][1] in verdict.text
    assert len(_battery_sizes()) >= 2                    # one factor fits every size of the battery


def test_a_gradient_divided_by_the_number_of_keys_is_named_by_that_size():
    verdict = diagnose(backward_over_n, piece="softmax_backward")
    assert verdict.mistake == "gradient_scaled", verdict.text
    assert "divided by n = 3, the number of keys" in verdict.text      # the first input: one row of 3


def test_a_negated_gradient_stays_sign_flipped():
    assert diagnose(backward_scaled(-1.0), piece="softmax_backward").mistake == "sign_flipped"


@pytest.mark.parametrize("axis, words", [
    (0, "Your sum runs along axis 0 (np.sum(w * g, axis=0, keepdims=True)), not the last one: on weights of shape "
        "(3, 4) that is down the columns, across queries"),
    (-2, "along axis -2"), (1, "along axis 1"),
    (-3, "along axis -3"),
])
def test_a_wrong_axis_is_named_whatever_the_axis(axis, words):
    from helpers.checkers.checker_backward import FAULTS
    verdict = diagnose(backward_axis(axis), piece="softmax_backward")
    assert verdict.mistake == "wrong_axis", verdict.text
    assert words in verdict.text and FAULTS["wrong_axis"][1] in verdict.text


def test_axis_1_is_named_where_it_is_wrong_and_refused_on_one_row():
    verdict = diagnose(backward_axis(1), piece="softmax_backward")
    assert verdict.case == "one row" and "weights of shape (3,) have no axis 1" in verdict.text, verdict.text


def backward_axis_and_sign(axis):
    def softmax_backward(w, g):
        """The sum along another axis and the sign flipped: w * (sum w g - g)."""
        return w * (np.sum(w * g, axis=axis, keepdims=True) - g)
    return softmax_backward


@pytest.mark.parametrize("axis", [0, -2])
def test_a_wrong_axis_with_the_sign_flipped_is_both_keys_on_inputs_of_other_sizes(axis):
    """A family combined with one fixed fault of another part (checker_numeric: family alone, then with one)."""
    import dataclasses
    from helpers.checkers.checker_backward import FAULTS, PIECE
    parts = [dataclasses.replace(PIECE, cases=tuple(c for c in PIECE.cases if c.name in names))
             for names in (("one row", "matrix", "batch"), ("n = 1", "hidden query", "random (5, 7)", "square"))]
    fn = backward_axis_and_sign(axis)
    for verdict in [diagnose(fn, piece="softmax_backward")] + [part.check(fn, 2.0) for part in parts]:
        assert set(verdict.mistake.split("+")) == {"wrong_axis", "sign_flipped"}, verdict.text
        assert f"Your sum runs along axis {axis}" in verdict.text and FAULTS["sign_flipped"][1] in verdict.text


def test_a_family_is_not_combined_with_a_fixed_fault_of_its_own_part():
    from helpers.checkers import checker_numeric, fitted
    from helpers.checkers.checker_backward import PIECE
    said = []
    fitted_explain = fitted.explain_with_faults

    def spy(families, runs, agrees, faults_for=lambda f: (), **more):
        said.extend((f.key, frozenset(k)) for f in families for k in faults_for(f))
        return fitted_explain(families, runs, agrees, faults_for, **more)
    checker_numeric.fitted.explain_with_faults = spy
    try:
        PIECE.check(lambda w, g: np.zeros_like(w) + 1.0, 2.0)
    finally:
        checker_numeric.fitted.explain_with_faults = fitted_explain
    parts = {k: v[0] for k, v in PIECE.faults.items()}
    assert said and all(parts[next(iter(k))] != {"wrong_axis": "axis", "gradient_scaled": "factor"}[key]
                        for key, k in said)


def test_the_backward_families_fit_across_sizes_and_stay_fast():
    from helpers.checkers.checker_backward import FAMILIES, _factor
    from helpers.checkers.battery import SOFTMAX_BACKWARD
    from helpers.checkers.fitted import SizeRule
    scaled = FAMILIES[1]
    value = ("divided", SizeRule("n", 1.0, 1.0))
    for case in SOFTMAX_BACKWARD:                         # rows of 1, 3, 4, 6 and 7 keys: divided by each one's n
        want = backward_over_n(case.args["weights"], case.args["grad_weights"])
        np.testing.assert_allclose(scaled.predict(case.args, value)[0], want, rtol=1e-12, atol=1e-15)
        assert _factor(value, case.args) == 1 / case.args["weights"].shape[-1]
    for fn in (WORKED["softmax_backward"], backward_scaled(2.0), backward_axis(1), backward_over_n,
               backward_axis_and_sign(0)):
        started = time.perf_counter()
        diagnose(fn, piece="softmax_backward")
        assert time.perf_counter() - started < (1.0 if fn is WORKED["softmax_backward"] else 2.0)


# --------------------------------------------------------------------------
# online_softmax_update: in place, FlashAttention 1's accumulator, the block's own maximum
# --------------------------------------------------------------------------

def step_in_place(running_max, running_sum, acc, scores, V_block):
    """FlashAttention's kernels' style: the running values updated in place and returned."""
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    factor, p = np.exp(running_max - shift), np.exp(scores - shift[..., None])
    running_sum *= factor
    running_sum += p.sum(axis=-1)
    acc *= factor[..., None]
    acc += p @ V_block
    running_max[...] = new
    return running_max, running_sum, acc


def step_scores_in_place(running_max, running_sum, acc, scores, V_block):
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    scores -= shift[..., None]                          # the caller's scores changed
    np.exp(scores, out=scores)
    factor = np.exp(running_max - shift)
    return new, factor * running_sum + scores.sum(axis=-1), factor[..., None] * acc + scores @ V_block


def step_flash1(running_max, running_sum, acc, scores, V_block):
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    factor, p = np.exp(running_max - shift), np.exp(scores - shift[..., None])
    total = factor * running_sum + p.sum(axis=-1)
    out = ((running_sum * factor)[..., None] * acc + p @ V_block) / np.where(total == 0, 1, total)[..., None]
    return new, total, out


def test_the_stub_says_what_may_change_in_place_and_that_acc_stays_unnormalised():
    from helpers.checkers.checker_tiling import IN_PLACE, UNNORMALISED
    from helpers.checkers.solutions import STUBS
    doc = " ".join(STUBS["online_softmax_update"][1].split())
    assert IN_PLACE in doc and UNNORMALISED in doc


def test_a_step_that_updates_its_running_values_in_place_is_right_and_told_it_may():
    from helpers.checkers.checker_tiling import IN_PLACE
    verdict = diagnose(step_in_place, piece="online_softmax_update")
    assert verdict.correct, verdict.text
    assert "It updates running_max, running_sum, acc in place and returns them, which the step may do" in verdict.text
    assert IN_PLACE in verdict.text


def test_a_step_that_changes_its_scores_in_place_is_mutates_inputs_quoting_the_stub():
    from helpers.checkers.checker_tiling import IN_PLACE
    verdict = diagnose(step_scores_in_place, piece="online_softmax_update")
    assert verdict.mistake == "mutates_inputs" and "scores in place" in verdict.text, verdict.text
    assert f'The docstring of online_softmax_update says: "{IN_PLACE}"' in verdict.text


def test_flashattention_1s_normalised_accumulator_is_told_which_sentence_it_broke():
    from helpers.checkers.checker_tiling import UNNORMALISED
    verdict = diagnose(step_flash1, piece="online_softmax_update")
    assert verdict.mistake == "normalised_per_block", verdict.text
    assert f'The docstring of online_softmax_update says: "{UNNORMALISED}"' in verdict.text


def test_the_step_and_tiled_batteries_hold_rows_of_very_different_scale():
    from helpers.checkers.battery import ONLINE_SOFTMAX_UPDATE, TILED_ATTENTION
    def gap(scores):
        top = np.max(scores, axis=-1)
        return float(top.max() - top.min())
    assert any(gap(c.args["scores"]) > 745 for c in ONLINE_SOFTMAX_UPDATE)
    assert any(gap(c.args["Q"] @ np.swapaxes(c.args["K"], -1, -2) / np.sqrt(c.args["K"].shape[-1])) > 745
               for c in TILED_ATTENTION)


def step_own_block_max(running_max, running_sum, acc, scores, V_block):
    """P = exp(S - rowmax(S)) of the block, added without exp(rowmax(S) - m_new) (PaddleJitLab/CUDATutorial #69)."""
    block_max = np.max(scores, axis=-1, keepdims=True)
    p = np.exp(scores - np.where(np.isfinite(block_max), block_max, 0.0))
    new = np.maximum(running_max, block_max[..., 0])
    alpha = np.exp(running_max - np.where(np.isfinite(new), new, 0.0))
    return new, alpha * running_sum + p.sum(-1), alpha[..., None] * acc + np.einsum("...qb,...bd->...qd", p, V_block)


def test_a_step_against_the_blocks_own_maximum_is_named_where_the_max_stays():
    verdict = diagnose(step_own_block_max, piece="online_softmax_update")
    assert verdict.mistake == "block_not_rescaled" and verdict.case == "max stays", verdict.text
