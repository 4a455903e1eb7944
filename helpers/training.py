"""Learning W_Q, W_K, W_V by gradient descent: one attention layer, forward and backward, in numpy.

The model of notebook 09 is one attention layer with a linear read-out:

    Q = X W_Q,  K = X W_K,  V = X W_V                       (B, n, d_k), (B, n, d_k), (B, n, d_v)
    scores  = Q K^T / sqrt(d_k)                             (B, n, n)
    weights = softmax(scores)   (masked keys -> -inf first)  (B, n, n)
    out     = weights V                                     (B, n, d_v)
    logits  = out W_out + b_out                             (B, n, n_classes)
    loss    = mean cross-entropy of the positions that have a target

X holds fixed, given word vectors (B sentences of n tokens, d_model each);
only W_Q, W_K, W_V, W_out and b_out are learned. The forward pass is the one
of Vaswani et al. (2017), section 3.2.1, eq. (1); the backward pass is the
chain rule applied to it step by step, each step a few lines below. The
softmax's own derivative is the Jacobian diag(w) - w w^T of notebook 03,
``helpers.saturation.softmax_jacobian``.

Two variants the notebook needs:
- ``uniform=True`` freezes attention to even weights over the keys a query
  may read (the "plain average" baseline): the scores are ignored, so W_Q
  and W_K get zero gradient.
- ``mask_where="after"`` applies the mask by zeroing weights after the
  softmax (the mistake of notebook 04) instead of setting scores to -inf.

Every gradient is checked against central finite differences
(``gradient_check``) in the notebook and, on random shapes, in the tests.
"""

from __future__ import annotations

import numbers

import numpy as np

from helpers.attention import softmax
from helpers.inputs import checked_weights, exact_gaps  # the checks every module shares
from helpers.inputs import positive_whole as _positive_int
from helpers.inputs import seed as _seed

__all__ = [
    "PARAMETERS",
    "NO_TARGET",
    "init_params",
    "forward",
    "cross_entropy",
    "softmax_backward",
    "backward",
    "loss_and_grads",
    "numerical_gradient",
    "relative_error",
    "gradient_check",
    "adam_step",
    "gradient_descent_step",
    "train",
    "predict",
]

PARAMETERS = ("W_Q", "W_K", "W_V", "W_out", "b_out")
"""The learned arrays, in the order the notebook prints them."""

NO_TARGET = -1
"""A target of -1 marks a position whose prediction does not count in the loss."""


# --------------------------------------------------------------------------
# Input checks: ValueError naming the argument, never a numpy traceback
# --------------------------------------------------------------------------

def _real_number(value):
    """``value`` as a float if it is one real number (a 0-d numpy array included), else None (inf if too large)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:  # an int such as 10**400: no float holds it
        return float("inf")


def _positive_real(value, name):
    number = _real_number(value)
    if number is None or not np.isfinite(number) or number <= 0:
        got = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:12]}... ({len(repr(value))} characters)"
        raise ValueError(f"{name} must be a positive finite number; got {got}")
    return number


def _fraction_below_one(value, name):
    """``value`` as a float in [0, 1), or ValueError: an average's decay rate (1 would divide 0 by 0)."""
    number = _real_number(value)
    if number is None or not 0.0 <= number < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1) (the decay rate of a running mean; 1 - {name}**t "
                         f"must not be 0); got {value!r}")
    return number


