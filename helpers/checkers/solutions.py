"""The worked solution of each piece a learner builds, and the stubs of the learner's workbook.

Each piece has a worked version here, written as a learner would write it
(plain numpy, the steps of the equations; no course code), shown by
``solution(piece)`` or ``diagnose(fn, piece=...).solution()``, and a stub:
the signature and docstring the learner's workbook starts from, with a body
that raises NotImplementedError, which ``diagnose`` reads as "not attempted
yet". ``workbook_source()`` is the text of the pristine workbook,
notebooks/workbook.py; tests/test_checkers.py checks the stored file is
exactly that, and tools/make_workbook.py writes it.

In a student edition (tools/make_student_edition.py) the worked function of
each withheld piece is replaced here by its workbook stub, and ``solution``
says withheld (helpers.edition.piece_withheld).

Imports nothing of the course but helpers.exercises' feedback.py (and helpers/edition.py, which says whether
this edition of the course withholds the worked versions).
"""

from __future__ import annotations

import inspect

import numpy as np

from helpers.edition import piece_withheld, solutions_withheld, withheld_text
from helpers.exercises.feedback import Reveal

__all__ = ["solution", "workbook_source", "function_name", "STUBS", "WORKED", "FUNCTION_NAMES"]

#: The pieces whose workbook function has another name than the piece (the field's name for the function).
FUNCTION_NAMES = {"rope": "apply_rope"}


def function_name(piece):
    """The name of ``piece``'s function in the workbook: the piece's own name, or FUNCTION_NAMES' entry."""
    return FUNCTION_NAMES.get(piece, piece)


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    top = x.max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)       # a slice of -inf everywhere: subtract 0, not -inf
    e = np.exp(x - top)                              # the maximum subtracted: no overflow
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1.0, total)      # nothing to attend to: all zeros, not 0 / 0


def attention(Q, K, V, mask=None):
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)   # (..., n_q, n_k); swapaxes, not .T, for batches
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)        # before the softmax: hidden keys get weight 0
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total == 0, 1.0, total)      # each query's row sums to 1
    return weights @ V, weights


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))          # True on and below the diagonal: j <= i


def padding_mask(is_real):
    is_real = np.asarray(is_real, dtype=bool)
    return is_real[:, None, :]                           # (B, 1, n_k): hides keys, shared by every query


def online_softmax_update(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))      # m' = max(m, the block's largest score)
    shift = np.where(np.isneginf(new_max), 0.0, new_max)        # nothing seen yet: subtract 0, not -inf
    rescale = np.exp(running_max - shift)                       # exp(m - m'): the old totals against m'
    p = np.exp(scores - shift[..., None])                       # this block's exp(s - m'), each <= 1
    new_sum = rescale * running_sum + p.sum(axis=-1)
    new_acc = rescale[..., None] * acc + p @ V_block            # still unnormalised: divide after the last block
    return new_max, new_sum, new_acc


def tiled_attention(Q, K, V, block_size):
    d_k, n_k = K.shape[-1], K.shape[-2]
    running_max = np.full(Q.shape[:-1], -np.inf)                # one entry per query
    running_sum = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, n_k, block_size):                     # the last block may be shorter
        K_block, V_block = K[..., start:start + block_size, :], V[..., start:start + block_size, :]
        scores = Q @ np.swapaxes(K_block, -1, -2) / np.sqrt(d_k)
        running_max, running_sum, acc = online_softmax_update(running_max, running_sum, acc, scores, V_block)
    return acc / running_sum[..., None]                         # divide once, at the end


def kv_cache_step(cache_keys, cache_values, q, k, v):
    keys = np.vstack([cache_keys, k])                           # (t + 1, d_k): append the new token first
    values = np.vstack([cache_values, v])                       # (t + 1, d_v)
    scores = keys @ q / np.sqrt(q.shape[-1])                    # one score per token, itself included
    e = np.exp(scores - scores.max())
    return e / e.sum() @ values                                 # the output, (d_v,)


WORKED = {"softmax": softmax, "attention": attention, "causal_mask": causal_mask, "padding_mask": padding_mask}


