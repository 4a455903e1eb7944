"""The input checks every helpers module shares.

Each check raises ValueError naming the argument, what it got and what it
needs, so a learner never meets a traceback from deep inside numpy. Each
returns the input in the form the caller computes with (a float array, a
boolean mask, a float scale, an int). attention.py, tiling.py, positions.py
and the modules above them call these, one call per check; this module
imports nothing of the course (only numpy).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "refuse_masked_array", "real_array", "at_least", "not_empty", "positive_whole", "even_width", "seed",
    "checked_axis", "checked_qkv", "checked_scale", "checked_mask", "checked_num_heads",
    "checked_weights", "checked_projection", "checked_flags", "refuse_overflow", "checked_heads_mask",
    "exact_gaps", "refuse_inexact_integers", "read_only", "FLOAT64_EXACT",
]

#: Every whole number up to 2**53 in magnitude is exactly a float64 (its significand has 53 bits);
#: 2**53 + 1 is the first that is not (IEEE 754: it rounds to 2**53).
FLOAT64_EXACT = 2 ** 53


def refuse_masked_array(x, name, how=None):
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


def real_array(x, name, allow_neginf=False, how=None):
    """Return ``x`` as a float array, or raise ValueError naming ``name``.

    NaN and inf are refused; with ``allow_neginf`` -inf is let through. A
    numpy masked array is refused (see ``refuse_masked_array``; ``how``
    is its conversion advice). The check costs two reductions (min and max)
    over ``x``; only a failing input is looked at entry by entry.
    """
    refuse_masked_array(x, name, how)
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
    if all(np.isfinite(v) or (allow_neginf and np.isneginf(v)) for v in (top, low)):
        return arr                   # (with allow_neginf, -inf everywhere is allowed: a row that hides every key)
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


def at_least(arr, name, ndim, what=""):
    """ValueError unless ``arr`` has at least ``ndim`` dimensions; ``what`` names them, e.g. "(..., n, d_k)"."""
    if arr.ndim >= ndim:
        return
    if ndim == 1:
        raise ValueError(f"{name} must have at least 1 dimension{' ' + what if what else ''}; got a single number")
    raise ValueError(f"{name} must have at least {ndim} dimensions {what}; got shape {arr.shape}")


def not_empty(arr, name, axis, what):
    """ValueError if ``arr`` has no entry along ``axis``; ``what`` says what one entry is."""
    if arr.shape[axis] == 0:
        raise ValueError(f"{name} has shape {arr.shape}: it needs at least one {what}")


def positive_whole(value, name, needs="a positive whole number"):
    """``value`` as an int, or ValueError ("{name} must be {needs}; got ...") unless it is a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be {needs}; got {value!r}")
    return int(value)


def seed(value):
    """A random generator's seed: a whole number >= 0, or ValueError naming seed."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"seed must be a non-negative whole number; got {value!r}")
    return int(value)


def even_width(d_model, name="d_model", why="sin and cos columns come in pairs"):
    """``d_model`` as an int, or ValueError unless it is an even whole number >= 2."""
    needs = f"an even whole number >= 2 ({why})"
    if positive_whole(d_model, name, needs) % 2:
        raise ValueError(f"{name} must be {needs}; got {d_model!r}")
    return int(d_model)


def checked_axis(arr, axis, name="x"):
    """``axis`` as an axis of ``arr``, or ValueError naming the range allowed."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis must be an integer between {-arr.ndim} and {arr.ndim - 1} for {name} of shape "
                         f"{arr.shape}; got {axis!r}")
    return axis


def checked_qkv(Q, K, V, queries_needed=True):
    """Q, K, V as float arrays that fit together, and their broadcast batch shape; ValueError naming the argument.

    Each has at least 2 dimensions (..., n, d), holds finite real numbers,
    and is not a masked array; Q and K share d_k, K and V share n_k, n_k and
    d_k are at least 1 (and n_q too when ``queries_needed``), and the batch
    dimensions broadcast.
    """
    Q, K, V = real_array(Q, "Q"), real_array(K, "K"), real_array(V, "V")
    at_least(Q, "Q", 2, "(..., n_q, d_k)")
    at_least(K, "K", 2, "(..., n_k, d_k)")
    at_least(V, "V", 2, "(..., n_k, d_v)")
    if queries_needed:
        not_empty(Q, "Q", -2, "query (n_q >= 1)")
    not_empty(K, "K", -2, "key (n_k >= 1)")
    not_empty(Q, "Q", -1, "feature per query (d_k >= 1)")
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


def checked_scale(scale, d_k):
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