def _check_state(state, params):
    """Adam's ``state`` must be a dict it wrote for parameters of these shapes; ValueError naming the entry."""
    if not isinstance(state, dict):
        raise ValueError(f"state must be a dict ({{}} at the start); got {type(state).__name__}")
    t = state.get("t", 0)
    if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0:
        raise ValueError(f"state['t'] must be a non-negative whole number (the steps taken so far); got {t!r}")
    checked = {}
    for name in PARAMETERS:
        for key in (f"m_{name}", f"v_{name}"):
            if key in state:
                entry = _finite(state[key], f"state[{key!r}]")
                if entry.shape != params[name].shape:
                    raise ValueError(
                        f"state[{key!r}] has shape {entry.shape} but params[{name!r}] has shape "
                        f"{params[name].shape}: this state was left by parameters of another shape; start "
                        f"from state = {{}} for new parameters")
                if key.startswith("v_") and (entry < 0).any():
                    raise ValueError(f"state[{key!r}] holds a negative number; it is a running mean of squared "
                                     f"gradients, never negative: start from state = {{}}")
                checked[key] = entry
    state.update(checked)   # the entries as float arrays (a state read back from JSON holds lists)


def _check_grads(params, grads):
    """``grads`` must hold an array of each parameter's shape; returns it with float arrays."""
    if not isinstance(grads, dict) or set(grads) != set(PARAMETERS):
        got = sorted(grads) if isinstance(grads, dict) else type(grads).__name__
        raise ValueError(f"grads must be a dict with exactly the keys {list(PARAMETERS)}; got {got}")
    g = {name: _finite(grads[name], f"grads[{name!r}]") for name in PARAMETERS}
    for name in PARAMETERS:
        if g[name].shape != params[name].shape:
            raise ValueError(f"grads[{name!r}] must have the shape of params[{name!r}] {params[name].shape}; "
                             f"got {g[name].shape}")
    return g


def _finite(x, name):
    try:
        arr = np.asarray(x)
    except Exception as exc:
        raise ValueError(f"{name} must be an array of real numbers; could not read it as one ({exc})") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be an array of real numbers; got dtype {arr.dtype}")
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf; every entry must be a finite number (shape {arr.shape})")
    return arr


def _check_params(params):
    if not isinstance(params, dict) or set(params) != set(PARAMETERS):
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params must be a dict with exactly the keys {list(PARAMETERS)}; got {got}")
    p = {name: _finite(params[name], f"params[{name!r}]") for name in PARAMETERS}
    for name in ("W_Q", "W_K", "W_V", "W_out"):
        if p[name].ndim != 2:
            raise ValueError(f"params[{name!r}] must be a matrix; got shape {p[name].shape}")
    d_model, d_k = p["W_Q"].shape
    d_v, n_classes = p["W_out"].shape
    want = {"W_K": (d_model, d_k), "W_V": (d_model, d_v), "b_out": (n_classes,)}
    for name, shape in want.items():
        if p[name].shape != shape:
            raise ValueError(
                f"params[{name!r}] must have shape {shape} to fit W_Q {p['W_Q'].shape} and W_out "
                f"{p['W_out'].shape}; got {p[name].shape}")
    return p


def _check_X(X, d_model):
    X = _finite(X, "X")
    if X.ndim != 3 or X.shape[1] == 0 or X.shape[0] == 0:
        raise ValueError(f"X must have shape (B, n, d_model) with B, n >= 1; got {X.shape}")
    if X.shape[2] != d_model:
        raise ValueError(f"X has d_model = {X.shape[2]} (shape {X.shape}) but W_Q expects d_model = {d_model}")
    return X


def _check_mask(mask, n, mask_where):
    if mask_where not in ("before", "after"):
        raise ValueError(f"mask_where must be 'before' or 'after' the softmax; got {mask_where!r}")
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"mask must be boolean (True = may attend); got dtype {mask.dtype}")
    if mask.shape != (n, n):
        raise ValueError(f"mask must have shape (n, n) = ({n}, {n}) for sentences of n = {n} tokens; got {mask.shape}")
    if not mask.any(axis=1).all():
        raise ValueError("mask leaves a query with no key to attend to; every row needs at least one True")
    return mask