def split_heads(x, num_heads):
    *lead, n, d_model = x.shape
    d_k = d_model // num_heads
    x = x.reshape(*lead, n, num_heads, d_k)              # each token's features cut into num_heads slices
    return np.swapaxes(x, -2, -3)                        # (..., num_heads, n, d_k): heads before tokens


def merge_heads(x):
    *lead, num_heads, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)                           # (..., n, num_heads, d_k): back to tokens first
    return x.reshape(*lead, n, num_heads * d_k)          # the heads' slices side by side


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    Q = split_heads(X @ W_Q, num_heads)                  # (..., num_heads, n, d_k)
    K = split_heads(X @ W_K, num_heads)
    V = split_heads(X @ W_V, num_heads)
    heads = attention(Q, K, V, mask)                     # each head scaled by its own sqrt(d_k)
    if isinstance(heads, tuple):                         # (output, weights), or your attention's output alone
        heads = heads[0]
    return merge_heads(heads) @ W_O                      # concatenate the heads, then mix them with W_O


def positional_encoding(n, d_model):
    pos = np.arange(n)[:, None]                          # positions 0 .. n-1, one per row
    two_i = np.arange(0, d_model, 2)                     # 2i for the pairs i = 0 .. d_model/2 - 1
    angles = pos / 10000 ** (two_i / d_model)            # (n, d_model/2), in radians
    pe = np.zeros((n, d_model))
    pe[:, 0::2] = np.sin(angles)                         # even columns: sines
    pe[:, 1::2] = np.cos(angles)                         # odd columns: cosines of the same angles
    return pe


def softmax_backward(weights, grad_weights):
    w, g = np.asarray(weights, dtype=float), np.asarray(grad_weights, dtype=float)
    dot = np.sum(w * g, axis=-1, keepdims=True)          # each row's weighted mean of g: the w w^T part
    return w * (g - dot)                                 # J^T g with J = diag(w) - w w^T, row by row


WORKED = {"softmax": softmax, "attention": attention, "causal_mask": causal_mask, "padding_mask": padding_mask,
          "split_heads": split_heads, "merge_heads": merge_heads, "multi_head_attention": multi_head_attention,
          "positional_encoding": positional_encoding, "softmax_backward": softmax_backward}
"""The worked function of each piece."""
WORKED.update(online_softmax_update=online_softmax_update, tiled_attention=tiled_attention,
              kv_cache_step=kv_cache_step)

