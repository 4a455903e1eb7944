"""The inputs every function checker runs a learner's function on: small, seeded, each showing one thing.

Each piece has its battery, in the order it is tried: small inputs a
learner can check by hand first, then random shapes and values of several
sizes (n = 1 included, batch dimensions where the piece has them, -inf where
masks put it, scores large enough to overflow an exp that does not subtract
the maximum). Every array is read-only, so no function can spoil the battery
for the next (each call gets fresh copies anyway). The seeds are fixed: the
same battery on every machine, so the verdicts are the same too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from helpers.attention import causal_mask, padding_mask, softmax, split_heads

__all__ = ["ATTENTION", "SOFTMAX", "CAUSAL_MASK", "PADDING_MASK", "Case", "Input",
           "SPLIT_HEADS", "MERGE_HEADS", "MULTI_HEAD", "POSITIONAL", "SOFTMAX_BACKWARD", "ROPE",
           "LAYER_NORM"]


def _frozen(*arrays):
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)


@dataclass(frozen=True)
class Case:
    """One input of the battery. needs: None, "masks", "batches", or ("masks", "batches") for both (what it
    assumes has been taught)."""

    name: str
    words: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None = None
    needs: str | None = None


def _attention():
    rng = np.random.default_rng(2017)

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    n, d = 3, 4
    keep_real = np.array([True, True, True, False])            # a padded sentence: key 3 is a pad
    cases = [
        Case("plain", "plain inputs: Q, K and V of shape (3, 4)", draw(n, d), draw(n, d), draw(n, d)),
        Case("wide keys", "wider keys: Q and K of shape (3, 16), so d_k = 16", draw(n, 16), draw(n, 16), draw(n, d)),
        Case("n_q != n_k", "2 queries and 4 keys: Q (2, 4), K and V (4, 4)", draw(2, d), draw(4, d), draw(4, d)),
        Case("d_v != d_k", "values narrower than keys: Q and K (3, 4), V (3, 2)", draw(n, d), draw(n, d), draw(n, 2)),
        Case("large scores", "very large scores: Q and K of shape (3, 4), entries of size about 40",
             draw(n, d, size=40.0), draw(n, d, size=40.0), draw(n, d)),
        Case("causal mask", "a causal mask: Q, K and V of shape (4, 4), mask = causal_mask(4)",
             draw(4, d), draw(4, d), draw(4, d), causal_mask(4), "masks"),
        Case("padding mask", "a padding mask: Q, K and V of shape (4, 4), the last key a pad (its mask column False)",
             draw(4, d), draw(4, d), draw(4, d), np.broadcast_to(keep_real, (4, 4)).copy(), "masks"),
        Case("batch", "a batch of 2 sentences: Q, K and V of shape (2, 3, 4)", draw(2, n, d), draw(2, n, d),
             draw(2, n, d), None, "batches"),
    ]
    big = cases[4]
    largest = float(np.abs(big.Q @ big.K.T).max() / np.sqrt(d))
    cases[4] = Case(big.name, f"{big.words}, so scaled scores reach {largest:.0f} (exp overflows past 709)",
                    big.Q, big.K, big.V)
    cases.append(Case("n = 1", "one token: Q, K and V of shape (1, 4) (its one weight is 1, its output its value)",
                      draw(1, d), draw(1, d), draw(1, d)))
    cases.extend(_random_attention(np.random.default_rng(2018)))
    left_padded = causal_mask(4) & np.array([False, True, True, True])   # "[pad] the bank flooded", both masks
    cases.append(Case("empty row", "a left-padded sentence of 4 tokens under a causal and a padding mask, where "
                      "query 0 (the pad) may read no key", draw(4, d), draw(4, d), draw(4, d), left_padded, "masks"))
    cases.append(_rows_apart(draw(2, 3)))
    cases.extend(_batch_masks(draw))
    for case in cases:
        _frozen(case.Q, case.K, case.V, case.mask)
    return tuple(cases)


def _rows_apart(V):
    """Two queries whose scaled scores are [0, 0] and [1000, 1001] (d_k = 4, every number exact in float32): one
    maximum of the whole array subtracted leaves exp(0 - 1001) = 0 in the first row, and 0 / 0 (issue 32,
    section 3)."""
    K = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    Q = np.array([[0.0, 0.0, 0.0, 0.0], [2000.0, 2.0, 0.0, 0.0]])
    return Case("rows apart", "rows of very different scale: Q and K of shape (2, 4), V (2, 3), scaled scores "
                "[0, 0] for query 0 and [1000, 1001] for query 1", Q, K, V)


def _batch_masks(draw):
    """Two batches whose mask broadcasts, as notebook 04 and a model pass it: a padding mask (B, 1, n_k) shared by
    every query of a sentence, and one causal_mask(n) shared by every sentence. A mask applied only when it is 2-D
    ignores the first; boolean indexing, s[~mask] = -inf, does not broadcast and refuses both. The padding batch
    is a cube, B = n = d_k = 4, so that a transpose written with fixed axes gives numbers there instead of an error
    (K.T and np.swapaxes(K, 0, 1) then differ); the causal batch has B != n, so indexing refuses it."""
    is_real = np.arange(4)[None, :] < np.array([4, 2, 3, 1])[:, None]
    padded = Case("padded batch", "a batch of 4 padded sentences: Q, K and V of shape (4, 4, 4), mask = "
                  "padding_mask(is_real) of shape (4, 1, 4), one row per sentence shared by its queries (sentence 1 "
                  "has 2 real tokens)", draw(4, 4, 4), draw(4, 4, 4), draw(4, 4, 4), padding_mask(is_real).copy(),
                  ("masks", "batches"))
    causal = Case("causal batch", "a batch of 2 sentences under one causal mask: Q, K and V of shape (2, 5, 3), "
                  "mask = causal_mask(5) of shape (5, 5), shared by both", draw(2, 5, 3), draw(2, 5, 3),
                  draw(2, 5, 3), causal_mask(5), ("masks", "batches"))
    return [padded, causal]


def _random_attention(rng):
    """Three inputs of random shapes and values: plain, with two batch axes, and with a random mask."""
    n_q, n_k, d_k, d_v = (int(v) for v in rng.integers(1, 7, 4))
    if n_q == n_k:                      # queries and keys of different numbers: K Q^T cannot pass for Q K^T
        n_k += 1
    shape = f"Q ({n_q}, {d_k}), K ({n_k}, {d_k}), V ({n_k}, {d_v})"
    plain = Case(f"random {n_q}x{n_k}", f"random values of size about 2: {shape}",
                 rng.normal(0, 2, (n_q, d_k)), rng.normal(0, 2, (n_k, d_k)), rng.normal(0, 2, (n_k, d_v)))
    batch = Case("random batch", "random values with two batch axes: Q, K and V of shape (2, 3, 5, 3)",
                 *(rng.normal(0, 1.5, (2, 3, 5, 3)) for _ in range(3)), None, "batches")
    n = 6
    mask = rng.random((n, n)) < 0.6
    mask[np.arange(n), rng.integers(0, n, n)] = True           # every query keeps at least one key
    masked = Case("random mask", f"a random mask ({int((~mask).sum())} of 36 scores hidden, -inf) on random "
                  "values: Q, K and V of shape (6, 4)", *(rng.normal(0, 1.5, (n, d)) for d in (4, 4, 4)),
                  mask, "masks")
    return [plain, batch, masked]


ATTENTION = _attention()
"""Every input the attention checker tries, in the order it tries them: eight small ones (plain inputs of shape
(3, 4); wider keys, d_k = 16; 2 queries and 4 keys; values narrower than keys; scores large enough to overflow an
exp that does not subtract the maximum; a causal mask; a padding mask; a batch of 2 sentences), one token
(n = 1), three of seeded random shapes and values (plain, with two batch axes, with a random mask), a
row with nothing to attend to (a left-padded sentence under a causal and a padding mask), two queries whose
scores lie 1000 apart (one maximum for the whole array underflows the lower row), and two batches whose mask
broadcasts (a padding mask (4, 1, 4) on a batch of 4, one causal mask (5, 5) shared by a batch of 2): 16 in all."""


@dataclass(frozen=True)
class Input:
    """One input of a piece other than attention: the arguments, by the names of the piece's signature."""

    name: str
    words: str
    args: dict = field(default_factory=dict)

    def __post_init__(self):
        _frozen(*self.args.values())


