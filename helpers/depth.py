"""What happens to the token vectors in a deep stack of layers: rank collapse.

Dong, Cordonnier & Loukas (2021), "Attention is not all you need: pure
attention loses rank doubly exponentially with depth", measure how far the
token vectors X (n, d_model) are from all being one and the same vector by
the residual X - 1 x^T, with x chosen to make it smallest (their section 2).
In the Frobenius norm that x is the mean row, and this module reports the
residual as a share of X itself:

    collapse_residual(X) = ||X - 1 mean(X)^T|| / ||X||

0 means every token carries the same vector: the sentence has collapsed to
one point, and no later layer can tell its words apart. The paper proves
that a stack of pure self-attention layers drives the residual to 0 doubly
exponentially with depth (their Theorem 2.2: the log of the residual grows
like 3^L). With skip connections that bound no longer holds, and some
weights keep the residual from falling at all (their section 3); that does
not mean every stack with skips keeps its tokens apart.

``stack_residuals`` runs a stack of randomly initialised layers, seeded, in
one of four layouts, and records the residual after each layer.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from helpers.attention import multi_head_attention
from helpers.inputs import real_array

__all__ = ["LAYOUTS", "collapse_residual", "layer_norm", "StackRun", "stack_residuals"]

#: The layouts ``stack_residuals`` knows, each one layer of the stack:
#: "attention"        X <- MHA(X)                          (pure attention)
#: "attention + skip" X <- X + MHA(X)                      (a residual connection)
#: "post-LN"          X <- LN(X + MHA(X)); X <- LN(X + FFN(X))   (Vaswani et al. 2017 sec. 3.1; BERT; the real model)
#: "pre-LN"           X <- X + MHA(LN(X)); X <- X + FFN(LN(X))   (Xiong et al. 2020; most models since GPT-2)
LAYOUTS = ("attention", "attention + skip", "post-LN", "pre-LN")


def _matrix(X, name):
    """``X`` as a finite float array (..., n, d_model), or ValueError naming ``name``."""
    arr = real_array(X, name)
    if arr.ndim < 2 or 0 in arr.shape[-2:]:
        raise ValueError(f"{name} must have shape (..., n, d_model) with n >= 1 and d_model >= 1; got {arr.shape}")
    return arr


def collapse_residual(X):
    """How far the rows of X are from being all the same: ||X - 1 mean(X)^T|| / ||X|| (Frobenius).

    Dong, Cordonnier & Loukas (2021), section 2, with the Frobenius norm
    (for which the best common row is the mean row) and divided by ||X||, so
    that it does not depend on the size of X: scaling X changes nothing.

    Parameters
    ----------
    X : array (..., n, d_model) of finite numbers, one token per row.

    Returns
    -------
    float for one X (n, d_model); ndarray (...) for a batch. Between 0 (every
    row the same vector) and 1 (rows averaging to the zero vector). An X of
    all zeros has every row the same and gives 0.

    Raises
    ------
    ValueError naming X when it is not a finite real array (..., n, d_model).
    """
    X = _matrix(X, "X")
    top = np.abs(X).max(axis=(-2, -1), keepdims=True)
    X = X / np.where(top > 0, top, 1.0)      # the ratio ignores the size of X; this keeps huge entries from overflowing
    spread = np.linalg.norm(X - X.mean(axis=-2, keepdims=True), axis=(-2, -1))
    size = np.linalg.norm(X, axis=(-2, -1))
    out = np.where(size > 0, spread / np.where(size > 0, size, 1.0), 0.0)
    return float(out) if out.ndim == 0 else out


def layer_norm(x, gamma=None, beta=None, eps=1e-12):
    """LayerNorm over the last axis (Ba, Kiros & Hinton 2016, eq. 3-4; the Add & Norm of Vaswani et al. 2017, sec. 3.1).

        mu = mean(x),  var = mean((x - mu)^2)      over the d_model features of each token
        layer_norm(x) = (x - mu) / sqrt(var + eps) * gamma + beta

    x : array (..., d_model) of finite numbers, d_model >= 1.
    gamma, beta : arrays (d_model,), the learned gain and bias; None means ones (gamma) and zeros (beta),
        LayerNorm without them.
    eps : positive finite number added to the variance inside the square root (1e-12, as BERT and MiniLM).

    Returns an array of the shape of x. The variance is the biased one (divided by d_model, not d_model - 1).
    A row with every entry equal becomes beta.

    Raises ValueError naming the argument: x not a finite real array with a last axis of length >= 1,
    gamma or beta not finite or not of shape (d_model,), eps not a positive finite number.
    """
    x = real_array(x, "x")
    if x.ndim < 1 or x.shape[-1] == 0:
        raise ValueError(f"x must have shape (..., d_model) with d_model >= 1; got {x.shape}")
    d = x.shape[-1]
    gamma, beta = (np.full(d, fill) if p is None else _feature_vector(p, name, d)
                   for p, name, fill in ((gamma, "gamma", 1.0), (beta, "beta", 0.0)))
    if (isinstance(eps, bool) or not isinstance(eps, numbers.Real)
            or not np.isfinite(float(eps)) or float(eps) <= 0):
        raise ValueError(f"eps must be a positive finite number; got {eps!r}")
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + float(eps)) * gamma + beta


def _feature_vector(p, name, d):
    """``p`` (gamma or beta) as a finite float array (d,), or ValueError naming ``name``."""
    arr = real_array(p, name)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape (d_model,) = ({d},), one entry per feature of x; got {arr.shape}")
    return arr


@dataclass(frozen=True)
class StackRun:
    """What ``stack_residuals`` measured.

    residual : ndarray (num_layers + 1,): collapse_residual of the input
        (entry 0) and after each layer.
    branch : ndarray (num_layers,): in each layer, the size of what the
        attention sublayer adds, over the size of the stream it reads,
        ||MHA(.)|| / ||X||, with X the token vectors entering the layer. In
        a post-LN stack this share stays about the same layer after layer; in a
        pre-LN stack the stream X grows and the share falls.
    layout, num_heads, scale, seed : the settings of the run.
    """

    residual: np.ndarray
    branch: np.ndarray
    layout: str
    num_heads: int
    scale: float
    seed: int


def _whole(value, name, least):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}; got {value!r}")
    return int(value)


def stack_residuals(X, num_layers, layout="attention", num_heads=1, scale=1.0, seed=0, layer_norm=layer_norm):
    """Run X through a stack of random layers and measure its collapse after each one.

    Each layer draws its own W_Q, W_K, W_V, W_O (d_model, d_model) and, for
    the post-LN and pre-LN layouts, a feed-forward network
    FFN(x) = max(0, x W_1) W_2 with W_1 (d_model, 4 d_model) and
    W_2 (4 d_model, d_model) (Vaswani et al. 2017, section 3.3, eq. (2),
    biases left out). Every entry is normal with mean 0 and standard
    deviation scale / sqrt(fan_in), fan_in being the number of rows of the
    matrix, all from ``np.random.default_rng(seed)``: the same arguments
    give the same numbers. LayerNorm has no learned gain or bias
    (``layer_norm(x)``, gamma and beta left at None).

    Parameters
    ----------
    X : array (n, d_model), finite. The token vectors entering the stack.
    num_layers : whole number >= 1.
    layout : one of LAYOUTS: "attention", "attention + skip", "post-LN", "pre-LN".
    num_heads : whole number >= 1 dividing d_model (multi_head_attention).
    scale : positive finite number, the size of the random weights
        (1.0 keeps a random vector about the same length through W).
    seed : whole number >= 0.
    layer_norm : the LayerNorm the post-LN and pre-LN layouts run, called as
        ``layer_norm(x)`` on (n, d_model): this module's by default, or the
        learner's from ``helpers.pieces.piece("layer_norm")`` (notebook 07).

    Returns
    -------
    StackRun with ``residual`` (num_layers + 1,) and ``branch`` (num_layers,).

    Raises
    ------
    ValueError naming the argument: X not a finite (n, d_model) array,
    num_layers or seed not a whole number in range, layout not in LAYOUTS,
    scale not positive and finite, num_heads not dividing d_model,
    layer_norm not callable.
    """
    X = _matrix(X, "X")
    if not callable(layer_norm):
        raise ValueError(f"layer_norm must be a function of x (n, d_model); got {type(layer_norm).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d_model), one sentence; got {X.shape}")
    num_layers = _whole(num_layers, "num_layers", 1)
    seed = _whole(seed, "seed", 0)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {list(LAYOUTS)}; got {layout!r}")
    if (isinstance(scale, bool) or not isinstance(scale, numbers.Real)
            or not np.isfinite(float(scale)) or float(scale) <= 0):
        raise ValueError(f"scale must be a positive finite number; got {scale!r}")
    d = X.shape[1]
    if isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral) or num_heads < 1 or d % num_heads:
        raise ValueError(f"num_heads must be a whole number >= 1 dividing d_model = {d}; got {num_heads!r}")
    rng = np.random.default_rng(seed)

    def draw(rows, cols):
        return rng.standard_normal((rows, cols)) * (float(scale) / np.sqrt(rows))

    residual, branch = [collapse_residual(X)], []
    for _ in range(num_layers):
        W_Q, W_K, W_V, W_O = (draw(d, d) for _ in range(4))
        W_1, W_2 = draw(d, 4 * d), draw(4 * d, d)

        def mha(Z):
            return multi_head_attention(Z, W_Q, W_K, W_V, W_O, num_heads)[0]

        def ffn(Z):
            return np.maximum(Z @ W_1, 0.0) @ W_2

        stream = np.linalg.norm(X)
        if layout == "attention":
            a = mha(X)
            X = a
        elif layout == "attention + skip":
            a = mha(X)
            X = X + a
        elif layout == "post-LN":
            a = mha(X)
            X = layer_norm(X + a)
            X = layer_norm(X + ffn(X))
        else:  # pre-LN
            a = mha(layer_norm(X))
            X = X + a
            X = X + ffn(layer_norm(X))
        branch.append(float(np.linalg.norm(a) / stream) if stream > 0 else 0.0)
        residual.append(collapse_residual(X))
    return StackRun(np.array(residual), np.array(branch), layout, int(num_heads), float(scale), seed)