def _check_targets(targets, shape, n_classes):
    t = np.asarray(targets)
    if t.dtype.kind not in "iu":
        raise ValueError(f"targets must be whole numbers (class ids, or {NO_TARGET} for none); got dtype {t.dtype}")
    if t.shape != shape:
        raise ValueError(f"targets must have shape (B, n) = {shape}, one per token; got {t.shape}")
    if ((t < NO_TARGET) | (t >= n_classes)).any():
        raise ValueError(f"targets must be class ids 0..{n_classes - 1} or {NO_TARGET}; got values from {t.min()} to {t.max()}")
    if not (t != NO_TARGET).any():
        raise ValueError(f"targets has no position with a target (all are {NO_TARGET}); the loss would be empty")
    return t.astype(int)


# --------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------

def init_params(d_model, d_k, d_v, n_classes, scale=None, seed=0):
    """Random starting parameters: each matrix entry drawn from N(0, scale^2), b_out = 0.

    d_model: width of the word vectors; d_k: width of queries and keys;
    d_v: width of the values; n_classes: number of outputs of the read-out.
    scale: the standard deviation of W_Q, W_K and W_V (default
    1/sqrt(d_model), so a projected vector has entries of about the size of
    the word vectors'); W_out uses 1/sqrt(d_v). Small starting scores keep
    the softmax away from saturation, where its gradient vanishes (notebook 03).

    Returns a dict {"W_Q": (d_model, d_k), "W_K": (d_model, d_k),
    "W_V": (d_model, d_v), "W_out": (d_v, n_classes), "b_out": (n_classes,)}.
    Raises ValueError for a width that is not a positive whole number, a
    scale that is not a positive finite number, or a seed that is not a
    non-negative whole number.
    """
    d_model, d_k = _positive_int(d_model, "d_model"), _positive_int(d_k, "d_k")
    d_v, n_classes = _positive_int(d_v, "d_v"), _positive_int(n_classes, "n_classes")
    scale = 1.0 / np.sqrt(d_model) if scale is None else _positive_real(scale, "scale")
    rng = np.random.default_rng(_seed(seed))
    return {
        "W_Q": scale * rng.standard_normal((d_model, d_k)),
        "W_K": scale * rng.standard_normal((d_model, d_k)),
        "W_V": scale * rng.standard_normal((d_model, d_v)),
        "W_out": rng.standard_normal((d_v, n_classes)) / np.sqrt(d_v),
        "b_out": np.zeros(n_classes),
    }


# --------------------------------------------------------------------------
# Forward pass
# --------------------------------------------------------------------------

def forward(params, X, mask=None, mask_where="before", uniform=False):
    """The forward pass: logits for every token, and what the backward pass needs.

    params: dict of ``PARAMETERS`` (see ``init_params``).
    X: array (B, n, d_model), B sentences of n word vectors.
    mask: optional boolean (n, n), True = query i may attend to key j
        (e.g. ``causal_mask(n)``); every row needs at least one True.
    mask_where: "before" sets masked scores to -inf before the softmax (the
        right way); "after" zeroes masked weights after it (notebook 04's
        mistake: rows no longer sum to 1).
    uniform: True freezes the weights to an even spread over the keys each
        query may read, whatever the scores (the plain-average baseline).

    Returns (logits, cache): logits (B, n, n_classes); cache a dict with
    X, Q, K, V (B, n, d), weights (B, n, n) as used on the values,
    softmax_weights (B, n, n) before any zeroing, out (B, n, d_v).
    Raises ValueError naming the argument for bad shapes or values.
    """
    p = _check_params(params)
    X = _check_X(X, p["W_Q"].shape[0])
    mask = _check_mask(mask, X.shape[1], mask_where)
    return _forward(p, X, mask, mask_where, bool(uniform))