def _softmax():
    rng = np.random.default_rng(2025)
    inf = np.inf
    cases = [
        Input("one row", "one row of scores, x = [1, 2, 3]", {"x": np.array([1.0, 2.0, 3.0])}),
        Input("one score", "a single score, x = [0.5] (n = 1)", {"x": np.array([0.5])}),
        Input("matrix", "a (3, 4) matrix of scores, one row per query", {"x": np.round(rng.normal(0, 1, (3, 4)), 1)}),
        Input("large scores", "large scores, x = [1000, 1001, 999] (exp(1000) overflows to inf)",
              {"x": np.array([1000.0, 1001.0, 999.0])}),
        Input("rows far apart", "two rows of very different scale, x = [[0, 0], [1000, 1001]] (one maximum for "
              "the whole array, 1001, makes exp(0 - 1001) = 0 in the first)",
              {"x": np.array([[0.0, 0.0], [1000.0, 1001.0]])}),
        Input("-inf entries", "a (2, 3) matrix with -inf where a mask hid a key",
              {"x": np.array([[0.5, -inf, 1.0], [2.0, 1.0, -inf]])}),
        Input("all -inf row", "a (2, 3) matrix whose second row is -inf everywhere (a query with nothing to "
              "attend to; its weights are all 0)", {"x": np.array([[1.0, 2.0, 3.0], [-inf, -inf, -inf]])}),
        Input("axis=0", "a (3, 4) matrix with axis=0 (each column sums to 1)",
              {"x": np.round(rng.normal(0, 1, (3, 4)), 1), "axis": 0}),
        Input("batch", "a batch of 2 sentences, x of shape (2, 3, 4)", {"x": np.round(rng.normal(0, 2, (2, 3, 4)), 1)}),
    ]
    for shape, size in (((1, 1), 1.0), ((5, 7), 30.0), ((2, 1, 6), 300.0)):
        x = rng.normal(0, size, shape)
        words = f"random scores of shape {shape} and size about {size:g}"
        if shape == (5, 7):                      # a random mask too, one query hidden everywhere: -inf of a 2nd size
            x[rng.random(shape) < 0.3] = -inf
            x[3] = -inf
            x[np.arange(5) != 3, rng.integers(0, 7, 5)[np.arange(5) != 3]] = rng.normal(0, size, 4)
            words += f", {int(np.isneginf(x).sum())} of them -inf (a random mask; row 3 hidden everywhere)"
        cases.append(Input(f"random {shape}", words, {"x": x}))
    return tuple(cases)


