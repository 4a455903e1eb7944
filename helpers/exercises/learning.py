"""Exercises of notebook 09: learning by gradient descent (the softmax's gradient, one gradient step)."""

from __future__ import annotations

import numpy as np

from helpers.exercises.base import _Names, _NumericExercise, _code
from helpers.exercises.feedback import EXACT_ATOL, _comment, _fmt, _term

__all__ = [
    "SoftmaxGradientExercise", "GradientStepExercise",
]


# --------------------------------------------------------------------------
# Notebook 09: learning W_Q, W_K, W_V by gradient descent
# --------------------------------------------------------------------------



def _number(value, name):
    """Instructor input: one finite real number, or ValueError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    return float(value)


def _vector(value, name):
    """Instructor input: a 1-D array of finite real numbers, or ValueError naming it."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of numbers; got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty row of finite numbers, shape (n,); got {value!r}")
    return arr


class SoftmaxGradientExercise(_NumericExercise):
    """The gradient of the loss with respect to one row of scores, from the gradient with respect to its weights.

    weights: (n,) one row of softmax weights (non-negative, summing to 1), or all zeros: the row
    ``scaled_dot_product_attention`` gives a query with nothing to attend to; no score moves it, so
    its gradient is zero (the formula gives that, every w_j being 0).
    d_weights: (n,) dL/dw, the gradient of the loss with respect to those weights.
    labels: the n keys' names. names: the notebook's names for "weights"
    and "d_weights", for the solution.
    The answer, shape (n,), is J^T dL/dw with the softmax Jacobian
    J = diag(w) - w w^T (symmetric): entry j is w_j (dL/dw_j - sum_i w_i dL/dw_i)
    (``helpers.training.softmax_backward``). Raises ValueError (naming the
    argument) for weights that are not one softmax row or d_weights of another shape.
    """

    def __init__(self, weights, d_weights, labels, names=None):
        w, g = _vector(weights, "weights"), _vector(d_weights, "d_weights")
        if (w < 0).any() or not (np.isclose(w.sum(), 1.0, atol=1e-6) or not w.any()):
            raise ValueError(f"weights must be one row of softmax weights (non-negative, sum 1, or all 0 for a "
                             f"query with nothing to attend to); got {w!r}")
        if g.shape != w.shape:
            raise ValueError(f"d_weights must have the shape of weights {w.shape}; got {g.shape}")
        if isinstance(labels, str) or not hasattr(labels, "__len__") or len(labels) != w.size:
            raise ValueError(f"labels must be a list naming the {w.size} keys; got {labels!r}")
        self.labels_cols = list(labels)
        mean = float(w @ g)
        self.expected = w * (g - mean)
        self.atol = EXACT_ATOL
        self.shape_note = f"one number per score, {w.size} scores"
        self.title = "the gradient of the loss with respect to one row of scores"
        self._set_variants([
            ("diagonal_only",
             "You used only the diagonal of the Jacobian, w_j (1 - w_j), as if each weight depended on its own "
             "score alone. Every weight depends on every score (they share one sum): J = diag(w) - w w^T.",
             w * (1 - w) * g),
            ("missing_sum_term",
             "You multiplied w by dL/dw entry by entry and stopped: the diag(w) part alone. Subtract the "
             "w w^T part too: w_j (dL/dw_j - sum_i w_i dL/dw_i).", w * g),
            ("passed_through",
             "That is dL/dw itself, as if the softmax were not there. The gradient goes through the softmax's "
             "Jacobian: multiply it by J = diag(w) - w w^T.", g),
            ("sign_flipped",
             "The sign is flipped: J = diag(w) - w w^T, so entry j is w_j (dL/dw_j - sum_i w_i dL/dw_i), "
             "not the other way round.", -self.expected),
        ])
        names = _Names(names, {"weights": "w", "d_weights": "d_w"})
        wn, gn = names["weights"], names["d_weights"]
        self.hint_text = ("Build the softmax Jacobian J = diag(w) - w w^T (np.diag and np.outer), then multiply it by "
                          "dL/dw. Or, row by row: w_j times (dL/dw_j minus the weighted mean sum_i w_i dL/dw_i).")
        self.solution_text = _code([
            (f"my_J = np.diag({wn}) - np.outer({wn}, {wn})", "the softmax Jacobian, symmetric"),
            (f"answer = my_J @ {gn}", f"{_fmt(self.expected)}"),
        ]) + "\n" + _comment(f"the same, row by row: {wn} * ({gn} - {wn} @ {gn}), with {wn} @ {gn} = {_fmt(mean)}")
        self.correct_note = ("The entries sum to 0: adding the same number to every score "
                             "leaves the softmax unchanged, so the gradient has no component along that direction.")


class GradientStepExercise(_NumericExercise):
    """One step of gradient descent on a single number w, for the loss L(w) = (w x - y)^2.

    w: the parameter now; x, y: one input and its target; learning_rate > 0.
    The answer is the new w: w - learning_rate * dL/dw, with dL/dw = 2 x (w x - y).
    names: the notebook's names for "w", "x", "y", "learning_rate".
    Raises ValueError (naming it) for a learning rate that is not a positive number.
    """

    def __init__(self, w, x, y, learning_rate, names=None):
        w, x, y = _number(w, "w"), _number(x, "x"), _number(y, "y")
        lr = _number(learning_rate, "learning_rate")
        if lr <= 0:
            raise ValueError(f"learning_rate must be a positive number; got {learning_rate!r}")
        grad = 2 * x * (w * x - y)
        self.expected = np.asarray(w - lr * grad)
        self.atol = EXACT_ATOL
        self.shape_note = "the new value of w, one number"
        self.title = "the new w after one step of gradient descent"
        self._set_variants([
            ("ascent",
             "You stepped up the gradient (w + learning_rate * dL/dw), which raises the loss. Gradient descent "
             "steps against it: w - learning_rate * dL/dw.", w + lr * grad),
            ("no_learning_rate",
             "You subtracted the whole gradient. Gradient descent subtracts the gradient times the learning "
             f"rate ({lr:g}).", w - grad),
            ("forgot_two",
             "The derivative of (w x - y)^2 is 2 x (w x - y): the 2 comes down from the square.",
             w - lr * x * (w * x - y)),
            ("gradient_only",
             "That is the gradient dL/dw, not the new w. Take the step: w - learning_rate * dL/dw.", grad),
            ("step_only",
             "That is the size of the step (learning_rate * dL/dw), not the new w. Subtract it from w.", lr * grad),
        ])
        names = _Names(names, {"w": "w", "x": "x", "y": "y", "learning_rate": "learning_rate"})
        wn, xn, yn, ln = names["w"], names["x"], names["y"], names["learning_rate"]
        self.hint_text = ("Differentiate (w x - y)^2 with respect to w (the chain rule: 2 (w x - y) times x), "
                          "then move w against that gradient by learning_rate times it.")
        self.solution_text = _code([
            (f"my_grad = 2 * {xn} * ({wn} * {xn} - {yn})", f"dL/dw = {_fmt(grad)}"),
            (f"answer = {wn} - {ln} * my_grad", f"{_fmt(w)} - {lr:g} × {_term(grad)} = {_fmt(self.expected)}"),
        ])
        new_loss = (float(self.expected) * x - y) ** 2
        self.correct_note = (f"The loss falls from {_fmt((w * x - y) ** 2)} to {_fmt(new_loss)}."
                             if new_loss < (w * x - y) ** 2 else
                             f"The loss goes from {_fmt((w * x - y) ** 2)} to {_fmt(new_loss)}: this learning rate "
                             "is too large for this x, and the step overshoots.")
