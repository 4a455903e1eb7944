"""The checker of ``layer_norm``: a learner's ``fn(x, gamma, beta, eps=1e-12)`` against helpers.depth's.

Over the last axis of x (one token's d_model features; Ba, Kiros & Hinton 2016, eq. 3-4):

    mu = mean(x),  var = mean((x - mu)^2),  out = (x - mu) / sqrt(var + eps) * gamma + beta

Each misconception is one part of that written another way, as public code has written it:
the variance (``unbiased_variance``: np.var(..., ddof=1), or torch's x.var() default, divided by
d_model - 1; ``no_sqrt``: divided by the variance, not its root), eps (``eps_outside_sqrt``:
(x - mu) / (sqrt(var) + eps); ``std_no_eps``: np.std with no eps, NaN on a constant row), the centring
(``no_centering``: x, not x - mu, on top; ``rms_norm``: x / sqrt(mean(x^2) + eps), RMSNorm's formula),
the affine part (``gamma_beta_swapped``: x_hat * beta + gamma; ``no_gamma_beta``: x_hat returned), the axis
(``whole_array``: the mean and variance of every entry of x at once) and ``no_keepdims`` (the mean taken
without keepdims=True: numpy refuses it on most shapes, on a square x it lines up with the wrong axis).
Three have a parameter the checker fits (fitted.Family) and names: ``wrong_axis`` (any other axis),
``eps_fixed`` (one eps, whatever eps is passed: the argument ignored) and ``wrong_default_eps`` (another
default than 1e-12, as torch.nn.LayerNorm's 1e-5).
"""

from __future__ import annotations

import numpy as np

from helpers.checkers import checker_numeric, fitted
from helpers.checkers.battery import LAYER_NORM
from helpers.depth import layer_norm

__all__ = ["FAULTS", "PIECE", "DEFAULT_EPS"]

DEFAULT_EPS = 1e-12
"""The workbook's default eps (BERT's and MiniLM's layer_norm_eps)."""

FIX = "(x - mu) / np.sqrt(var + eps) * gamma + beta, with mu = x.mean(axis=-1, keepdims=True) and var = x.var(axis=-1, keepdims=True)"

FAULTS = {
    "unbiased_variance": (
        "variance", "Your variance divides by d_model - 1 (np.var(..., ddof=1), or torch's x.var(), unbiased by "
        f"default). LayerNorm's divides by d_model: the mean of (x - mu)^2, np.var's default. Write {FIX}."),
    "no_sqrt": (
        "variance", f"You divided by the variance itself. Divide by its square root, the standard deviation: {FIX}."),
    "eps_outside_sqrt": (
        "eps", "You added eps to the standard deviation, (x - mu) / (np.sqrt(var) + eps). LayerNorm adds it to the "
        "variance, inside the square root: (x - mu) / np.sqrt(var + eps). The two differ once eps is not tiny "
        "beside the variance."),
    "std_no_eps": (
        "eps", "You divided by np.std(x) with no eps: a token whose features are all equal has standard deviation 0, "
        f"and 0 / 0 gives NaN. Add eps inside the square root: {FIX}."),
    "no_centering": (
        "centre", "You divided x itself by the standard deviation, without subtracting the mean first. Centre it: "
        "(x - mu) on top, so every token's features have mean 0 before gamma and beta."),
    "rms_norm": (
        "centre", "You wrote RMSNorm: x / sqrt(mean(x^2) + eps), with no mean subtracted (Zhang & Sennrich 2019, "
        f"used in LLaMA). LayerNorm subtracts the mean and divides by the standard deviation: {FIX}."),
    "gamma_beta_swapped": (
        "affine", "gamma and beta are swapped: gamma is the gain (it multiplies), beta the bias (it is added): "
        "x_hat * gamma + beta."),
    "no_gamma_beta": (
        "affine", "You return the normalised x_hat without gamma and beta. Scale and shift it: x_hat * gamma + beta."),
    "whole_array": (
        "axis", "You took one mean and one variance over every entry of x (x.mean(), x.var() with no axis). "
        "LayerNorm normalises each token on its own, over its features: axis=-1, keepdims=True."),
    "no_keepdims": (
        "keepdims", "Take the mean and the variance with keepdims=True: x.mean(axis=-1) has one entry per token, and "
        "broadcasting lines it up with the features (on a square x silently, on any other numpy refuses)."),
}
"""Every fixed mistake the layer_norm checker names: key -> (part, what it tells the learner)."""

EPS_WORDS = ("eps goes inside the square root, and the one passed is the one to use: "
             "def layer_norm(x, gamma, beta, eps=1e-12), then np.sqrt(var + eps).")


def _eps(args, eps=None, default=None):
    """The eps a model uses on this input: ``eps`` whatever is passed; else the one passed, or the default."""
    if eps is not None:
        return eps
    given = args["eps"]
    return given if given is not None else (DEFAULT_EPS if default is None else default)


