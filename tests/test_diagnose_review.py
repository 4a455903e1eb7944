"""diagnose on the findings of issue 32's second review (r1): answers given lazily, the time budget, causes behind
symptoms (findings 5, 6, 9, 10, 11). The learners' functions are the reviewer's, kept in the collection
(tests/wrong_functions.py, where tests/test_wrong_functions.py checks their keys too); here their words."""

import time

import numpy as np
import pytest

import wrong_functions as wf  # tests/ is on the path under pytest
from helpers.attention import softmax
from helpers.exercises import diagnose
from helpers.checkers.runner import BUDGET_CALLS
from helpers.checkers.solutions import WORKED


# --------------------------------------------------------------------------
# Finding 6: a generator, map or yield, told the same way in every piece
# --------------------------------------------------------------------------

LAZY = [("softmax", wf.softmax_generator_of_rows, "a generator"),
        ("causal_mask", wf.causal_mask_generator_of_rows, "a generator"),
        ("online_softmax_update", wf.online_step_generator_of_three, "a generator"),
        ("kv_cache_step", wf.kv_step_map_of_floats, "a map(...)")]


@pytest.mark.parametrize("piece, fn, how", LAZY, ids=[p for p, _, _ in LAZY])
def test_right_numbers_given_lazily_are_not_an_array_in_the_same_words_in_every_piece(piece, fn, how):
    verdict = diagnose(fn, piece=piece)
    assert not verdict.correct and verdict.mistake == "not_an_array", verdict.text
    assert verdict.text.startswith(f"Your function returns {how}; the course's returns ")
    assert "gives its items only once" in verdict.text and "Read as the list it yields, its numbers are right" \
        in verdict.text
    for false in ("Your answer is empty", "not a mask of True/False values", "every row needs the same length",
                  "not an array of numbers"):
        assert false not in verdict.text


def test_a_generator_function_is_told_it_uses_yield():
    verdict = diagnose(wf.attention_generator_function)
    assert verdict.mistake == "not_an_array", verdict.text
    assert "is a generator function (it uses yield)" in verdict.text and "write return where you wrote yield" \
        in verdict.text
    assert "every row needs the same length" not in verdict.text


def test_a_right_list_is_correct_with_a_note_and_a_wrong_generator_keeps_its_key_with_the_sentence():
    verdict = diagnose(wf.softmax_tolist, piece="softmax")
    assert verdict.correct, verdict.text
    assert "(Your function returns a list; the course's returns an array" in verdict.text

    def unscaled_rows(Q, K, V, mask=None):
        S = Q @ np.swapaxes(K, -1, -2)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        return (row for row in WORKED["softmax"](S) @ V)
    verdict = diagnose(unscaled_rows, masks=False, batches=False)
    assert verdict.mistake == "no_scaling", verdict.text
    assert verdict.text.splitlines()[-1].startswith("(Your function returns a generator; the course's returns an array")


def test_the_online_step_is_told_to_return_its_three_arrays():
    verdict = diagnose(wf.online_step_generator_of_three, piece="online_softmax_update")
    assert "the course's returns a tuple of three arrays: return new_max, new_sum, new_acc" in verdict.text


# --------------------------------------------------------------------------
# Finding 11: one diagnose waits BUDGET_CALLS times the time limit in all
# --------------------------------------------------------------------------

def test_a_function_just_under_the_limit_on_each_call_is_stopped_by_the_total_budget():
    # each call 0.35 s, well inside its limit of 0.6 s even on a loaded machine (a first version, 0.08 s against
    # 0.1 s, missed the limit itself in a full run at load 7); the 12 calls would take 4.2 s, the budget is 3 s
    def slow_softmax(x, axis=-1):
        time.sleep(0.35)
        return softmax(x, axis=axis)
    started = time.monotonic()
    verdict = diagnose(slow_softmax, piece="softmax", time_limit=0.6)
    took = time.monotonic() - started
    assert verdict.mistake == "too_slow", verdict.text
    assert "s per call" in verdict.text and f"{BUDGET_CALLS} times the time limit" in verdict.text
    assert took < BUDGET_CALLS * 0.6 + 1.0


# --------------------------------------------------------------------------
# Finding 10: the in-place note on a line of its own, naming the input; exit said once
# --------------------------------------------------------------------------