STUBS = {
    "softmax": ("softmax(x, axis=-1)", """Turn scores into weights that are positive and sum to 1 along ``axis``.

    x: an array of scores, any shape; entries may be -inf (a hidden key: weight 0).
    axis: the axis that sums to 1 (default the last).
    Returns an array the shape of x. Subtract the maximum before np.exp, so
    scores of 1000 do not overflow; a slice that is -inf everywhere gives all zeros.
    Check it: diagnose(workbook.softmax, piece="softmax")."""),
    "attention": ("attention(Q, K, V, mask=None)", """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V.

    Q: (..., n_q, d_k) queries; K: (..., n_k, d_k) keys; V: (..., n_k, d_v) values.
    mask: None, or booleans broadcastable to (..., n_q, n_k), True = may attend;
    a hidden score becomes -inf before the softmax.
    Returns (output, weights): output (..., n_q, d_v), weights (..., n_q, n_k)
    whose rows sum to 1. Check it in notebook 01: diagnose(workbook.attention,
    masks=False, batches=False); notebook 04 runs the rest: diagnose(workbook.attention)."""),
    "causal_mask": ("causal_mask(n)", """The causal mask of n tokens: each token may attend to itself and the tokens before it.

    n: the number of tokens, a positive whole number.
    Returns booleans of shape (n, n): entry [i, j] is True when j <= i.
    Check it: diagnose(workbook.causal_mask, piece="causal_mask")."""),
    "padding_mask": ("padding_mask(is_real)", """The padding mask of a batch: no query may attend to a [PAD] key.

    is_real: booleans of shape (B, n_k), True at the real tokens of each sentence.
    Returns booleans of shape (B, 1, n_k), True = may attend: one row per
    sentence, shared by every query (the axis of length 1 broadcasts).
    Check it: diagnose(workbook.padding_mask, piece="padding_mask")."""),
    "split_heads": ("split_heads(x, num_heads)", """Cut each token's features into num_heads contiguous slices, one per head.

    x: (..., n, d_model); num_heads divides d_model, d_k = d_model // num_heads.
    Returns (..., num_heads, n, d_k): head h holds features h*d_k .. (h+1)*d_k - 1
    of every token. A reshape alone mixes tokens: reshape to (..., n, num_heads, d_k),
    then swap the heads and tokens axes.
    Check it: diagnose(workbook.split_heads, piece="split_heads")."""),
    "merge_heads": ("merge_heads(x)", """Put the heads back side by side: the inverse of split_heads.

    x: (..., num_heads, n, d_k). Returns (..., n, num_heads * d_k), so that
    merge_heads(split_heads(x, h)) is x again. Swap the heads and tokens
    axes back before the reshape.
    Check it: diagnose(workbook.merge_heads, piece="merge_heads")."""),
    "multi_head_attention": ("multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None)", """Multi-head self-attention (Vaswani et al. 2017, section 3.2.2).

    X: (..., n, d_model); W_Q, W_K, W_V, W_O: (d_model, d_model).
    mask: None, or booleans (True = may attend): (n, n) for every sentence and
    head, or (B, 1, 1, n) per sentence with a head axis.
    Q = X W_Q (and K, V), split into num_heads heads; attention in each head,
    scaled by sqrt(d_k) with d_k = d_model // num_heads (not d_model); merge the
    heads, then multiply by W_O. Returns the output (..., n, d_model), or
    (output, weights). Your own attention and split_heads may do the work.
    Check it: diagnose(workbook.multi_head_attention, piece="multi_head_attention")."""),
    "positional_encoding": ("positional_encoding(n, d_model)", """The sinusoidal positional encoding (Vaswani et al. 2017, section 3.5).

    n: positions 0 .. n-1; d_model: an even width.
    Returns (n, d_model): PE[pos, 2i] = sin(pos / 10000^(2i / d_model)) and
    PE[pos, 2i + 1] = cos(the same angle), in radians; sines and cosines
    interleaved, so row 0 is 0, 1, 0, 1, ...
    Check it: diagnose(workbook.positional_encoding, piece="positional_encoding")."""),
    "softmax_backward": ("softmax_backward(weights, grad_weights)", """From dL/dweights to dL/dscores, through a softmax over the last axis.

    weights: (..., n) rows of softmax weights (a row of zeros: a query with
    nothing to attend to); grad_weights: dL/dweights, the same shape.
    Returns dL/dscores, the same shape: J^T g with the Jacobian
    J = diag(w) - w w^T, row by row w * (g - sum_j w_j g_j). A zero row gives 0.
    Check it: diagnose(workbook.softmax_backward, piece="softmax_backward")."""),
}
"""Each piece's stub in the workbook: (signature, docstring)."""
STUBS.update({
    "online_softmax_update": (
        "online_softmax_update(running_max, running_sum, acc, scores, V_block)",
        """One step of the online softmax: fold a new block of keys into the running totals.

    running_max: (..., n_q), the largest score seen so far (-inf before the first block).
    running_sum: (..., n_q), the sum of exp(score - running_max) so far (0 at first).
    acc: (..., n_q, d_v), the sum of exp(score - running_max) * value so far (0 at first).
    scores: (..., n_q, b), this block's scaled scores (-inf for a hidden key);
    V_block: (..., b, d_v), its values.
    Returns (new_max, new_sum, new_acc), the same shapes. When the max rises
    from m to m', multiply the old sum and acc by exp(m - m'), and take this
    block's exp(s - m') against the new max. Keep acc unnormalised: the sum of
    exp(score - new_max) * value, not divided by the running sum (FlashAttention 1
    keeps it divided; here tiled_attention divides once, after the last block).
    A row that is -inf everywhere so far stays (-inf, 0, 0).
    You may update running_max, running_sum and acc in place and return them, as
    FlashAttention's kernels do; change neither scores nor V_block (V_block is
    often a slice of the caller's V).
    Check it: diagnose(workbook.online_softmax_update, piece="online_softmax_update")."""),
    "tiled_attention": ("tiled_attention(Q, K, V, block_size)", """Attention block by block of keys, never holding all the scores.

    Q: (..., n_q, d_k); K: (..., n_k, d_k); V: (..., n_k, d_v); block_size: keys per block.
    Returns the output (..., n_q, d_v), equal to softmax(Q K^T / sqrt(d_k)) V:
    fold each block of keys in with online_softmax_update, then divide acc by
    the running sum once. The last block is shorter when n_k is not a multiple.
    Check it: diagnose(workbook.tiled_attention, piece="tiled_attention")."""),
    "kv_cache_step": ("kv_cache_step(cache_keys, cache_values, q, k, v)", """One decoding step with a KV cache.

    cache_keys: (t, d_k) and cache_values: (t, d_v), the earlier tokens (t may be 0);
    q, k: (d_k,) and v: (d_v,), the new token's query, key and value.
    Append k and v to the cached ones first (a token sees itself), then attend
    q over all t + 1 keys, scores scaled by 1/sqrt(d_k). Returns the output (d_v,).
    Change nothing in place: the caller appends k and v to its own cache after.
    Check it: diagnose(workbook.kv_cache_step, piece="kv_cache_step")."""),
})

