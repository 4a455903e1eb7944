"""What current models change in attention: rotary positions, grouped-query heads, sliding windows (issue 26).

The references are written here from the papers' equations, independently of
the helpers: RoPE as one 2 x 2 rotation matrix per feature pair (Su et al.
2021, eq. 13/34), grouped-query attention as a loop over query heads that
each take the keys and values of their group (Ainslie et al. 2023, sec. 2.2),
the sliding window as a double loop over (query, key) (Jiang et al. 2023, sec. 2).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import (
    causal_mask,
    multi_head_attention,
    scaled_dot_product_attention,
    sliding_window_mask,
)
from helpers.positions import apply_rope


def rope_by_rotation_matrices(x, positions, base=10000.0):
    """Su et al. (2021) eq. 13 for each pair: [[cos, -sin], [sin, cos]] times (x_2i, x_2i+1)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    out = np.zeros_like(x)
    for t, m in enumerate(positions):
        for i in range(d // 2):
            a = m * base ** (-2 * i / d)
            R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            out[..., t, 2 * i:2 * i + 2] = x[..., t, 2 * i:2 * i + 2] @ R.T
    return out


def rope_rotate_half(x, positions, base=10000.0):
    """The "rotate half" layout of several libraries: feature i is paired with feature i + d/2."""
    d = x.shape[-1]
    angle = np.asarray(positions, dtype=float)[:, None] * base ** (-np.arange(0, d, 2) / d)
    cos, sin = np.concatenate([np.cos(angle)] * 2, -1), np.concatenate([np.sin(angle)] * 2, -1)
    half = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + half * sin


RNG = np.random.default_rng(26)


def test_rope_equals_one_rotation_matrix_per_pair():
    x = RNG.standard_normal((2, 5, 8))
    positions = np.array([0.0, 1.0, 2.5, 7.0, 100.0])
    assert np.allclose(apply_rope(x, positions), rope_by_rotation_matrices(x, positions), atol=1e-12)
    assert np.allclose(apply_rope(x), rope_by_rotation_matrices(x, range(5)), atol=1e-12)


def test_one_pair_by_hand():
    # d = 2: one pair, theta_0 = base^0 = 1, so position 1 turns (1, 0) by one radian to (cos 1, sin 1)
    out = apply_rope(np.array([[0.0, 0.0], [1.0, 0.0]]))
    assert np.allclose(out[1], [np.cos(1.0), np.sin(1.0)]) and np.allclose(out[0], 0.0)


def test_rope_keeps_every_length_and_position_zero_changes_nothing():
    x = RNG.standard_normal((6, 16))
    assert np.allclose(np.linalg.norm(apply_rope(x), axis=-1), np.linalg.norm(x, axis=-1))
    assert np.array_equal(apply_rope(x[:1]), x[:1])


@settings(max_examples=60, deadline=None)
@given(m=st.floats(0, 500), n=st.floats(0, 500), shift=st.floats(0, 500), half_d=st.integers(1, 8),
       seed=st.integers(0, 2**16))
def test_a_score_depends_on_the_positions_only_through_their_difference(m, n, shift, half_d, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((1, 2 * half_d)), rng.standard_normal((1, 2 * half_d))
    score = (apply_rope(q, [m]) @ apply_rope(k, [n]).T).item()
    shifted = (apply_rope(q, [m + shift]) @ apply_rope(k, [n + shift]).T).item()
    # float64 angles of up to 1000 radians carry about 1e-13 of absolute error each
    assert abs(score - shifted) <= 1e-10 * (1 + abs(score)) * (1 + m + n + shift)


def test_the_two_layouts_agree_after_a_fixed_permutation_and_mixing_them_is_a_bug():
    d, n = 8, 6
    q, k = RNG.standard_normal((n, d)), RNG.standard_normal((n, d))
    order = np.r_[0:d:2, 1:d:2]            # paper's pair (2i, 2i+1) -> rotate-half's (i, i + d/2)
    paper = apply_rope(q) @ apply_rope(k).T
    half = rope_rotate_half(q[:, order], range(n)) @ rope_rotate_half(k[:, order], range(n)).T
    assert np.allclose(paper, half, atol=1e-12)
    mixed = apply_rope(q) @ rope_rotate_half(k, range(n)).T
    assert not np.allclose(mixed, paper, atol=1e-3)


@pytest.mark.parametrize("kwargs, words", [
    (dict(x=np.ones((3, 5))), "even"),
    (dict(x=np.ones(4)), "x"),
    (dict(x=np.ones((3, 4)), positions=[0, 1, -2]), "positions must be >= 0"),
    (dict(x=np.ones((3, 4)), positions=[0, np.nan, 2]), "positions"),
    (dict(x=np.ones((3, 4)), positions=[0, 1]), "shape (3,)"),
    (dict(x=np.ones((3, 4)), base=1.0), "base must be"),
    (dict(x=np.ones((3, 4)), base=True), "base must be"),
    (dict(x=np.ones((3, 4)), base=np.inf), "base must be"),
])
def test_rope_refuses_bad_input_by_name(kwargs, words):
    with pytest.raises(ValueError) as info:
        apply_rope(**kwargs)
    assert words in str(info.value)


def grouped_by_loop(X, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    group = num_heads // num_kv_heads
    heads = []
    for h in range(num_heads):
        g = h // group                                   # the key/value head of query head h's group
        Q = X @ W_Q[:, h * d_k:(h + 1) * d_k]
        K, V = X @ W_K[:, g * d_k:(g + 1) * d_k], X @ W_V[:, g * d_k:(g + 1) * d_k]
        heads.append(scaled_dot_product_attention(Q, K, V, mask=mask)[0])
    return np.concatenate(heads, axis=-1) @ W_O


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_grouped_query_attention_equals_a_loop_over_query_heads(num_kv_heads):
    d_model, num_heads, n = 16, 4, 5
    d_k = d_model // num_heads
    X = RNG.standard_normal((n, d_model))
    W_Q, W_O = RNG.standard_normal((2, d_model, d_model))
    W_K, W_V = RNG.standard_normal((2, d_model, num_kv_heads * d_k))
    for mask in (None, causal_mask(n)):
        out, w = multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=mask, num_kv_heads=num_kv_heads)
        assert w.shape == (num_heads, n, n)
        assert np.allclose(out, grouped_by_loop(X, W_Q, W_K, W_V, W_O, num_heads, num_kv_heads, mask), atol=1e-10)


def test_as_many_key_value_heads_as_query_heads_is_todays_multi_head_attention():
    X = RNG.standard_normal((2, 5, 12))
    W = RNG.standard_normal((4, 12, 12))
    plain = multi_head_attention(X, *W, 3)
    grouped = multi_head_attention(X, *W, 3, num_kv_heads=3)
    assert np.array_equal(plain[0], grouped[0]) and np.array_equal(plain[1], grouped[1])


def test_multi_query_heads_share_one_key_so_their_weights_differ_only_by_their_queries():
    X = RNG.standard_normal((5, 8))
    W_Q, W_O = RNG.standard_normal((2, 8, 8))
    W_K, W_V = RNG.standard_normal((2, 8, 2))            # one key/value head of d_k = 2
    out, w = multi_head_attention(X, W_Q, W_K, W_V, W_O, 4, num_kv_heads=1)
    K = X @ W_K
    for h in range(4):
        assert np.allclose(w[h], scaled_dot_product_attention(X @ W_Q[:, 2 * h:2 * h + 2], K, X @ W_V)[1])


@pytest.mark.parametrize("num_kv_heads, W_shape, words", [
    (3, (12, 12), "must be a multiple of num_kv_heads"),
    (0, (12, 12), "num_kv_heads must be"),
    (2, (12, 12), "(d_model, num_kv_heads * d_k) = (12, 6)"),
])
def test_grouped_query_attention_refuses_bad_shapes_by_name(num_kv_heads, W_shape, words):
    X = RNG.standard_normal((5, 12))
    W = RNG.standard_normal((12, 12))
    with pytest.raises(ValueError) as info:
        multi_head_attention(X, W, np.ones(W_shape), np.ones(W_shape), W, 4, num_kv_heads=num_kv_heads)
    assert words in str(info.value)


@pytest.mark.parametrize("n, window", [(1, 1), (6, 1), (6, 3), (7, 7), (5, 9)])
def test_sliding_window_mask_equals_a_loop(n, window):
    loop = np.array([[0 <= i - j < window for j in range(n)] for i in range(n)])
    assert np.array_equal(sliding_window_mask(n, window), loop)
    assert sliding_window_mask(n, window).dtype == bool


def test_a_window_as_long_as_the_sentence_is_the_causal_mask():
    assert np.array_equal(sliding_window_mask(6, 6), causal_mask(6))
    assert np.array_equal(sliding_window_mask(6, 1), np.eye(6, dtype=bool))


@pytest.mark.parametrize("layers", [1, 2, 3, 5])
def test_after_L_layers_a_token_draws_on_L_times_window_minus_1_plus_1_positions(layers):
    # each layer lets the last token reach window - 1 positions further back (hand derivation)
    n, window = 40, 4
    m = sliding_window_mask(n, window).astype(int)
    reach = np.linalg.matrix_power(m, layers) > 0
    assert reach[-1].sum() == min(n, layers * (window - 1) + 1)


@pytest.mark.parametrize("window", [0, -1, 2.5, True, None])
def test_sliding_window_mask_refuses_a_bad_window_by_name(window):
    with pytest.raises(ValueError, match="window must be"):
        sliding_window_mask(5, window)
