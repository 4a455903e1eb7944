"""The attention mechanism, in numpy and nothing else.

This is the one file to read to see the whole mechanism. Everything follows
the row-vector convention of Vaswani et al. (2017), "Attention Is All You
Need": a sentence is a matrix X of shape (n, d_model), one row per token, and
a projection is a right-multiplication, Q = X @ W_Q with W_Q of shape
(d_model, d_k). Any number of leading batch dimensions (..., n, d) is allowed.

Masks are boolean and True means "may attend". That is the convention of the
boolean ``attn_mask`` of PyTorch's ``torch.nn.functional.scaled_dot_product_attention``
(True: takes part in attention), and the opposite of ``torch.nn.MultiheadAttention``,
where a True in a boolean ``attn_mask`` or ``key_padding_mask`` means "may NOT attend".
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "attention_entropy",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "sinusoidal_positional_encoding",
]


# --------------------------------------------------------------------------
# Input checks. Each one raises ValueError naming the argument and what it got,
# so a learner never meets a traceback from deep inside numpy.
# --------------------------------------------------------------------------

def _refuse_masked_array(x, name, how=None):
    """Raise ValueError if ``x`` is a numpy masked array (or a list or tuple holding one).

    ``np.asarray`` drops a masked array's mask without a word, so the hidden
    entries would come back and take part. And the two conventions are
    opposite: in ``np.ma`` True means *hidden*, in the course's masks True
    means *may attend*. So a masked array is refused everywhere, with the
    conversion spelled out; ``how`` replaces the default conversion text.
    """
    if isinstance(x, np.ma.MaskedArray) or (
            isinstance(x, (list, tuple)) and any(isinstance(e, np.ma.MaskedArray) for e in x)):
        how = how or (f"pass the plain data, np.ma.getdata({name}), and, where entries must be left out, "
                      f"a boolean mask built from the masked array's own: mask = ~np.ma.getmaskarray({name})")
        raise ValueError(
            f"{name} is a numpy masked array (np.ma), which is not accepted: numpy would drop its mask silently "
            f"and the hidden entries would take part. Note that in np.ma True means *hidden*, the opposite of "
            f"the course's masks, where True means *may attend*. Instead, {how}"
        )


def _as_real_array(x, name, allow_neginf=False, how=None):
    """Return ``x`` as a float array, or raise ValueError naming ``name``.

    NaN and inf are refused; with ``allow_neginf`` -inf is let through. A
    numpy masked array is refused (see ``_refuse_masked_array``; ``how``
    is its conversion advice). The check costs two reductions (min and max)
    over ``x``; only a failing input is looked at entry by entry.
    """
    _refuse_masked_array(x, name, how)
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and other oddities
        raise ValueError(f"{name} must be an array of real numbers; could not read it as one ({exc})") from None
    if arr.dtype.kind == "O":  # Python objects: huge ints, Fractions, None, text...
        odd = next((v for v in arr.flat if v is None or isinstance(v, (str, bytes))), 0)
        if odd != 0:  # astype(float) would turn None into NaN and "1.5" into 1.5: neither is a number here
            raise ValueError(f"{name} must be an array of real numbers; got dtype object with an entry "
                             f"that is not a number ({odd!r}) (shape {arr.shape})")
        try:
            arr = arr.astype(float)
        except OverflowError:
            raise ValueError(f"{name} holds a number too large for float64 (beyond about 1.8e308); "
                             f"every entry must be a finite float64 number (shape {arr.shape})") from None
        except Exception:
            raise ValueError(f"{name} must be an array of real numbers; got dtype object with an entry "
                             f"that is not a number (shape {arr.shape})") from None
    if arr.dtype.kind not in "iuf":  # integers or floats; not bool, complex, text, dates, objects
        raise ValueError(f"{name} must be an array of real numbers; got dtype {arr.dtype}")
    original = arr
    with np.errstate(over="ignore"):  # a long double too big for float64 becomes inf, refused below
        arr = arr.astype(float, copy=False)
    if arr.size == 0:
        return arr
    top, low = arr.max(), arr.min()  # NaN propagates through both; cheap, no temporary arrays
    if np.isfinite(top) and (np.isfinite(low) or (allow_neginf and np.isneginf(low))):
        return arr
    need = "a finite number or -inf" if allow_neginf else "a finite number"
    if np.isnan(arr).any():
        what = "NaN"
    else:
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if original.dtype != arr.dtype and np.isfinite(original[bad]).all():
            raise ValueError(
                f"{name} holds a number too large for float64 (largest magnitude about 1.8e308): got "
                f"{np.format_float_scientific(original[bad][0], precision=3, trim='-')} in dtype {original.dtype}; "
                f"every entry must be {need} in float64 (shape {arr.shape})")
        what = "inf" if np.isposinf(arr[bad]).any() else "-inf"
    raise ValueError(f"{name} contains {what}; every entry must be {need} (shape {arr.shape})")


def _at_least_2d(arr, name, what):
    if arr.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions {what}; got shape {arr.shape}")


def _not_empty(arr, name, axis, what):
    if arr.shape[axis] == 0:
        raise ValueError(f"{name} has shape {arr.shape}: it needs at least one {what}")


# --------------------------------------------------------------------------
# Softmax
# --------------------------------------------------------------------------

def softmax(x, axis=-1):
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    softmax(x)_j = exp(x_j) / sum_i exp(x_i)

    The maximum of each slice is subtracted before exponentiating. This
    changes nothing mathematically (the factor exp(-max) cancels) but keeps
    exp from overflowing: scores of 1000 and 1001 give 0.269 and 0.731.

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
    arr = _as_real_array(x, "x", allow_neginf=True,
                         how="to leave masked entries out, fill them with -inf: softmax(np.ma.filled(x, -np.inf))")
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension; got a single number")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis must be an integer between {-arr.ndim} and {arr.ndim - 1} for x of shape {arr.shape}; got {axis!r}")
    _not_empty(arr, "x", axis, f"entry along axis {axis} to turn into weights")
    top = np.max(arr, axis=axis, keepdims=True)
    top[np.isneginf(top)] = 0.0  # an all -inf slice: exp(-inf) = 0 everywhere
    with np.errstate(over="ignore"):  # x - top may overflow to -inf, whose exp is the right 0
        e = np.subtract(arr, top)     # the one new array; the rest works in place
    return _normalise_exp(e, axis)


def _normalise_exp(e, axis):
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
    Q = _as_real_array(Q, "Q")
    K = _as_real_array(K, "K")
    V = _as_real_array(V, "V")
    _at_least_2d(Q, "Q", "(..., n_q, d_k)")
    _at_least_2d(K, "K", "(..., n_k, d_k)")
    _at_least_2d(V, "V", "(..., n_k, d_v)")
    _not_empty(K, "K", -2, "key (n_k >= 1)")
    _not_empty(Q, "Q", -1, "feature per query (d_k >= 1)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q and K must have the same d_k (last axis): Q has shape {Q.shape}, K has shape {K.shape}"
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have the same number of keys n_k (second-to-last axis): "
            f"K has shape {K.shape}, V has shape {V.shape}"
        )
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the batch dimensions of Q, K and V do not broadcast: Q {Q.shape}, K {K.shape}, V {V.shape}"
        ) from None

    scale = _checked_scale(scale, Q.shape[-1])
    if mask is not None:
        mask = _checked_mask(mask, np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2]))

    # The scale goes onto the queries (n_q * d_k numbers) rather than onto the
    # scores (n_q * n_k): (scale * Q) @ K^T is the same matrix, up to rounding.
    scale, Q_given = float(scale), Q
    if scale != 1.0:
        with np.errstate(over="ignore"):  # a product too large for float64 is inf: refused below
            Q = Q * scale
    # How large can a score be? By Cauchy-Schwarz, |q . k| <= |q| |k|: the
    # longest query times the longest key bounds every score. That costs
    # O(n d), not O(n^2), and decides the two checks below.
    with np.errstate(over="ignore"):  # a norm too large for float64 is inf: the bound is then inf
        longest_q = np.sqrt(np.max(np.einsum("...i,...i->...", Q, Q), initial=0.0))
        longest_k = np.sqrt(np.max(np.einsum("...i,...i->...", K, K), initial=0.0))
    bound = float(longest_q) * float(longest_k)

    # Transpose only the last two axes: .T would also reverse the batch axes.
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        scores = Q @ np.swapaxes(K, -1, -2)
    if not bound < 1e300 and not np.all(np.isfinite(scores)):  # looked at only when the bound is huge
        raise ValueError(
            "the scores Q @ K^T * scale overflowed float64 to inf: Q, K or scale is too large in magnitude "
            f"(largest |Q| {float(np.abs(Q_given).max()):.3g}, largest |K| {float(np.abs(K).max()):.3g}, "
            f"scale {scale:.3g})"
        )

    # Mask before the softmax: a masked key's score becomes -inf, so its
    # exponential is exactly 0 and the remaining weights still sum to 1.
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)
    # The softmax of the scores, in place: they are finite or -inf by now.
    # Subtracting each row's maximum keeps exp from overflowing. When every
    # score lies within +-EXP_SAFE, exp cannot overflow (nor a row's sum, nor
    # underflow to 0), and the subtraction, which changes nothing
    # mathematically, is skipped.
    if not bound <= EXP_SAFE:
        top = np.max(scores, axis=-1, keepdims=True)
        top[np.isneginf(top)] = 0.0  # a fully masked row: every exp is exactly 0, and the row stays 0
        with np.errstate(over="ignore"):  # only a score near the float64 limit can overflow here, to the right -inf
            scores -= top
    weights = _normalise_exp(scores, -1)
    return weights @ V, weights


#: Scores within +-EXP_SAFE need no max subtraction before exp: exp(600) is
#: about 3.8e260, so even a sum of 10^40 of them stays below float64's
#: 1.8e308, and exp(-600), about 2.7e-261, is still a normal positive number.
EXP_SAFE = 600.0


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

    Why not pass ``is_real`` (B, n_k) itself: numpy would line its B up with
    the queries axis n_q, and when B equals n_q nothing fails, the wrong
    keys are just hidden from the wrong queries.

    Raises
    ------
    ValueError if ``is_real`` is not a boolean array of 1 or 2 dimensions,
    or is a numpy masked array, or ``num_heads`` is not None or a positive
    whole number.
    """
    _refuse_masked_array(is_real, "is_real", how=(
        "pass a boolean array, True = a real token; from a masked array m whose True means padding, "
        "that is is_real=~np.ma.getmaskarray(m)"))
    flags = np.asarray(is_real)
    if flags.dtype != bool or flags.ndim not in (1, 2) or flags.shape[-1] == 0:
        raise ValueError(f"is_real must be a boolean array (B, n_k) or (n_k,), True at real tokens; "
                         f"got dtype {flags.dtype}, shape {flags.shape}")
    if num_heads is not None and (isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral)
                                  or num_heads < 1):
        raise ValueError(f"num_heads must be None or a positive whole number; got {num_heads!r}")
    return flags[..., None, :] if num_heads is None else flags[..., None, None, :]