def _causal():
    cases = [Input(f"n = {n}", f"n = {n}", {"n": n}) for n in (3, 1, 2, 4)]
    rng = np.random.default_rng(2026)
    return tuple(cases + [Input(f"n = {n}", f"n = {n} (random)", {"n": n}) for n in rng.integers(5, 12, 2).tolist()])


def _padding():
    def real(lengths, n_k):
        return np.arange(n_k)[None, :] < np.array(lengths)[:, None]

    cases = [
        Input("two sentences", "2 sentences of 4 tokens, the second with 2 real ones: is_real (2, 4)",
              {"is_real": real([4, 2], 4)}),
        Input("one sentence", "1 sentence of 3 tokens, the last a pad: is_real (1, 3)", {"is_real": real([2], 3)}),
        Input("B = n_k", "3 sentences of 3 tokens (as many sentences as tokens, where a wrong axis fails "
              "silently): is_real (3, 3)", {"is_real": real([3, 1, 2], 3)}),
        Input("one token", "2 sentences of 1 token each: is_real (2, 1)", {"is_real": real([1, 1], 1)}),
    ]
    rng = np.random.default_rng(2027)
    for B, n_k in ((4, 6), (2, 9)):
        lengths = rng.integers(1, n_k + 1, B)
        cases.append(Input(f"random ({B}, {n_k})", f"{B} random sentences of {n_k} tokens: is_real ({B}, {n_k})",
                           {"is_real": real(lengths, n_k)}))
    return tuple(cases)


SOFTMAX = _softmax()
"""The inputs of the softmax checker: ``x`` and, for one of them, ``axis``."""
CAUSAL_MASK = _causal()
"""The inputs of the causal_mask checker: ``n``."""
PADDING_MASK = _padding()
"""The inputs of the padding_mask checker: ``is_real`` of shape (B, n_k)."""


# --------------------------------------------------------------------------
# Notebook 08's pieces: one online-softmax step, tiled attention, one KV-cache step (checker_tiling.py)
# --------------------------------------------------------------------------

def _totals(scores, V_block):
    """The running (max, sum, acc) after one earlier block, as the course's online softmax leaves them."""
    from helpers.tiling import online_softmax_update
    rows = scores.shape[:-1]
    return online_softmax_update(np.full(rows, -np.inf), np.zeros(rows), np.zeros(rows + V_block.shape[-1:]),
                                 scores, V_block)


