"""The attention mechanism of notebooks 01-05, and the grouped-query heads and sliding windows of current models, in numpy and nothing else.

This is the one file to read to see the mechanism: each function's body is
its computation, and each input check is one call into helpers/inputs.py
(where every check names the argument, what it got and what it needs).
Everything follows the row-vector convention of Vaswani et al. (2017),
"Attention Is All You Need": a sentence is a matrix X of shape (n, d_model),
one row per token, and a projection is a right-multiplication, Q = X @ W_Q
with W_Q of shape (d_model, d_k). Any number of leading batch dimensions
(..., n, d) is allowed.

Masks are boolean and True means "may attend". That is the convention of the
boolean ``attn_mask`` of PyTorch's ``torch.nn.functional.scaled_dot_product_attention``
(True: takes part in attention), and the opposite of ``torch.nn.MultiheadAttention``,
where a True in a boolean ``attn_mask`` or ``key_padding_mask`` means "may NOT attend".

Positions (sinusoidal_positional_encoding) are in helpers/positions.py; the
tiled attention, online softmax and KV cache of notebook 08 in helpers/tiling.py.
"""

from __future__ import annotations

import numpy as np

from helpers import inputs

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "attention_entropy",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
]

#: Scores within +-EXP_SAFE need no max subtraction before exp: exp(600) is
#: about 3.8e260, so even a sum of 10^40 of them stays below float64's
#: 1.8e308, and exp(-600), about 2.7e-261, is still a normal positive number.
EXP_SAFE = 600.0


# --------------------------------------------------------------------------
# Softmax
# --------------------------------------------------------------------------