def causal_mask(n):
    """The causal mask for a sequence of ``n`` tokens: shape (n, n), dtype bool.

    Entry [i, j] is True when query i may attend to key j, that is when
    j <= i: each token sees itself and the tokens before it, never the ones
    after it (Vaswani et al. 2017, section 3.2.3, "masking out ... all values
    in the input of the softmax which correspond to illegal connections").

    Raises ValueError unless ``n`` is a positive integer.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive whole number of tokens; got {n!r}")
    return np.tril(np.ones((int(n), int(n)), dtype=bool))


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
    w = _as_real_array(weights, "weights")
    if w.ndim == 0:
        raise ValueError("weights must have at least 1 dimension (one row of weights); got a single number")
    _not_empty(w, "weights", -1, "key per row (n_k >= 1)")
    if (w < 0).any():
        raise ValueError(f"weights must be non-negative; got a minimum of {float(w.min())} in shape {w.shape}")
    sums = w.sum(axis=-1)
    if not np.all(np.isclose(sums, 1.0, atol=1e-6) | (sums == 0.0)):
        bad = sums[~(np.isclose(sums, 1.0, atol=1e-6) | (sums == 0.0))]
        raise ValueError(
            f"weights must have rows that sum to 1 (or 0 for a query with nothing to attend to); "
            f"got a row summing to {float(bad.flat[0]):.6g} in shape {w.shape}"
        )
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

    Raises ValueError if ``num_heads`` is not a positive integer dividing d_model,
    or ``x`` is not an array of real numbers of at least 2 dimensions (a
    numpy masked array is refused).
    """
    x = _as_real_array(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must have at least 2 dimensions (..., n, d_model); got shape {x.shape}")
    d_model = x.shape[-1]
    _check_num_heads(num_heads, d_model)
    d_k = d_model // num_heads
    x = x.reshape(*x.shape[:-1], num_heads, d_k)  # (..., n, h, d_k)
    return np.swapaxes(x, -2, -3)                 # (..., h, n, d_k)


def merge_heads(x):
    """Put the heads back side by side: (..., num_heads, n, d_k) -> (..., n, num_heads * d_k).

    The inverse of ``split_heads``: merge_heads(split_heads(x, h)) equals x.
    Raises ValueError if ``x`` is not an array of real numbers of at least 3
    dimensions (a numpy masked array is refused).
    """
    x = _as_real_array(x, "x")
    if x.ndim < 3:
        raise ValueError(f"x must have at least 3 dimensions (..., num_heads, n, d_k); got shape {x.shape}")
    x = np.swapaxes(x, -2, -3)                     # (..., n, h, d_k)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def _check_num_heads(num_heads, d_model):
    if isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive whole number; got {num_heads!r}")
    if d_model % num_heads:
        options = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"num_heads must divide d_model = {d_model} so every head gets the same d_k; "
            f"got num_heads = {num_heads}. Values that work: {options}"
        )


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Multi-head self-attention, Vaswani et al. (2017), section 3.2.2.

        Q = X W_Q,  K = X W_K,  V = X W_V            (each (..., n, d_model))
        head_h = attention(Q_h, K_h, V_h)             (Q_h: features of head h)
        output = concat(head_1, ..., head_H) W_O

    Each head works on its own contiguous slice of d_k = d_model / num_heads
    projected features and scales its scores by 1/sqrt(d_k), the width of
    that head's keys, not 1/sqrt(d_model). With 8 heads of 64 on a width of
    512 the heads together have the parameters and multiply-adds of one
    full-width head, but num_heads * n * n attention weights instead of n * n.

    Parameters
    ----------
    X : array (..., n, d_model)
    W_Q, W_K, W_V : arrays (d_model, d_model); columns h*d_k .. (h+1)*d_k - 1
        belong to head h.
    W_O : array (d_model, d_model), applied to the concatenated heads.
    num_heads : positive integer dividing d_model.
    mask : optional boolean array broadcastable to (..., num_heads, n, n)
        (a (n, n) causal or padding mask applies to every head). True = may attend.

    Returns
    -------
    output : ndarray (..., n, d_model)
    weights : ndarray (..., num_heads, n, n), one matrix of attention
        weights per head.

    Raises
    ------
    ValueError naming the argument and shapes when X is not (..., n, d_model),
    a weight matrix is not (d_model, d_model), num_heads does not divide
    d_model (the message lists the values that do), or the mask is bad.
    """
    X = _as_real_array(X, "X")
    _at_least_2d(X, "X", "(..., n, d_model)")
    _not_empty(X, "X", -2, "token (n >= 1)")
    _not_empty(X, "X", -1, "feature (d_model >= 1)")
    d_model = X.shape[-1]
    mats = {}
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        W = _as_real_array(W, name)
        if W.shape != (d_model, d_model):
            raise ValueError(
                f"{name} must have shape (d_model, d_model) = ({d_model}, {d_model}) to match X of shape {X.shape}; "
                f"got {W.shape}"
            )
        mats[name] = W
    _check_num_heads(num_heads, d_model)
    Q = split_heads(X @ mats["W_Q"], num_heads)
    K = split_heads(X @ mats["W_K"], num_heads)
    V = split_heads(X @ mats["W_V"], num_heads)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # scale 1/sqrt(d_k) per head
    return merge_heads(heads) @ mats["W_O"], weights


# --------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------

def sinusoidal_positional_encoding(n, d_model):
    """The sinusoidal positional encoding of Vaswani et al. (2017), section 3.5.

        PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
        PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))

    for positions pos = 0 .. n-1 and i = 0 .. d_model/2 - 1. Each pair of
    columns is a clock turning at its own speed: column pair i turns by
    1 / 10000^(2i/d_model) radians per position, from once per 2*pi tokens
    (i = 0) to ever more slowly. Added to the token vectors X (n, d_model), it
    tells attention where each token stands. Every row has length
    sqrt(d_model / 2), since sin^2 + cos^2 = 1 for each pair.

    Parameters
    ----------
    n : positive whole number, the number of positions.
    d_model : positive even whole number, the width of the token vectors.

    Returns
    -------
    ndarray (n, d_model) of floats in [-1, 1]. Row 0 alternates 0, 1, 0, 1, ...

    Raises
    ------
    ValueError naming the argument when ``n`` is not a whole number >= 1, or
    ``d_model`` is not an even whole number >= 2 (the sin and cos columns
    come in pairs).
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive whole number of positions; got {n!r}")
    if isinstance(d_model, bool) or not isinstance(d_model, numbers.Integral) or d_model < 2 or d_model % 2:
        raise ValueError(
            f"d_model must be an even whole number >= 2 (sin and cos columns come in pairs); got {d_model!r}"
        )
    pos = np.arange(int(n), dtype=float)[:, None]                   # (n, 1)
    rate = 10000.0 ** (-np.arange(0, int(d_model), 2) / d_model)   # (d_model/2,), the 2i of the formula
    angles = pos * rate                                            # (n, d_model/2)
    pe = np.empty((int(n), int(d_model)))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