def _forward(p, X, mask, mask_where, uniform):
    """``forward`` on checked inputs (the training loop checks once, then calls this)."""
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if uniform:
        scores = np.zeros_like(scores)
    if mask is not None and mask_where == "before":
        scores = np.where(mask, scores, -np.inf)
    w_soft = softmax(scores, axis=-1)
    weights = w_soft * mask if (mask is not None and mask_where == "after") else w_soft
    out = weights @ V
    logits = out @ p["W_out"] + p["b_out"]
    cache = dict(X=X, Q=Q, K=K, V=V, softmax_weights=w_soft, weights=weights, out=out,
                 mask=mask, mask_where=mask_where, uniform=uniform, params=p)
    return logits, cache


def cross_entropy(logits, targets):
    """Mean cross-entropy (in nats) of the positions with a target, and its gradient.

    logits: (B, n, n_classes); targets: (B, n) whole numbers, a class id or
    ``NO_TARGET`` (-1) where nothing is predicted.
    loss = -mean over counted positions of log softmax(logits)[target].
    Returns (loss as a float, d_logits (B, n, n_classes)); d_logits is
    (softmax(logits) - one_hot(target)) / count at counted positions, 0 elsewhere.
    Integer logits beyond 2**53 (and long doubles) have each row's maximum
    subtracted before float64 could lose their differences, as ``softmax`` does (the loss and its gradient depend on
    their differences only).
    Raises ValueError for shapes that do not fit, or targets out of range.
    """
    checked = _finite(logits, "logits")
    if checked.ndim != 3:
        raise ValueError(f"logits must have shape (B, n, n_classes); got {checked.shape}")
    gaps = exact_gaps(logits, -1)  # None unless the logits are integers beyond 2**53 or long doubles
    return _cross_entropy(checked if gaps is None else gaps, _check_targets(targets, checked.shape[:2], checked.shape[2]))


def _cross_entropy(logits, t):
    counted = t != NO_TARGET
    count = int(counted.sum())
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, np.where(counted, t, 0)[..., None], axis=-1)[..., 0]
    loss = -float(picked[counted].sum()) / count
    d_logits = np.exp(log_p)
    d_logits[counted, t[counted]] -= 1.0
    d_logits *= counted[..., None] / count
    return loss, d_logits


# --------------------------------------------------------------------------
# Backward pass, one step of the chain rule at a time
# --------------------------------------------------------------------------

def softmax_backward(weights, d_weights):
    """From the gradient of the loss with respect to softmax weights to that of the scores.

        d_scores = J^T d_weights,  J = diag(w) - w w^T  (the softmax Jacobian of notebook 03,
                                                         ``helpers.saturation.softmax_jacobian``)

    J is symmetric, so J^T = J, and row by row the product works out to
        d_scores_j = w_j (d_weights_j - sum_i w_i d_weights_i),
    which is what is computed here: n numbers per row instead of an n x n
    matrix (the tests check it against ``softmax_jacobian(w) @ d_weights``).

    weights: (..., n) softmax outputs (non-negative, rows sum to 1), or an
    all-zero row, the weights ``scaled_dot_product_attention`` gives a query
    with nothing to attend to: no score moves those weights, so that row's
    d_scores is zero (the formula gives it, w_j = 0);
    d_weights: the same shape. Returns d_scores, the same shape.
    Raises ValueError if the shapes differ or ``weights`` are not rows of
    weights (the check of ``helpers.inputs.checked_weights``).
    """
    w, g = checked_weights(weights), _finite(d_weights, "d_weights")
    if w.shape != g.shape:
        raise ValueError(f"weights and d_weights must have the same shape (..., n); got {w.shape} and {g.shape}")
    return _softmax_backward(w, g)


def _softmax_backward(w, g):
    return w * (g - np.sum(w * g, axis=-1, keepdims=True))


def backward(cache, d_logits):
    """The gradients of the loss with respect to every learned array.

    cache: from ``forward``; d_logits: (B, n, n_classes), from ``cross_entropy``.
    Returns a dict with the keys and shapes of ``PARAMETERS``. With
    ``uniform=True`` the gradients of W_Q and W_K are exactly zero.
    Raises ValueError if d_logits does not have the logits' shape.
    """
    want = cache["Q"].shape[:2] + (cache["params"]["W_out"].shape[1],)
    d_logits = _finite(d_logits, "d_logits")
    if d_logits.shape != want:
        raise ValueError(f"d_logits must have the logits' shape {want}; got {d_logits.shape}")
    return _backward(cache, d_logits)