def _step(name, words, earlier, scores, V_block, V_earlier=None):
    """An Input of the online_softmax_update battery; ``earlier``: the scores of the block read before (or None)."""
    rows = scores.shape[:-1]
    if earlier is None:
        m, l, acc = np.full(rows, -np.inf), np.zeros(rows), np.zeros(rows + V_block.shape[-1:])
    else:
        m, l, acc = _totals(earlier, V_earlier)
    return Input(name, words, {"running_max": m, "running_sum": l, "acc": acc, "scores": scores, "V_block": V_block})


def _online_step():
    rng = np.random.default_rng(2018)                  # the year of Milakov and Gimelshein

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    inf = np.inf
    cases = [
        _step("first block", "the first block: running_max -inf, running_sum 0, acc 0 for 2 queries; scores (2, 3), "
              "V_block (3, 2)", None, np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]), draw(3, 2)),
        _step("max rises", "a second block whose scores are larger than every earlier one (the running max moves): "
              "scores (2, 3), V_block (3, 2)", np.array([[0.5, -0.5, 0.0], [1.0, 0.2, -0.3]]),
              np.array([[2.0, 3.0, 1.5], [2.5, 1.8, 4.0]]), draw(3, 2), draw(3, 2)),
        _step("max stays", "a second block whose scores are all below the running max: scores (2, 3), V_block (3, 2)",
              np.array([[3.0, 1.0, 0.0], [2.0, 4.0, 1.0]]), np.array([[0.5, 1.0, -1.0], [1.5, 0.0, 3.0]]),
              draw(3, 2), draw(3, 2)),
        _step("one key", "a block of one key (block_size 1): scores (3, 1), V_block (1, 2)", draw(3, 2),
              draw(3, 1, size=2.0), draw(1, 2), draw(2, 2)),
        _step("one query", "one query (n_q = 1): running_max (1,), scores (1, 4), V_block (4, 3)", draw(1, 2),
              draw(1, 4, size=2.0), draw(4, 3), draw(2, 3)),
        _step("large scores", "large scores, about 1000 (exp(1000) overflows to inf): scores (2, 3), V_block (3, 2)",
              np.array([[990.0, 1000.0, 995.5], [1001.5, 998.0, 997.0]]),
              np.array([[1002.5, 999.0, 1001.0], [996.0, 1003.0, 1000.5]]), draw(3, 2), draw(3, 2)),
        _step("rows far apart", "rows of very different scale: scores near 0 for query 0 and near 1000 for query 1 "
              "(one maximum for the whole block makes exp(s - m) = 0 in the first): scores (2, 3), V_block (3, 2)",
              np.array([[0.5, -0.5, 0.0], [1000.0, 999.0, 1001.0]]), np.array([[1.0, 0.0, -1.0],
                                                                            [1002.0, 998.0, 1000.5]]),
              draw(3, 2), draw(3, 2)),
        _step("-inf entries", "a block with -inf where a mask hid a key: scores (2, 3), V_block (3, 2)",
              np.array([[0.5, 1.0, 0.0], [1.0, -1.0, 0.5]]), np.array([[2.0, -inf, 1.0], [-inf, 0.5, 3.0]]),
              draw(3, 2), draw(3, 2)),
        _step("batch", "a batch of 2 sentences: running_max (2, 3), scores (2, 3, 2), V_block (2, 2, 2)",
              draw(2, 3, 2, size=2.0), draw(2, 3, 2, size=2.0), draw(2, 2, 2), draw(2, 2, 2)),
    ]
    for shape, size in (((4, 5, 3), 3.0), ((1, 2, 1), 10.0)):
        n_q, b, d_v = shape
        cases.append(_step(f"random {shape}", f"random scores of size about {size:g}: {n_q} queries, a block of {b} "
                           f"keys, d_v = {d_v}", rng.normal(0, size, (n_q, 3)), rng.normal(0, size, (n_q, b)),
                           rng.normal(0, 1, (b, d_v)), rng.normal(0, 1, (3, d_v))))
    empty = _step("nothing to attend to", "a query whose keys are all hidden so far (-inf everywhere, running_max "
                  "-inf, running_sum 0) beside one that sees keys: scores (2, 3), V_block (3, 2)",
                  np.array([[1.0, 0.5, 2.0], [-inf, -inf, -inf]]), np.array([[0.0, 3.0, 1.0], [-inf, -inf, -inf]]),
                  draw(3, 2), draw(3, 2))
    return tuple(cases + [empty])