# --------------------------------------------------------------------------
# Cost: tiled attention with an online softmax, and the KV cache
# --------------------------------------------------------------------------

__all__ += ["online_softmax_update", "tiled_attention", "TILE_NUMBERS", "KVCache"]


def _checked_qkv(Q, K, V):
    """Q, K, V as float arrays that fit together, for tiled_attention; ValueError naming the argument otherwise."""
    Q, K, V = _as_real_array(Q, "Q"), _as_real_array(K, "K"), _as_real_array(V, "V")
    _at_least_2d(Q, "Q", "(..., n_q, d_k)")
    _at_least_2d(K, "K", "(..., n_k, d_k)")
    _at_least_2d(V, "V", "(..., n_k, d_v)")
    _not_empty(Q, "Q", -2, "query (n_q >= 1)")
    _not_empty(K, "K", -2, "key (n_k >= 1)")
    _not_empty(Q, "Q", -1, "feature per query (d_k >= 1)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same d_k (last axis): Q has shape {Q.shape}, K has shape {K.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same number of keys n_k (second-to-last axis): "
                         f"K has shape {K.shape}, V has shape {V.shape}")
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(f"the batch dimensions of Q, K and V do not broadcast: Q {Q.shape}, K {K.shape}, V {V.shape}") from None
    return Q, K, V, batch


