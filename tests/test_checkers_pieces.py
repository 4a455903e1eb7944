"""diagnose(fn, piece=...) for split_heads, merge_heads, multi_head_attention, positional_encoding and
softmax_backward, and the fixes of the first part (softmax, attention, masks) from issue 21's fresh review.
Each faulty function is written the way a learner writes it, not built from the checkers' own models."""

import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import causal_mask, merge_heads, multi_head_attention, padding_mask, softmax, split_heads
from helpers.exercises import PIECES, Feedback, diagnose
from helpers.checkers.battery import (
    ATTENTION, MERGE_HEADS, MULTI_HEAD, POSITIONAL, SOFTMAX_BACKWARD, SPLIT_HEADS,
)
from helpers.checkers.checker_backward import FAULTS as BACKWARD_FAULTS
from helpers.checkers.checker_heads import MERGE_FAULTS, MULTI_HEAD_FAULTS, SPLIT_FAULTS
from helpers.checkers.checker_masks import CAUSAL_FAULTS, PADDING_FAULTS, VALUE_FAULTS
from helpers.checkers.checker_positions import FAULTS as POSITION_FAULTS
from helpers.checkers.solutions import WORKED
from helpers.positions import sinusoidal_positional_encoding
from helpers.training import softmax_backward

ROOT = Path(__file__).resolve().parent.parent
NEW = ("split_heads", "merge_heads", "multi_head_attention", "positional_encoding", "softmax_backward")


# --------------------------------------------------------------------------
# split_heads and merge_heads
# --------------------------------------------------------------------------

def split_loops(x, num_heads):
    """Right, with loops over the heads and the tokens, for any leading axes."""
    x = np.asarray(x)
    d_k = x.shape[-1] // num_heads
    out = np.empty(x.shape[:-2] + (num_heads, x.shape[-2], d_k))
    for h in range(num_heads):
        for t in range(x.shape[-2]):
            out[..., h, t, :] = x[..., t, h * d_k:(h + 1) * d_k]
    return out