def _tiled():
    rng = np.random.default_rng(2022)                  # the year of FlashAttention

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    def case(name, words, n_q, n_k, block_size, d=4, d_v=3, batch=()):
        return Input(name, words, {"Q": draw(*batch, n_q, d), "K": draw(*batch, n_k, d), "V": draw(*batch, n_k, d_v),
                                   "block_size": block_size})

    # Large scores built by hand, d_k = 2, blocks of 2 keys: query 0 meets scores near 850 in the first block;
    # query 1 sees scores of 0 in the first block and near 850 in the second (beyond the first block's
    # maximum by more than 709, where exp overflows); query 2's scores are small.
    K = np.array([[30.0, 0.0], [29.0, 0.0], [0.0, 40.0], [0.0, 41.0]])
    Q = np.array([[40.0, 0.0], [0.0, 30.0], [0.1, 0.1]])
    large = Input("large scores", "very large scores: Q (3, 2), K (4, 2), block_size 2; the scaled scores reach "
                  f"{float((Q @ K.T).max() / np.sqrt(2)):.0f} (exp overflows past 709)",
                  {"Q": Q, "K": K, "V": draw(4, 3), "block_size": 2})
    return (
        case("plain", "Q, K and V of shape (6, 4), (6, 4), (6, 3), block_size 2 (3 blocks)", 6, 6, 2),
        case("n not a multiple", "n = 5 keys with block_size 2: the last block holds one key", 5, 5, 2),
        case("block_size 1", "block_size 1: one key per block, n = 4", 4, 4, 1),
        case("one block", "block_size 8 >= n = 3: a single block holds every key", 3, 3, 8),
        case("n = 1", "one query and one key (n = 1), block_size 2", 1, 1, 2),
        case("n_q != n_k", "2 queries and 7 keys, block_size 3 (the last block holds one key)", 2, 7, 3),
        large,
        case("batch", "a batch of 2 sentences: Q, K, V of shape (2, 5, 4), (2, 5, 4), (2, 5, 3), block_size 2",
             5, 5, 2, batch=(2,)),
        case("random (9, 16)", "random Q, K of shape (9, 16) with entries of size about 1, block_size 4",
             9, 9, 4, d=16, d_v=2),
    )


def _kv_step():
    rng = np.random.default_rng(2019)

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    def case(name, words, t, d_k=4, d_v=4, size=1.0):
        return Input(name, words, {"cache_keys": draw(t, d_k, size=size), "cache_values": draw(t, d_v),
                                   "q": draw(d_k, size=size), "k": draw(d_k, size=size), "v": draw(d_v)})

    return (
        case("first token", "the first token: an empty cache (cache_keys of shape (0, 4)); q, k, v of 4 entries",
             0),
        case("second token", "the second token: one cached key and value, shape (1, 4); q, k, v of 4 entries", 1),
        case("three cached", "three cached tokens: cache_keys, cache_values (3, 4); q, k, v of 4 entries", 3),
        case("wide keys", "wider keys: d_k = 16, cache_keys (2, 16), values of 4 entries", 2, d_k=16),
        case("d_v != d_k", "values narrower than keys: cache_keys (3, 4), cache_values (3, 2), v of 2 entries",
             3, d_v=2),
        case("large scores", "large scores: q and the keys with entries of size about 40, 4 cached tokens",
             4, size=40.0),
        case("random (7, 8)", "7 cached tokens, d_k = 8, d_v = 3, random entries", 7, d_k=8, d_v=3),
    )


ONLINE_SOFTMAX_UPDATE = _online_step()
"""The inputs of the online_softmax_update checker (running_max, running_sum, acc, scores, V_block): 12 steps,
the first block, a block that raises the running max and one that does not, blocks of one key and of one
query, scores near 1000, rows of very different scale (near 0 and near 1000), -inf for hidden keys, a batch,
random sizes, and a query with nothing to attend to."""
TILED_ATTENTION = _tiled()
"""The inputs of the tiled_attention checker (Q, K, V, block_size): 9 inputs, n a multiple of block_size and
not, block_size 1 and larger than n, n = 1, more keys than queries, scores up to 870 (exp overflows past 709;
rows of very different scale too: one query's scores near 850, another's below 3),
a batch of 2 and random (9, 16) queries and keys."""
KV_CACHE_STEP = _kv_step()
"""The inputs of the kv_cache_step checker (cache_keys (t, d_k), cache_values (t, d_v), q, k (d_k,), v (d_v,)):
7 decoding steps, from an empty cache (t = 0) to 7 cached tokens, with wider keys, values narrower than keys,
and scores large enough to overflow an exp without the maximum subtracted."""
__all__ += ["ONLINE_SOFTMAX_UPDATE", "TILED_ATTENTION", "KV_CACHE_STEP"]