def _checked_scale(scale, d_k):
    """``scale`` as a float (None: 1/sqrt(d_k)), or ValueError unless it is a positive finite number."""
    if scale is None:
        return 1.0 / np.sqrt(d_k)
    try:
        value = None if isinstance(scale, bool) or not isinstance(scale, numbers.Real) else float(scale)
    except OverflowError:  # a Python int beyond float64
        value = None
    if value is None or not np.isfinite(value) or value <= 0:
        raise ValueError(f"scale must be a positive finite number (or None for 1/sqrt(d_k)); got {scale!r}")
    return value


def _checked_mask(mask, scores_shape):
    """``mask`` as a boolean array broadcasting to ``scores_shape`` (..., n_q, n_k), or ValueError naming it."""
    _refuse_masked_array(mask, "mask", how=(
        "pass a boolean array, True = may attend; from a masked array m whose True means hidden, "
        "that is mask=~np.ma.getmaskarray(m)"))
    try:
        mask = np.asarray(mask)
    except ValueError as exc:  # ragged lists
        raise ValueError(f"mask must be a boolean array (True = may attend); could not read it as one ({exc})") from None
    if mask.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend); got dtype {mask.dtype} with shape {mask.shape}")
    try:
        fits = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except ValueError:
        fits = False
    if not fits:
        n_q, n_k = scores_shape[-2:]
        message = (f"mask of shape {mask.shape} must broadcast to the scores' shape (..., n_q, n_k) = {scores_shape} "
                   f"without adding or growing dimensions.")
        if mask.ndim == 2 and mask.shape[0] == mask.shape[1] and n_q != n_k:
            message += (f" A square mask, such as causal_mask(n), fits self-attention, where queries and keys are "
                        f"the same n tokens; here n_q = {n_q} and n_k = {n_k}")
        elif mask.ndim >= 2 and mask.shape[-1] == n_k and mask.shape[-2] not in (1, n_q):
            message += (" A padding mask for a batch of B sentences needs a query axis of 1: shape (B, 1, n_k), "
                        "or (B, 1, 1, n_k) with heads; build it from the real-token flags with padding_mask(is_real) "
                        "from helpers.attention")
        raise ValueError(message)
    return mask


