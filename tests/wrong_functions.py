"""A collection of learners' functions written the way public code writes them, wrong and right (issue 32).

``COLLECTION`` is a list of :class:`Entry`: one function for one piece of
``diagnose(fn, piece=...)``, where its mistake comes from (``source``: a
public repository and issue or pull-request number, or "pattern" for a
common way of writing it that is not tied to one report), the misconception
in one sentence (``what``), and the key diagnose should give (``intended``:
None for a right function, which must be called Correct; keys joined with
"+" for two mistakes together). tools/measure_diagnose.py runs diagnose on
every entry and reports what it actually said.

Every function here is written for this collection, in plain numpy, and is
deterministic (no random numbers). The module defines no test: pytest
collects only test_*.py files, and this one is data for the measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Entry", "COLLECTION", "PIECES"]

PIECES = ("attention", "softmax", "causal_mask", "padding_mask", "split_heads", "merge_heads",
          "multi_head_attention", "positional_encoding", "softmax_backward", "online_softmax_update",
          "tiled_attention", "kv_cache_step", "rope")
"""The pieces of diagnose, in the order the measurement reports them."""


@dataclass(frozen=True)
class Entry:
    """One function of the collection. intended: the key diagnose should give, None when the function is right."""

    piece: str
    name: str
    source: str
    what: str
    intended: str | None
    fn: Callable

    @property
    def right(self):
        return self.intended is None


COLLECTION: list[Entry] = []


def wrong(piece, name, source, what, intended):
    """Add the decorated function to COLLECTION as a wrong one, with the key diagnose should give."""
    def add(fn):
        COLLECTION.append(Entry(piece, name, source, what, intended, fn))
        return fn
    return add


def right(piece, name, source, what):
    """Add the decorated function to COLLECTION as a right one (diagnose must say Correct)."""
    def add(fn):
        COLLECTION.append(Entry(piece, name, source, what, None, fn))
        return fn
    return add


# ==========================================================================
# attention(Q, K, V, mask=None)
# ==========================================================================

def _stable_rows(S):
    """A guarded softmax over the last axis (the part of several entries that is right)."""
    top = S.max(axis=-1, keepdims=True)
    e = np.exp(S - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@wrong("attention", "scale_sqrt_2dk", "pattern",
       "Divides the scores by sqrt(2 d_k), a factor 2 slipped into the key width.", "scale_by_shape")
def attention_scale_two_dk(Q, K, V, mask=None):
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(2 * d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = _stable_rows(scores)
    return weights @ V, weights


@wrong("attention", "scale_n_queries", "pattern",
       "Divides by sqrt(Q.shape[0]), the number of queries (the batch size on a batch), not sqrt(d_k).",
       "scale_by_shape")
def attention_scale_n_queries(Q, K, V, mask=None):
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(Q.shape[0])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _stable_rows(scores)
    return w @ V, w


@wrong("attention", "scale_d_v", "juho-lee/set_transformer #18",
       "Divides by sqrt(dim_V), the values' width, instead of the keys' d_k.", "scale_by_d_v")
def attention_scale_d_v(Q, K, V, mask=None):
    dim_V = V.shape[-1]
    A = Q @ np.swapaxes(K, -2, -1) / math.sqrt(dim_V)
    if mask is not None:
        A = np.where(mask, A, -np.inf)
    A = _stable_rows(A)
    return A @ V, A


@wrong("attention", "scale_fixed_8", "pattern",
       "Divides by a hard-coded 8 (sqrt(64), the d_k of the paper's base model) whatever d_k is.", "constant_scale")
def attention_scale_eight(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / 8.0
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    p = _stable_rows(scores)
    return p @ V, p


@wrong("attention", "scale_sqrt_d_model", "lsdefine/attention-is-all-you-need-keras #16",
       "Divides by sqrt(d_model) (temper = sqrt(d_model), 512 here) instead of sqrt(d_k).", "constant_scale")
def attention_temper_d_model(Q, K, V, mask=None, d_model=512):
    temper = np.sqrt(d_model)
    attn = Q @ np.swapaxes(K, -1, -2) / temper
    if mask is not None:
        attn = np.where(mask, attn, -np.inf)
    attn = _stable_rows(attn)
    return attn @ V, attn


@wrong("attention", "divided_by_d_head", "charliezchen/scaling-matrix-preconditioning #2",
       "Scales the logits by 1/d_head (the muP habit) instead of 1/sqrt(d_k).", "divided_by_d_k")
def attention_one_over_d(Q, K, V, mask=None):
    d_head = Q.shape[-1]
    logits = Q @ np.swapaxes(K, -1, -2) / d_head
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    w = _stable_rows(logits)
    return w @ V, w


@wrong("attention", "no_scaling", "pattern", "Forgets to divide the scores by sqrt(d_k).", "no_scaling")
def attention_unscaled(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _stable_rows(s)
    return w @ V, w


@wrong("attention", "times_sqrt_d_k", "pattern",
       "Multiplies the scores by sqrt(d_k) instead of dividing.", "multiplied_by_sqrt_d_k")
def attention_times_sqrt(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _stable_rows(s)
    return w @ V, w


@wrong("attention", "scale_n_keys", "pattern",
       "Divides by sqrt(len(K)), the number of keys, instead of sqrt(d_k).", "scale_by_n_keys")
def attention_scale_len_k(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(len(K))
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _stable_rows(s)
    return w @ V, w


@wrong("attention", "mask_after_softmax", "huggingface/pytorch-image-models #2236",
       "Applies the mask to the weights after the softmax, so the kept weights no longer sum to 1.",
       "mask_after_softmax")
def attention_mask_late(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    weights = _stable_rows(scores)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights


@wrong("attention", "fill_tiny_negative", "hyunwoongko/transformer #10",
       "Fills hidden scores with -e, e = 1e-12 (almost 0), so hidden keys keep their weight.", "mask_multiplied")
def attention_fill_minus_e(Q, K, V, mask=None, e=1e-12):
    score = Q @ np.swapaxes(K, -1, -2) / math.sqrt(K.shape[-1])
    if mask is not None:
        score = np.where(mask == 0, -e, score)
    score = _stable_rows(score)
    return score @ V, score


@wrong("attention", "fill_minus_1e_minus_9", "Shujun-He/RibonanzaNet #5",
       "Fills hidden scores with -1e-9 instead of -1e9: a score of about 0 hides nothing.", "mask_multiplied")
def attention_fill_tiny(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e-9)
    w = _stable_rows(scores)
    return w @ V, w


@wrong("attention", "mask_added", "pattern",
       "Adds the boolean mask to the scores (True counts as +1) instead of hiding keys.", "mask_added")
def attention_mask_plus(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores + mask
    w = _stable_rows(scores)
    return w @ V, w


@wrong("attention", "mask_flipped", "zhouhaoyi/Informer2020 #597",
       "Reads True as 'hidden' (the triu/masked_fill convention), so it hides the keys it may see.", "mask_flipped")
def attention_mask_true_hides(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    w = _stable_rows(scores)
    return w @ V, w


@wrong("attention", "softmax_dim_0", "PetrochukM/PyTorch-NLP #2",
       "Takes the softmax along axis 0 (down the columns), not along each query's keys.", "wrong_axis")
def attention_softmax_axis0(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=0, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=0, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w


@wrong("attention", "no_max_subtraction", "dwavesystems/dwave-optimization #555",
       "Takes exp of the raw scores, which overflows past 709 (inf / inf is NaN).", "no_max_subtraction")
def attention_naive_exp(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s)
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w


@wrong("attention", "scores_transposed", "caiyuanhao1998/Retinexformer #224",
       "Computes K Q^T instead of Q K^T.", "scores_transposed")
def attention_k_at_q(Q, K, V, mask=None):
    attn = K @ np.swapaxes(Q, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        attn = np.where(mask, attn, -np.inf)
    attn = _stable_rows(attn)
    return attn @ V, attn


@wrong("attention", "batch_K_T", "pattern",
       "Writes K.T, which reverses every axis of a batch instead of swapping the last two.", "batch_transpose")
def attention_dot_T(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _stable_rows(scores)
    return w @ V, w


@wrong("attention", "empty_row_nan", "pytorch/pytorch #131060",
       "Its softmax does not guard a row that is -inf everywhere, so a query with nothing to attend to is NaN.",
       "neg_inf_nan")
def attention_unguarded(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w


@wrong("attention", "mask_ignored", "pattern", "Takes a mask argument and never uses it.", "mask_ignored")
def attention_mask_unused(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    w = _stable_rows(scores)
    return w @ V, w


@right("attention", "loops", "pattern", "Loops over the batch entries and queries, one dot product at a time.")
def attention_loops(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q, float), np.asarray(K, float), np.asarray(V, float)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    n_q, n_k, d_k, d_v = Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]
    Qb = np.broadcast_to(Q, lead + (n_q, d_k))
    Kb = np.broadcast_to(K, lead + (n_k, d_k))
    Vb = np.broadcast_to(V, lead + (n_k, d_v))
    Mb = None if mask is None else np.broadcast_to(mask, lead + (n_q, n_k))
    out = np.zeros(lead + (n_q, d_v))
    weights = np.zeros(lead + (n_q, n_k))
    for idx in np.ndindex(*lead):
        for i in range(n_q):
            row = [float(np.dot(Qb[idx][i], Kb[idx][j])) / math.sqrt(d_k) for j in range(n_k)]
            seen = [j for j in range(n_k) if Mb is None or Mb[idx][i, j]]
            if not seen:
                continue                                   # nothing to attend to: zeros
            top = max(row[j] for j in seen)
            e = {j: math.exp(row[j] - top) for j in seen}
            total = sum(e.values())
            for j in seen:
                weights[idx][i, j] = e[j] / total
                out[idx][i] += weights[idx][i, j] * Vb[idx][j]
    return out, weights


@right("attention", "einsum_attn_mask", "pattern", "einsum for both products, the mask called attn_mask.")
def attention_einsum(q, k, v, attn_mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = np.where(attn_mask, scores, -np.inf)
    probs = _stable_rows(scores)
    return np.einsum("...qk,...kd->...qd", probs, v), probs


@right("attention", "float32", "pattern", "The whole computation in float32, returning the output only.")
def attention_float32(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(K.shape[-1]))
    if mask is not None:
        scores = np.where(mask, scores, np.float32(-np.inf))
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, np.float32(0)))
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total == 0, np.float32(1), total)) @ V


@right("attention", "mask_named_m_fill_1e9", "pattern",
       "The mask called m, hidden scores filled with -1e9 (a finite fill, as many libraries do).")
def attention_m_fill(query, key, value, m=None):
    d_k = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d_k)
    if m is not None:
        scores = np.where(m, scores, -1e9)
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ value, p


@right("attention", "three_tuple", "pattern",
       "Right, but returns (output, weights, scores): a tuple whose first entry is the output.")
def attention_three_tuple(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = _stable_rows(scores)
    return weights @ V, weights, scores


# ==========================================================================
# softmax(x, axis=-1)
# ==========================================================================

@wrong("softmax", "no_keepdims", "DeNA/HandyRL #209",
       "Takes the maximum and the sum without keepdims=True, so they line up with the wrong axis.", "no_keepdims")
def softmax_no_keepdims(x, axis=-1):
    x = np.asarray(x, dtype=float)
    top = np.max(x, axis=axis)
    e = np.exp(x - top)
    return e / np.sum(e, axis=axis)


@wrong("softmax", "axis_hard_coded_1", "pattern",
       "Hard-codes axis=1 (right for a (rows, keys) matrix) and ignores the axis it is given.", "axis_ignored")
def softmax_axis_one(x, axis=-1):
    x = np.asarray(x, dtype=float)
    top = x.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(x - top)
    total = e.sum(axis=1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@wrong("softmax", "transpose_trick", "pattern",
       "Writes (np.exp(x).T / np.exp(x).sum(-1)).T: no maximum subtracted (and .T reverses a batch's axes).",
       "no_max_subtraction")
def softmax_transpose_trick(x, axis=-1):
    return (np.exp(x).T / np.exp(x).sum(-1)).T


@wrong("softmax", "one_global_max", "keras-team/keras #10027",
       "Subtracts one maximum of the whole tensor (np.max(x)), so a row of much smaller scores underflows to zeros.",
       "max_over_everything")
def softmax_global_max(x, axis=-1):
    x = np.asarray(x, dtype=float)
    top = np.max(x)
    e = np.exp(x - (top if np.isfinite(top) else 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@wrong("softmax", "finite_fill_inside", "hyunwoongko/transformer #10",
       "Replaces -inf by -1e9 inside the softmax, so a row hidden everywhere gets an even spread, not zeros.",
       "finite_fill")
def softmax_fill_inside(x, axis=-1):
    x = np.where(np.isneginf(x), -1e9, np.asarray(x, dtype=float))
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@wrong("softmax", "unguarded_all_inf", "pytorch/pytorch #131060",
       "Subtracts the maximum but does not guard a slice of -inf everywhere: -inf - (-inf) is NaN.", "neg_inf_nan")
def softmax_unguarded(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@wrong("softmax", "axis_0", "pattern", "Sums down axis 0 whatever axis it is given.", "wrong_axis")
def softmax_first_axis(x, axis=-1):
    x = np.asarray(x, dtype=float)
    top = x.max(axis=0, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=0, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@wrong("softmax", "sum_of_everything", "apache/singa #540",
       "Subtracts np.max(x) and divides by e_x.sum(): the maximum and the sum of the whole array, not along axis.",
       "softmax_over_everything")
def softmax_everything(x, axis=-1):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()


@wrong("softmax", "not_normalised", "pattern", "Returns exp(x - max) without dividing by the sum.",
       "exp_not_normalised")
def softmax_exp_only(x, axis=-1):
    top = np.max(x, axis=axis, keepdims=True)
    return np.exp(x - np.where(np.isfinite(top), top, 0.0))


@wrong("softmax", "no_axis_argument", "pattern", "def softmax(x): no axis argument at all.", "no_axis_argument")
def softmax_without_axis(x):
    x = np.asarray(x, dtype=float)
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@wrong("softmax", "float16", "pattern", "Right, but computed in float16.", "low_precision")
def softmax_half(x, axis=-1):
    x = np.asarray(x, dtype=np.float16)
    top = x.max(axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, np.float16(0)))
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, np.float16(1), total)


@right("softmax", "z_ax", "pattern", "def softmax(z, ax=-1): other names for the array and its axis.")
def softmax_z_ax(z, ax=-1):
    z = np.asarray(z, dtype=float)
    m = np.max(z, axis=ax, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    ez = np.exp(z - m)
    s = np.sum(ez, axis=ax, keepdims=True)
    s[s == 0] = 1.0
    return ez / s


@right("softmax", "logsumexp", "pattern", "exp(x - logsumexp(x)), the log-space form, guarded.")
def softmax_logsumexp(x, axis=-1):
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = m + np.log(s)                             # -inf for a slice hidden everywhere
    return np.where(np.isneginf(lse), 0.0, np.exp(x - np.where(np.isneginf(lse), 0.0, lse)))


@right("softmax", "moveaxis_loop", "pattern", "Moves the axis last and loops over the rows.")
def softmax_rows_loop(x, axis=-1):
    a = np.moveaxis(np.array(x, dtype=float), axis, -1)
    out = np.zeros_like(a)
    for idx in np.ndindex(*a.shape[:-1]):
        row = a[idx]
        if np.all(np.isneginf(row)):
            continue
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, axis)


@right("softmax", "float32", "pattern", "The guarded softmax in float32.")
def softmax_single(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    top = x.max(axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, np.float32(0)))
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, np.float32(1), total)


# ==========================================================================
# causal_mask(n)
# ==========================================================================

@wrong("causal_mask", "triu_k1_meaning", "zhouhaoyi/Informer2020 #597",
       "np.triu(..., k=1): True above the diagonal, the 'hidden' meaning of masked_fill, not 'may attend'.",
       "mask_flipped")
def causal_mask_triu(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


@wrong("causal_mask", "one_minus_band", "openai/gpt-2 #270",
       "1 - band_part(ones, -1, 0): a float mask with 1 where a key is hidden.", "mask_flipped+not_boolean")
def causal_mask_one_minus_tril(n):
    return 1 - np.tril(np.ones((n, n)))


@wrong("causal_mask", "diagonal_masked", "pattern", "np.tril(..., k=-1): no token may read itself.",
       "diagonal_masked")
def causal_mask_strict(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


@wrong("causal_mask", "one_future_visible", "pattern", "np.tril(..., k=1): each token reads the next one too.",
       "one_future_visible")
def causal_mask_k_plus_one(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)


@wrong("causal_mask", "tril_of_ones_float", "karpathy/nanoGPT #170",
       "torch.tril(torch.ones(n, n)) translated: the right pattern, as floats 0/1.", "not_boolean")
def causal_mask_float(n):
    return np.tril(np.ones((n, n)))


@wrong("causal_mask", "additive", "pattern", "An additive mask: 0 where a query may attend, -inf elsewhere.",
       "additive_mask")
def causal_mask_additive(n):
    return np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf)


@right("causal_mask", "comparison", "pattern", "Compares the key index with the query index: j <= i.")
def causal_mask_compare(n):
    i = np.arange(n)
    return i[None, :] <= i[:, None]


# ==========================================================================
# padding_mask(is_real)
# ==========================================================================

@wrong("padding_mask", "b_1_n_1", "bentrevett/pytorch-seq2seq #96",
       "unsqueeze(1).unsqueeze(3): shape (B, 1, n, 1), the padding on the queries' axis.", "query_axis")
def padding_mask_b1n1(is_real):
    return np.asarray(is_real, dtype=bool)[:, None, :, None]


@wrong("padding_mask", "b_1_i_1_rearrange", "lucidrains/x-transformers #172",
       "rearrange(mask, 'b i -> b 1 i 1') without the head axis: (B, n, 1), hiding rows.", "query_axis")
def padding_mask_rows(is_real):
    return np.asarray(is_real, dtype=bool)[:, :, None]


@wrong("padding_mask", "head_axis", "openai/gpt-2 #270",
       "seq[:, newaxis, newaxis, :]: the (B, 1, 1, n) shape of multi-head scores, for scores without heads.",
       "head_axis")
def padding_mask_heads(is_real):
    return np.asarray(is_real, dtype=bool)[:, np.newaxis, np.newaxis, :]


@wrong("padding_mask", "not_broadcast", "Kyubyong/transformer #135",
       "Returns key_masks as (B, n_k), without the query axis of length 1.", "not_broadcast")
def padding_mask_flat(is_real):
    return np.asarray(is_real, dtype=bool)


@wrong("padding_mask", "queries_hidden_too", "lucidrains/x-transformers #172",
       "mask_i & mask_j: hides the pads' rows as well as their columns, shape (B, n, n).", "queries_hidden_too")
def padding_mask_both(is_real):
    r = np.asarray(is_real, dtype=bool)
    return r[:, :, None] & r[:, None, :]


@wrong("padding_mask", "key_padding_convention", "pattern",
       "True at the pads (torch's key_padding_mask convention).", "mask_flipped")
def padding_mask_true_at_pad(is_real):
    return ~np.asarray(is_real, dtype=bool)[:, None, :]


@wrong("padding_mask", "additive", "pattern", "An additive (B, 1, n) mask of 0 and -inf.", "additive_mask")
def padding_mask_additive(is_real):
    return np.where(np.asarray(is_real, dtype=bool), 0.0, -np.inf)[:, None, :]


@right("padding_mask", "expand_dims", "pattern", "np.expand_dims(is_real, 1), cast to bool.")
def padding_mask_expand(is_real):
    return np.expand_dims(is_real, 1).astype(bool)


# ==========================================================================
# split_heads(x, num_heads), merge_heads(x)
# ==========================================================================

@wrong("split_heads", "reshape_only", "reczoo/FuxiCTR #30",
       "Reshapes straight to (..., num_heads, n, d_k), so a head takes features of several tokens.",
       "reshape_without_transpose")
def split_heads_view(x, num_heads):
    *lead, n, d_model = x.shape
    return x.reshape(*lead, num_heads, n, d_model // num_heads)


@wrong("split_heads", "torch_transpose_1_2", "harvardnlp/annotated-transformer #118",
       "torch's .transpose(1, 2) translated as np.swapaxes(x, 1, 2): right for a batch, wrong for one sentence.",
       "axes_permuted")
def split_heads_swap_1_2(x, num_heads):
    *lead, n, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, n, num_heads, d_model // num_heads), 1, 2)


@wrong("split_heads", "view_nbatches", "harvardnlp/annotated-transformer #118",
       "x.view(nbatches, -1, h, d_k).transpose(1, 2) with nbatches = x.shape[0]: one sentence's tokens taken as "
       "the batch.", "axes_permuted")
def split_heads_nbatches(x, num_heads):
    nbatches, d_model = x.shape[0], x.shape[-1]
    return x.reshape(nbatches, -1, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


@wrong("split_heads", "heads_before_batch", "lsdefine/attention-is-all-you-need-keras #36",
       "transpose(x, [2, 0, 1, 3]): the heads before the batch axis, (h, B, n, d_k).", "axes_permuted")
def split_heads_heads_first(x, num_heads):
    s = x.shape
    y = x.reshape(s[0], s[1], num_heads, s[2] // num_heads) if x.ndim == 3 else x.reshape(
        1, s[0], num_heads, s[1] // num_heads)
    y = np.transpose(y, [2, 0, 1, 3])
    return y if x.ndim == 3 else y[:, 0]


@wrong("split_heads", "transpose_1_0_2", "pattern",
       ".transpose(1, 0, 2) names the axes of one sentence; a batch fails.", "batch_transpose")
def split_heads_three_axes(x, num_heads):
    n, d_model = x.shape[-2], x.shape[-1]
    return x.reshape(n, num_heads, d_model // num_heads).transpose(1, 0, 2)


@wrong("split_heads", "heads_last", "pattern", "Cuts the features right but leaves (..., n, h, d_k).",
       "heads_last")
def split_heads_no_swap(x, num_heads):
    return x.reshape(*x.shape[:-1], num_heads, x.shape[-1] // num_heads)


@wrong("split_heads", "interleaved", "pattern", "Deals the features out in turn: head h gets h, h + H, ...",
       "interleaved")
def split_heads_dealt(x, num_heads):
    *lead, n, d_model = x.shape
    y = x.reshape(*lead, n, d_model // num_heads, num_heads)
    return np.moveaxis(y, -1, -3)


@right("split_heads", "moveaxis", "pattern", "reshape to (..., n, h, d_k), then np.moveaxis(-2, -3).")
def split_heads_moveaxis(x, num_heads):
    y = x.reshape(x.shape[:-1] + (num_heads, x.shape[-1] // num_heads))
    return np.moveaxis(y, -2, -3)


@right("split_heads", "stack_slices", "pattern", "Slices the features head by head and stacks them.")
def split_heads_slices(x, num_heads):
    d_k = x.shape[-1] // num_heads
    return np.stack([x[..., h * d_k:(h + 1) * d_k] for h in range(num_heads)], axis=-3)


@wrong("merge_heads", "reshape_only", "jsbaan/transformer-from-scratch #6",
       "Reshapes (..., h, n, d_k) straight to (..., n, h d_k), mixing tokens (no permute first).",
       "reshape_without_transpose")
def merge_heads_view(x):
    *lead, h, n, d_k = x.shape
    return x.reshape(*lead, n, h * d_k)


@wrong("merge_heads", "torch_transpose_1_2", "harvardnlp/annotated-transformer #118",
       "x.transpose(1, 2).view(nbatches, -1, h d_k) translated with fixed axes: right for a batch only.",
       "axes_permuted")
def merge_heads_swap_1_2(x):
    nbatches = x.shape[0]
    return np.swapaxes(x, 1, 2).reshape(nbatches, -1, x.shape[-3] * x.shape[-1])


@wrong("merge_heads", "heads_batch_order", "gazelle93/Transformer-Various-Positional-Encoding #1",
       "Permutes (0, 2, 1, 3) an array it believes is (B, h, n, d_k) but that holds (h, B, n, d_k).",
       "axes_permuted")
def merge_heads_wrong_order(x):
    *lead, h, n, d_k = x.shape
    B = int(np.prod(lead)) if lead else 1
    y = x.reshape(B, h, n, d_k).reshape(h, B, n, d_k)       # the (h, B) view of the issue
    y = y.transpose(0, 2, 1, 3)
    return y.reshape(*lead, n, h * d_k)


@wrong("merge_heads", "transpose_1_0_2", "pattern", ".transpose(1, 0, 2): one sentence only.",
       "batch_transpose")
def merge_heads_three_axes(x):
    h, n, d_k = x.shape[-3:]
    return x.transpose(1, 0, 2).reshape(n, h * d_k)


@wrong("merge_heads", "heads_last", "pattern", "Merges the last two axes as if heads stood after the tokens.",
       "heads_last")
def merge_heads_last_two(x):
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


@right("merge_heads", "concatenate", "pattern", "Concatenates the heads along the features.")
def merge_heads_concat(x):
    return np.concatenate([x[..., h, :, :] for h in range(x.shape[-3])], axis=-1)


@right("merge_heads", "einsum_reshape", "pattern", "einsum moves the heads axis, then a reshape.")
def merge_heads_einsum(x):
    y = np.einsum("...hnd->...nhd", x)
    return y.reshape(y.shape[:-2] + (y.shape[-2] * y.shape[-1],))


# ==========================================================================
# multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None)
# ==========================================================================

def _cut(x, h):
    """(..., n, d_model) -> (..., h, n, d_k), the right way (shared by entries whose mistake is elsewhere)."""
    return np.swapaxes(x.reshape(x.shape[:-1] + (h, x.shape[-1] // h)), -2, -3)


def _join(x):
    """(..., h, n, d_k) -> (..., n, h d_k), the right way."""
    y = np.swapaxes(x, -2, -3)
    return y.reshape(y.shape[:-2] + (y.shape[-2] * y.shape[-1],))


@wrong("multi_head_attention", "scale_num_heads", "tenstorrent/tt-metal #56789",
       "Scales each head's scores by 1/sqrt(num_heads) instead of 1/sqrt(d_k).", "scale_by_shape")
def mha_scale_num_heads(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = _cut(X @ W_Q, num_heads), _cut(X @ W_K, num_heads), _cut(X @ W_V, num_heads)
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(num_heads)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return _join(_stable_rows(S) @ V) @ W_O


@wrong("multi_head_attention", "scale_d_model", "omihub777/ViT-CIFAR #11",
       "self.sqrt_d = self.feats ** 0.5: divides by sqrt(d_model), not by sqrt(d_model / num_heads).",
       "scale_by_d_model")
def mha_scale_feats(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    sqrt_d = X.shape[-1] ** 0.5
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / sqrt_d
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return _join(_stable_rows(S) @ V) @ W_O


@wrong("multi_head_attention", "scale_embed_dim_C", "Graylab/DL4Proteins-notebooks #12",
       "q @ k^T * C**-0.5 with C the embedding width, not the head size.", "scale_by_d_model")
def mha_scale_C(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    C = X.shape[-1]
    q, k, v = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    wei = q @ np.swapaxes(k, -2, -1) * C ** -0.5
    if mask is not None:
        wei = np.where(mask, wei, -np.inf)
    return _join(_stable_rows(wei) @ v) @ W_O


@wrong("multi_head_attention", "softmax_axis_1", "FudanNLP/fastNLP #254",
       "Softmax over axis 1 of the (B, h, n, n) scores: across heads on a batch, across queries for one sentence.",
       "wrong_axis")
def mha_softmax_dim1(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    top = S.max(axis=1, keepdims=True)
    e = np.exp(S - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=1, keepdims=True)
    return _join(e / np.where(total == 0, 1.0, total) @ V) @ W_O


@wrong("multi_head_attention", "softmax_heads_and_keys", "facebookresearch/detr #247",
       "Flattens heads and keys together before the softmax, so the heads share one distribution.", "wrong_axis")
def mha_softmax_flatten(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)                   # (..., h, n, n)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    T = np.moveaxis(S, -3, -2)                                       # (..., n, h, n)
    flat = T.reshape(T.shape[:-2] + (-1,))
    W = np.moveaxis(_stable_rows(flat).reshape(T.shape), -2, -3)
    return _join(W @ V) @ W_O


@wrong("multi_head_attention", "view_nbatches", "harvardnlp/annotated-transformer #118",
       "view(nbatches, -1, h, d_k).transpose(1, 2) with nbatches = X.shape[0]: one sentence's tokens become the "
       "batch.", "axes_permuted")
def mha_nbatches(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    nbatches, d_model = X.shape[0], X.shape[-1]
    d_k = d_model // num_heads
    q, k, v = ((X @ W).reshape(nbatches, -1, num_heads, d_k).transpose(0, 2, 1, 3) for W in (W_Q, W_K, W_V))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    x = _stable_rows(s) @ v
    x = x.transpose(0, 2, 1, 3).reshape(nbatches, -1, num_heads * d_k)
    return x @ W_O


@wrong("multi_head_attention", "heads_before_batch_mask", "lsdefine/attention-is-all-you-need-keras #36",
       "Stacks the heads before the batch, (h B, n, d_k), but repeats each sentence's mask in (B h) order.",
       "head_axis")
def mha_head_major(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    one = X.ndim == 2
    X = X[None] if one else X
    B, n, d_model = X.shape
    d_k = d_model // num_heads

    def reshape1(x):
        x = x.reshape(B, n, num_heads, d_k).transpose(2, 0, 1, 3)
        return x.reshape(-1, n, d_k)

    q, k, v = reshape1(X @ W_Q), reshape1(X @ W_K), reshape1(X @ W_V)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        m = mask if mask.ndim == 2 else np.repeat(mask.reshape(B, 1, n), num_heads, axis=0)
        s = np.where(m, s, -np.inf)
    out = (_stable_rows(s) @ v).reshape(num_heads, B, n, d_k).transpose(1, 2, 0, 3).reshape(B, n, d_model)
    out = out @ W_O
    return out[0] if one else out


@wrong("multi_head_attention", "reshape_only", "hyunwoongko/transformer #15",
       "x.view(batch, h, n, d) without the transpose: a head's block takes features of several tokens.",
       "reshape_without_transpose")
def mha_view_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    *lead, n, d_model = X.shape
    d = d_model // num_heads
    q, k, v = ((X @ W).reshape(*lead, num_heads, n, d) for W in (W_Q, W_K, W_V))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    out = (_stable_rows(s) @ v).reshape(*lead, n, d_model)
    return out @ W_O


@wrong("multi_head_attention", "no_output_projection", "pattern", "Returns the merged heads without W_O.",
       "no_output_projection")
def mha_without_WO(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return _join(_stable_rows(S) @ V)


@wrong("multi_head_attention", "single_head", "pattern",
       "One head over all d_model features, num_heads unused (so a (B, 1, 1, n) mask also meets headless scores).",
       "single_head+head_axis")
def mha_one_head(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return (_stable_rows(S) @ V) @ W_O


@wrong("multi_head_attention", "mask_ignored", "pattern", "Takes a mask and never passes it on.", "mask_ignored")
def mha_drops_mask(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    return _join(_stable_rows(S) @ V) @ W_O


def attention_with_dot_T(Q, K, V, mask=None):
    """The inner attention of mha_inner_attention_K_T: right for one (n, d_k) head, wrong on a batch of heads."""
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _stable_rows(scores)
    return w @ V, w


@wrong("multi_head_attention", "inner_attention_K_T", "pattern",
       "Calls an attention that writes K.T, which fails on the (..., h, n, d_k) batch of heads.", "batch_transpose")
def mha_inner_attention_K_T(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    heads, _ = attention_with_dot_T(Q, K, V, mask)
    return _join(heads) @ W_O


@wrong("multi_head_attention", "loop_heads_whole_mask", "pattern",
       "Loops over heads and hands each head's (B, n, n) scores the whole (B, 1, 1, n) mask.", "head_axis")
def mha_loop_whole_mask(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    outs = []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q, k, v = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        outs.append(_stable_rows(s) @ v)
    return np.concatenate(outs, axis=-1) @ W_O


def attention_for_heads(Q, K, V, mask=None):
    """A right inner attention (called by right multi-head entries)."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = _stable_rows(scores)
    return w @ V, w


