"""Faults with a fitted parameter in attention, multi-head attention, the head split and merge, the KV-cache step
and the masks (issue 32, sections 1 to 4): each wrong function is written the way public code writes it, and its
verdict names the key and the learner's own value, read off inputs of several sizes."""

import numpy as np
import pytest

from helpers.exercises import diagnose
from helpers.exercises.battery import ATTENTION


def _attend(scores, V, mask=None, axis=-1, top=None):
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(axis=axis, keepdims=True) if top is None else top(scores)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1.0, total) @ V


# --------------------------------------------------------------------------
# attention: the scale, the axis, one maximum for everything, three things returned
# --------------------------------------------------------------------------

def attention_len_q(Q, K, V, mask=None):
    """d_k read as Q.shape[0]: the number of queries for one sentence, the batch size for a batch."""
    return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[0]), V, mask)


def attention_n_q(query, key, value, mask=None):
    n_q = query.shape[-2]
    return _attend(query @ np.swapaxes(key, -1, -2) / n_q ** 0.5, value, mask)


def attention_two_d_k(Q, K, V, mask=None):
    return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(2 * K.shape[-1]), V, mask)


@pytest.mark.parametrize("fn, value", [
    (attention_len_q, "sqrt(len(Q)) = sqrt(3)"), (attention_n_q, "sqrt(n_q) = sqrt(3)"),
    (attention_two_d_k, "sqrt(2 d_k) = sqrt(8)"),
])
def test_a_scale_that_follows_another_size_is_named_with_its_value(fn, value):
    verdict = diagnose(fn)
    assert verdict.mistake == "scale_by_shape", verdict.text
    assert value in verdict.text and "sqrt(d_k) = sqrt(4)" in verdict.text, verdict.text


def test_the_scale_family_fits_across_sizes_not_one_member():
    # on one sentence len(Q) is n_q; only a batch tells them apart: the same fit names each by the rule it follows
    sizes = {(c.Q.shape[0], c.Q.shape[-2]) for c in ATTENTION}
    assert any(a != b for a, b in sizes) and len({b for _, b in sizes}) > 2
    assert "n_q = Q.shape[-2]" in diagnose(attention_n_q).text
    assert "len(Q) = Q.shape[0]" in diagnose(attention_len_q).text
    # before batches are taught, Q.shape[0] is n_q on every input
    assert "sqrt(n_q) = sqrt(3)" in diagnose(attention_len_q, masks=False, batches=False).text


def attention_axis(axis):
    def fn(Q, K, V, mask=None):
        return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), V, mask, axis=axis)
    fn.__name__ = f"attention_axis_{axis}".replace("-", "minus_")
    return fn


@pytest.mark.parametrize("axis, words", [(-3, "axis=-3"), (2, "axis=2"), (1, "axis=1")])
def test_a_softmax_along_any_fixed_axis_is_wrong_axis_naming_the_axis(axis, words):
    verdict = diagnose(attention_axis(axis))
    assert verdict.mistake == "wrong_axis", verdict.text
    assert f"Your softmax runs along {words}" in verdict.text and "axis=-1" in verdict.text


def attention_global_max(Q, K, V, mask=None):
    """One maximum for the whole array, each row's own sum."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -1e9)
    e = np.exp(s - s.max())
    return e / e.sum(axis=-1, keepdims=True) @ V


def test_one_maximum_for_the_whole_array_is_caught_by_rows_far_apart():
    verdict = diagnose(attention_global_max)
    assert verdict.mistake == "no_max_subtraction", verdict.text
    assert verdict.case == "rows apart" and "one maximum for the whole array" in verdict.text


def attention_three(Q, K, V, mask=None):
    """Right, returning (output, weights, scores), as some public code does."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w, s


def test_three_things_returned_are_read_as_the_output_first():
    verdict = diagnose(attention_three)
    assert verdict.correct, verdict.text
    assert "You return three things" in verdict.text and "(output, weights)" in verdict.text

    def three_no_scaling(Q, K, V, mask=None):
        out, w, s = attention_three(Q * np.sqrt(K.shape[-1]), K, V, mask)
        return out, w, s
    verdict = diagnose(three_no_scaling)
    assert verdict.mistake == "no_scaling" and "You return three things" in verdict.text, verdict.text