def online_softmax_update(running_max, running_sum, acc, scores, V_block):
    """One step of the online softmax: fold a new block of keys into the running totals.

    The softmax of a row needs its maximum and the sum of exp(score - max)
    over every key. The online softmax (Milakov and Gimelshein 2018; used by
    FlashAttention, Dao et al. 2022, section 3.1, Algorithm 1) reads the
    keys block by block and keeps, for each query row, three running values:

        m   the largest score seen so far,
        l   the sum of exp(score - m) over the keys seen so far,
        acc the sum of exp(score - m) * value over those keys (n_q, d_v).

    A new block with scores s and values V_b updates them to

        m'   = max(m, max_j s_j)
        l'   = exp(m - m') * l   + sum_j exp(s_j - m')
        acc' = exp(m - m') * acc + exp(s - m') @ V_b

    The factor exp(m - m') re-expresses the old totals against the new
    maximum; it is 1 when the maximum did not move. After the last block,
    acc / l is exactly softmax(scores) @ V. Every exponent is <= 0, so
    nothing overflows.

    Parameters
    ----------
    running_max : array (..., n_q); -inf before the first block.
    running_sum : array (..., n_q); 0 before the first block.
    acc : array (..., n_q, d_v); 0 before the first block.
    scores : array (..., n_q, b), the (scaled) scores of this block of b keys;
        a masked key's score is -inf.
    V_block : array (..., b, d_v), the values of those keys.

    Returns
    -------
    (running_max, running_sum, acc), the updated three, new arrays of the
    same shapes. A row whose scores are all -inf so far keeps m = -inf,
    l = 0 and acc = 0 (no NaN).

    This is the inner step of :func:`tiled_attention`. It checks only that
    the five are arrays of numbers whose shapes fit together (a ValueError
    naming them otherwise), not the numbers themselves: tiled_attention
    checks those once.
    """
    try:  # no copy for float arrays, as tiled_attention passes them
        running_max, running_sum, acc, scores, V_block = (
            np.asarray(a, dtype=float) for a in (running_max, running_sum, acc, scores, V_block))
    except (TypeError, ValueError) as exc:
        raise ValueError("running_max, running_sum, acc, scores and V_block must be arrays of numbers; "
                         f"could not read one as such ({exc})") from None
    if np.ndim(scores) < 1 or np.ndim(V_block) < 2 or np.shape(scores)[-1] != np.shape(V_block)[-2]:
        raise ValueError(f"scores (..., n_q, b) and V_block (..., b, d_v) must hold the same b keys; got shapes "
                         f"{np.shape(scores)} and {np.shape(V_block)}")
    rows = scores.shape[:-1]
    for name, arr, want in (("running_max", running_max, rows), ("running_sum", running_sum, rows),
                            ("acc", acc, rows + V_block.shape[-1:])):
        if arr.shape != want:
            raise ValueError(f"{name} must have shape {want}, one entry per query row of scores {scores.shape} "
                             f"(acc: times d_v of V_block {V_block.shape}); got shape {arr.shape}")
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)   # a row with nothing seen yet: exp(-inf - 0) = 0
    rescale = np.exp(running_max - shift)                  # exp(m - m'), 1 when the maximum stayed
    p = scores - shift[..., None]
    np.exp(p, out=p)                                       # this block's exp(s - m'), each <= 1
    return new_max, rescale * running_sum + p.sum(axis=-1), rescale[..., None] * acc + p @ V_block