def checked_mask(mask, scores_shape):
    """``mask`` as a boolean array broadcasting to ``scores_shape`` (..., n_q, n_k), or ValueError naming it."""
    refuse_masked_array(mask, "mask", how=(
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


def checked_num_heads(num_heads, d_model):
    """``num_heads`` as an int dividing ``d_model``, or ValueError listing the values that do."""
    positive_whole(num_heads, "num_heads")
    if d_model % num_heads:
        options = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"num_heads must divide d_model = {d_model} so every head gets the same d_k; "
            f"got num_heads = {num_heads}. Values that work: {options}"
        )
    return int(num_heads)


def checked_weights(weights):
    """``weights`` (..., n_q, n_k) as a float array of rows summing to 1 or 0, or ValueError saying what is wrong."""
    w = real_array(weights, "weights")
    at_least(w, "weights", 1, "(one row of weights)")
    not_empty(w, "weights", -1, "key per row (n_k >= 1)")
    if (w < 0).any():
        raise ValueError(f"weights must be non-negative; got a minimum of {float(w.min())} in shape {w.shape}")
    sums = w.sum(axis=-1)
    if not np.all(np.isclose(sums, 1.0, atol=1e-6) | (sums == 0.0)):
        bad = sums[~(np.isclose(sums, 1.0, atol=1e-6) | (sums == 0.0))]
        raise ValueError(
            f"weights must have rows that sum to 1 (or 0 for a query with nothing to attend to); "
            f"got a row summing to {float(bad.flat[0]):.6g} in shape {w.shape}"
        )
    return w


def checked_projection(W, name, X, width=None, what="d_model"):
    """The weight matrix ``W`` as a float array of shape (d_model, width) for X (..., n, d_model), or ValueError.

    width: the number of columns W needs, d_model when None; ``what`` names
    it in the message (e.g. "num_kv_heads * d_k").
    """
    W = real_array(W, name)
    d_model = X.shape[-1]
    width = d_model if width is None else width
    if W.shape != (d_model, width):
        raise ValueError(
            f"{name} must have shape (d_model, {what}) = ({d_model}, {width}) to match X of shape {X.shape}; "
            f"got {W.shape}"
        )
    return W


def checked_num_kv_heads(num_kv_heads, num_heads):
    """``num_kv_heads`` as an int (``num_heads`` when None), or ValueError unless it divides num_heads."""
    if num_kv_heads is None:
        return num_heads
    positive_whole(num_kv_heads, "num_kv_heads")
    if num_heads % num_kv_heads:
        options = [g for g in range(1, num_heads + 1) if num_heads % g == 0]
        raise ValueError(
            f"num_heads = {num_heads} must be a multiple of num_kv_heads, so that each key/value head serves "
            f"the same number of query heads; got num_kv_heads = {num_kv_heads}. Values that work: {options}")
    return int(num_kv_heads)


def checked_positions(positions, n):
    """RoPE's positions as floats of shape (n,) (0 .. n-1 when None), or ValueError naming positions."""
    if positions is None:
        return np.arange(n, dtype=float)
    p = real_array(positions, "positions")
    if p.shape != (n,):
        raise ValueError(f"positions must have one entry per token, shape ({n},); got shape {p.shape}")
    if (p < 0).any():
        raise ValueError(f"positions must be >= 0 (a token's place, counted from 0); got a minimum of "
                         f"{float(p.min())}")
    return p


def checked_base(base):
    """RoPE's base as a float > 1, or ValueError naming base."""
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not np.isfinite(float(base)) \
            or float(base) <= 1:
        raise ValueError(f"base must be a finite number > 1 (the angles are position * base^(-2i/d)); "
                         f"got {base!r}")
    return float(base)


def refuse_overflow(scores, Q, K, scale, where="float64 "):
    """ValueError if the scores overflowed to inf, with the largest |Q|, |K| and the scale that made them."""
    if not np.all(np.isfinite(scores)):
        raise ValueError(
            f"the scores Q @ K^T * scale overflowed {where}to inf: Q, K or scale is too large in magnitude "
            f"(largest |Q| {float(np.abs(Q).max()):.3g}, largest |K| {float(np.abs(K).max()):.3g}, "
            f"scale {scale:.3g})"
        )


def checked_flags(is_real):
    """``is_real`` (B, n_k) or (n_k,) as a boolean array of real-token flags, or ValueError naming it."""
    refuse_masked_array(is_real, "is_real", how=(
        "pass a boolean array, True = a real token; from a masked array m whose True means padding, "
        "that is is_real=~np.ma.getmaskarray(m)"))
    flags = np.asarray(is_real)
    if flags.dtype != bool or flags.ndim not in (1, 2) or flags.shape[-1] == 0:
        raise ValueError(f"is_real must be a boolean array (B, n_k) or (n_k,), True at real tokens; "
                         f"got dtype {flags.dtype}, shape {flags.shape}")
    return flags


def checked_heads_mask(mask, X, num_heads):
    """A mask for multi-head scores (..., num_heads, n, n) of X (..., n, d_model), or ValueError naming it.

    The one place that decides where the head axis of a mask goes. A mask
    with as many dimensions as X (batch dimensions, then (n_q or 1, n_k)),
    such as padding_mask(is_real) (B, 1, n_k), is per sentence: the head
    axis is inserted before its last two, so every head of sentence b uses
    sentence b's row. One more dimension than X means the head axis is there
    already: (..., num_heads or 1, n_q or 1, n_k), such as
    padding_mask(is_real, num_heads=h) (B, 1, 1, n_k). A mask of 2
    dimensions ((n, n) or (1, n)) applies to every sentence and head. Any
    other number of dimensions is refused, saying what to pass: a (B, 1, n)
    mask for X of shape (1, B, n, d) would otherwise line B up with the heads.
    """
    refuse_masked_array(mask, "mask", how=(
        "pass a boolean array, True = may attend; from a masked array m whose True means hidden, "
        "that is mask=~np.ma.getmaskarray(m)"))
    n = X.shape[-2]
    want = X.shape[:-2] + (num_heads, n, n)
    try:
        arr = np.asarray(mask)
    except ValueError:
        return checked_mask(mask, want)  # raises, saying why it could not be read
    if arr.ndim > X.ndim + 1 or 2 < arr.ndim < X.ndim:  # between 2 and X's: which batch axis it means is a guess
        raise ValueError(
            f"mask of shape {arr.shape} has {arr.ndim} dimensions; for X of shape {X.shape} multi_head_attention "
            f"takes {X.ndim} (per sentence, (..., n_q or 1, n_k): padding_mask(is_real), or causal_mask(n)) or "
            f"{X.ndim + 1} (per head, (..., num_heads or 1, n_q or 1, n_k): padding_mask(is_real, num_heads=h))")
    if arr.ndim == X.ndim and X.ndim > 2:
        arr = arr[..., None, :, :]  # per sentence: the same row for every head of that sentence
    return checked_mask(arr, want)


def _integers(x):
    """``x`` as an integer array (numpy integers, or Python ints in an object array), or None if it is not one."""
    arr = np.asarray(x)
    if arr.dtype.kind in "iu":
        return arr
    if arr.dtype.kind == "O" and arr.size and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                                  for v in arr.flat):
        return arr
    return None