def split_einops_style(x, h, copy=True):
    """Right, another argument name, an extra keyword argument, and transpose with every axis named."""
    y = x.reshape(x.shape[:-1] + (h, x.shape[-1] // h))
    axes = list(range(y.ndim))
    axes[-3], axes[-2] = axes[-2], axes[-3]
    return y.transpose(axes).copy() if copy else y.transpose(axes)


def split_float32(x, num_heads):
    return WORKED["split_heads"](np.asarray(x, dtype=np.float32), num_heads)


def split_reshape_only(x, num_heads):
    *lead, n, d = x.shape
    return x.reshape(*lead, num_heads, n, d // num_heads)


def split_no_swap(x, num_heads):
    return x.reshape(*x.shape[:-1], num_heads, x.shape[-1] // num_heads)


def split_interleaved(x, num_heads):
    y = x.reshape(*x.shape[:-1], x.shape[-1] // num_heads, num_heads)     # (..., n, d_k, h)
    return np.moveaxis(y, -1, -3)


def split_fixed_axes(x, num_heads):
    n, d = x.shape[-2:]
    return x.reshape(*x.shape[:-1], num_heads, d // num_heads).transpose(1, 0, 2)


def merge_loops(x):
    x = np.asarray(x)
    h, n, d_k = x.shape[-3:]
    out = np.empty(x.shape[:-3] + (n, h * d_k))
    for i in range(h):
        out[..., i * d_k:(i + 1) * d_k] = x[..., i, :, :]
    return out


def merge_reshape_only(x):
    *lead, h, n, d_k = x.shape
    return x.reshape(*lead, n, h * d_k)


def merge_last_two(x):
    return x.reshape(*x.shape[:-2], -1)


def merge_interleaved(x):
    *lead, h, n, d_k = x.shape
    return np.moveaxis(x, -3, -1).reshape(*lead, n, d_k * h)


def merge_fixed_axes(x):
    h, n, d_k = x.shape[-3:]
    return x.transpose(1, 0, 2).reshape(n, h * d_k)


# --------------------------------------------------------------------------
# multi_head_attention
# --------------------------------------------------------------------------

def _heads(x, h):
    return np.swapaxes(x.reshape(*x.shape[:-1], h, x.shape[-1] // h), -2, -3)


def _back(x):
    return np.swapaxes(x, -2, -3).reshape(*x.shape[:-3], x.shape[-2], -1)


def _attend(Q, K, V, mask, scale):
    s = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def _loop_over_heads(X, W_Q, W_K, W_V, W_O, num_heads, mask):
    """One head at a time on its slice of the projections, each given ``mask``, concatenated, then W_O."""
    d_k = X.shape[-1] // num_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    outs = []
    for h in range(num_heads):
        cut = slice(h * d_k, (h + 1) * d_k)
        outs.append(_attend(Q[..., cut], K[..., cut], V[..., cut], mask, 1 / np.sqrt(d_k)))
    return np.concatenate(outs, axis=-1) @ W_O


def mha_interleaved_heads(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Wrong: head h takes features h, h + num_heads, ... (x.reshape(n, d_k, h)), in the split and in the merge."""
    d_k = X.shape[-1] // num_heads
    def split(x):
        return np.moveaxis(x.reshape(*x.shape[:-1], d_k, num_heads), -1, -3)
    heads = _attend(split(X @ W_Q), split(X @ W_K), split(X @ W_V), mask, 1 / np.sqrt(d_k))
    return np.moveaxis(heads, -3, -1).reshape(X.shape) @ W_O


def mha_per_head_loop(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Right: one head at a time with the course's attention, the mask's head axis dropped."""
    head_mask = None if mask is None else (mask if mask.ndim == 2 else mask[..., 0, :, :])
    return _loop_over_heads(X, W_Q, W_K, W_V, W_O, num_heads, head_mask)


def mha_loop_whole_mask(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Wrong on a mask with a head axis: a loop over heads that gives each head the whole mask (B, 1, 1, n)."""
    return _loop_over_heads(X, W_Q, W_K, W_V, W_O, num_heads, mask)


def mha_attn_mask(x, w_q, w_k, w_v, w_o, h, attn_mask=None, dropout=0.0):
    """Right, lower-case names, attn_mask, an extra keyword argument, (output, weights) returned."""
    Q, K, V = (_heads(x @ w, h) for w in (w_q, w_k, w_v))
    out, weights = WORKED["attention"](Q, K, V, attn_mask)
    return _back(out) @ w_o, weights


def mha_float32(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    return WORKED["multi_head_attention"](*(np.asarray(a, np.float32) for a in (X, W_Q, W_K, W_V, W_O)), num_heads, mask)


def mha_scale_d_model(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    return _back(_attend(Q, K, V, mask, 1 / np.sqrt(X.shape[-1]))) @ W_O


def mha_no_w_o(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    return _back(_attend(Q, K, V, mask, 1 / np.sqrt(X.shape[-1] // num_heads)))


def mha_reshape_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    Q, K, V = (split_reshape_only(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    out = _attend(Q, K, V, mask, 1 / np.sqrt(d_k))
    return out.reshape(*X.shape) @ W_O


def mha_merge_reshape_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Split right, merged back with a reshape alone (no transpose): the fault of the merge only."""
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    return _attend(Q, K, V, mask, 1 / np.sqrt(X.shape[-1] // num_heads)).reshape(*X.shape) @ W_O


def mha_split_reshape_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Split with a reshape alone, merged back right: the fault of the split only."""
    Q, K, V = (split_reshape_only(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    return _back(_attend(Q, K, V, mask, 1 / np.sqrt(X.shape[-1] // num_heads))) @ W_O


def mha_no_scaling_no_w_o(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    return _back(_attend(Q, K, V, mask, 1.0))


def mha_one_head(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    return _attend(X @ W_Q, X @ W_K, X @ W_V, None if mask is None else np.squeeze(mask, -3) if mask.ndim == 4
                   else mask, 1 / np.sqrt(X.shape[-1])) @ W_O


def mha_global_max(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """One maximum for the whole array of scores: rows far below it underflow to 0 / 0."""
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1] // num_heads)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max())
    return _back(e / e.sum(axis=-1, keepdims=True) @ V) @ W_O


def mha_naive_softmax(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """No maximum subtracted at all: the multi-head battery's large scores overflow exp."""
    Q, K, V = (_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1] // num_heads)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s)
    return _back(e / e.sum(axis=-1, keepdims=True) @ V) @ W_O


def mha_no_mask_used(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    return WORKED["multi_head_attention"](X, W_Q, W_K, W_V, W_O, num_heads)


# --------------------------------------------------------------------------
# positional_encoding
# --------------------------------------------------------------------------

def pe_arguments_swapped(d_model, n):
    """Right body, the signature's arguments in the other order: the battery's fn(n, d_model) swaps them."""
    return WORKED["positional_encoding"](n, d_model)


def pe_loops(n, d_model):
    pe = np.zeros((n, d_model))
    for pos in range(n):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return pe


def pe_exp_log(seq_len, dim, base=10000.0):
    """Right, as the Annotated Transformer computes the rates (exp of a log), other names, a keyword default."""
    div = np.exp(np.arange(0, dim, 2) * -(np.log(base) / dim))
    pos = np.arange(seq_len)[:, None]
    return np.stack([np.sin(pos * div), np.cos(pos * div)], axis=-1).reshape(seq_len, dim)


def pe_float32(n, d_model):
    return WORKED["positional_encoding"](n, d_model).astype(np.float32)


def _angles(n, d_model, exponent=None):
    i = np.arange(d_model // 2)
    return np.arange(n)[:, None] / 10000 ** ((2 * i if exponent is None else exponent(i)) / d_model)


def pe_concatenated(n, d_model):
    a = _angles(n, d_model)
    return np.concatenate([np.sin(a), np.cos(a)], axis=1)


def pe_swapped(n, d_model):
    a, pe = _angles(n, d_model), np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.cos(a), np.sin(a)
    return pe


def pe_i_over_d(n, d_model):
    a, pe = _angles(n, d_model, lambda i: i), np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(a), np.cos(a)
    return pe


def pe_degrees(n, d_model):
    a, pe = np.deg2rad(_angles(n, d_model)), np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(a), np.cos(a)
    return pe


def pe_column_index(n, d_model):
    """The exponent 2j / d_model with j the column itself (a frequent slip of copying the formula per column)."""
    j = np.arange(d_model)
    a = np.arange(n)[:, None] / 10000 ** (2 * j / d_model)
    return np.where(j % 2 == 0, np.sin(a), np.cos(a))


def pe_column_over_d(n, d_model):
    j = np.arange(d_model)
    a = np.arange(n)[:, None] / 10000 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(a), np.cos(a))


def pe_multiplied(n, d_model):
    i = np.arange(d_model // 2)
    a, pe = np.arange(n)[:, None] * 10000 ** (2 * i / d_model), np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(a), np.cos(a)
    return pe


def pe_from_one(n, d_model):
    return WORKED["positional_encoding"](n + 1, d_model)[1:]


def pe_concatenated_i_over_d(n, d_model):
    a = _angles(n, d_model, lambda i: i)
    return np.concatenate([np.sin(a), np.cos(a)], axis=1)


def pe_transposed(n, d_model):
    """Positions on the columns: the angle grid built as (d_model / 2, n), shape (d_model, n)."""
    i = np.arange(d_model // 2)[:, None]
    a, pe = np.arange(n)[None, :] / 10000 ** (2 * i / d_model), np.zeros((d_model, n))
    pe[0::2], pe[1::2] = np.sin(a), np.cos(a)
    return pe


def pe_transposed_degrees(n, d_model):
    return pe_degrees(n, d_model).T


def pe_first_row_zeros(n_position, d_pos_vec):
    """Row 0 kept blank for a padding token, the other rows right (an old position_encoding_init's style)."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / d_pos_vec) for j in range(d_pos_vec)]
                             if pos != 0 else np.zeros(d_pos_vec) for pos in range(n_position)])
    position_enc[1:, 0::2] = np.sin(position_enc[1:, 0::2])
    position_enc[1:, 1::2] = np.cos(position_enc[1:, 1::2])
    return position_enc


# --------------------------------------------------------------------------
# softmax_backward
# --------------------------------------------------------------------------

def backward_jacobian_loop(weights, grad_weights):
    """Right: the Jacobian of each row built and applied, one row at a time."""
    w, g = np.asarray(weights), np.asarray(grad_weights)
    out = np.zeros_like(w, dtype=float)
    for index in np.ndindex(w.shape[:-1]):
        J = np.diag(w[index]) - np.outer(w[index], w[index])
        out[index] = J.T @ g[index]
    return out


def backward_einsum(w, dw, eps=0.0):
    return w * (dw - np.einsum("...j,...j->...", w, dw)[..., None])


def backward_float32(weights, grad_weights):
    return WORKED["softmax_backward"](np.float32(weights), np.float32(grad_weights)).astype(np.float32)


def backward_w_times_g(weights, grad_weights):
    return weights * grad_weights


def backward_only_outer(weights, grad_weights):
    return -weights * np.sum(weights * grad_weights, axis=-1, keepdims=True)


def backward_axis0(weights, grad_weights):
    return weights * (grad_weights - np.sum(weights * grad_weights, axis=0, keepdims=True))


def backward_diagonal(weights, grad_weights):
    return weights * (1 - weights) * grad_weights


def backward_plain_mean(weights, grad_weights):
    return weights * (grad_weights - grad_weights.mean(axis=-1, keepdims=True))


def backward_sign(weights, grad_weights):
    return weights * (np.sum(weights * grad_weights, axis=-1, keepdims=True) - grad_weights)


def backward_passed(weights, grad_weights):
    return grad_weights.copy()


def backward_one_row_jacobian(weights, grad_weights):
    return (np.diag(weights) - np.outer(weights, weights)) @ grad_weights    # right for one row only


def backward_no_keepdims(weights, grad_weights):
    return weights * (grad_weights - np.sum(weights * grad_weights, axis=-1))   # right for one row only


def backward_no_leading_w(weights, grad_weights):
    return grad_weights - np.sum(weights * grad_weights, axis=-1, keepdims=True)


def backward_g_minus_w_times_g(weights, grad_weights):
    return grad_weights - weights * grad_weights             # the w in front dropped, w . g read as w * g


def backward_unweighted_sum(weights, grad_weights):
    return weights * (grad_weights - grad_weights.sum(axis=-1, keepdims=True))


def backward_doubled(weights, grad_weights):
    return 2 * weights * (grad_weights - np.sum(weights * grad_weights, axis=-1, keepdims=True))


NAMED = [
    ("split_heads", split_reshape_only, "reshape_without_transpose"), ("split_heads", split_no_swap, "heads_last"),
    ("split_heads", split_interleaved, "interleaved"), ("split_heads", split_fixed_axes, "batch_transpose"),
    ("merge_heads", merge_reshape_only, "reshape_without_transpose"), ("merge_heads", merge_last_two, "heads_last"),
    ("merge_heads", merge_interleaved, "interleaved"), ("merge_heads", merge_fixed_axes, "batch_transpose"),
    ("multi_head_attention", mha_scale_d_model, "scale_by_d_model"),
    ("multi_head_attention", mha_no_w_o, "no_output_projection"),
    ("multi_head_attention", mha_reshape_only, "reshape_without_transpose"),
    ("multi_head_attention", mha_merge_reshape_only, "reshape_without_transpose"),
    ("multi_head_attention", mha_split_reshape_only, "reshape_without_transpose"),
    ("multi_head_attention", mha_no_scaling_no_w_o, "no_scaling+no_output_projection"),
    ("multi_head_attention", mha_one_head, "single_head"),
    ("multi_head_attention", mha_no_mask_used, "mask_ignored"),
    ("positional_encoding", pe_concatenated, "concatenated"), ("positional_encoding", pe_swapped, "sin_cos_swapped"),
    ("positional_encoding", pe_i_over_d, "exponent_i_over_d"), ("positional_encoding", pe_degrees, "degrees"),
    ("positional_encoding", pe_column_index, "column_as_i"), ("positional_encoding", pe_column_over_d, "two_i_plus_one"),
    ("positional_encoding", pe_multiplied, "multiplied"), ("positional_encoding", pe_from_one, "positions_from_one"),
    ("positional_encoding", pe_concatenated_i_over_d, "concatenated+exponent_i_over_d"),
    ("positional_encoding", pe_transposed, "transposed"),
    ("positional_encoding", pe_transposed_degrees, "degrees+transposed"),
    ("positional_encoding", pe_first_row_zeros, "first_row_zeros"),
    ("softmax_backward", backward_w_times_g, "missing_sum_term"),
    ("softmax_backward", backward_only_outer, "diag_term_missing"), ("softmax_backward", backward_axis0, "wrong_axis"),
    ("softmax_backward", backward_diagonal, "diagonal_only"), ("softmax_backward", backward_plain_mean, "unweighted_mean"),
    ("softmax_backward", backward_sign, "sign_flipped"), ("softmax_backward", backward_passed, "passed_through"),
    ("softmax_backward", backward_one_row_jacobian, "one_row_only"),
    ("softmax_backward", backward_no_keepdims, "no_keepdims"),
    ("softmax_backward", backward_no_leading_w, "leading_weights_missing"),
    ("softmax_backward", backward_g_minus_w_times_g, "leading_weights_missing"),
    ("softmax_backward", backward_unweighted_sum, "unweighted_mean"),
    ("softmax_backward", backward_doubled, "gradient_scaled"),
    ("multi_head_attention", mha_loop_whole_mask, "head_axis"),
    ("multi_head_attention", mha_global_max, "max_over_everything"),
    ("multi_head_attention", mha_naive_softmax, "no_max_subtraction"),
    ("multi_head_attention", mha_interleaved_heads, "interleaved"),
    ("positional_encoding", pe_arguments_swapped, "arguments_swapped"),
]
FAULTS = {"split_heads": SPLIT_FAULTS, "merge_heads": MERGE_FAULTS, "multi_head_attention": MULTI_HEAD_FAULTS,
          "positional_encoding": POSITION_FAULTS, "softmax_backward": BACKWARD_FAULTS}


@pytest.mark.parametrize("piece, fn, key", NAMED, ids=[f.__name__ for _, f, _ in NAMED])
def test_each_mistake_of_the_new_pieces_is_named(piece, fn, key):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct is False and verdict.mistake == key, verdict.text
    assert "It first goes wrong on" in verdict.text
    assert "expected" in verdict.text or "must have shape" in verdict.text or "It raised" in verdict.text
    for part in key.split("+"):                                   # each fault's advice is in the text
        assert FAULTS[piece][part][1] in verdict.text


def test_every_fault_of_the_new_pieces_has_a_learner_function():
    for piece, faults in FAULTS.items():
        named = {k for p, _, key in NAMED if p == piece for k in key.split("+")}
        assert set(faults) == named, piece


def test_leading_weights_missing_says_w_dot_g_is_a_dot_product_only_where_it_was_read_as_w_times_g():
    # g - w . g and g - w * g both drop the w in front; only the second also reads w . g as w * g
    from helpers.checkers.checker_backward import ELEMENTWISE_DOT
    with_sum, with_product = (diagnose(fn, piece="softmax_backward")
                              for fn in (backward_no_leading_w, backward_g_minus_w_times_g))
    assert with_sum.mistake == with_product.mistake == "leading_weights_missing"
    assert ELEMENTWISE_DOT not in with_sum.text and "not w * g" not in with_sum.text
    assert ELEMENTWISE_DOT in with_product.text


def test_a_loop_over_heads_that_drops_the_masks_head_axis_is_right_and_one_that_keeps_it_is_named():
    # padding_mask(is_real, num_heads=2) is (B, 1, 1, n): against one head's (B, n, n) scores it broadcasts
    # to (B, B, n, n); a loop that drops the head axis (mha_per_head_loop) is right
    assert diagnose(mha_per_head_loop, piece="multi_head_attention").correct
    verdict = diagnose(mha_loop_whole_mask, piece="multi_head_attention")
    assert verdict.mistake == "head_axis" and "padding mask with its head axis" in verdict.text
    assert "mask[..., 0, :, :]" in verdict.text


def mha_heads_before_batch_mask_by_sentence(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Heads stacked before the batch, (h B, n, d_k), the mask repeated sentence by sentence, (B h) order
    (lsdefine/attention-is-all-you-need-keras #36); one sentence goes through as a batch of one."""
    Xb = X[None] if X.ndim == 2 else X
    B, n, d_model = Xb.shape
    d_k = d_model // num_heads
    q, k, v = (np.transpose((Xb @ W).reshape(B, n, num_heads, d_k), (2, 0, 1, 3)).reshape(-1, n, d_k)
               for W in (W_Q, W_K, W_V))
    s = q @ np.transpose(k, (0, 2, 1)) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask if mask.ndim == 2 else np.repeat(mask.reshape(B, 1, n), num_heads, axis=0), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    heads = (e / e.sum(axis=-1, keepdims=True)) @ v
    out = np.transpose(heads.reshape(num_heads, B, n, d_k), (1, 2, 0, 3)).reshape(B, n, d_model) @ W_O
    return out[0] if X.ndim == 2 else out


def test_heads_before_the_batch_with_the_mask_repeated_by_sentence_is_head_axis_saying_which_way():
    verdict = diagnose(mha_heads_before_batch_mask_by_sentence, piece="multi_head_attention")
    assert verdict.mistake == "head_axis", verdict.text
    assert "You stack the heads before the batch" in verdict.text and "np.tile(mask" in verdict.text
    assert "(B, B, n, n)" not in verdict.text
    loop = diagnose(mha_loop_whole_mask, piece="multi_head_attention")
    assert "You stack the heads before the batch" not in loop.text and "(B, B, n, n)" in loop.text


def test_positional_encoding_with_its_arguments_swapped_is_named_not_a_numpy_error():
    verdict = diagnose(pe_arguments_swapped, piece="positional_encoding")
    assert verdict.mistake == "arguments_swapped", verdict.text
    assert "positional_encoding(n, d_model)" in verdict.text and "broadcast" not in verdict.text


RIGHT_OTHER_WAYS = [
    ("split_heads", split_loops), ("split_heads", split_einops_style), ("split_heads", split_float32),
    ("merge_heads", merge_loops),
    ("multi_head_attention", mha_per_head_loop), ("multi_head_attention", mha_attn_mask),
    ("multi_head_attention", mha_float32),
    ("positional_encoding", pe_loops), ("positional_encoding", pe_exp_log), ("positional_encoding", pe_float32),
    ("softmax_backward", backward_jacobian_loop), ("softmax_backward", backward_einsum),
    ("softmax_backward", backward_float32),
]


@pytest.mark.parametrize("piece, fn", RIGHT_OTHER_WAYS, ids=[f.__name__ for _, f in RIGHT_OTHER_WAYS])
def test_right_functions_written_other_ways_pass(piece, fn):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct, verdict.text


def test_a_mask_of_any_name_in_the_mask_position_with_default_none_is_read_from_the_signature():
    def mha_m(X, W_Q, W_K, W_V, W_O, num_heads, m=None):
        return WORKED["multi_head_attention"](X, W_Q, W_K, W_V, W_O, num_heads, m)
    assert diagnose(mha_m, piece="multi_head_attention").correct

    def attention_m(Q, K, V, m=None):
        return WORKED["attention"](Q, K, V, m)
    assert diagnose(attention_m).correct

    def attention_scale(Q, K, V, scale=None):          # a scale in the mask's place is not taken for the mask
        return WORKED["attention"](Q * (1.0 if scale is None else scale * np.sqrt(K.shape[-1])), K, V)[0]
    assert diagnose(attention_scale).mistake == "no_mask_argument"


@pytest.mark.parametrize("piece", NEW)
def test_float16_is_low_precision_with_the_digits_that_differ(piece):
    right = WORKED[piece]

    def half(*args, **kwargs):
        args = [np.asarray(a, np.float16) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
        out = right(*args, **kwargs)
        return np.asarray(out, dtype=np.float16)
    verdict = diagnose(half, piece=piece)
    assert verdict.mistake == "low_precision", verdict.text
    line = next(s for s in verdict.text.splitlines() if s.startswith("It first goes wrong"))
    yours, expected = re.split("yours ", line, flags=re.I)[1].split(", expected ")
    assert yours != expected.rstrip(".")        # printed with enough digits to see them differ


@pytest.mark.parametrize("piece", NEW)
def test_the_battery_tells_every_fault_of_a_piece_from_the_right_answer_and_from_each_other(piece):
    from helpers.checkers import checker_backward, checker_heads, checker_positions
    spec = {"split_heads": checker_heads.SPLIT, "merge_heads": checker_heads.MERGE,
            "multi_head_attention": checker_heads.MULTI, "positional_encoding": checker_positions.PIECE,
            "softmax_backward": checker_backward.PIECE}[piece]

    def signature(keys):
        found = []
        for case in spec.cases:
            try:
                with np.errstate(all="ignore"):
                    out = spec.model(case.args, frozenset(keys))
                out = out[0] if isinstance(out, list) else out
                found.append((np.shape(out), np.round(np.asarray(out, dtype=float), 6).tobytes()))
            except Exception:
                found.append(None)
        return tuple(found)

    right = signature(())
    for case, (shape, _) in zip(spec.cases, right):
        np.testing.assert_allclose(spec.model(case.args, frozenset())[0] if isinstance(
            spec.model(case.args, frozenset()), list) else spec.model(case.args, frozenset()),
            spec.expected(case.args), rtol=1e-12, atol=1e-12)       # the model without faults is the course's
    seen = {right: "right"}
    for key in spec.faults:
        sig = signature((key,))
        assert sig not in seen, f"{key} gives the same numbers as {seen.get(sig)} on every input"
        seen[sig] = key


@pytest.mark.parametrize("piece", NEW)
def test_a_wrong_function_no_mistake_explains_is_different_and_shown_beside_the_expected(piece):
    right = WORKED[piece]
    verdict = diagnose(lambda *a, **k: np.asarray(right(*a, **k)) * 0.9 + 0.01, piece=piece)
    assert verdict.mistake == "different", verdict.text
    assert "yours" in verdict.text and "expected" in verdict.text


def test_a_multi_head_function_without_a_mask_is_told_to_take_one():
    def no_mask(X, W_Q, W_K, W_V, W_O, num_heads):
        return WORKED["multi_head_attention"](X, W_Q, W_K, W_V, W_O, num_heads)
    assert diagnose(no_mask, piece="multi_head_attention").mistake == "no_mask_argument"


def _workbook(attention_source):
    """A learner's workbook module: their split, merge and multi-head attention, calling their ``attention``."""
    import types
    module = types.ModuleType("workbook")
    exec("import numpy as np\n" + attention_source + """
def split_heads(x, num_heads):
    return np.swapaxes(x.reshape(*x.shape[:-1], num_heads, x.shape[-1] // num_heads), -2, -3)

def merge_heads(x):
    return np.swapaxes(x, -2, -3).reshape(*x.shape[:-3], x.shape[-2], -1)

def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    out, weights = attention(Q, K, V, mask=mask)
    return merge_heads(out) @ W_O, weights
""", module.__dict__)
    return module


NO_MASK_YET = """
def attention(Q, K, V, mask=None):           # notebook 01's attention: the mask is not used yet
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
"""


def test_a_multi_head_function_calling_a_stub_attention_is_sent_to_the_notebook_that_builds_it():
    stub = _workbook('def attention(Q, K, V, mask=None):\n    raise NotImplementedError("attention: not written yet")\n')
    verdict = diagnose(stub.multi_head_attention, piece="multi_head_attention")
    assert verdict.mistake == "not_attempted", verdict.text
    assert "calls attention, which is not written yet" in verdict.text
    assert "attention is built in notebook 01 (with masks in notebook 04)" in verdict.text, verdict.text
    assert "comes before this one" not in verdict.text          # 05 has no Build it cell of attention


def test_a_mask_ignored_by_the_attention_a_multi_head_function_calls_is_blamed_on_that_attention():
    verdict = diagnose(_workbook(NO_MASK_YET).multi_head_attention, piece="multi_head_attention")
    assert verdict.mistake == "mask_ignored", verdict.text
    assert "The attention multi_head_attention calls, attention, ignores its mask" in verdict.text, verdict.text
    assert "with masks in notebook 04" in verdict.text
    assert MULTI_HEAD_FAULTS["mask_ignored"][1] not in verdict.text   # not "your function ignores the mask"
    # an attention with no mask argument at all: the multi-head function is not told it takes none
    takes_none = _workbook(NO_MASK_YET.replace("mask=None):", "):").replace("# notebook 01's", "#"))
    exec("def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):\n"
         "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))\n"
         "    out, _ = attention(Q, K, V) if mask is None else attention(Q, K, V, mask)\n"
         "    return merge_heads(out) @ W_O\n", takes_none.__dict__)
    verdict = diagnose(takes_none.multi_head_attention, piece="multi_head_attention")
    assert verdict.mistake == "no_mask_argument", verdict.text
    assert "The attention multi_head_attention calls, attention, takes no mask" in verdict.text, verdict.text
    assert "multi_head_attention takes no mask" not in verdict.text


def test_a_multi_head_function_that_drops_the_mask_before_a_right_attention_is_told_it_ignores_it():
    right = NO_MASK_YET.replace("    e = np.exp", "    s = s if mask is None else np.where(mask, s, -np.inf)\n    e = np.exp")
    module = _workbook(right)
    exec("def dropping(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):\n"
         "    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_Q, W_K, W_V))\n"
         "    return merge_heads(attention(Q, K, V)[0]) @ W_O\n", module.__dict__)
    assert diagnose(module.multi_head_attention, piece="multi_head_attention").correct
    verdict = diagnose(module.dropping, piece="multi_head_attention")
    assert verdict.mistake == "mask_ignored" and MULTI_HEAD_FAULTS["mask_ignored"][1] in verdict.text, verdict.text


def test_the_multi_head_battery_gives_only_unambiguous_masks():
    """No mask, a causal (n, n) mask, or a per-sentence padding mask with its head axis (B, 1, 1, n)."""
    masks = [c.args["mask"] for c in MULTI_HEAD if c.args["mask"] is not None]
    assert any(m.ndim == 2 for m in masks) and any(m.shape[1:3] == (1, 1) for m in masks)
    for case in MULTI_HEAD:
        m, X = case.args["mask"], case.args["X"]
        assert m is None or m.ndim == 2 or (m.ndim == X.ndim + 1 and m.shape[1:3] == (1, 1))
    assert any(c.args["X"].shape[-2] == 1 for c in MULTI_HEAD) and any(c.args["X"].ndim == 3 for c in MULTI_HEAD)


def test_the_batteries_hold_one_token_a_batch_and_a_hidden_query():
    assert any(c.args["x"].shape[-2] == 1 for c in SPLIT_HEADS) and any(c.args["x"].ndim >= 4 for c in SPLIT_HEADS)
    assert any(c.args["x"].shape[-2] == 1 for c in MERGE_HEADS)
    assert any(c.args["n"] == 1 for c in POSITIONAL) and any(c.args["d_model"] == 2 for c in POSITIONAL)
    ws = [c.args["weights"] for c in SOFTMAX_BACKWARD]
    assert any(w.shape[-1] == 1 for w in ws) and any(w.ndim == 3 for w in ws)
    assert any((w == 0).all(axis=-1).any() for w in ws)           # a hidden query's row of zeros
    for w in ws:                                                   # every row a softmax row, or all zeros
        sums = w.sum(axis=-1)
        assert np.all(np.isclose(sums, 1) | (sums == 0)) and (w >= 0).all()


# --------------------------------------------------------------------------
# Odd functions: the cross-cutting keys for the new pieces (test_checkers covers raise, exit, None, shape, print)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("piece", NEW)
def test_nan_text_and_slow_functions_of_the_new_pieces(piece):
    right = WORKED[piece]
    assert diagnose(lambda *a, **k: np.full(np.shape(right(*a, **k)), np.nan), piece=piece).mistake == "nan_inf"
    assert diagnose(lambda *a, **k: "the answer", piece=piece).mistake == "not_numbers"
    started = time.perf_counter()
    verdict = diagnose(lambda *a, **k: time.sleep(1.0), piece=piece, time_limit=0.1)
    assert verdict.mistake == "too_slow" and time.perf_counter() - started < 0.9


@pytest.mark.parametrize("piece", [p for p in NEW if p != "positional_encoding"])   # n, d_model: numbers
def test_a_function_that_changes_its_input_in_place_is_told_so(piece):
    right = WORKED[piece]

    def mutates(*args, **kwargs):
        out = np.array(right(*args, **kwargs))
        args[0][...] = 0
        return out
    verdict = diagnose(mutates, piece=piece)
    assert verdict.mistake == "mutates_inputs" and "in place" in verdict.text, verdict.text


@settings(max_examples=30, deadline=None)
@given(piece=st.sampled_from(NEW), value=st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=3), st.lists(st.floats(), max_size=3),
    hnp.arrays(st.sampled_from([np.float64, np.int8, np.bool_, np.complex128]),
               hnp.array_shapes(min_dims=0, max_dims=4, max_side=3)), st.tuples(st.none(), st.none())))
def test_never_raises_whatever_a_new_pieces_function_returns(piece, value):
    verdict = diagnose(lambda *a, **k: value, piece=piece)
    assert isinstance(verdict, Feedback) and verdict.correct is False and verdict.text


# --------------------------------------------------------------------------
# Property: the worked solutions and right functions written another way agree with the course's
# --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(lead=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 5), h=st.integers(1, 4), d_k=st.integers(1, 3),
       data=st.data())
def test_heads_written_other_ways_agree_with_the_courses(lead, n, h, d_k, data):
    x = data.draw(hnp.arrays(np.float64, (*lead, n, h * d_k), elements=st.floats(-100, 100)))
    want = split_heads(x, h)
    for fn in (WORKED["split_heads"], split_loops, split_einops_style):
        np.testing.assert_array_equal(fn(x, h), want)
    for fn in (WORKED["merge_heads"], merge_loops):
        np.testing.assert_array_equal(fn(np.array(want)), merge_heads(want))
    np.testing.assert_array_equal(WORKED["merge_heads"](WORKED["split_heads"](x, h)), x)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 2), n=st.integers(1, 5), h=st.integers(1, 3), d_k=st.integers(1, 3), causal=st.booleans(),
       data=st.data())
def test_multi_head_written_other_ways_agrees_with_the_courses(B, n, h, d_k, causal, data):
    d = h * d_k
    X = data.draw(hnp.arrays(np.float64, (B, n, d), elements=st.floats(-3, 3)))
    Ws = [data.draw(hnp.arrays(np.float64, (d, d), elements=st.floats(-2, 2))) for _ in range(4)]
    mask = causal_mask(n) if causal else None
    want, _ = multi_head_attention(X, *Ws, h, mask=mask)
    for fn in (WORKED["multi_head_attention"], mha_per_head_loop, lambda *a: mha_attn_mask(*a)[0]):
        np.testing.assert_allclose(fn(X, *Ws, h, mask), want, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), half=st.integers(1, 40))
def test_positional_encodings_written_other_ways_agree_with_the_courses(n, half):
    want = sinusoidal_positional_encoding(n, 2 * half)
    # exp(log) rates and loops round differently: measured below 1e-12 at n = 60 (angles up to 59 radians)
    for fn in (WORKED["positional_encoding"], pe_loops, pe_exp_log):
        np.testing.assert_allclose(fn(n, 2 * half), want, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), data=st.data())
def test_softmax_backward_written_other_ways_agrees_with_the_courses(shape, data):
    scores = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-30, 30)))
    w = softmax(scores)
    if data.draw(st.booleans()) and w.ndim > 1:
        w[(0,) * (w.ndim - 1)] = 0.0                       # a hidden query's row
    g = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-5, 5)))
    want = softmax_backward(w, g)
    for fn in (WORKED["softmax_backward"], backward_jacobian_loop, backward_einsum):
        np.testing.assert_allclose(fn(w, g), want, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------
# The first part, as a fresh review found it (issue 21, section 1)
# --------------------------------------------------------------------------

def softmax_global_max(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum()


def softmax_row_max_total_sum(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum()


@pytest.mark.parametrize("fn, key", [(softmax_global_max, "softmax_over_everything"),
                                     (softmax_row_max_total_sum, "neg_inf_nan+softmax_over_everything")],
                         ids=lambda x: getattr(x, "__name__", x))
def test_an_axis_less_softmax_is_named_by_what_it_does(fn, key):
    verdict = diagnose(fn, piece="softmax")
    assert verdict.mistake == key, verdict.text


def _scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])


def attention_query_axis(Q, K, V, mask=None):
    """The softmax over the queries, with the course's guarded softmax: a hidden column gives zeros, not NaN."""
    s = _scores(Q, K)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s, axis=-2) @ V


def test_attention_with_the_softmax_over_the_queries_is_wrong_axis():
    assert diagnose(attention_query_axis).mistake == "wrong_axis"


def test_the_attention_battery_has_one_token_random_shapes_a_batch_and_a_random_mask():
    assert len(ATTENTION) == 16
    empty = [c for c in ATTENTION if c.mask is not None and not np.broadcast_to(c.mask, c.Q.shape[:-1] + c.K.shape[-2:-1]).any(axis=-1).all()]
    assert [c.name for c in empty] == ["empty row"]             # one query with nothing to attend to (notebook 04, section 4)
    assert any(c.Q.shape[-2] == 1 and c.K.shape[-2] == 1 for c in ATTENTION)
    randoms = [c for c in ATTENTION if c.name.startswith("random")]
    assert len(randoms) == 3 and any(c.Q.ndim == 4 for c in randoms) and any(c.mask is not None for c in randoms)
    started = time.perf_counter()
    diagnose(WORKED["attention"])
    assert time.perf_counter() - started < 1.0


def test_a_wrong_shape_says_what_shape_the_mask_must_have():
    verdict = diagnose(lambda is_real: is_real[None, :, None, :], piece="padding_mask")
    assert verdict.mistake == "wrong_shape" and "must have shape (2, 1, 4)" in verdict.text


def test_a_padding_mask_on_the_queries_with_a_head_axis_is_query_axis_not_a_wrong_shape():
    # (B, 1, n, 1): the padding on the queries, with a head axis (issue 32, section 2)
    verdict = diagnose(lambda is_real: is_real[:, None, :, None], piece="padding_mask")
    assert verdict.mistake == "query_axis" and "must have shape (2, 1, 4)" in verdict.text, verdict.text
    assert "(B, 1, n_k, 1)" in verdict.text


# --------------------------------------------------------------------------
# The guide lists every key of the new pieces
# --------------------------------------------------------------------------

def test_the_guide_lists_the_keys_of_the_new_pieces_and_the_new_mask_keys():
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    section = guide.split("## The workbook", 1)[1].split("\n## ", 1)[0]
    rows = {m[0]: set(re.findall(r"`(\w+)`", m[1])) for m in re.findall(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", section, re.M)}
    for piece, faults in FAULTS.items():
        extra = {"no_mask_argument"} if piece == "multi_head_attention" else set()
        extra |= {f.key for f in getattr(getattr(PIECES[piece][0], "__self__", None), "families", ())}   # fitted
        assert rows[piece] == set(faults) | extra, piece
    assert rows["causal_mask"] == set(CAUSAL_FAULTS) | set(VALUE_FAULTS)
    assert rows["padding_mask"] == set(PADDING_FAULTS) | set(VALUE_FAULTS)
    assert set(NEW) <= set(PIECES)