# Heads, positions and the softmax backward (checker_heads.py, checker_positions.py, checker_backward.py)
# --------------------------------------------------------------------------

def _split_heads():
    rng = np.random.default_rng(2029)
    cases = [
        Input("small", "x = np.arange(12).reshape(3, 4) (token t holds 4t .. 4t + 3), num_heads = 2",
              {"x": np.arange(12.0).reshape(3, 4), "num_heads": 2}),
        Input("three heads", "x of shape (4, 6), num_heads = 3", {"x": np.round(rng.normal(0, 1, (4, 6)), 1), "num_heads": 3}),
        Input("one head", "x of shape (3, 4), num_heads = 1 (one head holds every feature)",
              {"x": np.round(rng.normal(0, 1, (3, 4)), 1), "num_heads": 1}),
        Input("n = 1", "one token: x of shape (1, 6), num_heads = 2", {"x": np.round(rng.normal(0, 1, (1, 6)), 1),
                                                                        "num_heads": 2}),
        Input("batch", "a batch of 2 sentences: x of shape (2, 3, 4), num_heads = 2",
              {"x": np.round(rng.normal(0, 1, (2, 3, 4)), 1), "num_heads": 2}),
    ]
    for lead, n, h, d_k in ((), 5, 4, 2), ((3, 2), 4, 2, 3):
        shape = (*lead, n, h * d_k)
        cases.append(Input(f"random {shape}", f"random x of shape {shape}, num_heads = {h}",
                           {"x": rng.normal(0, 1, shape), "num_heads": h}))
    return tuple(cases)


def _merge_heads(split):
    def merge(case):
        x = np.array(split_heads(case.args["x"], case.args["num_heads"]))     # (..., num_heads, n, d_k)
        h, n, d_k = x.shape[-3:]
        lead = f" for {x.shape[0]} sentences" if x.ndim == 4 else (" with two leading axes" if x.ndim > 4 else "")
        name = f"random {x.shape}" if case.name.startswith("random") else case.name
        return Input(name, f"{h} head{'s' * (h > 1)} of {n} token{'s' * (n > 1)}, d_k = {d_k}{lead}: x of shape "
                     f"{x.shape}", {"x": x})

    return tuple(merge(case) for case in split)


def _multi_head():
    rng = np.random.default_rng(2030)

    def layer(d_model, *lead_n, size=1.0):
        X = np.round(rng.normal(0, 1, lead_n + (d_model,)), 1)
        W = [np.round(rng.normal(0, size, (d_model, d_model)), 2) for _ in range(4)]   # W_Q, W_K, W_V, W_O
        return dict(zip(("X", "W_Q", "W_K", "W_V", "W_O"), [X, *W]))

    def case(name, words, num_heads, args, mask=None):
        return Input(name, words, {**args, "num_heads": num_heads, "mask": mask})

    real = np.array([[True] * 4, [True, True, False, False]])
    return (
        case("two heads", "X (3, 4), num_heads = 2, W_Q, W_K, W_V, W_O (4, 4)", 2, layer(4, 3)),
        case("four heads", "X (4, 8), num_heads = 4, every W (8, 8)", 4, layer(8, 4)),
        case("one head", "X (3, 4), num_heads = 1 (one head of the full width)", 1, layer(4, 3)),
        case("n = 1", "one token: X (1, 4), num_heads = 2", 2, layer(4, 1)),
        case("causal mask", "a causal mask: X (4, 6), num_heads = 3, mask = causal_mask(4)", 3, layer(6, 4),
             causal_mask(4)),
        case("batch", "a batch of 2 sentences: X (2, 3, 4), num_heads = 2", 2, layer(4, 2, 3)),
        case("padding mask", "a padding mask with its head axis: X (2, 4, 4), num_heads = 2, mask = "
             "padding_mask(is_real, num_heads=2) of shape (2, 1, 1, 4), the second sentence 2 real tokens", 2,
             layer(4, 2, 4), np.array(padding_mask(real, num_heads=2))),
        case("random (5, 12)", "random X (5, 12) and W of size about 0.5, num_heads = 3", 3, layer(12, 5, size=0.5)),
        case("random (2, 6, 8)", "random X (2, 6, 8) (2 sentences), num_heads = 4, mask = causal_mask(6)", 4,
             layer(8, 2, 6, size=0.7), causal_mask(6)),
        case("rows apart", "rows of very different scale: X (2, 4) = [[0, 0, 0, 0], [40, 0, 0, 0]], num_heads = 2, "
             "W_Q = W_K = I, so head 0's scaled scores are [0, 0] for token 0 and [0, 1131] for token 1", 2,
             {**layer(4, 2), "X": np.array([[0.0, 0.0, 0.0, 0.0], [40.0, 0.0, 0.0, 0.0]]), "W_Q": np.eye(4),
              "W_K": np.eye(4)}),
    )


