"""multi_head_attention beyond the foundation's tests: any width and divisor, batches, scaling, W_O.

The reference is the plain-loop implementation in test_attention.py.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import causal_mask, multi_head_attention, softmax
from test_attention import loop_multi_head


@st.composite
def layer(draw):
    d_model = draw(st.integers(1, 12))
    num_heads = draw(st.sampled_from([h for h in range(1, d_model + 1) if d_model % h == 0]))
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d_model))
    Ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
    return X, Ws, num_heads


@given(layer())
@settings(max_examples=60, deadline=None)
def test_any_width_and_divisor_matches_the_plain_loop(args):
    X, Ws, num_heads = args
    out, w = multi_head_attention(X, *Ws, num_heads=num_heads)
    out_ref, w_ref = loop_multi_head(X, *Ws, num_heads)
    assert w.shape == (num_heads, len(X), len(X))
    assert np.allclose(out, out_ref) and np.allclose(w, w_ref)
    assert np.allclose(w.sum(axis=-1), 1.0)


def test_each_head_scales_by_its_own_d_k_not_d_model():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(5, 8))
    Ws = [rng.normal(size=(8, 8)) for _ in range(4)]
    _, w = multi_head_attention(X, *Ws, num_heads=4)  # d_k = 2
    Q, K = X @ Ws[0], X @ Ws[1]
    head_2 = Q[:, 4:6] @ K[:, 4:6].T  # head index 2 owns features 4 and 5
    assert np.allclose(w[2], softmax(head_2 / math.sqrt(2)))
    assert not np.allclose(w[2], softmax(head_2 / math.sqrt(8)))


def test_batched_sentences_are_independent():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(3, 4, 6))
    Ws = [rng.normal(size=(6, 6)) for _ in range(4)]
    out, w = multi_head_attention(X, *Ws, num_heads=3, mask=causal_mask(4))
    assert w.shape == (3, 3, 4, 4)
    for b in range(3):
        o, ww = multi_head_attention(X[b], *Ws, num_heads=3, mask=causal_mask(4))
        assert np.allclose(out[b], o) and np.allclose(w[b], ww)


def test_concatenation_then_W_O_is_a_sum_of_one_product_per_head():
    # concat(h_1, ..., h_H) W_O = sum_h h_h W_O[rows of head h]: W_O mixes the heads.
    rng = np.random.default_rng(13)
    X = rng.normal(size=(4, 6))
    W_Q, W_K, W_V, W_O = (rng.normal(size=(6, 6)) for _ in range(4))
    out, _ = multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads=3)
    heads, _ = multi_head_attention(X, W_Q, W_K, W_V, np.eye(6), num_heads=3)  # W_O = I: the concatenation
    assert np.allclose(out, sum(heads[:, 2 * h:2 * h + 2] @ W_O[2 * h:2 * h + 2] for h in range(3)))


@pytest.mark.parametrize("bad", [0, -2, True, 2.0, "2"])
def test_num_heads_must_be_a_positive_whole_number(bad):
    with pytest.raises(ValueError, match=r"num_heads must be a positive whole number; got"):
        multi_head_attention(np.zeros((2, 4)), *[np.eye(4)] * 4, num_heads=bad)
