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
- ``query_gradient`` follows a learning signal one step further, through the
  scores to the query itself, which is what training uses to change W_Q.
"""

from __future__ import annotations

import numbers

import numpy as np

from helpers.attention import softmax
from helpers.inputs import checked_weights, positive_whole

__all__ = ["random_queries_keys", "softmax_jacobian", "jacobian_size", "query_gradient"]


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
    d_k = positive_whole(d_k, "d_k")
    n = positive_whole(n, "n")
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

    weights: array (..., n), each row a softmax output (non-negative, sums to
    1), or all zeros, the row ``scaled_dot_product_attention`` gives a query
    with nothing to attend to (its J is 0: no score moves those weights).
    Returns an array (..., n, n). A one-hot row gives J = 0: no change of the
    scores can move the weights, so no learning signal reaches the scores.

    Raises ValueError if ``weights`` has no axis, is a numpy masked array,
    holds a negative or non-finite entry, or a row sums to neither 1 nor 0
    (within 1e-6) (``helpers.inputs.checked_weights``).
    """
    w = checked_weights(weights)
    eye = np.eye(w.shape[-1])
    return w[..., :, None] * (eye - w[..., None, :])


def jacobian_size(weights):
    """The size (Frobenius norm) of the softmax Jacobian of each row of ``weights``.

    weights: array (..., n) of softmax outputs. Returns an array (...,).
    An even row over n keys gives sqrt(n - 1) / n (0.5 for n = 2); the size
    falls to 0 as one weight takes everything. Errors as :func:`softmax_jacobian`.
    """
    return np.linalg.norm(softmax_jacobian(weights), axis=(-2, -1))


def query_gradient(q, K, upstream, scale):
    """The gradient that reaches a query from the gradient on its attention weights.

    With scores s = scale * (K q) and weights w = softmax(s), a loss L whose
    gradient on the weights is ``upstream`` (dL/dw) sends back to the query

        dL/dq = scale * K^T J dL/dw,      J = diag(w) - w w^T,

    by the chain rule: the softmax's Jacobian J is one factor of it, the keys
    and the scale are the others (Vaswani et al. 2017, section 3.2.1, eq. 1,
    for the scaled scores). dL/dW_Q is x^T dL/dq for a query q = x W_Q, so
    its size follows the size of dL/dq.

    q: (..., d_k); K: (..., n_k, d_k); upstream: (..., n_k); scale: a positive
    number (1 / sqrt(d_k) for scaled attention, 1.0 for none).
    Returns dL/dq, shape (..., d_k).

    Raises ValueError naming the argument if a shape does not fit, an entry is
    not finite, or scale is not a positive finite number.
    """
    q, K, g = (np.asarray(a, dtype=float) for a in (q, K, upstream))
    if q.ndim < 1 or K.ndim < 2 or K.shape[-1] != q.shape[-1]:
        raise ValueError(f"q must be (..., d_k) and K (..., n_k, d_k) with the same d_k; got q {q.shape}, K {K.shape}")
    if g.shape[-1:] != K.shape[-2:-1]:
        raise ValueError(f"upstream must be (..., n_k) with n_k = {K.shape[-2]} (one entry per key); got {g.shape}")
    for name, a in (("q", q), ("K", K), ("upstream", g)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must hold finite numbers only; got shape {a.shape} with NaN or inf")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive finite number (1/sqrt(d_k), or 1.0 for no scaling); got {scale!r}")
    s = scale * (K @ q[..., :, None])[..., 0]
    w = softmax(s)
    d_s = w * (g - (w * g).sum(axis=-1, keepdims=True))          # J dL/dw, without building J
    return scale * (np.swapaxes(K, -1, -2) @ d_s[..., :, None])[..., 0]