def _beyond_float64(arr):
    return arr.size > 0 and max(abs(int(arr.max())), abs(int(arr.min()))) > FLOAT64_EXACT


def exact_gaps(x, axis):
    """x minus its maximum along ``axis``, computed before float64 loses the differences, as floats; else None.

    For integer scores beyond 2**53 and for long doubles (which hold 2**53 and
    2**53 + 1 apart, where float64 makes them equal); None for anything else,
    whose differences float64 keeps as well as the input does.

    Softmax only sees differences: softmax(x) = softmax(x - max). Integers
    past FLOAT64_EXACT lose their last digits when converted to float64, so
    2**53 and 2**53 + 1 would become equal; their difference, 1, is exact in
    integers. The gap max - x of a numpy integer is computed modulo 2**64 in
    uint64, which is exact because 0 <= max - x < 2**64; Python ints (an
    object array) are subtracted as Python ints. A gap converted to float64
    is then off by at most 2**-53 of itself, which moves no weight whose
    exp(-gap) is not already 0. ``x`` must have been checked (``real_array``).
    """
    raw = np.asarray(x)
    if raw.dtype.kind == "f" and raw.dtype.itemsize > 8:   # long double
        top = raw.max(axis=axis, keepdims=True)
        top[np.isneginf(top)] = 0.0                # a slice hiding every key stays -inf: exp gives 0
        return (raw - top).astype(float)
    arr = _integers(raw)
    if arr is None or not _beyond_float64(arr):
        return None
    top = arr.max(axis=axis, keepdims=True)
    if arr.dtype.kind in "Ou":                     # Python ints, or unsigned: top - x is exact as it is
        gaps = top - arr
    else:
        gaps = top.astype(np.uint64) - arr.astype(np.uint64)   # two's complement: exact modulo 2**64
    return -gaps.astype(float)


def refuse_inexact_integers(x, name):
    """ValueError if ``x`` holds integers beyond 2**53, which float64 cannot hold exactly; names the first."""
    arr = _integers(x)
    if arr is not None and _beyond_float64(arr):
        first = next(int(v) for v in arr.flat if abs(int(v)) > FLOAT64_EXACT)
        raise ValueError(f"{name} holds integers beyond 2**53 = {FLOAT64_EXACT}, which float64 cannot hold "
                         f"exactly (it would change their differences): got {first}; subtract a common value "
                         f"first (the row's maximum), or pass floats")


def read_only(arr):
    """``arr`` marked read-only (a view of a caller's array must not write back into it); returns it."""
    arr.flags.writeable = False
    return arr