def apply_rope(x, positions=None):
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    m = np.arange(n) if positions is None else np.asarray(positions, dtype=float)   # position of each token
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)         # theta_i = 10000^(-2i/d), one rate per pair
    angle = m[:, None] * theta                           # (n, d/2): m theta_i
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]               # the paper's pairs: neighbours (2i, 2i + 1)
    out = np.empty(x.shape)
    out[..., 0::2] = even * cos - odd * sin              # each pair turned by m theta_i, counterclockwise
    out[..., 1::2] = even * sin + odd * cos
    return out


WORKED.update(rope=apply_rope)
STUBS.update({"rope": ("apply_rope(x, positions=None)", """Rotary position embedding (Su et al. 2021, RoFormer, section 3.4.2).

    x: (..., n, d) queries or keys, d even; positions: (n,) numbers, None
    meaning 0, 1, ..., n - 1. Turn each pair of neighbouring features
    (2i, 2i + 1) of the token at position m by the angle m * theta_i,
    theta_i = 10000^(-2i/d):
        out[2i]     = x[2i] cos(m theta_i) - x[2i+1] sin(m theta_i)
        out[2i + 1] = x[2i] sin(m theta_i) + x[2i+1] cos(m theta_i)
    Returns a new array, the shape of x.
    Check it: diagnose(workbook.apply_rope, piece="rope")."""),
})


def layer_norm(x, gamma, beta, eps=1e-12):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)                  # each token's mean, over its d_model features
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)   # divided by d_model: the biased variance
    x_hat = (x - mu) / np.sqrt(var + eps)                # eps inside the root: a constant row gives 0, not 0 / 0
    return x_hat * gamma + beta                          # the learned gain, then the bias


WORKED.update(layer_norm=layer_norm)
STUBS.update({"layer_norm": ("layer_norm(x, gamma, beta, eps=1e-12)", """LayerNorm over the last axis (Ba, Kiros & Hinton 2016, eq. 3-4; Vaswani et al. 2017, sec. 3.1).

    x: (..., d_model) token vectors; gamma, beta: (d_model,), the learned gain
    and bias; eps: added to the variance (1e-12, as BERT and MiniLM).
    For each token, over its d_model features:
        mu = mean(x),  var = mean((x - mu)^2)   (divided by d_model)
        out = (x - mu) / sqrt(var + eps) * gamma + beta
    Returns a new array, the shape of x.
    Check it: diagnose(workbook.layer_norm, piece="layer_norm")."""),
})


WORKBOOK_HEADER = '''"""Your workbook: the functions you build in this course, one per piece.

Open this file in JupyterLab (double-click workbook.py in the file browser).
Replace a function's raise line with your code, save it (Ctrl+S), and run the
notebook's check cell. Each check cell says how: diagnose(workbook.softmax,
piece="softmax"). Later notebooks import this file, so what you finish here
is there for them. To hand in your work, hand in this file.

Return numpy arrays, as each docstring says: later cells compute with them.
A list passes the check, with a note; a generator or a map(...) does not (it
gives its items only once): return np.array(...) of it.
"""

import numpy as np
'''


