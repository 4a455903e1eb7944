"""The checker of ``softmax_backward``: a learner's ``fn(weights, grad_weights)`` against helpers.training's.

For rows w of a softmax over the last axis and the gradient g = dL/dw of
the loss with respect to them, the gradient with respect to the scores is
J^T g with the softmax Jacobian J = diag(w) - w w^T (symmetric), row by row

    grad_scores = w * (g - sum_j w_j g_j)

A row of zeros (a query with nothing to attend to) has gradient zero. The
misconceptions, each one part of that formula done another way:
``missing_sum_term`` (w * g: the diag(w) part alone), ``diag_term_missing``
(-w (w . g): the w w^T part alone), ``wrong_axis`` (the sum taken along
another axis, any: the verdict names it), ``gradient_scaled`` (the whole
gradient times a factor, any: doubled, halved, divided by n, named),
``diagonal_only``, ``passed_through``, ``sign_flipped`` (the keys
of notebook 08's SoftmaxGradientExercise for the same mistakes) and
``unweighted_mean`` (g minus its plain mean, or its plain sum: the weights
left out of the subtracted term), ``leading_weights_missing`` (g - w . g: the
factor w in front dropped, the dot product written either way; for g - w * g
the verdict adds that w . g is one dot product per row); ``one_row_only`` (the Jacobian
np.diag(w) - np.outer(w, w) of one row, which fails on a matrix) and
``no_keepdims`` (the sum w . g taken without keepdims=True: right on one row,
on a square matrix it lines up with the key axis, on any other it raises).
The battery's square (4, 4) rows tell those two apart.
"""

from __future__ import annotations

import numpy as np

from helpers.checkers import checker_numeric, fitted
from helpers.checkers.battery import SOFTMAX_BACKWARD
from helpers.checkers.runner import matches
from helpers.training import softmax_backward

__all__ = ["FAULTS", "PIECE"]

FAULTS = {
    "missing_sum_term": (
        "terms", "You multiplied w by dL/dw entry by entry and stopped: the diag(w) part of the Jacobian alone. "
        "Every weight depends on every score (they share one sum), so subtract the w w^T part too: "
        "w * (g - np.sum(w * g, axis=-1, keepdims=True))."),
    "diag_term_missing": (
        "terms", "You kept only the w w^T part, -w (w . g), and left out the diag(w) part, w * g. Add it: "
        "w * g - w * np.sum(w * g, axis=-1, keepdims=True)."),
    "diagonal_only": (
        "terms", "You used only the diagonal of the Jacobian, w_j (1 - w_j), as if each weight depended on its own "
        "score alone. Every weight depends on every score: J = diag(w) - w w^T."),
    "passed_through": (
        "terms", "You return dL/dw itself, as if the softmax were not there. The gradient goes through the "
        "softmax's Jacobian: w * (g - np.sum(w * g, axis=-1, keepdims=True))."),
    "unweighted_mean": (
        "terms", "You subtract a plain mean or sum of dL/dw, without the weights. The term to subtract is the sum "
        "weighted by the softmax's own weights: np.sum(w * g, axis=-1, keepdims=True)."),
    "leading_weights_missing": (
        "terms", "You left out the factor w in front: the gradient is w * (g - np.sum(w * g, axis=-1, "
        "keepdims=True)), each entry times its own weight (a key with weight 0 gets gradient 0)."),
    "sign_flipped": (
        "sign", "Your gradient has the wrong sign: J = diag(w) - w w^T, so it is w * (g - sum w g), not "
        "w * (sum w g - g)."),
    "one_row_only": (
        "rows", "Your function works on one row of weights but not on a matrix or a batch: np.diag and np.outer "
        "take one row (np.outer flattens a matrix). Work row by row with broadcasting: "
        "w * (g - np.sum(w * g, axis=-1, keepdims=True)) handles any number of rows."),
    "no_keepdims": (
        "keepdims", "Sum with keepdims=True, or the sum lines up with the wrong axis: np.sum(w * g, axis=-1) has "
        "one entry per query, and broadcasting subtracts it along the keys (on a square matrix silently, on any "
        "other numpy refuses). Right on one row only: np.sum(w * g, axis=-1, keepdims=True)."),
    "wrong_axis": (
        "axis", "Each query's weights are one softmax, so sum along the last axis: "
        "np.sum(w * g, axis=-1, keepdims=True)."),
    "gradient_scaled": (
        "factor", "The gradient through a softmax has no constant in front: w * (g - np.sum(w * g, axis=-1, "
        "keepdims=True)), J^T g with J = diag(w) - w w^T taken once."),
}
"""Every mistake the softmax_backward checker names: key -> (part, what it tells the learner). ``wrong_axis``
and ``gradient_scaled`` are families (:data:`FAMILIES`): their verdict first names the learner's own axis or
factor, then says this."""

ELEMENTWISE_DOT = ("And w . g is one dot product per row, np.sum(w * g, axis=-1, keepdims=True), not w * g "
                   "entry by entry.")
"""Said after ``leading_weights_missing`` when the function computes g - w * g, the dot product read as w * g."""


def _dot_as_product(args, out):
    """ELEMENTWISE_DOT when ``out`` is g - w * g (or its negative): the dot product written entry by entry."""
    w, g = args["weights"], args["grad_weights"]
    return ELEMENTWISE_DOT if matches(out, g - w * g) or matches(out, w * g - g) else None


