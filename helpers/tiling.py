"""Notebook 08: attention block by block with an online softmax, and the KV cache of decoding.

``online_softmax_update`` folds one block of keys into running totals (Milakov
and Gimelshein 2018; FlashAttention, Dao et al. 2022, Algorithm 1);
``tiled_attention`` uses it to compute scaled dot-product attention without
ever holding the (n_q, n_k) matrix; ``KVCache`` keeps the keys and values of
the tokens decoded so far. Each equals helpers.attention's
``scaled_dot_product_attention`` to float precision (tests/test_tiling.py).
The input checks are in helpers/inputs.py.
"""

from __future__ import annotations

import itertools

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.inputs import (checked_mask, checked_qkv, checked_scale, positive_whole, real_array,
                            refuse_inexact_integers, refuse_overflow)

__all__ = ["online_softmax_update", "tiled_attention", "TILE_NUMBERS", "KVCache", "window_blocks",
           "sliding_window_attention"]


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
    l = 0 and acc = 0 (no NaN). A block of no keys (scores (..., n_q, 0),
    V_block (..., 0, d_v)) changes nothing: the three come back unchanged
    (as new arrays).

    This is the inner step of :func:`tiled_attention`. It checks only that
    the five are arrays of numbers whose shapes fit together (a ValueError
    naming them otherwise), not the numbers themselves: tiled_attention
    checks those once. Integer scores beyond 2**53 are refused by name: the
    running maximum is a float, and float64 cannot hold them exactly (their
    differences, all softmax sees, would change).
    """
    refuse_inexact_integers(scores, "scores")
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
    if scores.shape[-1] == 0:                               # no keys in this block: nothing to fold in
        return running_max.copy(), running_sum.copy(), acc.copy()
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
        Leading batch dimensions broadcast, as in scaled_dot_product_attention:
        Q (3, 4) with K (2, 5, 4) and V (2, 5, 2) gives (2, 3, 2) (the
        broadcast is a view: nothing is copied).
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
    b = positive_whole(block_size, "block_size", "a positive whole number (keys per block)")
    Q, K, V, batch = checked_qkv(Q, K, V)
    n_q, n_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    scale = checked_scale(scale, Q.shape[-1])
    Q, K, V = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (Q, K, V))  # views, as @ would broadcast
    if mask is not None:
        want = batch + (n_q, n_k)
        mask = np.broadcast_to(checked_mask(mask, want), want)   # a view: no (n_q, n_k) copy is made
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
            refuse_overflow(s, Q, K, scale, where="")
            if mask is not None:
                s = np.where(mask[..., q0:q0 + rows, k0:k0 + b], s, -np.inf)
            m, l, acc = online_softmax_update(m, l, acc, s, V[..., k0:k0 + b, :])
        output[..., q0:q0 + rows, :] = acc / np.where(l == 0.0, 1.0, l)[..., None]   # l = 0: nothing to attend to
    return output


def window_blocks(n, block_size, window):
    """The (query block, key block) pairs that causal sliding-window attention must compute, as start indices.

    The n tokens are cut into blocks of ``block_size`` queries and keys. A
    query i sees the keys j with 0 <= i - j < window (``sliding_window_mask``,
    Mistral 7B, Jiang et al. 2023, section 2), so a key block wholly before
    the window of the block's first query, or wholly after its last query,
    holds no allowed pair and is skipped. Returns a list of (q0, k0), in the
    order :func:`sliding_window_attention` computes them: about
    (n / block_size) * (window / block_size + 2) pairs instead of
    (n / block_size)^2.

    Raises ValueError unless n, block_size and window are positive whole numbers.
    """
    n = positive_whole(n, "n", "a positive whole number of tokens")
    b = positive_whole(block_size, "block_size", "a positive whole number (keys per block)")
    window = positive_whole(window, "window", "a positive whole number of keys (itself included)")
    pairs = []
    for q0 in range(0, n, b):
        first_key = max(0, q0 - window + 1)                   # the earliest key the block's first query sees
        last_query = min(q0 + b, n) - 1                       # no query of the block sees a later key
        pairs += [(q0, k0) for k0 in range(first_key // b * b, last_query + 1, b)]
    return pairs


def sliding_window_attention(Q, K, V, block_size, window, scale=None):
    """Causal sliding-window self-attention, tiled, skipping the key blocks wholly outside the window.

    The same output as ``scaled_dot_product_attention(Q, K, V,
    mask=sliding_window_mask(n, window))`` to float precision, computed
    with :func:`online_softmax_update` over square blocks of ``block_size``
    queries and keys, reading only the blocks :func:`window_blocks` lists.
    A mask alone saves nothing (the n x n scores are still built); skipping
    the blocks is what makes the work and memory grow as n x window.

    Q, K : arrays (..., n, d_k); V : array (..., n, d_v); the same n (self-attention).
    block_size, window : positive whole numbers; scale : None (1/sqrt(d_k)) or a positive number.

    Returns the output (..., n, d_v). Raises ValueError as tiled_attention
    does (a block of scores that overflows float64 to inf too: Q = K = 1e160,
    or scale=1e308), and naming K when n_k is not n_q.
    """
    b = positive_whole(block_size, "block_size", "a positive whole number (keys per block)")
    Q, K, V, batch = checked_qkv(Q, K, V)
    n, d_v = Q.shape[-2], V.shape[-1]
    if K.shape[-2] != n:
        raise ValueError(f"K must have as many tokens as Q (self-attention): Q has {n}, K {K.shape[-2]}")
    scale = checked_scale(scale, Q.shape[-1])
    Q, K, V = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (Q, K, V))
    output = np.empty(batch + (n, d_v))
    for q0, pairs in itertools.groupby(window_blocks(n, b, window), key=lambda pair: pair[0]):
        with np.errstate(over="ignore", invalid="ignore"):      # an inf here makes the scores inf: refused below
            Q_block = Q[..., q0:q0 + b, :] * scale
        shape = Q_block.shape[:-1]
        m, l, acc = np.full(shape, -np.inf), np.zeros(shape), np.zeros(shape + (d_v,))
        for _, k0 in pairs:                                   # only the key blocks the window reaches
            with np.errstate(over="ignore", invalid="ignore"):  # checked just below
                s = Q_block @ np.swapaxes(K[..., k0:k0 + b, :], -1, -2)
            refuse_overflow(s, Q, K, scale, where="")          # past float64: refused by name, as tiled_attention
            back = np.arange(q0, q0 + s.shape[-2])[:, None] - np.arange(k0, k0 + s.shape[-1])[None, :]  # i - j
            s = np.where((back >= 0) & (back < window), s, -np.inf)
            m, l, acc = online_softmax_update(m, l, acc, s, V[..., k0:k0 + b, :])
        output[..., q0:q0 + b, :] = acc / l[..., None]        # every query sees itself: l > 0
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
        k, v = real_array(k, "k"), real_array(v, "v")
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
        q = real_array(q, "q")
        if q.shape != (self.d_k,):
            raise ValueError(f"q must be one query, a 1-D vector of d_k = {self.d_k} entries like the cached keys; "
                             f"got shape {q.shape}")
        output, weights = scaled_dot_product_attention(q[None, :], self.keys, self.values,
                                                       scale=checked_scale(scale, self.d_k))
        return output[0], weights[0]