@right("multi_head_attention", "loop_over_heads", "pattern",
       "Loops over the heads, slicing W_Q, W_K, W_V by columns, each head given its slice of the mask.")
def mha_loop_heads(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    n, d_model = X.shape[-2], X.shape[-1]
    d_k = d_model // num_heads
    lead = X.shape[:-2]
    full = None if mask is None else np.broadcast_to(mask, lead + (num_heads, n, n))
    heads = []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        m = None if full is None else full[..., h, :, :]
        out, _ = attention_for_heads(X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols], m)
        heads.append(out)
    return np.concatenate(heads, axis=-1) @ W_O


@right("multi_head_attention", "einsum", "pattern",
       "einsum with named axes for the projections, the scores and the mixing; returns (output, weights).")
def mha_einsum(X, W_Q, W_K, W_V, W_O, num_heads, attn_mask=None):
    d_model = X.shape[-1]
    d_k = d_model // num_heads
    Wq = W_Q.reshape(d_model, num_heads, d_k)
    Wk = W_K.reshape(d_model, num_heads, d_k)
    Wv = W_V.reshape(d_model, num_heads, d_k)
    q = np.einsum("...nd,dhk->...hnk", X, Wq)
    k = np.einsum("...nd,dhk->...hnk", X, Wk)
    v = np.einsum("...nd,dhk->...hnk", X, Wv)
    s = np.einsum("...hqk,...hmk->...hqm", q, k) / np.sqrt(d_k)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf)
    a = _stable_rows(s)
    o = np.einsum("...hqm,...hmk->...qhk", a, v)
    o = o.reshape(o.shape[:-2] + (d_model,))
    return o @ W_O, a