def _model(args, faults, axis=-1):
    w, g = args["weights"], args["grad_weights"]
    if "one_row_only" in faults and w.ndim > 1:
        return None                                              # numpy refuses the Jacobian of a matrix
    keep = "no_keepdims" not in faults
    out = []
    for axis in [axis]:
        dot = np.sum(w * g, axis=axis, keepdims=keep)            # numpy refuses an axis the weights do not have
        term = next((f for f in faults if FAULTS[f][0] == "terms"), None)
        grads = {"missing_sum_term": [w * g], "diag_term_missing": [-w * dot], "diagonal_only": [w * (1 - w) * g],
                 "passed_through": [g], "leading_weights_missing": [g - dot, g - w * g],
                 "unweighted_mean": [w * (g - g.mean(axis=axis, keepdims=keep)),
                                     w * (g - g.sum(axis=axis, keepdims=keep))]}.get(term, [w * (g - dot)])
        out += [-grad if "sign_flipped" in faults else grad for grad in grads]
    return out


# --------------------------------------------------------------------------
# The faults with a parameter: any wrong axis, any factor
# --------------------------------------------------------------------------

def _fit_axis(runs):
    """Every axis of the largest weights of the battery but the last (-1 is right)."""
    ndim = max(np.ndim(run.case.args["weights"]) for run in runs)
    return fitted.axis_candidates(ndim)


def _axis_words(axis, run):
    w = run.case.args["weights"]
    text = f"Your sum runs along axis {axis} (np.sum(w * g, axis={axis}, keepdims=True)), not the last one"
    if not -w.ndim <= axis < w.ndim:
        return text + f": weights of shape {w.shape} have no axis {axis}, and numpy refuses it. "
    where = axis % w.ndim
    what = ("the last axis here, but not on weights of other shapes" if where == w.ndim - 1 else
            "down the columns, across queries" if where == w.ndim - 2 else "across sentences of the batch")
    return text + f": on weights of shape {w.shape} that is {what}. "


def _sizes(args):
    w = np.asarray(args["weights"])
    return {"n": w.shape[-1], "n_q": w.shape[-2] if w.ndim > 1 else 1}


SIZE_WORDS = {"n": "the number of keys (the length of a row of weights)", "n_q": "the number of rows (queries)"}


def _fit_factor(runs):
    """("times" or "divided", a fitted.SizeRule) for the factor c of the learner's gradient over the right one, on
    the first runs where it shows: c itself, or the size it equals (divided by n, the number of keys)."""
    found = []
    for run in runs[:4]:
        if run.out is None:
            continue
        c = fitted.fit_factor(run.out, softmax_backward(run.case.args["weights"], run.case.args["grad_weights"]))
        if c is None or abs(c) < 1e-9:
            continue
        sizes = _sizes(run.case.args)
        times = [("times", rule) for rule in fitted.size_rules(c, sizes)]
        divided = [("divided", rule) for rule in fitted.size_rules(1 / c, sizes)]
        found += times + divided if abs(c) >= 1 else divided + times
    return found


def _factor(value, args):
    how, rule = value
    c = rule.value(_sizes(args))
    return c if how == "times" else 1 / c


def _factor_right(value):
    how, rule = value
    return rule.name is None and abs(abs(rule.factor) - 1) < 1e-6      # 1 is right; -1 is sign_flipped's


def _factor_words(value, run):
    how, rule = value
    sizes = _sizes(run.case.args)
    if rule.name is None:
        number = fitted.SizeRule(None, 1.0, rule.factor).formula()
        said = {("times", "2"): "2 times the right one (doubled)", ("divided", "2"): "half the right one (divided by 2)"}
        text = said.get((how, number), f"{number} times the right one" if how == "times" else
                        f"the right one divided by {number}")
        return f"Your gradient is {text}, on every input. "
    name = SIZE_WORDS.get(rule.name, rule.name)
    return (f"Your gradient is the right one {'times' if how == 'times' else 'divided by'} {rule.formula(sizes)}, "
            f"{name}: on every input, whatever its size. ")


FAMILIES = (
    fitted.Family("wrong_axis", "axis", _fit_axis, lambda args, axis, faults=frozenset(): _model(args, faults, axis),
                  lambda axis, run: _axis_words(axis, run) + FAULTS["wrong_axis"][1], right=lambda axis: axis == -1),
    fitted.Family("gradient_scaled", "factor", _fit_factor,
                  lambda args, value: _factor(value, args) * softmax_backward(args["weights"], args["grad_weights"]),
                  lambda value, run: _factor_words(value, run) + FAULTS["gradient_scaled"][1], right=_factor_right),
)
"""The faults with a parameter: the sum along any other axis (named), the gradient times any factor (a number,
or a size of the inputs: divided by n). Tried after the fixed faults, with the learner's value fitted."""

PIECE = checker_numeric.Piece(
    name="softmax_backward", cases=SOFTMAX_BACKWARD, arguments=("weights", "grad_weights"),
    expected=lambda a: softmax_backward(a["weights"], a["grad_weights"]), model=_model,
    faults={k: v for k, v in FAULTS.items() if k not in {f.key for f in FAMILIES}},
    shape="(..., n), as weights", returns="the gradient of the scores",
    hint="Compare it with the Jacobian for one row: (np.diag(w) - np.outer(w, w)) @ g.",
    notes={"leading_weights_missing": _dot_as_product}, families=FAMILIES)