def _T(a):
    """Transpose the last two axes (``.T`` would also reverse the batch axis)."""
    return np.swapaxes(a, -1, -2)


def _summed(A, G):
    """sum over sentences b and tokens i of A[b, i]^T G[b, i]: the gradient of a matrix applied to every token."""
    return A.reshape(-1, A.shape[-1]).T @ G.reshape(-1, G.shape[-1])


def _backward(cache, d_logits):
    p, X, Q, K, V = cache["params"], cache["X"], cache["Q"], cache["K"], cache["V"]
    # read-out: logits = out W_out + b_out
    g = {"W_out": _summed(cache["out"], d_logits), "b_out": d_logits.sum(axis=(0, 1))}
    d_out = d_logits @ p["W_out"].T                               # (B, n, d_v)
    # values: out = weights V
    d_weights = d_out @ _T(V)                                      # (B, n, n)
    d_V = _T(cache["weights"]) @ d_out                             # (B, n, d_v)
    g["W_V"] = _summed(X, d_V)
    if cache["uniform"]:                                          # the scores were not used
        g["W_Q"], g["W_K"] = np.zeros_like(p["W_Q"]), np.zeros_like(p["W_K"])
        return g
    if cache["mask"] is not None and cache["mask_where"] == "after":
        d_weights = d_weights * cache["mask"]                     # zeroed weights pass no gradient
    # softmax, then the scaling: scores = Q K^T / sqrt(d_k)
    d_scores = _softmax_backward(cache["softmax_weights"], d_weights) / np.sqrt(Q.shape[-1])
    d_Q = d_scores @ K                                            # (B, n, d_k)
    d_K = _T(d_scores) @ Q                                         # (B, n, d_k)
    g["W_Q"] = _summed(X, d_Q)
    g["W_K"] = _summed(X, d_K)
    return g


def _checked(params, X, targets, mask, mask_where):
    p = _check_params(params)
    X = _check_X(X, p["W_Q"].shape[0])
    return p, X, _check_targets(targets, X.shape[:2], p["W_out"].shape[1]), _check_mask(mask, X.shape[1], mask_where)


def _loss_and_grads(p, X, t, mask, mask_where, uniform):
    logits, cache = _forward(p, X, mask, mask_where, uniform)
    loss, d_logits = _cross_entropy(logits, t)
    return loss, _backward(cache, d_logits), cache


def loss_and_grads(params, X, targets, mask=None, mask_where="before", uniform=False):
    """Forward, loss and backward in one call: returns (loss, grads, cache).

    Arguments as ``forward`` and ``cross_entropy``; grads as ``backward``.
    """
    p, X, t, mask = _checked(params, X, targets, mask, mask_where)
    return _loss_and_grads(p, X, t, mask, mask_where, bool(uniform))


# --------------------------------------------------------------------------
# Checking gradients against finite differences
# --------------------------------------------------------------------------