#: A block of scores in tiled_attention holds about this many numbers at most (2 MiB of float64),
#: or block_size**2 when that is more.
TILE_NUMBERS = 2 ** 18


def tiled_attention(Q, K, V, block_size, mask=None, scale=None):
    """Scaled dot-product attention computed block by block, with an online softmax.

    The same result as :func:`scaled_dot_product_attention` (Vaswani et al.
    2017, section 3.2.1, eq. (1)), equal to float precision, computed block
    by block with the same online softmax as FlashAttention's forward pass
    (Dao et al. 2022, section 3.1, Algorithm 1; that algorithm loops over key
    blocks outside and query blocks inside, this function the other way
    round, as FlashAttention-2 does, Dao 2023): the keys are cut into
    blocks of ``block_size`` and the queries into blocks too; for each
    block of queries the key blocks are read one at a time and folded in
    with :func:`online_softmax_update`. So once n_k is larger than
    block_size, the full (n_q, n_k) matrix of scores or weights is never
    held: at any moment only a block or two of scores (the scores and
    their shifted copy in online_softmax_update), plus the output and
    three running values per query. The number of multiplications is the same as the plain
    version's; only the memory changes.

    A block of queries has max(block_size, TILE_NUMBERS // block_size) rows,
    so one block of scores holds at most max(block_size**2, TILE_NUMBERS)
    numbers (per batch entry), whatever n is. (Algorithm 1 likewise sizes
    its query and key blocks separately, from the GPU's fast memory.) Tall
    query blocks mean few, large matrix products, which numpy runs far faster
    than many small ones.

    Parameters
    ----------
    Q : array (..., n_q, d_k); K : array (..., n_k, d_k); V : array (..., n_k, d_v).
        Leading batch dimensions broadcast, as in scaled_dot_product_attention.
    block_size : positive whole number, the keys in one block. Any size
        works; a block larger than the sequence is one block, and the last
        block may be shorter than the others.
    mask : optional boolean array broadcastable to (..., n_q, n_k), True =
        may attend. It is read block by block too (a broadcast view, no copy).
    scale : optional positive number multiplying the scores; None means 1/sqrt(d_k).

    Returns
    -------
    output : ndarray (..., n_q, d_v). Not the weights: returning them would
    mean holding the (n_q, n_k) matrix this function exists to avoid. A query
    whose mask is False everywhere gets the zero vector, as in
    scaled_dot_product_attention (never NaN).

    Raises
    ------
    ValueError naming the argument when block_size is not a positive whole
    number, Q, K or V is empty (no query, no key or d_k = 0), has fewer than
    2 dimensions, holds NaN or inf, or does not fit the others (d_k, n_k,
    batch dimensions), when the mask is not boolean or does not broadcast to
    (..., n_q, n_k), when scale is not a positive finite number, or when a
    block of scores overflows to inf.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"block_size must be a positive whole number (keys per block); got {block_size!r}")
    Q, K, V, batch = _checked_qkv(Q, K, V)
    n_q, n_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    scale = _checked_scale(scale, Q.shape[-1])
    if mask is not None:
        want = batch + (n_q, n_k)
        mask = np.broadcast_to(_checked_mask(mask, want), want)   # a view: no (n_q, n_k) copy is made
    b = int(block_size)
    rows = max(b, TILE_NUMBERS // b)                        # queries per block
    K_t = np.swapaxes(K, -1, -2)                            # a view (..., d_k, n_k)
    output = np.empty(batch + (n_q, d_v))
    for q0 in range(0, n_q, rows):
        Q_block = Q[..., q0:q0 + rows, :] * scale           # scale the queries once, not every block of scores
        shape = Q_block.shape[:-1]
        m, l, acc = np.full(shape, -np.inf), np.zeros(shape), np.zeros(shape + (d_v,))
        for k0 in range(0, n_k, b):
            with np.errstate(over="ignore", invalid="ignore"):  # checked just below
                s = Q_block @ K_t[..., k0:k0 + b]           # (..., rows, <= b): one block of scores
            if not np.all(np.isfinite(s)):
                raise ValueError("the scores Q @ K^T * scale overflowed to inf: Q, K or scale is too large in "
                                 f"magnitude (largest |Q| {float(np.abs(Q).max()):.3g}, largest |K| "
                                 f"{float(np.abs(K).max()):.3g}, scale {scale:.3g})")
            if mask is not None:
                s = np.where(mask[..., q0:q0 + rows, k0:k0 + b], s, -np.inf)
            m, l, acc = online_softmax_update(m, l, acc, s, V[..., k0:k0 + b, :])
        output[..., q0:q0 + rows, :] = acc / np.where(l == 0.0, 1.0, l)[..., None]   # l = 0: nothing to attend to
    return output


class KVCache:
    """The key-value cache of autoregressive decoding, for one head.

    A decoder generates text one token at a time under a causal mask: token t
    attends to tokens 0..t only. A token's key and value depend on that token
    alone, and no later token can change them, so they are computed once,
    appended here, and reused by every later query. Generating a new token
    then costs one query against the n cached keys (n dot products) instead
    of recomputing the whole (n, n) attention of the sequence so far.

    Token by token, ``attend`` gives exactly the row of
    ``scaled_dot_product_attention(Q, K, V, mask=causal_mask(n))`` for the
    latest query (Vaswani et al. 2017, section 3.2.3 for the causal mask).

    Usage::

        cache = KVCache()
        for x in tokens:                       # x: (d_model,)
            cache.append(x @ W_K, x @ W_V)     # this token's key (d_k,) and value (d_v,)
            output, weights = cache.attend(x @ W_Q)

    Keys and values are given one token at a time, as 1-D vectors; the first
    ``append`` fixes d_k and d_v. ``keys`` (n, d_k) and ``values`` (n, d_v)
    are read-only views of what is held; ``len(cache)`` is n. Storage grows
    by doubling, so n appends copy O(n) numbers in all.
    """

    def __init__(self):
        self._keys = self._values = None
        self._n = 0

    def __len__(self):
        return self._n

    @property
    def d_k(self):
        """The width of the keys (None before the first append)."""
        return None if self._keys is None else self._keys.shape[1]

    @property
    def d_v(self):
        """The width of the values (None before the first append)."""
        return None if self._values is None else self._values.shape[1]

    @property
    def keys(self):
        """The cached keys, shape (n, d_k), read-only."""
        return self._view(self._keys)

    @property
    def values(self):
        """The cached values, shape (n, d_v), read-only."""
        return self._view(self._values)

    @property
    def nbytes(self):
        """Bytes of the n keys and values held (float64): 8 * n * (d_k + d_v)."""
        return 0 if self._keys is None else self.keys.nbytes + self.values.nbytes

    def _view(self, store):
        if store is None:
            return np.empty((0, 0))
        view = store[:self._n]
        view.flags.writeable = False
        return view

    def append(self, k, v):
        """Add one token's key ``k`` (d_k,) and value ``v`` (d_v,).

        Raises ValueError naming the argument when either is not a 1-D
        vector of finite real numbers, or is not as wide as the keys
        (values) already held.
        """
        k, v = _as_real_array(k, "k"), _as_real_array(v, "v")
        for name, x, store, width in (("k", k, self._keys, "d_k"), ("v", v, self._values, "d_v")):
            if x.ndim != 1 or x.size == 0:
                raise ValueError(f"{name} must be one token's {'key' if name == 'k' else 'value'}, a 1-D vector "
                                 f"of length {width} >= 1 (append one token at a time); got shape {x.shape}")
            if store is not None and x.size != store.shape[1]:
                raise ValueError(f"{name} must have {width} = {store.shape[1]} entries, like the ones already "
                                 f"cached; got shape {x.shape}")
        if self._keys is None:
            self._keys, self._values = np.empty((8, k.size)), np.empty((8, v.size))
        elif self._n == self._keys.shape[0]:                      # full: double the room
            self._keys = np.concatenate([self._keys, np.empty_like(self._keys)])
            self._values = np.concatenate([self._values, np.empty_like(self._values)])
        self._keys[self._n], self._values[self._n] = k, v
        self._n += 1

    def attend(self, q, scale=None):
        """Attend the query ``q`` (d_k,) to every token appended so far.

        Returns (output (d_v,), weights (n,)): softmax(q . k_j * scale) over
        the n cached keys, and the weighted sum of their values. ``scale``
        None means 1/sqrt(d_k).

        Raises ValueError before any ``append``: an empty cache is not a
        fully masked row (which ``scaled_dot_product_attention`` answers with
        zeros). There, a query exists beside keys that are hidden from it; here,
        asking before any token is cached is a mistake in the order of the
        calls (append the token's own key and value first: under a causal
        mask every token attends at least to itself), and a silent zero would
        hide it. Also ValueError when ``q`` is not a 1-D vector of d_k finite
        numbers, or ``scale`` is not a positive finite number.
        """
        if self._n == 0:
            raise ValueError("the cache is empty: append(k, v) the current token's key and value before attend(q) "
                             "(under a causal mask a token attends at least to itself)")
        q = _as_real_array(q, "q")
        if q.shape != (self.d_k,):
            raise ValueError(f"q must be one query, a 1-D vector of d_k = {self.d_k} entries like the cached keys; "
                             f"got shape {q.shape}")
        output, weights = scaled_dot_product_attention(q[None, :], self.keys, self.values,
                                                       scale=_checked_scale(scale, self.d_k))
        return output[0], weights[0]