def _model(args, faults, axis=-1, eps=None, default=None):
    x, gamma, beta = args["x"], args["gamma"], args["beta"]
    e = np.asarray(_eps(args, eps, default), dtype=float)
    e = e.reshape(e.shape + (1,) * x.ndim)                         # a grid of eps (fitted.fit_scalar) broadcasts in front
    keep = "no_keepdims" not in faults
    where = None if "whole_array" in faults else axis
    mu = x.mean(axis=where, keepdims=keep)
    ddof = 1 if "unbiased_variance" in faults else 0
    if "rms_norm" in faults:
        top, var = x, (x * x).mean(axis=where, keepdims=keep)
    else:
        top, var = (x if "no_centering" in faults else x - mu), x.var(axis=where, keepdims=keep, ddof=ddof)
    if "eps_outside_sqrt" in faults:
        below = np.sqrt(var) + e
    elif "std_no_eps" in faults:
        below = np.sqrt(var) + 0 * e
    elif "no_sqrt" in faults:
        below = var + e
    else:
        below = np.sqrt(var + e)
    x_hat = top / below
    if "no_gamma_beta" in faults:
        return x_hat + 0 * e
    return x_hat * beta + gamma if "gamma_beta_swapped" in faults else x_hat * gamma + beta


def _expected(args):
    eps = args["eps"]
    return layer_norm(args["x"], args["gamma"], args["beta"], DEFAULT_EPS if eps is None else eps)


# --------------------------------------------------------------------------
# Faults with a parameter: another axis, one eps whatever is passed, another default eps
# --------------------------------------------------------------------------

def _fit_axis(runs):
    ndim = max(np.ndim(run.case.args["x"]) for run in runs)
    return fitted.axis_candidates(ndim, but_last=True)


def _axis_words(axis, run):
    x = run.case.args["x"]
    text = f"Your mean and variance run along axis {axis}, not the last one"
    if not -x.ndim <= axis < x.ndim:
        return text + f": x of shape {x.shape} has no axis {axis}, and numpy refuses it. "
    where = axis % x.ndim
    what = ("the features here, but not on x of other shapes" if where == x.ndim - 1 else
            "across the tokens, one feature at a time" if where == x.ndim - 2 else "across the sentences of the batch")
    return text + f": on x of shape {x.shape} that is {what}. LayerNorm normalises each token over its features: axis=-1."


COMMON_EPS = (1e-12, 1e-5, 1e-6, 1e-8, 1e-3, 1e-7, 1e-9, 1e-10, 1e-4, 0.0)
"""The eps values public code writes, tried before a fitted one (1e-5: torch.nn.LayerNorm's; 1e-6, 1e-8 ...)."""


def _fit_eps(runs, passed):
    """Candidate eps values: the common ones, then the one read off the first wrong run with eps passed (``passed``
    True) or with the default (False), by fitted.fit_scalar."""
    found = list(COMMON_EPS)
    for run in checker_numeric.wrong_runs(runs, _expected):
        if (run.case.args["eps"] is not None) != passed:
            continue
        value = fitted.fit_scalar(lambda grid: _model(run.case.args, frozenset(), eps=grid), run.out, 1e-14, 10.0)
        if value is not None:
            found += fitted.nice_values(value)
        break
    return found


def _eps_fixed_words(value, run):
    said = "no eps at all" if value == 0 else f"eps = {fitted.number(value)}"
    return (f"Your function uses {said} whatever eps it is passed: on an input with eps passed it ignored it. "
            + EPS_WORDS)


def _default_words(value, run):
    return (f"Your default eps is {fitted.number(value)}"
            + (" (torch.nn.LayerNorm's)" if value == 1e-5 else "")
            + "; the workbook's is 1e-12, BERT's and MiniLM's layer_norm_eps. It shows on tokens whose variance is "
            "small: def layer_norm(x, gamma, beta, eps=1e-12).")


FAMILIES = (
    fitted.Family("wrong_axis", "axis", _fit_axis, lambda args, axis, faults=frozenset(): _model(args, faults, axis),
                  _axis_words, right=lambda axis: axis == -1),
    fitted.Family("eps_fixed", "eps", lambda runs: _fit_eps(runs, True),
                  lambda args, value, faults=frozenset(): _model(args, faults, eps=value), _eps_fixed_words),
    fitted.Family("wrong_default_eps", "eps", lambda runs: _fit_eps(runs, False),
                  lambda args, value, faults=frozenset(): _model(args, faults, default=value), _default_words,
                  right=lambda value: value == DEFAULT_EPS),
)
"""The faults with a parameter, tried after the fixed ones, with the learner's value named."""

PIECE = checker_numeric.Piece(
    name="layer_norm", cases=LAYER_NORM, arguments=("x", "gamma", "beta"),
    optional={"eps": (("eps", "epsilon", "eps_", "variance_epsilon", "layer_norm_eps"), 3)}, defaults={"eps": 1e-12},
    expected=_expected, model=_model, faults=FAULTS, shape="(..., d_model), as x", returns="the normalised x",
    families=FAMILIES,
    hint="Print yours for x = [[1, 2, 3, 4]], gamma ones, beta zeros: mean 2.5, variance 1.25, so the first entry is "
         "-1.5 / sqrt(1.25) = -1.342.")
