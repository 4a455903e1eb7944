"""Why scores are divided by sqrt(d_k): random queries and keys, and the softmax's slope.

Two small tools for notebook 03 and the d_k explorer:

- ``random_queries_keys`` draws queries and keys of any width d_k whose
  entries are independent with mean 0 and variance 1. That is the
  assumption under which Vaswani et al. (2017, section 3.2.1, footnote 4)
  explain the scaling: q . k is then a sum of d_k independent terms, each of
  variance 1, so its variance is d_k.
- ``softmax_jacobian`` gives the derivative of the softmax, the matrix that
  carries a learning signal from the weights back to the scores. When the
  softmax saturates (one weight near 1) it shrinks towards zero.
"""

from __future__ import annotations

import numbers

import numpy as np

from helpers.attention import _refuse_masked_array

__all__ = ["random_queries_keys", "softmax_jacobian", "jacobian_size"]


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive whole number; got {value!r}")
    return int(value)


def random_queries_keys(d_k, n=6, seed=0):
    """``n`` queries and ``n`` keys of width ``d_k``, every entry drawn from N(0, 1).

    The draw is seeded and nested: the first d_k features are the same
    whatever d_k is, so widening the keys from 64 to 128 adds 64 new features
    and keeps the old ones. (Queries and keys come from two generators seeded
    from ``seed``; features are drawn one at a time for all n tokens.)

    Returns (Q, K), each an array of shape (n, d_k).

    Raises ValueError unless d_k and n are positive whole numbers and seed a
    non-negative whole number.
    """
    d_k = _positive_int(d_k, "d_k")
    n = _positive_int(n, "n")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative whole number; got {seed!r}")
    # Drawing (d_k, n) and transposing fills feature by feature, which makes
    # the draw for a smaller d_k a prefix of the draw for a larger one.
    Q = np.random.default_rng([int(seed), 0]).standard_normal((d_k, n)).T
    K = np.random.default_rng([int(seed), 1]).standard_normal((d_k, n)).T
    return Q, K


def softmax_jacobian(weights):
    """The Jacobian of the softmax at its output ``weights``: d w_i / d s_j.

        J[i, j] = w_i * (delta_ij - w_j)      i.e.  J = diag(w) - w w^T

    weights: array (..., n), each row a softmax output (non-negative, sums to 1).
    Returns an array (..., n, n). A one-hot row gives J = 0: no change of the
    scores can move the weights, so no learning signal reaches the scores.

    Raises ValueError if ``weights`` has no axis, holds a negative or
    non-finite entry, or a row does not sum to 1 (within 1e-6).
    """
    _refuse_masked_array(weights, "weights")
    w = np.asarray(weights, dtype=float)
    if w.ndim == 0:
        raise ValueError("weights must have at least 1 dimension (one row of weights); got a single number")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be finite and non-negative; got NaN or inf in shape {w.shape}")
    if (w < 0).any():
        raise ValueError(f"weights must be finite and non-negative; got shape {w.shape} with min {w.min()}")
    sums = w.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        raise ValueError(f"every row of weights must sum to 1 (a softmax output); got row sums {np.round(sums, 6)}")
    eye = np.eye(w.shape[-1])
    return w[..., :, None] * (eye - w[..., None, :])


def jacobian_size(weights):
    """The size (Frobenius norm) of the softmax Jacobian of each row of ``weights``.

    weights: array (..., n) of softmax outputs. Returns an array (...,).
    An even row over n keys gives sqrt(n - 1) / n (0.5 for n = 2); the size
    falls to 0 as one weight takes everything. Errors as :func:`softmax_jacobian`.
    """
    return np.linalg.norm(softmax_jacobian(weights), axis=(-2, -1))
