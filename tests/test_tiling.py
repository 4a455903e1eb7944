"""tiled_attention, online_softmax_update and KVCache (notebook 08).

The reference is scaled_dot_product_attention, itself tested against plain
loops in test_attention.py, and hand derivations written beside each test.
"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import helpers.tiling as A
from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.tiling import KVCache, online_softmax_update, tiled_attention

finite = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)


@st.composite
def tiled_case(draw):
    batch = draw(st.sampled_from([(), (2,), (2, 3)]))
    n_q, n_k = draw(st.integers(1, 13)), draw(st.integers(1, 13))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    Q = draw(hnp.arrays(np.float64, batch + (n_q, d_k), elements=finite))
    K = draw(hnp.arrays(np.float64, batch + (n_k, d_k), elements=finite))
    V = draw(hnp.arrays(np.float64, batch + (n_k, d_v), elements=finite))
    kind = draw(st.sampled_from(["none", "causal", "random", "padding"]))
    if kind == "causal":
        mask = np.tril(np.ones((n_q, n_k), dtype=bool))
    elif kind == "random":
        mask = draw(hnp.arrays(bool, (n_q, n_k)))
    elif kind == "padding":  # one row of keys, broadcast over every query
        mask = draw(hnp.arrays(bool, (1, n_k)))
    else:
        mask = None
    block = draw(st.integers(1, max(n_q, n_k) + 2))
    return Q, K, V, mask, block


@given(tiled_case())
@settings(max_examples=300, deadline=None)
def test_tiled_equals_plain_attention_to_1e_12(case):
    Q, K, V, mask, block = case
    plain, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    tiled = tiled_attention(Q, K, V, block, mask=mask)
    assert tiled.shape == plain.shape
    assert np.max(np.abs(tiled - plain)) <= 1e-12


@pytest.mark.parametrize("n", [1, 5, 7, 16])
def test_every_block_size_from_1_to_n_with_and_without_causal_mask(n):
    rng = np.random.default_rng(n)
    Q, K, V = rng.standard_normal((n, 8)), rng.standard_normal((n, 8)), rng.standard_normal((n, 3))
    for mask in (None, causal_mask(n)):
        plain, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
        for b in range(1, n + 1):  # includes n not a multiple of b
            assert np.max(np.abs(tiled_attention(Q, K, V, b, mask=mask) - plain)) <= 1e-12, (b, mask is None)


def test_scale_is_passed_through():
    rng = np.random.default_rng(1)
    Q, K, V = rng.standard_normal((6, 4)), rng.standard_normal((9, 4)), rng.standard_normal((9, 2))
    for scale in (1.0, 0.1, 3.0):
        plain, _ = scaled_dot_product_attention(Q, K, V, scale=scale)
        assert np.max(np.abs(tiled_attention(Q, K, V, 4, scale=scale) - plain)) <= 1e-12


def test_large_scores_do_not_overflow():
    # Scores of 1000 and 1001 (notebook practice): the weights are 0.269 and 0.731.
    Q = np.array([[1.0]])
    K = np.array([[1000.0], [1001.0]])
    V = np.array([[0.0], [1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tiled_attention(Q, K, V, 1, scale=1.0)
    assert abs(out[0, 0] - 1 / (1 + math.exp(-1))) < 1e-12   # 0.731 on the value 1


def test_a_fully_masked_row_gives_zeros_without_warning():
    rng = np.random.default_rng(2)
    Q, K, V = rng.standard_normal((3, 2)), rng.standard_normal((5, 2)), rng.standard_normal((5, 2)) + 5
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tiled_attention(Q, K, V, 2, mask=mask)
    assert out[1].tolist() == [0.0, 0.0]
    assert np.all(np.abs(out[[0, 2]]) > 0)


def test_a_row_masked_only_in_its_first_blocks_recovers():
    # Query 0 may only read the last key: the first blocks leave m = -inf, l = 0, and the
    # last one must still give exactly that key's value.
    Q, K = np.ones((1, 2)), np.arange(10.0).reshape(5, 2)
    V = np.arange(5.0)[:, None]
    mask = np.array([[False, False, False, False, True]])
    assert tiled_attention(Q, K, V, 2, mask=mask).tolist() == [[4.0]]


@pytest.mark.parametrize("n_q, n_k, b", [(50, 70, 16), (3000, 300, 64), (1000, 1000, 800), (2000, 10, 1)])
def test_it_never_holds_an_n_q_by_n_k_block_of_scores(monkeypatch, n_q, n_k, b):
    seen = []
    real = A.online_softmax_update

    def spy(m, l, acc, scores, V_block):
        seen.append(scores.shape)
        return real(m, l, acc, scores, V_block)

    monkeypatch.setattr(A, "online_softmax_update", spy)
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((n_q, 2)), rng.standard_normal((n_k, 2)), rng.standard_normal((n_k, 3))
    out = A.tiled_attention(Q, K, V, b)
    rows = max(b, A.TILE_NUMBERS // b)          # queries per block: 2**18 // 16 = 16384, 2**18 // 64 = 4096, 800
    assert len(seen) == math.ceil(n_q / rows) * math.ceil(n_k / b)
    assert all(r <= rows and c <= b and r * c <= max(b * b, A.TILE_NUMBERS) for r, c in seen)
    if (n_q, n_k, b) == (1000, 1000, 800):      # square blocks: 2 x 2 of at most 800 x 800
        assert sorted(seen) == [(200, 200), (200, 800), (800, 200), (800, 800)]
    assert np.max(np.abs(out - scaled_dot_product_attention(Q, K, V)[0])) <= 1e-12


def test_peak_memory_is_far_below_one_n_by_n_matrix():
    n, d, b = 2048, 16, 64
    rng = np.random.default_rng(4)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    mask = causal_mask(n)          # the caller's; read as a view, never copied
    tracemalloc.start()
    try:
        tiled_attention(Q, K, V, b, mask=mask)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    full = n * n * 8                # one (n, n) float64 matrix: 32 MiB
    # A block of scores is 2048 x 64 (2**18 // 64 = 4096 rows, cut to n): 1 MiB; the output 256 KiB;
    # with the block's temporaries and the mask's slice, a few MiB.
    assert peak < full / 4, peak


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(block_size=0), r"block_size must be a positive whole number .* got 0"),
    (dict(block_size=-2), r"block_size must be a positive whole number .* got -2"),
    (dict(block_size=2.5), r"block_size must be a positive whole number .* got 2.5"),
    (dict(block_size=True), r"block_size must be a positive whole number .* got True"),
    (dict(block_size="4"), r"block_size must be a positive whole number .* got '4'"),
    (dict(Q=np.zeros((0, 2))), r"Q has shape \(0, 2\): it needs at least one query"),
    (dict(K=np.zeros((0, 2)), V=np.zeros((0, 3))), r"K has shape \(0, 2\): it needs at least one key"),
    (dict(Q=np.zeros((3, 0)), K=np.zeros((4, 0))), r"Q has shape \(3, 0\): it needs at least one feature"),
    (dict(K=np.zeros((4, 3))), r"Q and K must have the same d_k .* Q has shape \(3, 2\), K has shape \(4, 3\)"),
    (dict(V=np.zeros((5, 3))), r"K and V must have the same number of keys .* K has shape \(4, 2\), V has shape \(5, 3\)"),
    (dict(Q=np.zeros(2)), r"Q must have at least 2 dimensions"),
    (dict(Q=np.zeros((2, 3, 2)), K=np.zeros((3, 4, 2)), V=np.zeros((3, 4, 3))), "batch dimensions of Q, K and V do not broadcast"),
    (dict(Q=np.array([[np.nan, 0.0]] * 3)), "Q contains NaN"),
    (dict(V=np.full((4, 3), np.inf)), "V contains inf"),
    (dict(mask=np.ones((3, 4))), "mask must be boolean .* got dtype float64"),
    (dict(mask=np.ones((4, 3), dtype=bool)), r"mask of shape \(4, 3\) must broadcast to the scores' shape \(..., n_q, n_k\) = \(3, 4\)"),
    (dict(mask=np.ma.masked_array(np.ones((3, 4), dtype=bool), mask=np.eye(3, 4, dtype=bool))),
     r"mask is a numpy masked array"),   # np.asarray would drop its mask: the result would be unmasked
    (dict(mask=[[True], [True, False]]), r"mask must be a boolean array .* could not read it"),
    (dict(scale=10 ** 400), r"scale must be a positive finite number"),
    (dict(mask=np.ones((2, 3, 4), dtype=bool)), r"mask of shape \(2, 3, 4\) must broadcast .* without adding"),
    (dict(scale=0), "scale must be a positive finite number"),
    (dict(Q=np.full((3, 2), 1e200), K=np.full((4, 2), 1e200)), "overflowed to inf"),
])
def test_bad_input_gets_a_value_error_naming_the_argument(kwargs, pattern):
    args = dict(Q=np.zeros((3, 2)), K=np.zeros((4, 2)), V=np.zeros((4, 3)), block_size=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=pattern):
        tiled_attention(**args)


# ---------------------------------------------------------------- the online softmax, by hand

def test_online_update_on_the_river_bank_row_by_hand():
    # Scaled scores of 'bank' in source 000: 0.159, 1.061, 0.795, 0.955 (values = the 2-D x's).
    s = np.array([[0.159, 1.061, 0.795, 0.955]])
    V = np.array([[0.1, 0.1], [1.0, 0.0], [0.5, 0.5], [0.8, 0.2]])
    m, l, acc = np.array([-np.inf]), np.zeros(1), np.zeros((1, 2))
    m, l, acc = online_softmax_update(m, l, acc, s[:, :2], V[:2])
    # After the first block: m = 1.061, l = exp(0.159 - 1.061) + exp(0) = exp(-0.902) + 1
    assert m[0] == 1.061 and abs(l[0] - (math.exp(-0.902) + 1)) < 1e-15
    m, l, acc = online_softmax_update(m, l, acc, s[:, 2:], V[2:])
    # The maximum stays 1.061, so the old sum is kept as it is (factor exp(0) = 1).
    want = [math.exp(x - 1.061) for x in s[0]]
    assert m[0] == 1.061 and abs(l[0] - sum(want)) < 1e-15
    weights = np.array(want) / sum(want)
    assert np.allclose(acc[0] / l[0], weights @ V, atol=1e-15)


def test_online_update_rescales_when_the_maximum_moves():
    # Block 1 holds a score of 0, block 2 a score of 2: the old sum exp(0 - 0) = 1 becomes
    # exp(0 - 2) = e^-2 against the new maximum, and the block adds exp(2 - 2) = 1.
    m, l, acc = online_softmax_update(np.array([-np.inf]), np.zeros(1), np.zeros((1, 1)),
                                      np.array([[0.0]]), np.array([[1.0]]))
    m, l, acc = online_softmax_update(m, l, acc, np.array([[2.0]]), np.array([[3.0]]))
    assert m[0] == 2.0
    assert abs(l[0] - (math.exp(-2) + 1)) < 1e-15
    assert abs(acc[0, 0] - (math.exp(-2) * 1 + 3)) < 1e-15


def test_online_update_refuses_a_block_whose_scores_and_values_disagree():
    with pytest.raises(ValueError, match=r"must hold the same b keys; got shapes \(1, 3\) and \(2, 1\)"):
        online_softmax_update(np.array([-np.inf]), np.zeros(1), np.zeros((1, 1)), np.zeros((1, 3)), np.zeros((2, 1)))


# ---------------------------------------------------------------- the KV cache

@given(st.integers(1, 20), st.integers(1, 6), st.integers(1, 5), st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_kv_cache_equals_full_causal_attention_token_by_token(n, d_k, d_v, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rng.standard_normal((n, d_k)) * 3, rng.standard_normal((n, d_k)) * 3, rng.standard_normal((n, d_v))
    full_out, full_w = scaled_dot_product_attention(Q, K, V, mask=causal_mask(n))
    cache = KVCache()
    for t in range(n):
        cache.append(K[t], V[t])
        out, w = cache.attend(Q[t])
        assert len(cache) == t + 1 and w.shape == (t + 1,)
        assert np.max(np.abs(out - full_out[t])) <= 1e-12
        assert np.max(np.abs(w - full_w[t, :t + 1])) <= 1e-12
    assert np.array_equal(cache.keys, K) and np.array_equal(cache.values, V)


def test_kv_cache_holds_2_n_d_floats_and_its_views_are_read_only():
    cache = KVCache()
    for t in range(20):                       # past the first doubling of the storage (8, 16, 32)
        cache.append(np.full(4, t), np.full(3, -t))
    assert cache.keys.shape == (20, 4) and cache.values.shape == (20, 3)
    assert cache.nbytes == 8 * 20 * (4 + 3)
    assert cache.keys[:, 0].tolist() == list(range(20))
    with pytest.raises(ValueError):
        cache.keys[0, 0] = 99.0
    assert (cache.d_k, cache.d_v) == (4, 3)


def test_kv_cache_scale():
    cache = KVCache()
    cache.append([1.0, 0.0], [0.0])
    cache.append([0.0, 1.0], [1.0])
    _, w = cache.attend([2.0, 0.0], scale=1.0)
    assert abs(w[0] - 1 / (1 + math.exp(-2))) < 1e-15     # scores 2 and 0, unscaled


def test_kv_cache_attend_before_append_is_an_error():
    with pytest.raises(ValueError, match="the cache is empty: append"):
        KVCache().attend(np.zeros(3))


@pytest.mark.parametrize("call, pattern", [
    (lambda c: c.append(np.zeros(5), np.zeros(2)), r"k must have d_k = 4 entries, like the ones already cached; got shape \(5,\)"),
    (lambda c: c.append(np.zeros(4), np.zeros(3)), r"v must have d_v = 2 entries, like the ones already cached; got shape \(3,\)"),
    (lambda c: c.append(np.zeros((2, 4)), np.zeros((2, 2))), r"k must be one token's key, a 1-D vector .* got shape \(2, 4\)"),
    (lambda c: c.append(np.zeros(4), np.zeros((1, 2))), r"v must be one token's value, a 1-D vector"),
    (lambda c: c.append(np.zeros(4), [np.nan, 0]), "v contains NaN"),
    (lambda c: c.append("abcd", np.zeros(2)), "k must be an array of real numbers"),
    (lambda c: c.attend(np.zeros(3)), r"q must be one query, a 1-D vector of d_k = 4 entries .* got shape \(3,\)"),
    (lambda c: c.attend(np.zeros((1, 4))), r"q must be one query, .* got shape \(1, 4\)"),
    (lambda c: c.attend(np.zeros(4), scale=-1), "scale must be a positive finite number"),
])
def test_kv_cache_bad_input(call, pattern):
    cache = KVCache()
    cache.append(np.zeros(4), np.zeros(2))
    with pytest.raises(ValueError, match=pattern):
        call(cache)
    assert len(cache) == 1          # a refused append adds nothing


def test_kv_cache_first_append_needs_vectors():
    with pytest.raises(ValueError, match=r"k must be one token's key, a 1-D vector of length d_k >= 1 .* got shape \(\)"):
        KVCache().append(1.0, [1.0])
    with pytest.raises(ValueError, match=r"got shape \(0,\)"):
        KVCache().append([], [1.0])


def test_online_update_reads_lists_and_refuses_running_values_of_the_wrong_shape():
    # Lists are read as arrays (notebook 08 calls the function directly); the same numbers as arrays.
    as_lists = online_softmax_update([-np.inf] * 2, [0.0, 0.0], [[0.0] * 3] * 2, [[1.0] * 4] * 2, [[1.0] * 3] * 4)
    as_arrays = online_softmax_update(np.full(2, -np.inf), np.zeros(2), np.zeros((2, 3)), np.ones((2, 4)),
                                      np.ones((4, 3)))
    assert all(np.array_equal(a, b) for a, b in zip(as_lists, as_arrays))
    with pytest.raises(ValueError, match=r"running_max must have shape \(2,\).*got shape \(3,\)"):
        online_softmax_update(np.full(3, -np.inf), np.zeros(2), np.zeros((2, 3)), np.ones((2, 4)), np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"acc must have shape \(2, 3\).*got shape \(2, 2\)"):
        online_softmax_update(np.full(2, -np.inf), np.zeros(2), np.zeros((2, 2)), np.ones((2, 4)), np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"must be arrays of numbers"):
        online_softmax_update([[1.0], [1.0, 2.0]], np.zeros(2), np.zeros((2, 3)), np.ones((2, 4)), np.ones((4, 3)))


# ---------------------------------------------------------------- sliding windows, tiled (issue 26)

@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), block=st.integers(1, 9), window=st.integers(1, 45), seed=st.integers(0, 10_000))
def test_sliding_window_attention_equals_the_masked_attention_and_skips_only_empty_blocks(n, block, window, seed):
    from helpers.attention import sliding_window_mask
    from helpers.tiling import sliding_window_attention, window_blocks
    rng = np.random.default_rng(seed)
    Q, K, V = rng.standard_normal((n, 4)), rng.standard_normal((n, 4)), rng.standard_normal((2, n, 3))
    mask = sliding_window_mask(n, window)
    want, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(sliding_window_attention(Q, K, V, block, window), want, atol=1e-12)
    visited = set(window_blocks(n, block, window))
    for q0 in range(0, n, block):                          # a block is visited exactly when it holds an allowed pair
        for k0 in range(0, n, block):
            assert ((q0, k0) in visited) == bool(mask[q0:q0 + block, k0:k0 + block].any())


def test_window_blocks_grow_with_n_times_the_window():
    from helpers.tiling import window_blocks
    # By hand: 4096 tokens in blocks of 256 are 16 query blocks; a window of 512 reaches back over at most
    # 511 keys, so a block needs itself and the 2 key blocks before it (the first two blocks fewer): 3*16 - 3 = 45.
    assert len(window_blocks(4096, 256, 512)) == 45
    assert len(window_blocks(4096, 256, 4096)) == 16 * 17 // 2          # the window covers everything: causal
    with pytest.raises(ValueError, match="window"):
        window_blocks(8, 2, 0)


# ---------------------------------------------------------------- issue 32, section 5

def test_an_empty_block_of_keys_leaves_the_running_values_unchanged():
    # After one block of 2 keys, a block of none (scores (2, 0), V_block (0, 3)) folds nothing in.
    start = (np.full(2, -np.inf), np.zeros(2), np.zeros((2, 3)))
    totals = online_softmax_update(*start, np.array([[1.0, 2.0], [0.5, -np.inf]]), np.arange(6.0).reshape(2, 3))
    after = online_softmax_update(*totals, np.zeros((2, 0)), np.zeros((0, 3)))
    for got, before in zip(after, totals):
        np.testing.assert_array_equal(got, before)
        assert got is not before                      # new arrays, as for any other block
    m, l, acc = online_softmax_update(*start, np.zeros((2, 0)), np.zeros((0, 3)))   # before any key: still empty
    assert np.all(np.isneginf(m)) and not l.any() and not acc.any()


@pytest.mark.parametrize("kwargs", [dict(Q=np.full((6, 4), 1e160), K=np.full((6, 4), 1e160)),
                                    dict(Q=np.ones((6, 4)), K=np.ones((6, 4)), scale=1e308)],
                         ids=["Q = K = 1e160", "scale=1e308"])
def test_sliding_window_attention_refuses_scores_past_float64_by_name_as_tiled_attention_does(kwargs):
    import warnings
    from helpers.tiling import sliding_window_attention
    args = dict(V=np.ones((6, 3)), block_size=2, **kwargs)
    with pytest.raises(ValueError, match="overflowed to inf") as tiled:
        tiled_attention(**args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no numpy warning on the way: only the ValueError
        with pytest.raises(ValueError, match="the scores Q @ K\\^T \\* scale overflowed to inf") as sliding:
            sliding_window_attention(**args, window=3)
    assert str(sliding.value) == str(tiled.value)