def softmax(x, axis=-1):
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    softmax(x)_j = exp(x_j) / sum_i exp(x_i)

    The maximum of each slice is subtracted before exponentiating. This
    changes nothing mathematically (the factor exp(-max) cancels) but keeps
    exp from overflowing: scores of 1000 and 1001 give 0.269 and 0.731.
    Integer scores beyond 2**53, which float64 cannot hold exactly, have
    their maximum subtracted in integers before they become floats, so
    their differences survive: 2**53 and 2**53 + 1 give 0.269 and 0.731 too
    (``helpers.inputs.exact_gaps``; long doubles likewise, in long double).

    Parameters
    ----------
    x : array_like of real numbers, any shape. Entries may be ``-inf``
        (they get weight 0); NaN and ``+inf`` are refused.
    axis : int, the axis that sums to 1 (default: the last).

    Returns
    -------
    ndarray of floats, the shape of ``x``. A slice that is ``-inf``
    everywhere has nothing to give weight to and comes back as all zeros
    (not NaN).

    Raises
    ------
    ValueError if ``x`` is not real-valued, holds NaN or ``+inf`` (or a
    number too large for float64), is a numpy masked array (fill its hidden
    entries with -inf instead: ``softmax(np.ma.filled(x, -np.inf))``), or
    ``axis`` is not an axis of ``x``.

    Cost: one new array, the result; the exponentials and the division are
    done in place in it.
    """
    scores = inputs.real_array(x, "x", allow_neginf=True,
                               how="to leave masked entries out, fill them with -inf: softmax(np.ma.filled(x, -np.inf))")
    inputs.at_least(scores, "x", 1)
    axis = inputs.checked_axis(scores, axis)
    inputs.not_empty(scores, "x", axis, f"entry along axis {axis} to turn into weights")
    gaps = inputs.exact_gaps(x, axis)                # None unless x holds integers beyond 2**53 or long doubles
    return _exp_normalise(_minus_max(scores, axis) if gaps is None else gaps, axis)   # the one new array


def _minus_max(x, axis, out=None):
    """x minus the maximum of each slice along ``axis`` (into ``out``): exp of the result cannot overflow.

    A slice that is -inf everywhere is left as it is: its exp is 0 everywhere.
    """
    top = np.max(x, axis=axis, keepdims=True)
    top[np.isneginf(top)] = 0.0
    with np.errstate(over="ignore"):  # x - top may overflow to -inf, whose exp is the right 0
        return np.subtract(x, top, out=out)


def _exp_normalise(e, axis):
    """exp(e), then divide each slice along ``axis`` by its sum, all in place in ``e``.

    ``e`` must hold numbers whose exp cannot overflow (each slice's maximum
    subtracted, or all within +-EXP_SAFE) or -inf. A slice whose sum is 0
    (all -inf) stays all zeros.
    """
    np.exp(e, out=e)
    total = np.sum(e, axis=axis, keepdims=True)
    total[total == 0.0] = 1.0
    e *= np.reciprocal(total, out=total)  # one division per slice, then a multiplication per entry
    return e


# --------------------------------------------------------------------------
# Scaled dot-product attention
# --------------------------------------------------------------------------

def scaled_dot_product_attention(Q, K, V, mask=None, scale=None):
    """Scaled dot-product attention, Vaswani et al. (2017), section 3.2.1, eq. (1).

        scores  = Q @ K^T                  (how well each query matches each key)
        weights = softmax(scores * scale)  (each row sums to 1)
        output  = weights @ V              (a weighted mixture of the values)

    Parameters
    ----------
    Q : array (..., n_q, d_k), one query per row.
    K : array (..., n_k, d_k), one key per row.
    V : array (..., n_k, d_v), one value per row, in the same order as K.
    mask : optional boolean array broadcastable to (..., n_q, n_k).
        True means the query may attend to that key. A masked key gets
        exactly zero weight: its score is set to -inf *before* the softmax.
        A causal mask is (n_q, n_k) (``causal_mask``). A padding mask for a
        batch of B sentences is (B, 1, n_k), or (B, 1, 1, n_k) with a head
        axis: the 1 is the query axis, so every query of a sentence loses
        the same keys. ``padding_mask(is_real)`` builds it from the (B, n_k)
        real-token flags; passing those flags as they are would line B up
        with n_q (silently, when B happens to equal n_q).
        A numpy masked array is refused (its True means hidden).
    scale : optional positive number multiplying the scores.
        None (the default) means 1 / sqrt(d_k); 1.0 switches scaling off.

    Integer Q, K and V are converted to float64 first. Past 2**53 that
    rounds an entry by at most 2**-53 of itself: the same relative size as
    the rounding of every product and sum of Q @ K^T, so the result is as
    exact as the float computation can be. (softmax of integer *scores* is
    different: there only differences count, and it subtracts in integers.)

    Returns
    -------
    output : ndarray (..., n_q, d_v)
    weights : ndarray (..., n_q, n_k), the attention weights; every row sums
        to 1, except a row whose mask is False everywhere: that query has
        nothing to attend to, so its weights are all 0 and its output is the
        zero vector (never NaN, and no warning).

    Raises
    ------
    ValueError, naming the argument and the shapes it got, when an input has
    fewer than 2 dimensions, Q and K disagree on d_k, K and V disagree on
    n_k, batch dimensions do not broadcast, an input holds NaN or inf (or a
    number too large for float64), an input or the mask is a numpy masked
    array, the mask is not boolean or does not broadcast to (..., n_q, n_k),
    scale is not a positive finite number, or the scores overflow float64.

    Cost: the input checks read Q, K and V once (O(n d)); the scale is
    applied to Q, and a bound on the scores from the longest query and key
    (Cauchy-Schwarz) decides whether overflow needs looking at (only when
    the bound passes 1e300) and whether each row's maximum must be
    subtracted before exp (only past +-EXP_SAFE). The scores are the one
    (..., n_q, n_k) array made; the softmax works in place in it, so the
    weights returned are that same array.
    """
    Q, K, V, _ = inputs.checked_qkv(Q, K, V, queries_needed=False)
    scale = inputs.checked_scale(scale, Q.shape[-1])
    if mask is not None:
        scores_shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])
        mask = inputs.checked_mask(mask, scores_shape)

    with np.errstate(over="ignore", invalid="ignore"):  # an overflow to inf is refused just below
        scaled_Q = Q * scale                        # (scale Q) K^T: n_q * d_k products instead of n_q * n_k
        scores = scaled_Q @ np.swapaxes(K, -1, -2)  # Q K^T; not .T, which would also reverse the batch axes
    bound = _largest_score(scaled_Q, K)
    if not bound < 1e300:                           # only then can a score have overflowed
        inputs.refuse_overflow(scores, Q, K, scale)
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)     # before the softmax: a masked key's weight is exactly 0
    # Within +-EXP_SAFE exp cannot overflow: skipping the max subtraction saves ~10 ms of a 510-token pass.
    if not bound <= EXP_SAFE:
        _minus_max(scores, -1, out=scores)
    weights = _exp_normalise(scores, -1)            # the softmax, in place in the scores
    return weights @ V, weights


def _largest_score(Q, K):
    """A bound on every |q . k|, in O(n d): the longest query times the longest key (Cauchy-Schwarz)."""
    with np.errstate(over="ignore"):  # a norm too large for float64 is inf: the bound is then inf
        longest_q = np.sqrt(np.max(np.einsum("...i,...i->...", Q, Q), initial=0.0))
        longest_k = np.sqrt(np.max(np.einsum("...i,...i->...", K, K), initial=0.0))
    return float(longest_q) * float(longest_k)


# --------------------------------------------------------------------------
# Masks, and how spread out the weights are
# --------------------------------------------------------------------------

def causal_mask(n):
    """The causal mask for a sequence of ``n`` tokens: shape (n, n), dtype bool.

    Entry [i, j] is True when query i may attend to key j, that is when
    j <= i: each token sees itself and the tokens before it, never the ones
    after it (Vaswani et al. 2017, section 3.2.3, "masking out ... all values
    in the input of the softmax which correspond to illegal connections").

    Raises ValueError unless ``n`` is a positive integer.
    """
    n = inputs.positive_whole(n, "n", "a positive whole number of tokens")
    return np.tril(np.ones((n, n), dtype=bool))


def sliding_window_mask(n, window):
    """The causal sliding-window mask of Mistral 7B (Jiang et al. 2023, section 2): shape (n, n), bool.

    Entry [i, j] is True when 0 <= i - j < window: each query sees itself and
    the window - 1 tokens before it, at most ``window`` keys, never a later
    one. window >= n gives ``causal_mask(n)``. (Longformer, Beltagy et al.
    2020, section 3.1, uses a window on both sides, in an encoder.)

    The mask alone saves no memory: scaled_dot_product_attention still builds
    all n x n scores; the saving comes from not computing the key blocks
    wholly outside the window. Stacked over L layers a token draws on
    L * (window - 1) + 1 positions.

    Raises ValueError unless ``n`` and ``window`` are positive whole numbers.
    """
    n = inputs.positive_whole(n, "n", "a positive whole number of tokens")
    window = inputs.positive_whole(window, "window", "a positive whole number of keys (itself included)")
    back = np.arange(n)[:, None] - np.arange(n)[None, :]     # i - j: how far key j lies behind query i
    return (back >= 0) & (back < window)


def padding_mask(is_real, num_heads=None):
    """The padding mask of a batch of sentences, shaped for ``scaled_dot_product_attention``.

    A batch pads its shorter sentences with filler tokens ([PAD]) to one
    length n_k. No query may attend to a filler key, whatever the query.
    So the mask has one row per sentence, shared by every query (and every
    head): a query axis of length 1, which broadcasts.

    Parameters
    ----------
    is_real : boolean array (B, n_k), True where the token is a real one,
        False at the padding; (n_k,) for one sentence.
    num_heads : optional. None gives shape (B, 1, n_k) for scores
        (B, n_q, n_k); any positive whole number adds a head axis of length
        1 too, giving (B, 1, 1, n_k) for scores (B, num_heads, n_q, n_k).

    Returns
    -------
    ndarray of bool, (B, 1, n_k) or (B, 1, 1, n_k) (for one sentence
    (1, n_k) or (1, 1, n_k)): True = may attend, the course's convention.
    It is a read-only view of ``is_real`` (no copy; writing into it raises
    instead of changing your flags).

    Why not pass ``is_real`` (B, n_k) itself: numpy would line its B up with
    the queries axis n_q, and when B equals n_q nothing fails, the wrong
    keys are just hidden from the wrong queries.

    Raises
    ------
    ValueError if ``is_real`` is not a boolean array of 1 or 2 dimensions,
    or is a numpy masked array, or ``num_heads`` is not None or a positive
    whole number.
    """
    flags = inputs.checked_flags(is_real)
    if num_heads is not None:
        inputs.positive_whole(num_heads, "num_heads", "None or a positive whole number")
    return inputs.read_only(flags[..., None, :] if num_heads is None else flags[..., None, None, :])


def attention_entropy(weights):
    """The entropy of each row of attention weights, in nats.

        H(row) = -sum_j w_j * log(w_j),   with 0 * log(0) taken as 0

    A row that puts all its weight on one key has entropy 0; a row spread
    evenly over n keys has the largest possible entropy, log(n). A row of
    all zeros (a query with nothing to attend to) gets 0.

    Parameters
    ----------
    weights : array (..., n_q, n_k) of non-negative finite numbers
        (a single row of shape (n_k,) is accepted too).

    Returns
    -------
    ndarray (..., n_q) of entropies in nats (a float array of shape () for a
    single row).

    Raises ValueError if ``weights`` is not a real array with at least one
    dimension, is a numpy masked array, holds NaN, inf or a negative number,
    or has a row that sums to neither 1 nor 0 (within 1e-6): entropy is
    defined for weights.
    """
    w = inputs.checked_weights(weights)
    safe = np.where(w > 0, w, 1.0)  # log(1) = 0 makes 0 * log 0 count as 0
    return -np.sum(w * np.log(safe), axis=-1) + 0.0  # + 0.0 turns -0.0 into 0.0


# --------------------------------------------------------------------------
# Multi-head attention
# --------------------------------------------------------------------------

def split_heads(x, num_heads):
    """Cut the features of ``x`` into ``num_heads`` contiguous slices.

    x : array (..., n, d_model)  ->  array (..., num_heads, n, d_model // num_heads)

    Head h gets features h*d_k to (h+1)*d_k - 1. The reshape is followed by
    a transpose of the head and token axes; a reshape alone would mix
    features of different tokens into one head. ``merge_heads`` undoes it.
    The result is a read-only view of ``x`` (no copy; writing into it raises
    instead of changing ``x``).

    Raises ValueError if ``num_heads`` is not a positive integer dividing d_model,
    or ``x`` is not an array of real numbers of at least 2 dimensions (a
    numpy masked array is refused).
    """
    x = inputs.real_array(x, "x")
    inputs.at_least(x, "x", 2, "(..., n, d_model)")
    num_heads = inputs.checked_num_heads(num_heads, x.shape[-1])
    d_k = x.shape[-1] // num_heads
    x = x.reshape(*x.shape[:-1], num_heads, d_k)  # (..., n, h, d_k)
    return inputs.read_only(np.swapaxes(x, -2, -3))  # (..., h, n, d_k), a view: read-only


def merge_heads(x):
    """Put the heads back side by side: (..., num_heads, n, d_k) -> (..., n, num_heads * d_k).

    The inverse of ``split_heads``: merge_heads(split_heads(x, h)) equals x.
    The result is read-only: with one head or one token it is a view of
    ``x``, otherwise a new array, and either way writing into it raises.
    Raises ValueError if ``x`` is not an array of real numbers of at least 3
    dimensions (a numpy masked array is refused).
    """
    x = inputs.real_array(x, "x")
    inputs.at_least(x, "x", 3, "(..., num_heads, n, d_k)")
    x = np.swapaxes(x, -2, -3)                     # (..., n, h, d_k)
    return inputs.read_only(x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1]))


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, num_kv_heads=None):
    """Multi-head self-attention, Vaswani et al. (2017), section 3.2.2; grouped-query with ``num_kv_heads``.

        Q = X W_Q,  K = X W_K,  V = X W_V            (each (..., n, d_model))
        head_h = attention(Q_h, K_h, V_h)             (Q_h: features of head h)
        output = concat(head_1, ..., head_H) W_O

    Each head works on its own contiguous slice of d_k = d_model / num_heads
    projected features and scales its scores by 1/sqrt(d_k), the width of
    that head's keys, not 1/sqrt(d_model). With 8 heads of 64 on a width of
    512 the heads together have the parameters and multiply-adds of one
    full-width head, but num_heads * n * n attention weights instead of n * n.

    Grouped-query attention (Ainslie et al. 2023, section 2.2): with
    ``num_kv_heads`` = G, W_K and W_V make only G key/value heads of d_k
    features, and query heads are cut into G groups of num_heads / G
    neighbours, each sharing one: query head h reads key/value head
    h // (num_heads / G). G = num_heads is the multi-head attention above;
    G = 1 is multi-query attention (Shazeer 2019), one key/value head for all.
    A cache of keys and values then holds G heads instead of num_heads.

    Parameters
    ----------
    X : array (..., n, d_model)
    W_Q : array (d_model, d_model); columns h*d_k .. (h+1)*d_k - 1 belong
        to query head h.
    W_K, W_V : arrays (d_model, num_kv_heads * d_k), (d_model, d_model)
        without grouping; columns g*d_k .. (g+1)*d_k - 1 belong to key/value
        head g.
    W_O : array (d_model, d_model), applied to the concatenated heads.
    num_heads : positive integer dividing d_model.
    mask : optional boolean array, True = may attend. Its head axis is
        placed by its number of dimensions (``inputs.checked_heads_mask``):
        - 2 dimensions, (n, n) or (1, n) (``causal_mask(n)``): every
          sentence and every head;
        - as many as X, (..., n or 1, n): per sentence, the same for each of
          its heads; the default padding mask ``padding_mask(is_real)``,
          (B, 1, n), is read so, sentence b's padding for sentence b (with
          B sentences and B heads numpy alone would line B up with the heads);
        - one more than X, (..., num_heads or 1, n or 1, n): per head,
          ``padding_mask(is_real, num_heads=h)`` (B, 1, 1, n) among them.
        More dimensions are refused, with a message saying what to pass.
    num_kv_heads : None (num_heads), or a positive whole number dividing
        num_heads: the number of key/value heads.

    Returns
    -------
    output : ndarray (..., n, d_model)
    weights : ndarray (..., num_heads, n, n), one matrix of attention
        weights per head.

    Raises
    ------
    ValueError naming the argument and shapes when X is not (..., n, d_model),
    a weight matrix is not (d_model, d_model), num_heads does not divide
    d_model (the message lists the values that do), num_kv_heads does not
    divide num_heads (likewise), or the mask is bad
    (not boolean, a numpy masked array, too many dimensions, or not
    broadcasting to (..., num_heads, n, n)).
    """
    X = inputs.real_array(X, "X")
    inputs.at_least(X, "X", 2, "(..., n, d_model)")
    inputs.not_empty(X, "X", -2, "token (n >= 1)")
    inputs.not_empty(X, "X", -1, "feature (d_model >= 1)")
    num_heads = inputs.checked_num_heads(num_heads, X.shape[-1])
    kv_width = "d_model" if num_kv_heads is None else "num_kv_heads * d_k"   # how the message names it
    num_kv_heads = inputs.checked_num_kv_heads(num_kv_heads, num_heads)
    W_Q, W_O = (inputs.checked_projection(W, name, X) for W, name in ((W_Q, "W_Q"), (W_O, "W_O")))
    W_K, W_V = (inputs.checked_projection(W, name, X, num_kv_heads * (X.shape[-1] // num_heads), kv_width)
                for W, name in ((W_K, "W_K"), (W_V, "W_V")))
    if mask is not None:
        mask = inputs.checked_heads_mask(mask, X, num_heads)  # per sentence or per head: see above
    Q = split_heads(X @ W_Q, num_heads)
    group = num_heads // num_kv_heads                        # query heads per key/value head
    K = np.repeat(split_heads(X @ W_K, num_kv_heads), group, axis=-3)   # head h reads K head h // group
    V = np.repeat(split_heads(X @ W_V, num_kv_heads), group, axis=-3)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # scale 1/sqrt(d_k) per head
    return merge_heads(heads) @ W_O, weights
