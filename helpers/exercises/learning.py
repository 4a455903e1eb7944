"""Exercises of notebook 09: learning by gradient descent (the softmax's gradient, which weights get no gradient)."""

from __future__ import annotations

import numpy as np

from helpers.exercises.base import ChoiceExercise, _Names, _NumericExercise, _code
from helpers.exercises.feedback import EXACT_ATOL, _comment, _fmt, _term
from helpers.training import loss_and_grads

__all__ = [
    "SoftmaxGradientExercise", "ZeroGradientExercise", "ZeroReadOutExercise",
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


class ZeroGradientExercise(ChoiceExercise):
    """Which learned weights get a gradient of exactly zero in a given setting, and why.

    params, X, targets and the options of ``helpers.training.loss_and_grads``
    (mask, mask_where, uniform) fix the setting; the checker runs the
    backward pass on it and takes as the answer the option whose weights are
    exactly the ones whose whole gradient is 0. The notebook's setting:
    sentences of one word, where each softmax has one score and gives weight
    1 whatever it is, so W_Q and W_K get no gradient (the causal mask does
    the same to the first query of every sequence). Each wrong option names
    the misconception behind it (feedback keys ``chose_<key>``).
    Raises ValueError when no option matches the measured set (an
    instructor's setting the options do not cover).
    """

    OPTION_TEXTS = {
        "a": ("W_V, W_out and b_out", ("W_V", "W_out", "b_out")),
        "b": ("none: every weight gets some gradient", ()),
        "c": ("W_Q and W_K", ("W_Q", "W_K")),
    }

    def __init__(self, params, X, targets, question=None, **options):
        _, grads, _ = loss_and_grads(params, X, targets, **options)
        zero = tuple(sorted(k for k, g in grads.items() if not np.any(g)))
        matches = [k for k, (_, names) in self.OPTION_TEXTS.items() if tuple(sorted(names)) == zero]
        if not matches:
            raise ValueError(f"the setting gives exactly zero gradients to {list(zero) or 'no weight'}, "
                             f"which no option names; options: {[t for t, _ in self.OPTION_TEXTS.values()]}")
        self.zero = zero
        super().__init__(
            question=question or "Which weights get a gradient of exactly 0 in this setting?",
            options={k: text for k, (text, _) in self.OPTION_TEXTS.items()},
            answer=matches[0],
            why={
                "a": "The values still reach the output: with one word, the output is that word's value, and "
                     "the read-out turns it into the prediction. It is the scores that no longer matter.",
                "b": "A weight learns only if changing it changes the loss. Ask which step of the forward "
                     "pass can no longer change anything when the softmax has a single score.",
                "c": "A softmax over one score gives weight 1 whatever the score: W_Q and W_K cannot move the "
                     "loss (w (g - w g) = 0 for w = 1). The causal mask does this to every sequence's first query.",
            },
            hint="Which step ignores its input here?")


class ZeroReadOutExercise(ChoiceExercise):
    """Which weights get a gradient of exactly 0 when the read-out starts at zero? (understanding)

    params: the model's starting parameters, with W_out all 0 (the notebook passes params0 with W_out
    zeroed); X, targets: the sentences. The checker runs the backward pass: every gradient below the read-out
    passes through dL/d(output) = dL/dlogits W_outᵀ, which is 0, so W_Q, W_K and W_V get exactly 0 while W_out
    and b_out learn (option "d"). Named wrong options: ``read_out_frozen`` (a), ``all_learn`` (b) and
    ``values_learn`` (c). Raises ValueError, naming ``params``, when W_out is not all 0 or the measured set of
    zero gradients is not that one.
    """

    named = {"a": "read_out_frozen", "b": "all_learn", "c": "values_learn"}

    def __init__(self, params, X, targets, **options):
        if not isinstance(params, dict) or "W_out" in params and np.any(np.asarray(params["W_out"])):
            raise ValueError("params must be the model's parameters with W_out all 0 (e.g. {**params0, 'W_out': "
                             "np.zeros_like(params0['W_out'])})")
        _, grads, _ = loss_and_grads(params, X, targets, **options)
        zero = sorted(k for k, g in grads.items() if not np.any(g))
        if zero != ["W_K", "W_Q", "W_V"]:
            raise ValueError(f"params must give exactly zero gradients to W_Q, W_K and W_V; got {zero}")
        self.zero = tuple(zero)
        sizes = {k: float(np.linalg.norm(grads[k])) for k in ("W_out", "b_out")}
        super().__init__(
            question="Start with W_out all 0, the rest as before. Which weights get a gradient of exactly 0?",
            options={"a": "W_out and b_out", "b": "none: every weight gets some gradient",
                     "c": "W_Q and W_K", "d": "W_Q, W_K and W_V"},
            answer="d",
            why={"a": "The read-out's own gradient is its input times dL/dlogits: bank's output is not 0, so W_out "
                      f"learns (its gradient's size: {sizes['W_out']:.3f}), and so does b_out.",
                 "b": "Everything below the read-out gets its gradient through dL/d(output) = dL/dlogits W_outᵀ, "
                      "and with W_out = 0 that product is 0.",
                 "c": "W_V's gradient comes through the read-out too: dL/dV = weightsᵀ dL/d(output), and "
                      "dL/d(output) = dL/dlogits W_outᵀ = 0.",
                 "d": "dL/d(output) = dL/dlogits W_outᵀ = 0, and W_V, W_Q, W_K get theirs through it. W_out and "
                      f"b_out learn (sizes {sizes['W_out']:.3f}, {sizes['b_out']:.3f}), so after one step the rest can."},
            hint="What multiplies every gradient below the read-out?")