def workbook_source():
    """The text of the pristine workbook, notebooks/workbook.py: every stub, each raising NotImplementedError."""
    parts = [WORKBOOK_HEADER]
    for piece, (signature, doc) in STUBS.items():
        parts.append(f'\n\ndef {signature}:\n    """{doc}\n    """\n'
                     f'    raise NotImplementedError("{piece}: not written yet")\n')
    return "".join(parts)


def solution(piece):
    """A worked version of ``piece`` as a :class:`~helpers.exercises.Reveal` (folded until clicked).

    piece: one of the keys of :data:`WORKED` ("softmax", "attention", "causal_mask", "padding_mask",
    "split_heads", "merge_heads", "multi_head_attention", "positional_encoding", "softmax_backward", "online_softmax_update", "tiled_attention",
    "kv_cache_step", "rope", whose workbook function is apply_rope: :data:`FUNCTION_NAMES`, "layer_norm").
    Raises ValueError for any other piece.
    """
    if not isinstance(piece, str) or piece not in WORKED:
        raise ValueError(f"piece must be one of {', '.join(map(repr, WORKED))}; got {piece!r}")
    if solutions_withheld() or piece_withheld(piece):   # a student edition (helpers/edition.py): the worked version goes
        return Reveal(f"A worked {piece} (withheld)", withheld_text(
            f"the worked {piece}", f"diagnose's message names what is wrong and how to fix it, and the "
            f"docstring of {piece} in workbook.py says what it must do, with its shapes."))
    return Reveal(f"A worked {piece}", inspect.getsource(WORKED[piece]).rstrip())


# ---- the finale (notebook 11): one encoder block of the real model, from your own pieces ----

def encoder_block(x, params, num_heads, mask=None):
    from scipy.special import erf                                # numpy has no erf; the exact GELU needs it
    p = params
    Q, K, V = (split_heads(x @ p["W_" + r] + p["b_" + r], num_heads) for r in "QKV")   # every projection has a bias
    heads = attention(Q, K, V, mask)                             # your attention: scores / sqrt(d_k), d_k = 32
    if isinstance(heads, tuple):                                 # (output, weights), or the output alone
        heads = heads[0]
    x = layer_norm(x + merge_heads(heads) @ p["W_O"] + p["b_O"], p["gamma_1"], p["beta_1"], p["eps"])  # residual, then your LayerNorm
    inner = x @ p["W_1"] + p["b_1"]                              # (..., n, 1536)
    inner = 0.5 * inner * (1 + erf(inner / np.sqrt(2)))          # GELU, the exact one
    return layer_norm(x + inner @ p["W_2"] + p["b_2"], p["gamma_2"], p["beta_2"], p["eps"])   # residual, then LayerNorm


WORKED.update(encoder_block=encoder_block)
STUBS.update({"encoder_block": ("encoder_block(x, params, num_heads, mask=None)", """One encoder layer of all-MiniLM-L6-v2 (BERT), from your own pieces.

    x: (..., n, d_model) token vectors entering the layer; params: the dict
    model.layer_parameters(layer) gives (W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O,
    gamma_1, beta_1, W_1, b_1, W_2, b_2, gamma_2, beta_2, eps); num_heads: 12.
    mask: None, or booleans (..., 1, 1, n), True = may attend (hides [PAD] keys).
    Post-LN, as BERT:  x = LayerNorm(x + MultiHead(x)),  then
                       x = LayerNorm(x + GELU(x W_1 + b_1) W_2 + b_2).
    MultiHead: q = x W_Q + b_Q (and k, v) cut into heads with your split_heads,
    your attention in each (scores / sqrt(d_k), d_k = d_model / num_heads), the
    heads joined with your merge_heads, then @ W_O + b_O (multi_head_attention
    has no biases: build it from the pieces).
    LayerNorm: your layer_norm of notebook 07, layer_norm(t, gamma, beta, params["eps"]).
    GELU(t) = 0.5 t (1 + erf(t / sqrt(2))), erf from scipy.special.
    Returns (..., n, d_model). Check it: check_your_block(workbook.encoder_block)."""),
})