def _positional():
    rng = np.random.default_rng(2031)
    sizes = [(4, 4), (1, 8), (6, 2), (3, 6)] + [tuple(int(v) for v in (rng.integers(5, 40), 2 * rng.integers(4, 33)))
                                                for _ in range(2)]
    words = {(1, 8): "one position (n = 1), d_model = 8", (6, 2): "6 positions, d_model = 2 (one pair of columns)"}
    return tuple(Input(f"({n}, {d})", words.get((n, d), f"n = {n} positions, d_model = {d}"),
                       {"n": n, "d_model": d}) for n, d in sizes)


def _softmax_backward():
    rng = np.random.default_rng(2032)

    def rows(scores, grad):
        return {"weights": softmax(np.asarray(scores, dtype=float)), "grad_weights": np.asarray(grad, dtype=float)}

    hidden = rows([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]], [[0.3, -0.5, 1.0], [1.0, 2.0, -1.0]])
    hidden["weights"][1] = 0.0                   # a query with nothing to attend to: attention gives it zeros
    cases = [
        Input("one row", "one row: weights = softmax([1, 2, 3]), grad_weights = [0.5, -1, 2]",
              rows([1.0, 2.0, 3.0], [0.5, -1.0, 2.0])),
        Input("n = 1", "one key: weights = [1], grad_weights = [0.7] (the weight cannot move: gradient 0)",
              rows([0.3], [0.7])),
        Input("matrix", "3 rows of 4 weights (one per query), shape (3, 4)",
              rows(np.round(rng.normal(0, 1, (3, 4)), 1), np.round(rng.normal(0, 1, (3, 4)), 1))),
        Input("hidden query", "2 rows, the second all zeros (a query with nothing to attend to: its gradient is 0)",
              hidden),
        Input("batch", "a batch of 2 sentences: weights and grad_weights of shape (2, 3, 4)",
              rows(rng.normal(0, 1, (2, 3, 4)), rng.normal(0, 1, (2, 3, 4)))),
    ]
    for shape, size in (((5, 7), 3.0), ((2, 2, 6), 1.0)):
        cases.append(Input(f"random {shape}", f"random rows of shape {shape} (scores of size about {size:g})",
                           rows(rng.normal(0, size, shape), rng.normal(0, 1, shape))))
    cases.append(Input("square", "4 queries over 4 keys, shape (4, 4): self-attention's square weights",
                       rows(np.round(rng.normal(0, 1, (4, 4)), 1), np.round(rng.normal(0, 1, (4, 4)), 1))))
    return tuple(cases)


SPLIT_HEADS = _split_heads()
"""The inputs of the split_heads checker: ``x`` (..., n, d_model) and ``num_heads``: 7 in all (a (3, 4) arange
split in 2, three heads, one head, one token, a batch, then two of random shapes, one with two leading axes)."""
MERGE_HEADS = _merge_heads(SPLIT_HEADS)
"""The inputs of the merge_heads checker: the heads of each split_heads input, ``x`` (..., num_heads, n, d_k)."""
MULTI_HEAD = _multi_head()
"""The inputs of the multi_head_attention checker, each unambiguous about its mask (two heads, four
heads, one head, one token, a causal mask (n, n), a batch of 2 sentences, a padding mask with its head axis
(B, 1, 1, n), then two random layers: width 12 with 3 heads, and a batch of 2 with 4 heads and a causal mask),
and two tokens whose scores lie 1131 apart (one maximum for the whole array underflows the lower row): 10 in all."""
POSITIONAL = _positional()
"""The inputs of the positional_encoding checker, named (n, d_model): 6 in all ((4, 4), one position,
d_model = 2, (3, 6), then two of random sizes)."""
SOFTMAX_BACKWARD = _softmax_backward()
"""The inputs of the softmax_backward checker: rows of softmax ``weights`` and ``grad_weights`` of their shape,
8 in all (one row, one key, 3 rows, a hidden query's row of zeros, a batch, two of random shapes, then square
(4, 4) rows, where a sum without keepdims broadcasts without an error)."""