def test_the_in_place_note_has_its_own_line_and_names_what_the_function_changed():
    def divides_in_place(cache_keys, cache_values, q, k, v):
        cache_keys /= 2.0                       # and so the scores are halved too
        keys, values = np.vstack([cache_keys, k]), np.vstack([cache_values, v])
        return WORKED["softmax"](keys @ q / np.sqrt(len(q))) @ values
    verdict = diagnose(divides_in_place, piece="kv_cache_step")
    line = next(s for s in verdict.text.splitlines() if "in place" in s)
    assert line.startswith("Also, it changes its input cache_keys in place (cache_keys /= ...")

    def softmax_in_place(x, axis=-1):
        x -= np.max(x, axis=axis, keepdims=True)
        return np.exp(x)
    verdict = diagnose(softmax_in_place, piece="softmax")
    assert any(s.startswith("Also, it changes its input x in place (x /= ...") for s in verdict.text.splitlines())


def test_exit_is_told_once():
    def exits(x, axis=-1):
        raise SystemExit("bye")
    verdict = diagnose(exits, piece="softmax")
    assert verdict.mistake == "exit" and verdict.text.lower().count("instead") == 1, verdict.text


# --------------------------------------------------------------------------
# Finding 5: causes behind symptoms
# --------------------------------------------------------------------------

def test_a_step_returning_the_old_max_is_old_max_kept_in_its_own_words():
    verdict = diagnose(wf.online_step_old_max_returned, piece="online_softmax_update")
    assert verdict.mistake == "old_max_kept", verdict.text
    assert "you return running_max as it came in" in verdict.text
    assert "overflows" not in verdict.text.split("\n")[0]        # the other form's sentence, false for this one

    def never_stores_the_max(Q, K, V, block_size):
        m, l = np.full(Q.shape[:-1], -np.inf), np.zeros(Q.shape[:-1])
        acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
        for start in range(0, K.shape[-2], block_size):
            _, l, acc = wf._fold(m, l, acc, Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2)
                                 / np.sqrt(K.shape[-1]), V[..., start:start + block_size, :])
        return acc / l[..., None]
    verdict = diagnose(never_stores_the_max, piece="tiled_attention")
    assert verdict.mistake == "old_max_kept" and "m = new_max" in verdict.text, verdict.text


def test_a_kv_step_scaled_by_the_cache_length_is_scale_by_n_keys_with_sqrt_0_on_the_first_token():
    verdict = diagnose(wf.kv_step_scale_sqrt_len_cache, piece="kv_cache_step")
    assert verdict.mistake == "scale_by_n_keys", verdict.text
    assert "sqrt(len(cache_keys)) = sqrt(t)" in verdict.text and "sqrt(0) = 0" in verdict.text
    assert "Look for exp() of a large number" not in verdict.text


# --------------------------------------------------------------------------
# Finding 9: tiled attention's scale fitted and named; RoPE's positions counted along the batch axis
# --------------------------------------------------------------------------

def test_tiled_attention_scaled_by_sqrt_block_size_is_named_with_the_block_size():
    """The battery's block sizes run from 1 to 8, with d_k of 2, 4 and 16: the rule must hold on every one."""
    verdict = diagnose(wf.tiled_scale_sqrt_block_size, piece="tiled_attention")
    assert verdict.mistake == "scale_by_shape", verdict.text
    assert "sqrt(block_size) = sqrt(2)" in verdict.text and "sqrt(d_k) = sqrt(4)" in verdict.text


@pytest.mark.parametrize("scale, key, words", [
    (lambda K, block_size: 8.0, "constant_scale", "by 8 whatever d_k is"),
    (lambda K, block_size: np.sqrt(K.shape[-2]), "scale_by_n_keys", "sqrt(n_k) = sqrt(6)"),
], ids=["constant", "n_keys"])
def test_tiled_attentions_other_scales_are_fitted_too(scale, key, words):
    def tiled(Q, K, V, block_size):
        m, l = np.full(Q.shape[:-1], -np.inf), np.zeros(Q.shape[:-1])
        acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
        for start in range(0, K.shape[-2], block_size):
            s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / scale(K, block_size)
            m, l, acc = wf._fold(m, l, acc, s, V[..., start:start + block_size, :])
        return acc / l[..., None]
    verdict = diagnose(tiled, piece="tiled_attention")
    assert verdict.mistake == key and words in verdict.text, verdict.text


def test_rope_positions_counted_along_the_first_axis_are_named_not_raised():
    verdict = diagnose(wf.apply_rope_positions_from_shape_0, piece="rope")
    assert verdict.mistake == "positions_from_first_axis", verdict.text
    assert "np.arange(x.shape[0])" in verdict.text and "np.arange(x.shape[-2])" in verdict.text
    assert "(here 2 positions for 5 tokens)" in verdict.text

    def rope_unpacks_two_axes(x, positions=None):      # raises on a batch for another reason: not named so
        n, d = x.shape
        return WORKED["rope"](x, positions)
    assert diagnose(rope_unpacks_two_axes, piece="rope").mistake == "raised"
