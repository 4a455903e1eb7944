"""Unit and property tests of helpers.attention.

Reference values come from hand derivations written beside each test, or from
plain-loop implementations in this file that share no code with the helpers.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import (
    attention_entropy,
    causal_mask,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from helpers.positions import sinusoidal_positional_encoding

finite = st.floats(min_value=-20, max_value=20, allow_nan=False, allow_infinity=False)


def arrays(shape):
    return hnp.arrays(np.float64, shape, elements=finite)


# ---------------------------------------------------------------- plain loops

def loop_softmax(row):
    m = max(row)
    e = [math.exp(x - m) for x in row]
    return [x / sum(e) for x in e]


def loop_attention(Q, K, V, mask=None, scale=None):
    """Attention for one sentence, one query at a time, with Python loops."""
    n_q, d_k = len(Q), len(Q[0])
    n_k, d_v = len(K), len(V[0])
    s = 1 / math.sqrt(d_k) if scale is None else scale
    weights, out = [], []
    for i in range(n_q):
        allowed = [j for j in range(n_k) if mask is None or mask[i][j]]
        scores = [sum(Q[i][t] * K[j][t] for t in range(d_k)) * s for j in allowed]
        row = [0.0] * n_k
        if allowed:
            for j, w in zip(allowed, loop_softmax(scores)):
                row[j] = w
        weights.append(row)
        out.append([sum(row[j] * V[j][c] for j in range(n_k)) for c in range(d_v)])
    return np.array(out), np.array(weights)


# ---------------------------------------------------------------- softmax

def test_softmax_large_scores_do_not_overflow():
    # By hand: softmax(1000, 1001) = (1/(1+e), e/(1+e)) = (0.26894, 0.73106).
    w = softmax(np.array([1000.0, 1001.0]))
    assert np.allclose(w, [1 / (1 + math.e), math.e / (1 + math.e)])
    assert np.round(w, 3).tolist() == [0.269, 0.731]


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=finite))
def test_softmax_rows_sum_to_one_and_match_loop(x):
    w = softmax(x)
    assert np.allclose(w.sum(axis=-1), 1.0)
    assert (w >= 0).all()
    for idx in np.ndindex(x.shape[:-1]):
        assert np.allclose(w[idx], loop_softmax(list(x[idx])))


@given(arrays((3, 5)), st.floats(min_value=-50, max_value=50))
def test_softmax_ignores_a_constant_added_to_a_row(x, c):
    assert np.allclose(softmax(x), softmax(x + c))


def test_softmax_axis_zero_sums_columns():
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    assert np.allclose(softmax(x, axis=0).sum(axis=0), 1.0)
    assert np.allclose(softmax(x, axis=0)[:, 1], loop_softmax([2.0, 5.0]))


def test_softmax_all_minus_inf_row_is_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert w.tolist() == [[0.0, 0.0], [1.0, 0.0]]


@pytest.mark.parametrize("bad, pattern", [
    (np.array([1.0, np.nan]), "x contains NaN"),
    (np.array([1.0, np.inf]), "x contains inf"),
    (np.array(["a", "b"]), "x must be an array of real numbers; got dtype <U1"),
    (3.0, "x must have at least 1 dimension"),
])
def test_softmax_bad_input(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        softmax(bad)


def test_softmax_extreme_scores_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert softmax(np.array([1e308, -1e308])).tolist() == [1.0, 0.0]


def test_softmax_empty_axis_and_bool_axis():
    with pytest.raises(ValueError, match=r"x has shape \(2, 0\): it needs at least one entry"):
        softmax(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="axis must be an integer"):
        softmax(np.zeros(3), axis=True)


def test_softmax_bad_axis():
    with pytest.raises(ValueError, match=r"axis must be an integer between -2 and 1 .* got 2"):
        softmax(np.zeros((2, 3)), axis=2)


# ---------------------------------------------------------------- attention

@st.composite
def qkv(draw, batch=()):
    n_q = draw(st.integers(1, 5))
    n_k = draw(st.integers(1, 5))
    d_k = draw(st.integers(1, 4))
    d_v = draw(st.integers(1, 4))
    Q = draw(arrays(batch + (n_q, d_k)))
    K = draw(arrays(batch + (n_k, d_k)))
    V = draw(arrays(batch + (n_k, d_v)))
    mask = draw(hnp.arrays(bool, (n_q, n_k)))
    return Q, K, V, mask


@given(qkv())
def test_attention_matches_plain_loop(args):
    Q, K, V, mask = args
    out, w = scaled_dot_product_attention(Q, K, V)
    out_ref, w_ref = loop_attention(Q.tolist(), K.tolist(), V.tolist())
    assert np.allclose(w, w_ref) and np.allclose(out, out_ref)
    assert np.allclose(w.sum(axis=-1), 1.0)


@given(qkv())
def test_masked_attention_matches_plain_loop_and_masked_keys_get_exactly_zero(args):
    Q, K, V, mask = args
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    out_ref, w_ref = loop_attention(Q.tolist(), K.tolist(), V.tolist(), mask=mask.tolist())
    assert np.allclose(w, w_ref) and np.allclose(out, out_ref)
    assert (w[~mask] == 0.0).all()
    has_any = mask.any(axis=-1)
    assert np.allclose(w.sum(axis=-1)[has_any], 1.0)
    # A query with nothing to attend to: zero weights and a zero output, no NaN.
    assert (w[~has_any] == 0.0).all() and (out[~has_any] == 0.0).all()


@given(qkv(batch=(2, 3)))
@settings(max_examples=30)
def test_batch_dimensions_are_independent_sentences(args):
    Q, K, V, mask = args
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    for b in np.ndindex(2, 3):
        o, ww = loop_attention(Q[b].tolist(), K[b].tolist(), V[b].tolist(), mask=mask.tolist())
        assert np.allclose(out[b], o) and np.allclose(w[b], ww)


def test_default_scale_is_one_over_sqrt_d_k_and_one_switches_it_off():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    _, w_default = scaled_dot_product_attention(Q, K, V)
    _, w_half = scaled_dot_product_attention(Q, K, V, scale=0.5)  # 1/sqrt(4) = 0.5
    _, w_off = scaled_dot_product_attention(Q, K, V, scale=1.0)
    assert np.allclose(w_default, w_half)
    assert np.allclose(w_off, loop_attention(Q.tolist(), K.tolist(), V.tolist(), scale=1.0)[1])
    assert not np.allclose(w_default, w_off)


def test_keys_are_transposed_on_the_last_two_axes_only():
    # With a batch axis, .T would reverse every axis; the batched answer must
    # equal the answer for each sentence alone.
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    out, _ = scaled_dot_product_attention(Q, K, V)
    assert np.allclose(out[1], scaled_dot_product_attention(Q[1], K[1], V[1])[0])


def test_padding_mask_broadcasts_over_queries():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2, 4, 3))
    keep = np.array([[True, True, True, True], [True, True, False, False]])  # sentence 2 has 2 tokens
    _, w = scaled_dot_product_attention(X, X, X, mask=keep[:, None, :])
    assert (w[1][:, 2:] == 0).all()
    assert np.allclose(w.sum(axis=-1), 1.0)


A = np.zeros((3, 2))


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(Q=np.zeros(2), K=A, V=A), r"Q must have at least 2 dimensions .* got shape \(2,\)"),
    (dict(Q=A, K=np.zeros(2), V=A), r"K must have at least 2 dimensions .* got shape \(2,\)"),
    (dict(Q=A, K=A, V=np.zeros(3)), r"V must have at least 2 dimensions .* got shape \(3,\)"),
    (dict(Q=np.zeros((3, 4)), K=A, V=A), r"Q and K must have the same d_k .* Q has shape \(3, 4\), K has shape \(3, 2\)"),
    (dict(Q=A, K=A, V=np.zeros((4, 2))), r"K and V must have the same number of keys n_k .* K has shape \(3, 2\), V has shape \(4, 2\)"),
    (dict(Q=np.zeros((2, 3, 2)), K=np.zeros((3, 3, 2)), V=np.zeros((3, 3, 2))), r"batch dimensions of Q, K and V do not broadcast"),
    (dict(Q=np.array([[np.nan, 0.0]] * 3), K=A, V=A), r"Q contains NaN"),
    (dict(Q=A, K=np.array([[np.inf, 0.0]] * 3), V=A), r"K contains inf"),
    (dict(Q=A, K=A, V=[["a", "b"]] * 3), r"V must be an array of real numbers; got dtype <U1"),
    (dict(Q=A, K=A, V=A, mask=np.ones((3, 3))), r"mask must be boolean .* got dtype float64 with shape \(3, 3\)"),
    (dict(Q=A, K=A, V=A, mask=np.ones((2, 3), bool)), r"mask of shape \(2, 3\) must broadcast to .* \(3, 3\)"),
    (dict(Q=A, K=A, V=A, mask=np.ones((2, 3, 3), bool)), r"mask of shape \(2, 3, 3\) must broadcast .* without adding"),
    (dict(Q=A, K=A, V=A, scale=0.0), r"scale must be a positive finite number .* got 0.0"),
    (dict(Q=A, K=A, V=A, scale=10 ** 400), r"scale must be a positive finite number"),   # beyond float64
    (dict(Q=A, K=A, V=A, mask=[[True], [True, False]]), r"mask must be a boolean array .* could not read it"),
    (dict(Q=A, K=A, V=A, scale=float("nan")), r"scale must be a positive finite number"),
    (dict(Q=A, K=A, V=A, scale="2"), r"scale must be a positive finite number .* got '2'"),
    (dict(Q=[[1e200, 1e200]], K=[[1e200, 1e200]], V=[[1.0]]), r"overflowed"),
    (dict(Q=A, K=np.zeros((0, 2)), V=np.zeros((0, 2))), r"K has shape \(0, 2\): it needs at least one key"),
    (dict(Q=np.zeros((3, 0)), K=np.zeros((3, 0)), V=A), r"Q has shape \(3, 0\): it needs at least one feature"),
    (dict(Q=np.ones((3, 2), dtype="m8[s]"), K=A, V=A), r"Q must be an array of real numbers; got dtype timedelta64"),
    (dict(Q=np.ones((3, 2), dtype=bool), K=A, V=A), r"Q must be an array of real numbers; got dtype bool"),
    (dict(Q=A + 1j, K=A, V=A), r"Q must be an array of real numbers; got dtype complex128"),
])
def test_attention_bad_input_names_the_argument(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        scaled_dot_product_attention(**kwargs)


def test_mask_applied_before_softmax_not_after():
    # Masking after the softmax would leave rows summing to less than 1.
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    _, w = scaled_dot_product_attention(X, X, X, mask=causal_mask(3))
    assert np.allclose(w.sum(axis=-1), 1.0)
    assert w[0].tolist() == [1.0, 0.0, 0.0]


# ---------------------------------------------------------------- causal mask

def test_causal_mask_keeps_the_diagonal():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


@pytest.mark.parametrize("n", [0, -1, 2.5, True, "3"])
def test_causal_mask_bad_n(n):
    with pytest.raises(ValueError, match="n must be a positive whole number"):
        causal_mask(n)


# ---------------------------------------------------------------- entropy

def test_entropy_by_hand():
    w = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0], [0.0] * 4])
    # one-hot: 0; uniform over 4: ln 4; two halves: ln 2; nothing to attend to: 0
    assert np.allclose(attention_entropy(w), [0.0, math.log(4), math.log(2), 0.0])


def test_entropy_refuses_rows_that_are_not_weights_and_never_gives_minus_zero():
    with pytest.raises(ValueError, match="rows that sum to 1 .* got a row summing to 5"):
        attention_entropy(np.array([2.0, 3.0]))
    h = attention_entropy(np.array([1.0, 0.0]))
    assert h == 0.0 and not np.signbit(h)
    with pytest.raises(ValueError, match=r"weights has shape \(0,\): it needs at least one key per row"):
        attention_entropy([])                      # an empty row is not weights (its "entropy" would be 0)


@given(hnp.arrays(np.float64, (3, 5), elements=st.floats(0.0, 1.0)))
def test_entropy_bounds(raw):
    w = raw / np.where(raw.sum(-1, keepdims=True) > 0, raw.sum(-1, keepdims=True), 1)
    h = attention_entropy(w)
    assert h.shape == (3,)
    assert (h >= -1e-12).all() and (h <= math.log(5) + 1e-9).all()


@pytest.mark.parametrize("bad, pattern", [
    (np.array([0.5, -0.5]), "weights must be non-negative"),
    (np.array([np.nan, 1.0]), "weights contains NaN"),
    (0.5, "weights must have at least 1 dimension"),
])
def test_entropy_bad_input(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        attention_entropy(bad)


# ---------------------------------------------------------------- multi-head

def loop_multi_head(X, W_Q, W_K, W_V, W_O, num_heads):
    d_model = X.shape[1]
    d_k = d_model // num_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    heads, weights = [], []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        o, w = loop_attention(Q[:, cols].tolist(), K[:, cols].tolist(), V[:, cols].tolist(),
                              scale=1 / math.sqrt(d_k))
        heads.append(o)
        weights.append(w)
    return np.concatenate(heads, axis=1) @ W_O, np.array(weights)


@pytest.mark.parametrize("num_heads", [1, 2, 3, 6])
def test_multi_head_matches_plain_loop(num_heads):
    rng = np.random.default_rng(num_heads)
    X = rng.normal(size=(5, 6))
    W = [rng.normal(size=(6, 6)) for _ in range(4)]
    out, w = multi_head_attention(X, *W, num_heads=num_heads)
    out_ref, w_ref = loop_multi_head(X, *W, num_heads)
    assert w.shape == (num_heads, 5, 5)
    assert np.allclose(out, out_ref) and np.allclose(w, w_ref)


def test_split_then_merge_gives_back_the_input_and_heads_own_contiguous_slices():
    x = np.arange(2 * 3 * 8).reshape(2, 3, 8)
    parts = split_heads(x, 4)
    assert parts.shape == (2, 4, 3, 2)
    assert (merge_heads(parts) == x).all()
    assert (parts[:, 1] == x[..., 2:4]).all()  # head 1 sees features 2 and 3 of every token


def test_split_heads_refuses_nan_and_text():
    with pytest.raises(ValueError, match="x contains NaN"):
        split_heads([[np.nan, 2.0], [3.0, 4.0]], 2)
    with pytest.raises(ValueError, match="x must be an array of real numbers"):
        merge_heads(np.array([[["a"]]]))


def test_fraction_scale_is_a_real_number():
    from fractions import Fraction
    X = np.eye(2)
    assert np.allclose(scaled_dot_product_attention(X, X, X, scale=Fraction(1, 2))[1],
                       scaled_dot_product_attention(X, X, X, scale=0.5)[1])


def test_num_heads_that_does_not_divide_d_model_lists_the_ones_that_do():
    X = np.zeros((3, 6))
    W = np.eye(6)
    with pytest.raises(ValueError, match=r"num_heads must divide d_model = 6 .* got num_heads = 4\. Values that work: \[1, 2, 3, 6\]"):
        multi_head_attention(X, W, W, W, W, num_heads=4)


def test_multi_head_bad_weight_shape():
    with pytest.raises(ValueError, match=r"W_K must have shape \(d_model, d_model\) = \(4, 4\) .* got \(4, 2\)"):
        multi_head_attention(np.zeros((3, 4)), np.eye(4), np.zeros((4, 2)), np.eye(4), np.eye(4), num_heads=2)


def test_multi_head_causal_mask_applies_to_every_head():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4, 8))
    W = [rng.normal(size=(8, 8)) for _ in range(4)]
    _, w = multi_head_attention(X, *W, num_heads=4, mask=causal_mask(4))
    assert (w[:, ~causal_mask(4)] == 0).all()
    assert np.allclose(w.sum(-1), 1.0)


# ---------------------------------------------------------------- positions

def loop_positional_encoding(n, d_model):
    """Vaswani et al. (2017), sec. 3.5, written out one entry at a time."""
    pe = [[0.0] * d_model for _ in range(n)]
    for pos in range(n):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos][2 * i] = math.sin(angle)
            pe[pos][2 * i + 1] = math.cos(angle)
    return np.array(pe)


@given(st.integers(1, 40), st.integers(1, 32).map(lambda h: 2 * h))
def test_sinusoidal_positional_encoding_matches_the_formula_entry_by_entry(n, d_model):
    assert np.allclose(sinusoidal_positional_encoding(n, d_model), loop_positional_encoding(n, d_model), atol=1e-12)


def test_sinusoidal_positional_encoding_known_entries():
    pe = sinusoidal_positional_encoding(3, 6)
    # Position 0: sin(0) = 0 and cos(0) = 1, alternating.
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    # Position 1, pair 0 turns 1 radian per position: (sin 1, cos 1) = (0.84147, 0.54030).
    assert np.allclose(pe[1, :2], [0.8414709848, 0.5403023059])
    # d_model = 2 is one pair: (sin p, cos p), a point on the unit circle.
    assert np.allclose(sinusoidal_positional_encoding(4, 2), [[math.sin(p), math.cos(p)] for p in range(4)])


@pytest.mark.parametrize("n, d_model, name", [
    (0, 4, "n"), (-1, 4, "n"), (2.5, 4, "n"), (True, 4, "n"), ("3", 4, "n"),
    (3, 3, "d_model"), (3, 0, "d_model"), (3, 4.0, "d_model"), (3, None, "d_model"),
])
def test_sinusoidal_positional_encoding_refuses_bad_arguments(n, d_model, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        sinusoidal_positional_encoding(n, d_model)