def _rope():
    rng = np.random.default_rng(2021)

    def case(name, words, shape, positions=None, size=1.0):
        x = np.round(rng.normal(0.0, size, shape), 1) if size == 1.0 else rng.normal(0.0, size, shape)
        return Input(name, words, {"x": x, "positions": None if positions is None else np.asarray(positions, float)})

    return (
        Input("one pair", "one pair: x = [[1, 0], [1, 0], [1, 0]] (d = 2) at positions 0, 1, 2",
              {"x": np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]), "positions": None}),
        case("(4, 4)", "x (4, 4): 4 tokens of d = 4, positions 0 to 3", (4, 4)),
        case("given positions", "x (3, 4) at the positions given, [0, 2.5, 7] (fractions allowed)", (3, 4),
             [0.0, 2.5, 7.0]),
        case("n = 1", "one token: x (1, 6) at position 0", (1, 6)),
        case("batch", "a batch: x (2, 5, 4), positions 0 to 4 for both", (2, 5, 4)),
        case("random (6, 8)", "random x (6, 8) at positions 100 to 105", (6, 8), np.arange(100, 106), size=2.0),
        case("random (2, 3, 7, 16)", "random x (2, 3, 7, 16) (batch and heads), positions 0 to 6", (2, 3, 7, 16),
             size=0.5),
    )


ROPE = _rope()
"""The inputs of the rope checker: ``x`` (..., n, d) and ``positions`` (None: 0 .. n-1), 7 in all (one pair at
positions 0-2, (4, 4), given fractional positions, one token, a batch, then two random ones: positions from 100,
and batch and head axes)."""


def _layer_norm():
    rng = np.random.default_rng(2016)

    def draw(*shape, size=1.0, mean=0.0):
        return mean + np.round(rng.normal(0.0, size, shape), 1) if size >= 0.1 else mean + rng.normal(0.0, size, shape)

    def case(name, words, x, gain=True, eps=None):
        d = x.shape[-1]
        gamma = np.round(rng.uniform(0.5, 2.0, d), 1) if gain else np.ones(d)
        beta = np.round(rng.normal(0.0, 0.5, d), 1) if gain else np.zeros(d)
        return Input(name, words, {"x": x, "gamma": gamma, "beta": beta, "eps": eps})

    constant = draw(2, 4)
    constant[0] = 2.0                                  # a row whose entries are all equal: variance 0
    return (
        case("one token", "one token: x = [[1, 2, 3, 4]], gamma ones, beta zeros (mean 2.5, variance 1.25)",
             np.array([[1.0, 2.0, 3.0, 4.0]]), gain=False),
        case("gamma and beta", "x (3, 5) with a gamma and a beta of its own (5,)", draw(3, 5)),
        case("constant row", "x (2, 4), row 0 all 2.0 (variance 0: its output is beta)", constant),
        case("small spread", "x (2, 6), each row about 0.2 give or take 0.002 (variance about 5e-6)",
             draw(2, 6, size=0.003, mean=0.2)),
        case("eps given", "x (3, 5) with entries of size about 0.1, and eps = 0.01 passed", draw(3, 5, size=0.1),
             eps=0.01),
        case("batch", "a batch: x (2, 3, 8)", draw(2, 3, 8)),
        case("square", "x (4, 4): as many tokens as features", draw(4, 4)),
        case("random (5, 16)", "random x (5, 16), entries of size about 3, eps = 1e-5 passed",
             rng.normal(0.0, 3.0, (5, 16)), eps=1e-5),
    )


LAYER_NORM = _layer_norm()
"""The inputs of the layer_norm checker: ``x`` (..., d_model), ``gamma`` and ``beta`` (d_model,), ``eps`` (None: the
function's default, 1e-12, not passed): 8 in all (one token by hand, a gamma and beta, a constant row, rows of small
spread where a larger default eps shows, eps passed, a batch, a square x, then a random one with eps = 1e-5)."""
