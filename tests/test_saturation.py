"""helpers.saturation: random queries and keys, and the softmax's Jacobian."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import softmax
from helpers.saturation import jacobian_size, random_queries_keys, softmax_jacobian


def test_random_queries_keys_shapes_and_nesting():
    Q8, K8 = random_queries_keys(8, n=5, seed=3)
    Q3, K3 = random_queries_keys(3, n=5, seed=3)
    assert Q8.shape == K8.shape == (5, 8)
    assert np.array_equal(Q8[:, :3], Q3) and np.array_equal(K8[:, :3], K3)  # widening keeps old features
    assert not np.array_equal(Q8, K8)
    assert not np.array_equal(random_queries_keys(8, n=5, seed=4)[0], Q8)


def test_random_scores_have_variance_d_k():
    # q . k is a sum of d_k independent products of two N(0, 1) numbers, each
    # of variance 1, so Var(q . k) = d_k. With 6 x 6 x 20 seeds = 720 scores
    # the sample variance is within 15% of d_k with high probability
    # (its relative standard error is about sqrt(2 / 720) = 5%).
    d_k = 256
    scores = np.concatenate([(lambda Q, K: (Q @ K.T).ravel())(*random_queries_keys(d_k, seed=s)) for s in range(20)])
    assert abs(scores.var() / d_k - 1) < 0.15


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(d_k=0), "d_k must be a positive whole number"),
    (dict(d_k=4, n=True), "n must be a positive whole number"),
    (dict(d_k=4, seed=-1), "seed must be a non-negative whole number"),
])
def test_random_queries_keys_bad_input(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        random_queries_keys(**kwargs)


@given(hnp.arrays(np.float64, 4, elements=st.floats(-5, 5)))
def test_jacobian_matches_finite_differences(scores):
    w = softmax(scores)
    J = softmax_jacobian(w)
    eps = 1e-6
    for j in range(4):
        step = np.zeros(4)
        step[j] = eps
        numeric = (softmax(scores + step) - softmax(scores - step)) / (2 * eps)
        assert np.allclose(J[:, j], numeric, atol=1e-6)


def test_jacobian_size_by_hand():
    # One-hot: diag(w) - w w^T = 0. Even over n: the Frobenius norm is
    # sqrt(n (1/n - 1/n^2)^2 + n (n - 1) / n^4) = sqrt(n - 1) / n.
    assert jacobian_size(np.array([0.0, 1.0, 0.0])) == 0.0
    for n in (2, 4, 6):
        assert math.isclose(float(jacobian_size(np.full(n, 1 / n))), math.sqrt(n - 1) / n)
    batch = jacobian_size(np.array([[0.5, 0.5], [1.0, 0.0]]))
    assert batch.shape == (2,) and np.allclose(batch, [0.5, 0.0])


@pytest.mark.parametrize("bad, pattern", [
    (np.array([0.5, 0.6]), r"rows that sum to 1 \(or 0"),
    (np.array([1.5, -0.5]), "weights must be non-negative"),
    (0.5, "at least 1 dimension"),
])
def test_jacobian_bad_input(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        softmax_jacobian(bad)