def numerical_gradient(f, x, h=1e-5):
    """Central finite differences: entry i is (f(x + h e_i) - f(x - h e_i)) / (2 h).

    f: a function of an array of x's shape returning the loss, one finite
    number (a Python or numpy number, or an array holding exactly one,
    read as that number); x: the
    point, an array of real numbers (f is called on a float copy of it,
    changed entry by entry; x itself is not changed). The error of the central
    difference is of order h^2 times the third derivative, plus rounding of
    order (machine epsilon times the loss / h): h = 1e-5 keeps both near
    1e-10 or below for the losses here. Returns an array of x's shape.
    Raises ValueError naming f when f returns anything else (None, text, a
    bool, an array of several numbers or none, NaN or inf), and when the
    loss is float32 or float16: its rounding over 2h (errors of order 1e-3
    in a gradient for h = 1e-5) would pass for a wrong backward pass, so
    compute the loss in float64.
    """
    h = _positive_real(h, "h")
    if not callable(f):
        raise ValueError(f"f must be a function of the array; got {type(f).__name__}")
    x_arr = _finite(x, "x").copy()
    grad = np.zeros(x_arr.shape)
    for i in np.ndindex(x_arr.shape):
        old = x_arr[i]
        x_arr[i] = old + h
        up = _loss_value(f(x_arr))
        x_arr[i] = old - h
        down = _loss_value(f(x_arr))
        x_arr[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad


def _loss_value(loss):
    """The loss f returned, as a float; ValueError naming f unless it is one finite real number."""
    value = np.asarray(loss) if isinstance(loss, (numbers.Real, np.ndarray)) and not isinstance(loss, bool) else None
    if value is None or value.size != 1 or value.dtype.kind not in "iuf" or not np.isfinite(value).all():
        what = f"an array of shape {value.shape}, dtype {value.dtype}" if isinstance(loss, np.ndarray) else repr(loss)
        raise ValueError(f"f must return the loss as one finite number (a float, or an array holding exactly "
                         f"one); got {what}")
    if value.dtype.kind == "f" and value.dtype.itemsize < 8:
        # float32 rounds the loss to about 1e-7 of its size; divided by 2h = 2e-5 that is a gradient error
        # of order 1e-3 (1.7e-3 at most, relative error 0.017, for W_V on 8 bank sentences): far above the 1e-6 a
        # gradient check asks for
        raise ValueError(f"f must return the loss in float64; got dtype {value.dtype}, whose rounding, divided "
                         f"by 2h, swamps the gradient: compute the loss in float64")
    return float(value.reshape(()))


def relative_error(a, b):
    """||a - b|| / (||a|| + ||b||), or 0.0 when both are zero.

    A norm over the whole array, not entry by entry: an entry-wise ratio
    blows up where a gradient is near zero, while this one stays meaningful.
    """
    a, b = _finite(a, "a"), _finite(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}")
    total = float(np.linalg.norm(a) + np.linalg.norm(b))
    return 0.0 if total == 0.0 else float(np.linalg.norm(a - b)) / total


def gradient_check(params, X, targets, mask=None, mask_where="before", uniform=False, h=1e-5):
    """The relative error of each analytic gradient against central finite differences.

    Arguments as ``loss_and_grads``; h the finite-difference step.
    Returns {name: relative_error(backward's gradient, finite differences)}
    for each of ``PARAMETERS``.
    """
    params = {k: np.array(v, dtype=float) for k, v in _check_params(params).items()}
    _, grads, _ = loss_and_grads(params, X, targets, mask, mask_where, uniform)
    errors = {}
    for name in PARAMETERS:
        def f(value, name=name):
            return loss_and_grads({**params, name: value}, X, targets, mask, mask_where, uniform)[0]
        errors[name] = relative_error(grads[name], numerical_gradient(f, params[name].copy(), h))
    return errors


# --------------------------------------------------------------------------
# Optimisers and the training loop
# --------------------------------------------------------------------------

def gradient_descent_step(params, grads, learning_rate):
    """Plain gradient descent: every array moves against its gradient, x <- x - learning_rate * grad.

    Returns the new params (a new dict; the old one is not changed).
    Raises ValueError for a learning rate <= 0 or grads that do not fit params.
    """
    lr = _positive_real(learning_rate, "learning_rate")
    params = _check_params(params)
    grads = _check_grads(params, grads)
    return {name: params[name] - lr * grads[name] for name in PARAMETERS}


def adam_step(params, grads, state, learning_rate, beta1=0.9, beta2=0.999, eps=1e-8):
    """One step of Adam (Kingma & Ba 2015, Algorithm 1), written out.

    m <- beta1 m + (1 - beta1) g          a running mean of the gradient
    v <- beta2 v + (1 - beta2) g^2        a running mean of its square
    x <- x - lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

    m over the root of v makes an entry's step about learning_rate whatever
    the size of its gradient, larger where the gradient grew lately (v
    forgets more slowly than m; Kingma & Ba, section 2.1, bound it by about
    3.16 learning rates for these betas; notebook 09's runs reach 1.1 to
    1.7). state: {} at the start; it keeps t, m and v between steps
    (and is changed only by a step that is taken).

    Returns the new params (a new dict). Raises ValueError, naming the
    argument, for a learning rate that is not a positive finite number,
    beta1 or beta2 outside [0, 1) (beta = 1 divides 0 by 0 in the bias
    correction 1 - beta**t), an eps that is not a positive finite number
    (eps = 0 turns a zero gradient into 0/0), grads that do not fit params,
    and a state that is not a dict or was left by parameters of other shapes
    (the message names the entry, e.g. state['m_W_Q'], and both shapes).
    """
    lr = _positive_real(learning_rate, "learning_rate")
    beta1, beta2 = _fraction_below_one(beta1, "beta1"), _fraction_below_one(beta2, "beta2")
    eps = _positive_real(eps, "eps")
    params = _check_params(params)
    grads = _check_grads(params, grads)
    _check_state(state, params)
    t = state["t"] = state.get("t", 0) + 1
    new = {}
    for name in PARAMETERS:
        g = grads[name]
        m = state[f"m_{name}"] = beta1 * state.get(f"m_{name}", 0.0) + (1 - beta1) * g
        v = state[f"v_{name}"] = beta2 * state.get(f"v_{name}", 0.0) + (1 - beta2) * g * g
        new[name] = params[name] - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return new


def train(params, X, targets, steps, learning_rate, mask=None, mask_where="before", uniform=False,
          optimizer="adam", on_step=None):
    """Train the layer on (X, targets), full batch, for ``steps`` steps.

    params: starting parameters (not changed); X (B, n, d_model); targets (B, n).
    steps: positive whole number; learning_rate: positive number.
    optimizer: "adam" (``adam_step``) or "sgd" (``gradient_descent_step``).
    on_step: optional function called after every step as
        on_step(step, params, loss), step counting from 1, loss the loss
        before that step's update (for a progress bar or a record).
    mask, mask_where, uniform: as ``forward``.

    Returns (params, losses): the trained parameters and the loss before
    each step, a list of ``steps`` floats. Raises ValueError naming the
    argument for zero or negative steps, a learning rate <= 0, an unknown
    optimizer, an on_step that is not a function, and the errors of
    ``forward`` for shapes that do not fit.
    """
    steps = _positive_int(steps, "steps")
    _positive_real(learning_rate, "learning_rate")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd'; got {optimizer!r}")
    if on_step is not None and not callable(on_step):
        raise ValueError(f"on_step must be a function on_step(step, params, loss) or None; got {type(on_step).__name__}")
    params, X, t, mask = _checked(params, X, targets, mask, mask_where)
    params = {k: v.copy() for k, v in params.items()}
    state, losses = {}, []
    for step in range(1, steps + 1):
        loss, grads, _ = _loss_and_grads(params, X, t, mask, mask_where, bool(uniform))
        if optimizer == "adam":
            params = adam_step(params, grads, state, learning_rate)
        else:
            params = gradient_descent_step(params, grads, learning_rate)
        losses.append(loss)
        if on_step is not None:
            on_step(step, params, loss)
    return params, losses


def predict(params, X, mask=None, mask_where="before", uniform=False):
    """The class with the largest logit at every token: array (B, n) of whole numbers."""
    logits, _ = forward(params, X, mask=mask, mask_where=mask_where, uniform=uniform)
    return logits.argmax(axis=-1)