@right("multi_head_attention", "own_pieces", "pattern", "Splits with its own split, calls its own attention.")
def mha_own_pieces(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    heads, _ = attention_for_heads(_cut(X @ W_Q, num_heads), _cut(X @ W_K, num_heads),
                                   _cut(X @ W_V, num_heads), mask)
    return _join(heads) @ W_O


# ==========================================================================
# positional_encoding(n, d_model)
# ==========================================================================

@wrong("positional_encoding", "base_1000", "maxjcohen/transformer #62",
       "Uses 1000 as the base of the frequencies instead of 10000.", "wrong_base")
def pe_base_thousand(n, d_model):
    pos = np.arange(n)[:, None]
    angle = pos / np.power(1000.0, np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@wrong("positional_encoding", "base_1000_cos_odd_exponent", "maxjcohen/transformer #62",
       "Base 1000, and the cosines' exponent taken from arange(1, d, 2) (their own column).",
       "wrong_base+two_i_plus_one")
def pe_maxjcohen(n, d_model):
    pos = np.arange(n)[:, None]
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(pos / np.power(1000.0, np.arange(0, d_model, 2) / d_model))
    pe[:, 1::2] = np.cos(pos / np.power(1000.0, np.arange(1, d_model, 2) / d_model))
    return pe


@wrong("positional_encoding", "row_0_zeros", "r9y9/deepvoice3_pytorch #19",
       "Fills rows 1.. only (if pos != 0 else zeros), so row 0 is all zeros, not 0, 1, 0, 1, ...", "first_row_zeros")
def pe_row_zero(n, d_model):
    enc = np.array([[pos / np.power(10000, 2 * (i // 2) / d_model) for i in range(d_model)]
                    if pos != 0 else np.zeros(d_model) for pos in range(n)])
    enc[1:, 0::2] = np.sin(enc[1:, 0::2])
    enc[1:, 1::2] = np.cos(enc[1:, 1::2])
    return enc


@wrong("positional_encoding", "positions_from_1", "pattern", "Counts positions 1 .. n.", "positions_from_one")
def pe_from_one(n, d_model):
    pos = np.arange(1, n + 1)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.empty((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@wrong("positional_encoding", "positions_from_2", "facebookresearch/fairseq #1187",
       "Starts the positions at padding_idx + 1 = 2, fairseq's offset, where the course counts from 0.",
       "positions_shifted")
def pe_from_two(n, d_model):
    pos = np.arange(2, n + 2)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.empty((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@wrong("positional_encoding", "np_degrees", "pattern",
       "np.sin(np.degrees(angle)): converts the radians to degrees before np.sin, which takes radians.", "degrees")
def pe_degrees(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(np.degrees(angle))
    pe[:, 1::2] = np.cos(np.degrees(angle))
    return pe


@wrong("positional_encoding", "sin_cos_swapped", "pattern", "Cosines in the even columns, sines in the odd.",
       "sin_cos_swapped")
def pe_swapped(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.cos(angle), np.sin(angle)
    return pe


@wrong("positional_encoding", "exponent_i_over_d", "pattern",
       "Exponent i/d with i the pair's index, instead of 2i/d.", "exponent_i_over_d")
def pe_i_over_d(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(d_model // 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@wrong("positional_encoding", "column_as_i", "Kyubyong/transformer #38",
       "pos / 10000^(2 i / d) for every column i, so the exponent uses the column, not the pair.", "column_as_i")
def pe_column_exponent(n, d_model):
    enc = np.array([[pos / np.power(10000, 2. * i / d_model) for i in range(d_model)] for pos in range(n)])
    enc[:, 0::2] = np.sin(enc[:, 0::2])
    enc[:, 1::2] = np.cos(enc[:, 1::2])
    return enc


@wrong("positional_encoding", "loop_2i_and_2i_plus_2", "SamLynnEvans/Transformer #25",
       "A loop over even i with sin(pos / 10000^(2i/d)) and cos(pos / 10000^(2(i+1)/d)).", "column_as_i")
def pe_loop_lynn(n, d_model):
    pe = np.zeros((n, d_model))
    for pos in range(n):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / (10000 ** ((2 * i) / d_model)))
            pe[pos, i + 1] = math.cos(pos / (10000 ** ((2 * (i + 1)) / d_model)))
    return pe


@wrong("positional_encoding", "concatenated", "allenai/allennlp #2993",
       "torch.cat([sin, cos]): all sines first, then all cosines.", "concatenated")
def pe_cat(n, d_model):
    scaled_time = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


@wrong("positional_encoding", "transposed", "pattern", "Returns (d_model, n): positions on the columns.",
       "transposed")
def pe_transposed(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe.T


@wrong("positional_encoding", "multiplied", "pattern", "pos times 10000^(2i/d) instead of divided.",
       "multiplied")
def pe_times(n, d_model):
    angle = np.arange(n)[:, None] * 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


@right("positional_encoding", "double_loop", "pattern", "Two Python loops and math.sin / math.cos.")
def pe_loops(n, d_model):
    pe = [[0.0] * d_model for _ in range(n)]
    for pos in range(n):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos][2 * i] = math.sin(angle)
            pe[pos][2 * i + 1] = math.cos(angle)
    return np.array(pe)


@right("positional_encoding", "exp_log_div_term", "pattern",
       "div_term = exp(arange(0, d, 2) * -log(10000) / d), the log-space form, in float32.")
def pe_div_term(n, d_model):
    position = np.arange(n, dtype=np.float32)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * (-math.log(10000.0) / d_model))
    pe = np.zeros((n, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


@right("positional_encoding", "stack_interleave", "pattern", "Stacks sin and cos on a last axis, then flattens.")
def pe_stack(n, d_model):
    angle = np.outer(np.arange(n), 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model))
    return np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(n, d_model)


# ==========================================================================
# softmax_backward(weights, grad_weights)
# ==========================================================================

@wrong("softmax_backward", "doubled", "pattern",
       "Multiplies the right gradient by 2 (the derivative of a square slipped in).", "gradient_scaled")
def softmax_backward_twice(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    return 2 * w * (g - np.sum(w * g, axis=-1, keepdims=True))


@wrong("softmax_backward", "halved", "pattern", "Multiplies the right gradient by 0.5.", "gradient_scaled")
def softmax_backward_half(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    return 0.5 * w * (g - (w * g).sum(-1, keepdims=True))


@wrong("softmax_backward", "sum_axis_0", "pattern", "Sums w * g down the columns (axis 0).", "wrong_axis")
def softmax_backward_axis0(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    return w * (g - np.sum(w * g, axis=0, keepdims=True))


@wrong("softmax_backward", "sum_axis_minus_2", "pattern", "Sums w * g over axis -2, the queries.", "wrong_axis")
def softmax_backward_axis_m2(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    return w * (g - np.sum(w * g, axis=-2, keepdims=True))


@wrong("softmax_backward", "diagonal_only", "deeplearning4j/libnd4j #440",
       "Uses only the Jacobian's diagonal, w (1 - w), times g.", "diagonal_only")
def softmax_backward_diag(weights, grad_weights):
    return grad_weights * (weights * (1.0 - weights))


@wrong("softmax_backward", "missing_dot_term", "HomericIntelligence/Odyssey #2134",
       "Leaves out the dot-product term: returns w * g.", "missing_sum_term")
def softmax_backward_no_dot(weights, grad_weights):
    return weights * grad_weights


@wrong("softmax_backward", "one_row_jacobian", "PrincetonUniversity/PsyNeuLink #2539",
       "Builds np.diag(w) - np.outer(w, w), the Jacobian of one row, and fails on a matrix.", "one_row_only")
def softmax_backward_jacobian_1d(weights, grad_weights):
    J = np.diag(weights) - np.outer(weights, weights)
    return J @ grad_weights


@wrong("softmax_backward", "no_keepdims", "pattern", "Sums w * g without keepdims=True.", "no_keepdims")
def softmax_backward_flat_sum(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    return w * (g - np.sum(w * g, axis=-1))


@right("softmax_backward", "batched_jacobian", "pattern", "Builds each row's Jacobian with einsum and applies it.")
def softmax_backward_jacobian(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    eye = np.eye(w.shape[-1])
    J = w[..., :, None] * eye - w[..., :, None] * w[..., None, :]
    return np.einsum("...ij,...j->...i", J, g)


@right("softmax_backward", "row_loop", "pattern", "Loops over the rows with np.diag and np.outer.")
def softmax_backward_rows(weights, grad_weights):
    w, g = np.asarray(weights, float), np.asarray(grad_weights, float)
    out = np.zeros_like(w)
    for idx in np.ndindex(*w.shape[:-1]):
        row = w[idx]
        out[idx] = (np.diag(row) - np.outer(row, row)) @ g[idx]
    return out


# ==========================================================================
# online_softmax_update(running_max, running_sum, acc, scores, V_block)
# ==========================================================================

@wrong("online_softmax_update", "block_against_own_max", "PaddleJitLab/CUDATutorial #69",
       "Exponentiates the block against its own maximum and never brings it to the new running maximum.",
       "block_not_rescaled")
def online_softmax_update_own_max(running_max, running_sum, acc, scores, V_block):
    block_max = scores.max(axis=-1)
    new_max = np.maximum(running_max, block_max)
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - np.where(np.isneginf(block_max), 0.0, block_max)[..., None])
    return new_max, alpha * running_sum + p.sum(axis=-1), alpha[..., None] * acc + p @ V_block


@right("online_softmax_update", "in_place", "pattern",
       "Right numbers; updates running_sum and acc in place and returns them, as a kernel's registers "
       "do (the stub allows it: issue 32, section 3).")
def online_softmax_update_in_place(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - shift[..., None])
    running_sum *= alpha
    running_sum += p.sum(axis=-1)
    acc *= alpha[..., None]
    acc += p @ V_block
    return new_max, running_sum, acc


@wrong("online_softmax_update", "block_max_only", "tile-ai/tilelang #1148",
       "Takes the block's maximum alone as the new running maximum, not max(old, block).", "block_max_only")
def online_softmax_update_block_max(running_max, running_sum, acc, scores, V_block):
    scores_max = scores.max(axis=-1)
    shift = np.where(np.isneginf(scores_max), 0.0, scores_max)
    scale = np.where(np.isneginf(running_max), 0.0, np.exp(running_max - shift))
    p = np.exp(scores - shift[..., None])
    return scores_max, scale * running_sum + p.sum(axis=-1), scale[..., None] * acc + p @ V_block


@wrong("online_softmax_update", "rescale_inverted", "deepseek-ai/FlashMLA #177",
       "Rescales the old totals by exp(m_new - m_old) instead of exp(m_old - m_new).", "rescale_inverted")
def online_softmax_update_inverted(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    scale = np.where(np.isneginf(running_max), 0.0, np.exp(shift - running_max))
    p = np.exp(scores - shift[..., None])
    return new_max, scale * running_sum + p.sum(axis=-1), scale[..., None] * acc + p @ V_block


@wrong("online_softmax_update", "acc_not_rescaled", "pattern", "Rescales the sum but not the accumulator.",
       "acc_not_rescaled")
def online_softmax_update_acc_kept(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - shift[..., None])
    return new_max, alpha * running_sum + p.sum(axis=-1), acc + p @ V_block


@wrong("online_softmax_update", "sum_not_rescaled", "pattern", "Rescales the accumulator but not the sum.",
       "sum_not_rescaled")
def online_softmax_update_sum_kept(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - shift[..., None])
    return new_max, running_sum + p.sum(axis=-1), alpha[..., None] * acc + p @ V_block


@wrong("online_softmax_update", "old_max_kept", "pattern",
       "Never moves the running maximum, measuring every block against the old one.", "old_max_kept")
def online_softmax_update_max_kept(running_max, running_sum, acc, scores, V_block):
    m = np.where(np.isneginf(running_max), scores.max(axis=-1), running_max)
    shift = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(scores - shift[..., None])
    return m, running_sum + p.sum(axis=-1), acc + p @ V_block


@wrong("online_softmax_update", "normalised_each_block", "pattern",
       "Divides the accumulator by the running sum at every block.", "normalised_per_block")
def online_softmax_update_normalised(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - shift[..., None])
    l_new = alpha * running_sum + p.sum(axis=-1)
    a_new = (alpha[..., None] * acc + p @ V_block) / np.where(l_new == 0, 1.0, l_new)[..., None]
    return new_max, l_new, a_new


@wrong("online_softmax_update", "unguarded_minus_inf", "pattern",
       "Subtracts new_max unguarded, so a row of -inf so far gives -inf - (-inf) = NaN.", "neg_inf_nan")
def online_softmax_update_unguarded(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    alpha = np.exp(running_max - new_max)
    p = np.exp(scores - new_max[..., None])
    return new_max, alpha * running_sum + p.sum(axis=-1), alpha[..., None] * acc + p @ V_block


@right("online_softmax_update", "named_m_l_o", "pattern",
       "m, l, O named as in the paper, the -inf rows handled with np.where around each exp.")
def online_softmax_update_paper_names(running_max, running_sum, acc, scores, V_block):
    m, l, O = running_max, running_sum, acc
    m_block = np.max(scores, axis=-1)
    m_new = np.maximum(m, m_block)
    empty = np.isneginf(m_new)
    ref = np.where(empty, 0.0, m_new)
    correction = np.where(np.isneginf(m), 0.0, np.exp(m - ref))
    P = np.where(np.isneginf(scores), 0.0, np.exp(scores - ref[..., None]))
    l_new = correction * l + P.sum(axis=-1)
    O_new = correction[..., None] * O + np.einsum("...qb,...bd->...qd", P, V_block)
    return m_new, l_new, O_new


@right("online_softmax_update", "float64_copies", "pattern",
       "Works on float64 copies and returns new arrays; exp2 with log2(e), as kernels do.")
def online_softmax_update_exp2(running_max, running_sum, acc, scores, V_block):
    log2e = 1.4426950408889634
    m0 = np.array(running_max, dtype=np.float64)
    s = np.array(scores, dtype=np.float64)
    m1 = np.maximum(m0, s.max(axis=-1))
    base = np.where(np.isneginf(m1), 0.0, m1)
    alpha = np.exp2((m0 - base) * log2e)
    p = np.exp2((s - base[..., None]) * log2e)
    return m1, alpha * running_sum + p.sum(axis=-1), alpha[..., None] * acc + p @ V_block


# ==========================================================================
# tiled_attention(Q, K, V, block_size)
# ==========================================================================

def _fold(m, l, acc, s, Vb):
    """One right online-softmax fold (a helper of the tiled entries whose mistake is elsewhere)."""
    new = np.maximum(m, s.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    alpha = np.exp(m - shift)
    p = np.exp(s - shift[..., None])
    return new, alpha * l + p.sum(axis=-1), alpha[..., None] * acc + p @ Vb


@wrong("tiled_attention", "last_block_dropped", "jax-ml/jax #27224",
       "Loops over range(n // block_size) blocks, so the last, shorter block is never read (the issue's kernel "
       "was right only when n was a multiple of the block size).", "last_block_dropped")
def tiled_attention_whole_blocks(Q, K, V, block_size):
    n_k, d_k = K.shape[-2], K.shape[-1]
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for b in range(n_k // block_size):
        Kb = K[..., b * block_size:(b + 1) * block_size, :]
        Vb = V[..., b * block_size:(b + 1) * block_size, :]
        m, l, acc = _fold(m, l, acc, Q @ np.swapaxes(Kb, -1, -2) / np.sqrt(d_k), Vb)
    return acc / l[..., None]


@wrong("tiled_attention", "no_scaling", "pattern", "Forgets the 1/sqrt(d_k) on each block's scores.",
       "no_scaling")
def tiled_attention_unscaled(Q, K, V, block_size):
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        Kb, Vb = K[..., start:start + block_size, :], V[..., start:start + block_size, :]
        m, l, acc = _fold(m, l, acc, Q @ np.swapaxes(Kb, -1, -2), Vb)
    return acc / l[..., None]


@wrong("tiled_attention", "slice_and_T", "pattern",
       "K[start:stop].T: slices the batch axis of a batch and reverses every axis.", "batch_transpose")
def tiled_attention_dot_T(Q, K, V, block_size):
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        Kb, Vb = K[start:start + block_size], V[start:start + block_size]
        m, l, acc = _fold(m, l, acc, Q @ Kb.T / np.sqrt(K.shape[-1]), Vb)
    return acc / l[..., None]


@wrong("tiled_attention", "acc_not_rescaled", "pattern",
       "Rescales the running sum when the maximum rises but not the accumulator.", "acc_not_rescaled")
def tiled_attention_acc_kept(Q, K, V, block_size):
    d_k = K.shape[-1]
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(d_k)
        new = np.maximum(m, s.max(axis=-1))
        alpha = np.exp(m - new)
        p = np.exp(s - new[..., None])
        l = alpha * l + p.sum(axis=-1)
        acc = acc + p @ V[..., start:start + block_size, :]
        m = new
    return acc / l[..., None]


@wrong("tiled_attention", "naive_exp", "pattern",
       "Sums exp of the raw scores block by block, with no running maximum: overflows on large scores.",
       "no_max_subtraction")
def tiled_attention_naive(Q, K, V, block_size):
    d_k = K.shape[-1]
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        p = np.exp(Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(d_k))
        l = l + p.sum(axis=-1)
        acc = acc + p @ V[..., start:start + block_size, :]
    return acc / l[..., None]


def online_softmax_update_forgets_sum(running_max, running_sum, acc, scores, V_block):
    """The step tiled_attention_calls_wrong_step calls: its running sum is never rescaled."""
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    alpha = np.exp(running_max - shift)
    p = np.exp(scores - shift[..., None])
    return new_max, running_sum + p.sum(axis=-1), alpha[..., None] * acc + p @ V_block


@wrong("tiled_attention", "calls_wrong_step", "pattern",
       "A right loop around its own online_softmax_update, whose running sum is never rescaled.",
       "sum_not_rescaled")
def tiled_attention_calls_wrong_step(Q, K, V, block_size):
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
        m, l, acc = online_softmax_update_forgets_sum(m, l, acc, s, V[..., start:start + block_size, :])
    return acc / l[..., None]


@right("tiled_attention", "flashattention_1", "pattern",
       "FlashAttention 1's Algorithm 1: the output kept normalised at every block, no division at the end.")
def tiled_attention_fa1(Q, K, V, block_size):
    d_k, n_k = Q.shape[-1], K.shape[-2]
    O = np.zeros(Q.shape[:-1] + V.shape[-1:])
    l = np.zeros(Q.shape[:-1])
    m = np.full(Q.shape[:-1], -np.inf)
    for j in range(0, n_k, block_size):
        Kj, Vj = K[..., j:j + block_size, :], V[..., j:j + block_size, :]
        S = Q @ np.swapaxes(Kj, -1, -2) / np.sqrt(d_k)
        m_tilde = S.max(axis=-1)
        P = np.exp(S - m_tilde[..., None])
        l_tilde = P.sum(axis=-1)
        m_new = np.maximum(m, m_tilde)
        l_new = np.exp(m - m_new) * l + np.exp(m_tilde - m_new) * l_tilde
        O = ((l * np.exp(m - m_new))[..., None] * O
             + np.exp(m_tilde - m_new)[..., None] * (P @ Vj)) / l_new[..., None]
        l, m = l_new, m_new
    return O


@right("tiled_attention", "query_loop_python", "pattern",
       "One query at a time (loops over the batch and the queries), blocks of keys inside, divided once.")
def tiled_attention_per_query(Q, K, V, block_size):
    lead = Q.shape[:-2]
    out = np.zeros(Q.shape[:-1] + V.shape[-1:])
    scale = 1.0 / math.sqrt(K.shape[-1])
    for idx in np.ndindex(*lead):
        for i in range(Q.shape[-2]):
            q = Q[idx][i]
            m, l, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
            for start in range(0, K.shape[-2], block_size):
                s = K[idx][start:start + block_size] @ q * scale
                new = max(m, float(s.max()))
                c = math.exp(m - new) if m != -np.inf else 0.0
                p = np.exp(s - new)
                l = c * l + float(p.sum())
                acc = c * acc + p @ V[idx][start:start + block_size]
                m = new
            out[idx][i] = acc / l
    return out


# ==========================================================================
# kv_cache_step(cache_keys, cache_values, q, k, v)
# ==========================================================================

@wrong("kv_cache_step", "scale_sqrt_t_plus_1", "pattern",
       "Divides the scores by sqrt(t + 1), the number of tokens so far, not sqrt(d_k).", "scale_by_n_keys")
def kv_cache_step_scale_t(cache_keys, cache_values, q, k, v):
    keys = np.vstack([cache_keys, k])
    values = np.vstack([cache_values, v])
    scores = keys @ q / np.sqrt(len(keys))
    e = np.exp(scores - scores.max())
    return e / e.sum() @ values


@wrong("kv_cache_step", "new_token_forgotten", "pattern",
       "Attends over the cached tokens only, before appending the new key and value.", "new_token_not_attended")
def kv_cache_step_cache_only(cache_keys, cache_values, q, k, v):
    scores = cache_keys @ q / np.sqrt(q.shape[-1])
    e = np.exp(scores - scores.max())
    return e / e.sum() @ cache_values


@wrong("kv_cache_step", "no_scaling", "huggingface/blog #2893",
       "The cached attention without the 1/sqrt(d_k) scaling (the KV-cache post's code before its fix).",
       "no_scaling")
def kv_cache_step_unscaled(cache_keys, cache_values, q, k, v):
    K_all = np.concatenate([cache_keys, k[None, :]], axis=0)
    V_all = np.concatenate([cache_values, v[None, :]], axis=0)
    s = K_all @ q
    w = np.exp(s - s.max())
    return (w / w.sum()) @ V_all


@wrong("kv_cache_step", "keys_values_swapped", "pattern", "Scores the query against the values.",
       "keys_values_swapped")
def kv_cache_step_swapped(cache_keys, cache_values, q, k, v):
    keys = np.vstack([cache_values, v])
    values = np.vstack([cache_keys, k])
    scores = keys @ q / np.sqrt(q.shape[-1])
    e = np.exp(scores - scores.max())
    return e / e.sum() @ values


@wrong("kv_cache_step", "naive_exp", "pattern", "exp of the raw scores: overflows on large scores.",
       "no_max_subtraction")
def kv_cache_step_naive(cache_keys, cache_values, q, k, v):
    keys = np.vstack([cache_keys, k])
    values = np.vstack([cache_values, v])
    e = np.exp(keys @ q / np.sqrt(q.shape[-1]))
    return e / e.sum() @ values


@right("kv_cache_step", "einsum_tuple", "pattern",
       "np.concatenate and einsum, returning (output, weights).")
def kv_cache_step_einsum(cache_keys, cache_values, q, k, v):
    K_all = np.concatenate([cache_keys, k[None]], axis=0)
    V_all = np.concatenate([cache_values, v[None]], axis=0)
    s = np.einsum("d,td->t", q, K_all) / math.sqrt(K_all.shape[-1])
    w = np.exp(s - s.max())
    w /= w.sum()
    return np.einsum("t,td->d", w, V_all), w


@right("kv_cache_step", "float32", "pattern", "The step in float32.")
def kv_cache_step_single(cache_keys, cache_values, q, k, v):
    keys = np.vstack([cache_keys, k]).astype(np.float32)
    values = np.vstack([cache_values, v]).astype(np.float32)
    scores = keys @ q.astype(np.float32) / np.float32(np.sqrt(q.shape[-1]))
    e = np.exp(scores - scores.max())
    return (e / e.sum()) @ values


# ==========================================================================
# rope: apply_rope(x, positions=None)
# ==========================================================================

def _positions(x, positions):
    return np.arange(x.shape[-2], dtype=float) if positions is None else np.asarray(positions, dtype=float)


@wrong("rope", "repeat_interleave_with_rotate_half", "raiyanyahya/how-to-train-your-gpt #6",
       "Frequencies repeat_interleave'd (theta0, theta0, theta1, ...) for neighbour pairs, but rotate_half pairs "
       "i with i + d/2.", "rope_layout_mixed")
def apply_rope_mixed(x, positions=None):
    d = x.shape[-1]
    inv_freq = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    freqs = _positions(x, positions)[:, None] * inv_freq
    emb = np.repeat(freqs, 2, axis=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = np.concatenate([-x2, x1], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)


@wrong("rope", "interleaved_freqs_blocked_rotation", "baidu/ERNIE-Image #6",
       "angles [theta0, theta0, theta1, theta1, ...] with a chunk(2) rotate_half: the two halves of a pair turn "
       "by different angles.", "rope_layout_mixed")
def apply_rope_chunked(x, positions=None):
    d = x.shape[-1]
    angles = np.repeat(_positions(x, positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d), 2, axis=-1)
    a, b = np.split(x, 2, axis=-1)
    return x * np.cos(angles) + np.concatenate([-b, a], axis=-1) * np.sin(angles)


@wrong("rope", "rotate_half", "karpathy/nanochat #264",
       "Pairs feature i with i + d/2 (rotate half), a valid layout but not the paper's neighbour pairs.",
       "rotate_half_layout")
def apply_rope_half(x, positions=None):
    d = x.shape[-1]
    freqs = _positions(x, positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(freqs), np.sin(freqs)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


@wrong("rope", "base_1000", "vllm-project/vllm-ascend #5201",
       "rope_theta 1000 instead of the 10000 asked for.", "wrong_base")
def apply_rope_theta_thousand(x, positions=None):
    d = x.shape[-1]
    ang = _positions(x, positions)[:, None] * 1000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "positions_from_1", "pattern", "Counts positions 1 .. n when none are given.",
       "positions_from_one")
def apply_rope_from_one(x, positions=None):
    d = x.shape[-1]
    m = np.arange(1, x.shape[-2] + 1, dtype=float) if positions is None else np.asarray(positions, float)
    ang = m[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "positions_from_2", "pattern",
       "Counts positions from 2 when none are given (an offset kept from padding).", "positions_shifted")
def apply_rope_from_two(x, positions=None):
    d = x.shape[-1]
    m = np.arange(x.shape[-2], dtype=float) + 2 if positions is None else np.asarray(positions, float)
    ang = m[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "float16_tables", "KellerJordan/modded-nanogpt #39",
       "Right, but cos, sin and x cast to float16 (half-precision tables).", "low_precision")
def apply_rope_half_precision(x, positions=None):
    d = x.shape[-1]
    ang = _positions(x, positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang).astype(np.float16), np.sin(ang).astype(np.float16)
    h = np.asarray(x, dtype=np.float16)
    out = np.empty(x.shape, dtype=np.float16)
    out[..., 0::2] = h[..., 0::2] * c - h[..., 1::2] * s
    out[..., 1::2] = h[..., 0::2] * s + h[..., 1::2] * c
    return out


@wrong("rope", "float16_angles", "EleutherAI/gpt-neox #1003",
       "The angles themselves m * theta computed in float16: at position 100 they are off by up to 0.03 rad.",
       "low_precision")
def apply_rope_half_angles(x, positions=None):
    d = x.shape[-1]
    inv_freq = (1.0 / 10000 ** (np.arange(0, d, 2) / d)).astype(np.float16)
    t = _positions(x, positions).astype(np.float16)
    ang = np.einsum("i,j->ij", t, inv_freq)
    c, s = np.cos(ang).astype(float), np.sin(ang).astype(float)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "rotation_sign", "pattern", "Turns each pair by -m theta.", "rotation_sign")
def apply_rope_clockwise(x, positions=None):
    d = x.shape[-1]
    ang = _positions(x, positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c + x[..., 1::2] * s
    out[..., 1::2] = -x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "frequency_exponent", "pattern", "theta_i = 10000^(-i/d) with i the pair's index.",
       "frequency_exponent")
def apply_rope_i_over_d(x, positions=None):
    d = x.shape[-1]
    ang = _positions(x, positions)[:, None] * 10000.0 ** (-np.arange(d // 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "positions_ignored", "pattern", "Counts 0 .. n-1 whatever positions are given.",
       "positions_ignored")
def apply_rope_counts(x, positions=None):
    d = x.shape[-1]
    ang = np.arange(x.shape[-2])[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("rope", "not_interleaved", "pattern",
       "Turns the neighbour pairs right but writes all first features, then all second.", "not_interleaved")
def apply_rope_halves_out(x, positions=None):
    d = x.shape[-1]
    ang = _positions(x, positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    e, o = x[..., 0::2], x[..., 1::2]
    return np.concatenate([e * c - o * s, e * s + o * c], axis=-1)


@right("rope", "complex_numbers", "pattern", "Pairs as complex numbers, multiplied by exp(i m theta).")
def apply_rope_complex(x, positions=None):
    d = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    freqs_cis = np.exp(1j * np.outer(_positions(x, positions), 10000.0 ** (-np.arange(0, d, 2) / d)))
    w = z * freqs_cis
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = w.real, w.imag
    return out


@right("rope", "rotate_every_two", "EleutherAI/gpt-neox #834",
       "GPT-J's rotate_every_two with the frequencies repeated per neighbour pair: the interleaved layout, right.")
def apply_rope_every_two(x, positions=None):
    d = x.shape[-1]

    def rotate_every_two(t):
        t1, t2 = t[..., 0::2], t[..., 1::2]
        return np.stack([-t2, t1], axis=-1).reshape(t.shape)

    sinusoid = np.outer(_positions(x, positions), 1.0 / 10000 ** (np.arange(0, d, 2) / d))
    sin, cos = np.repeat(np.sin(sinusoid), 2, axis=-1), np.repeat(np.cos(sinusoid), 2, axis=-1)
    return x * cos + rotate_every_two(x) * sin


@right("rope", "pos_name_float32", "pattern", "The positions argument called pos, the rotation in float32.")
def apply_rope_pos32(x, pos=None):
    d = x.shape[-1]
    m = np.arange(x.shape[-2], dtype=np.float64) if pos is None else np.asarray(pos, dtype=np.float64)
    ang = np.outer(m, 10000.0 ** (-np.arange(0, d, 2) / d))
    c, s = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    x32 = np.asarray(x, dtype=np.float32)
    out = np.empty(x32.shape, dtype=np.float32)
    out[..., 0::2] = x32[..., 0::2] * c - x32[..., 1::2] * s
    out[..., 1::2] = x32[..., 0::2] * s + x32[..., 1::2] * c
    return out


@right("rope", "rotation_matrices", "pattern", "Builds each position's 2x2 rotation matrices and applies them.")
def apply_rope_matrices(x, positions=None):
    d = x.shape[-1]
    ang = np.outer(_positions(x, positions), 10000.0 ** (-np.arange(0, d, 2) / d))    # (n, d/2)
    R = np.stack([np.stack([np.cos(ang), -np.sin(ang)], -1), np.stack([np.sin(ang), np.cos(ang)], -1)], -2)
    pairs = x.reshape(x.shape[:-1] + (d // 2, 2))                                     # (..., n, d/2, 2)
    return np.einsum("nirc,...nic->...nir", R, pairs).reshape(x.shape)


# ==========================================================================
# A reviewer's functions (issue 32, second review, source "review"): masks that broadcast, K transposed with fixed
# axes, a scale read off a fixed index, the scale after the softmax; interleaved heads, a 2-D-only mask, 3-tuples
# ==========================================================================

def _review_softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


@wrong("attention", "review_boolindex", "review",
       "Hides the scores by boolean indexing, s[~mask] = -inf, which does not broadcast a (B, 1, n_k) mask.",
       "mask_indexed")
def att_review_boolindex(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s[~mask] = -np.inf
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_mask2d_only", "review",
       "Applies the mask only when it is 2-D (mask.ndim == 2): padding_mask's (B, 1, n_k) is ignored.", "mask_ignored")
def att_review_mask2d_only(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None and np.ndim(mask) == 2:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_swapaxes_1_2", "harvardnlp/annotated-transformer #118",
       "torch's K.transpose(1, 2) kept as np.swapaxes(K, 1, 2): right for a batch, refused for one sentence.",
       "axes_permuted")
def att_review_swap12(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, 1, 2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_transpose_0_2_1", "harvardnlp/annotated-transformer #118",
       "K.transpose(0, 2, 1), the batch's transpose with fixed axes.", "axes_permuted")
def att_review_transpose_021(Q, K, V, mask=None):
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_swapaxes_0_1", "review",
       "np.swapaxes(K, 0, 1): one sentence's transpose, with fixed axes, wrong for a batch.", "batch_transpose")
def att_review_swap01(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, 0, 1) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_shape_1", "review",
       "d_k read as Q.shape[1]: d_k for one sentence, the number of queries for a batch.", "scale_by_shape")
def att_review_shape1(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_len_q0", "review", "d_k read as len(Q[0]), the same as Q.shape[1].", "scale_by_shape")
def att_review_len_q0(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(len(Q[0]))
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w @ V, w


@wrong("attention", "review_scale_after", "review",
       "softmax(QK^T) / sqrt(d_k): the weights scaled, the scores not.", "scale_after_softmax")
def att_review_scale_after(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s) / np.sqrt(Q.shape[-1])
    return w @ V, w


@wrong("attention", "review_weights_first", "review", "Returns (weights, output): both, in the wrong order.",
       "returned_weights")
def att_review_weights_first(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return w, w @ V


def _review_mha(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, scale=None):
    Q, K, V = (_cut(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(Q.shape[-1]) if scale is None else scale)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _review_softmax(s)
    return _join(w @ V) @ W_O, w


@wrong("multi_head_attention", "review_interleaved", "review",
       "Interleaved heads (reshape to (n, d_k, h)) in the split and the matching merge.", "interleaved")
def mha_review_interleaved(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    def sp(x):
        *lead, n, d = x.shape
        return np.moveaxis(x.reshape(*lead, n, d // num_heads, num_heads), -1, -3)

    def mg(x):
        *lead, h, n, d = x.shape
        return np.moveaxis(x, -3, -1).reshape(*lead, n, h * d)
    Q, K, V = (sp(X @ W) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return mg(_review_softmax(s) @ V) @ W_O


@wrong("multi_head_attention", "review_mask2d_only", "review",
       "The mask used only when 2-D: the (B, 1, 1, n) padding mask ignored.", "mask_ignored")
def mha_review_mask2d_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    return _review_mha(X, W_Q, W_K, W_V, W_O, num_heads, mask if np.ndim(mask) == 2 else None)


@wrong("multi_head_attention", "review_sqrt_dk_times_h", "review",
       "Each head's scores divided by sqrt(d_k) * num_heads.", "scale_by_shape")
def mha_review_sqrt_dk_times_h(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    return _review_mha(X, W_Q, W_K, W_V, W_O, num_heads, mask, scale=np.sqrt(d_k) * num_heads)


@wrong("multi_head_attention", "review_fixed_split", "harvardnlp/annotated-transformer #118",
       "The split's transpose(0, 2, 1, 3) with fixed axes (one sentence refused), the merge right.", "axes_permuted")
def mha_review_fixed_split(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    def sp(x):
        B, n, d = x.shape
        return x.reshape(B, n, num_heads, d // num_heads).transpose(0, 2, 1, 3)
    Q, K, V = (sp(X @ W) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return _join(_review_softmax(s) @ V) @ W_O


@right("multi_head_attention", "review_three", "review", "Returns (output, weights, None), the mask called m.")
def mha_review_three(X, W_Q, W_K, W_V, W_O, num_heads, m=None):
    out, w = _review_mha(X, W_Q, W_K, W_V, W_O, num_heads, m)
    return out, w, None


# ==========================================================================
# Issue 32's second review (r1): causes behind symptoms, answers given lazily (findings 5, 6, 9)
# ==========================================================================

def _guarded_softmax(x, axis=-1):
    """A right softmax with the all -inf guard, the part of the entries below that is right."""
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0.0))
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


@wrong("softmax", "min_subtracted", "pattern (issue 32 review r1)",
       "Subtracts the minimum along the axis instead of the maximum: NaN wherever a slice holds -inf.",
       "min_subtracted")
def softmax_min_subtracted(x, axis=-1):
    e = np.exp(x - np.min(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@wrong("softmax", "axis_default_none", "pattern (issue 32 review r1)",
       "def softmax(x, axis=None): right along an axis it is given, the whole array when called without one.",
       "wrong_default_axis")
def softmax_axis_default_none(x, axis=None):
    x = np.asarray(x, float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


COLLECTION.append(Entry("softmax", "np_exp_itself", "pattern (issue 32 review r1)",
                        "np.exp passed as the softmax: never normalised, no maximum, no axis.",
                        "exp_not_normalised", np.exp))


@wrong("softmax", "generator_of_rows", "pattern (issue 32 review r1)",
       "Returns a generator of the right rows (a one-shot answer the later cells cannot compute with).",
       "not_an_array")
def softmax_generator_of_rows(x, axis=-1):
    return (row for row in _guarded_softmax(x, axis))


@wrong("causal_mask", "generator_of_rows", "pattern (issue 32 review r1)",
       "Returns a generator of the right rows of booleans.", "not_an_array")
def causal_mask_generator_of_rows(n):
    return ([j <= i for j in range(n)] for i in range(n))


@wrong("online_softmax_update", "generator_of_three", "pattern (issue 32 review r1)",
       "Returns the three right running values as a generator.", "not_an_array")
def online_step_generator_of_three(running_max, running_sum, acc, scores, V_block):
    return (t for t in _fold(running_max, running_sum, acc, scores, V_block))


@wrong("online_softmax_update", "old_max_returned", "pattern (issue 32 review r1)",
       "Computes the new max and measures the block against it, but returns running_max unchanged.",
       "old_max_kept")
def online_step_old_max_returned(running_max, running_sum, acc, scores, V_block):
    new_max, new_sum, new_acc = _fold(running_max, running_sum, acc, scores, V_block)
    return running_max, new_sum, new_acc


@wrong("tiled_attention", "scale_sqrt_block_size", "pattern (issue 32 review r1)",
       "Scales the scores by 1/sqrt(block_size), the tiling's own size, instead of 1/sqrt(d_k).", "scale_by_shape")
def tiled_scale_sqrt_block_size(Q, K, V, block_size):
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        Kb, Vb = K[..., start:start + block_size, :], V[..., start:start + block_size, :]
        m, l, acc = _fold(m, l, acc, Q @ np.swapaxes(Kb, -1, -2) / np.sqrt(block_size), Vb)
    return acc / l[..., None]


@wrong("kv_cache_step", "scale_sqrt_len_cache", "pattern (issue 32 review r1)",
       "Scales by 1/sqrt(len(cache_keys)): the number of keys less the new one, sqrt(0) on the first token.",
       "scale_by_n_keys")
def kv_step_scale_sqrt_len_cache(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_keys, k[None]]), np.vstack([cache_values, v[None]])
    with np.errstate(divide="ignore", invalid="ignore"):
        return _guarded_softmax(keys @ q / np.sqrt(len(cache_keys))) @ values


@wrong("kv_cache_step", "map_of_floats", "pattern (issue 32 review r1)",
       "Returns the right output as map(float, ...).", "not_an_array")
def kv_step_map_of_floats(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_keys, k[None]]), np.vstack([cache_values, v[None]])
    return map(float, _guarded_softmax(keys @ q / np.sqrt(len(q))) @ values)


@wrong("rope", "positions_from_shape_0", "pattern (issue 32 review r1)",
       "Counts the positions as np.arange(x.shape[0]): the batch size for a batch, which numpy refuses.",
       "positions_from_first_axis")
def apply_rope_positions_from_shape_0(x, positions=None):
    x = np.asarray(x, float)
    d = x.shape[-1]
    pos = np.arange(x.shape[0]) if positions is None else np.asarray(positions, float)
    ang = pos[:, None] * 10000.0 ** (-2 * np.arange(d // 2) / d)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@wrong("attention", "generator_function", "pattern (issue 32 review r1)",
       "Written with yield where return was meant: calling it gives a generator.", "not_an_array")
def attention_generator_function(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    yield _stable_rows(S) @ V


@right("softmax", "tolist", "pattern (issue 32 review r1)",
       "Returns the right weights as a list (.tolist()): Correct, with a note to return an array.")
def softmax_tolist(x, axis=-1):
    return _guarded_softmax(x, axis).tolist()


# ==========================================================================
# layer_norm(x, gamma, beta, eps=1e-12)    (notebook 07; issue 33 section 1)
# ==========================================================================

PIECES += ("layer_norm",)


@wrong("layer_norm", "unbiased_variance", "pattern (torch.Tensor.var is unbiased by default)",
       "Takes the variance with ddof=1, dividing by d_model - 1.", "unbiased_variance")
def layer_norm_ddof1(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, ddof=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@wrong("layer_norm", "eps_outside_sqrt", "pattern (the Annotated Transformer's LayerNorm: a_2 * (x - mean) / (std + eps))",
       "Adds eps to the standard deviation instead of the variance.", "eps_outside_sqrt")
def layer_norm_eps_outside(x, gamma, beta, eps=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, keepdims=True)
    return gamma * (x - mean) / (std + eps) + beta


@wrong("layer_norm", "axis_0", "pattern (BatchNorm's axis)",
       "Normalises down the tokens (axis 0), as BatchNorm normalises over the batch.", "wrong_axis")
def layer_norm_axis0(x, gamma, beta, eps=1e-12):
    mean = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@wrong("layer_norm", "gamma_beta_swapped", "pattern", "Adds gamma and multiplies by beta.", "gamma_beta_swapped")
def layer_norm_swapped(x, gamma, beta, eps=1e-12):
    x_hat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return x_hat * beta + gamma


@wrong("layer_norm", "no_gamma_beta", "pattern", "Returns x_hat, gamma and beta left out.", "no_gamma_beta")
def layer_norm_plain(x, gamma, beta, eps=1e-12):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


@wrong("layer_norm", "std_no_eps", "pattern", "Divides by np.std with no eps: NaN on a constant row.", "std_no_eps")
def layer_norm_std_no_eps(x, gamma, beta, eps=1e-12):
    return (x - np.mean(x, axis=-1, keepdims=True)) / np.std(x, axis=-1, keepdims=True) * gamma + beta


@wrong("layer_norm", "no_centering", "pattern", "Divides x by its standard deviation, the mean never subtracted.",
       "no_centering")
def layer_norm_not_centred(x, gamma, beta, eps=1e-12):
    return x / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gamma + beta


@wrong("layer_norm", "rms_norm", "pattern (LLaMA's RMSNorm written for LayerNorm)",
       "x / sqrt(mean(x^2) + eps) * gamma + beta: RMSNorm, no mean.", "rms_norm")
def layer_norm_rms(x, gamma, beta, eps=1e-12):
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps) * gamma + beta


@wrong("layer_norm", "no_sqrt", "pattern", "Divides by the variance, not the standard deviation.", "no_sqrt")
def layer_norm_no_sqrt(x, gamma, beta, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / (((x - mu) ** 2).mean(-1, keepdims=True) + eps) * gamma + beta


@wrong("layer_norm", "whole_array", "pattern", "One mean and variance for all of x (np.mean(x), np.var(x)).",
       "whole_array")
def layer_norm_whole(x, gamma, beta, eps=1e-12):
    return (x - np.mean(x)) / np.sqrt(np.var(x) + eps) * gamma + beta


@wrong("layer_norm", "no_keepdims", "pattern", "Takes the mean and variance without keepdims=True.", "no_keepdims")
def layer_norm_flat(x, gamma, beta, eps=1e-12):
    return (x - x.mean(axis=-1)) / np.sqrt(x.var(axis=-1) + eps) * gamma + beta


@wrong("layer_norm", "eps_hard_coded", "pattern", "Writes 1e-5 in the formula and ignores the eps passed.",
       "eps_fixed")
def layer_norm_eps_hard_coded(x, gamma, beta, eps=1e-12):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma + beta


@wrong("layer_norm", "torch_default_eps", "pattern (torch.nn.LayerNorm's eps=1e-05)",
       "Uses the eps passed, but defaults to torch's 1e-5 instead of 1e-12.", "wrong_default_eps")
def layer_norm_torch_default(x, gamma, beta, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


@wrong("layer_norm", "no_eps_parameter", "pattern", "def layer_norm(x, gamma, beta): no eps to pass.",
       "no_eps_argument")
def layer_norm_no_eps_parameter(x, gamma, beta):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * gamma + beta


@wrong("layer_norm", "returns_nothing", "pattern", "Computes the right output into a variable, never returns it.",
       "returned_none")
def layer_norm_no_return(x, gamma, beta, eps=1e-12):
    out = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta  # noqa: F841


@wrong("layer_norm", "rows_as_generator", "pattern", "Returns the right rows as a generator.", "not_an_array")
def layer_norm_generator(x, gamma, beta, eps=1e-12):
    out = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta
    return (row for row in out)


@wrong("layer_norm", "transposed", "pattern", "Returns the right output transposed (.T).", "wrong_shape")
def layer_norm_transposed(x, gamma, beta, eps=1e-12):
    return ((x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta).T


@right("layer_norm", "loops", "pattern", "Token by token and feature by feature, in plain Python loops.")
def layer_norm_loops(x, gamma, beta, eps=1e-12):
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for t, row in enumerate(flat):
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        for j, v in enumerate(row):
            out[t, j] = (v - mu) / math.sqrt(var + eps) * gamma[j] + beta[j]
    return out.reshape(x.shape)


@right("layer_norm", "float32", "pattern", "np.var in float32 (as a GPU would compute it).")
def layer_norm_float32(x, gamma, beta, eps=1e-12):
    x = np.asarray(x, dtype=np.float32)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + np.float32(eps)) * gamma.astype(np.float32) + beta


@right("layer_norm", "mean_of_squares", "pattern", "var = E[x^2] - E[x]^2, rsqrt by ** -0.5, epsilon named so.")
def layer_norm_moments(x, gamma, beta, epsilon=1e-12):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean(x * x, axis=-1, keepdims=True) - mu * mu
    return (x - mu) * (np.maximum(var, 0.0) + epsilon) ** -0.5 * gamma + beta
