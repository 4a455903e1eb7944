"""Diagnose a learner's own attention function: run it on small inputs and name what is wrong.

``diagnose(my_attention)`` calls ``my_attention(Q, K, V)`` (and
``my_attention(Q, K, V, mask=mask)`` on the masked inputs) on a battery of
small inputs (:data:`BATTERY`), compares each result with
:func:`helpers.attention.scaled_dot_product_attention`, and returns the same
kind of feedback the exercise checkers return (``.correct``, ``.mistake``,
``.text``). The function may return the output, or ``(output, weights)``.

When the function is wrong, ``diagnose`` looks for the simplest explanation:
a model of attention with one of the mistakes of :data:`FAULTS` (or two of
them together) that gives the same numbers on every input of the battery.
Those mistakes have all shipped in public code. The verdict names them, says
how to fix each, names the first input where the function went wrong and
shows the first row that differs.

``diagnose`` never raises because of what the function does: it may raise
(even SystemExit), return None, text, the wrong shape or NaN, print, change
its inputs in place (each call gets fresh copies, and a change is reported),
or take too long. The time limit is soft: each call runs in a background
thread, and ``diagnose`` stops waiting for it after ``time_limit`` seconds
(default :data:`TIME_LIMIT`, 2 s; a right answer on these inputs takes well
under a millisecond). Python cannot stop a running call from outside, so a
function that never ends keeps running in the background until the kernel
is restarted; ``diagnose`` says so.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import numbers
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.exercises.feedback import Feedback, _fmt, _read

__all__ = ["diagnose", "Diagnosis", "BATTERY", "FAULTS", "TIME_LIMIT"]

TIME_LIMIT = 2.0
"""Seconds ``diagnose`` waits for one call of the learner's function (soft: see the module docstring)."""
RTOL, ATOL = 1e-4, 1e-6
"""How close an output must be to count as the same: loose enough for float32 arithmetic,
far tighter than any difference a mistake makes on the battery (tests/test_diagnose.py checks that)."""


@dataclass(frozen=True)
class Diagnosis(Feedback):
    """The verdict of :func:`diagnose`: a :class:`~helpers.exercises.Feedback` that a notebook shows as its text.

    correct, mistake, text: as for every checker; ``mistake`` joins the keys
    of the faults found with "+" (e.g. "no_scaling+wrong_axis").
    case: the name of the first input of :data:`BATTERY` on which the
    function went wrong (None when it is right).
    """

    case: str | None = None

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)


# --------------------------------------------------------------------------
# The battery: small inputs, each showing one thing a function must get right
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One input of the battery. needs: None, "masks" or "batches" (what it assumes has been taught)."""

    name: str
    words: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None = None
    needs: str | None = None


def _battery():
    rng = np.random.default_rng(2017)

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    n, d = 3, 4
    keep_real = np.array([True, True, True, False])            # a padded sentence: key 3 is a pad
    cases = [
        Case("plain", "plain inputs: Q, K and V of shape (3, 4)", draw(n, d), draw(n, d), draw(n, d)),
        Case("wide keys", "wider keys: Q and K of shape (3, 16), so d_k = 16", draw(n, 16), draw(n, 16), draw(n, d)),
        Case("n_q != n_k", "2 queries and 4 keys: Q (2, 4), K and V (4, 4)", draw(2, d), draw(4, d), draw(4, d)),
        Case("d_v != d_k", "values narrower than keys: Q and K (3, 4), V (3, 2)", draw(n, d), draw(n, d), draw(n, 2)),
        Case("large scores", "very large scores: Q and K of shape (3, 4), entries of size about 40",
             draw(n, d, size=40.0), draw(n, d, size=40.0), draw(n, d)),
        Case("causal mask", "a causal mask: Q, K and V of shape (4, 4), mask = causal_mask(4)",
             draw(4, d), draw(4, d), draw(4, d), causal_mask(4), "masks"),
        Case("padding mask", "a padding mask: Q, K and V of shape (4, 4), the last key a pad (its mask column False)",
             draw(4, d), draw(4, d), draw(4, d), np.broadcast_to(keep_real, (4, 4)).copy(), "masks"),
        Case("batch", "a batch of 2 sentences: Q, K and V of shape (2, 3, 4)", draw(2, n, d), draw(2, n, d),
             draw(2, n, d), None, "batches"),
    ]
    big = cases[4]
    largest = float(np.abs(big.Q @ big.K.T).max() / np.sqrt(d))
    cases[4] = Case(big.name, f"{big.words}, so scaled scores reach {largest:.0f} (exp overflows past 709)",
                    big.Q, big.K, big.V)
    for case in cases:
        for a in (case.Q, case.K, case.V, case.mask):
            if a is not None:
                a.setflags(write=False)
    return tuple(cases)


BATTERY = _battery()
"""Every input :func:`diagnose` tries, in the order it tries them."""


# --------------------------------------------------------------------------
# Models of attention, right or with named mistakes
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Model:
    """Attention with some of its parts done wrong. The defaults are the right way."""

    scale: object = "sqrt_d_k"   # "none", "d_k", "times_sqrt", or a float: a constant scale
    orient: str = "QK"           # "KQ": scores = K Q^T
    axis: str = "rows"           # "columns" (axis -2) or "first" (axis 0): softmax down the columns;
                                 # "all": divided by the sum of everything
    mask: str = "where"          # "ignored", "added", "after_softmax", "multiplied", "flipped"
    naive: bool = False          # True: softmax without subtracting the maximum
    dot_T: bool = False          # True: .T instead of swapping the last two axes

    def faults(self):
        right = _Model()
        keys = []
        for part in ("scale", "mask", "axis", "naive", "orient", "dot_T"):
            value = getattr(self, part)
            if value != getattr(right, part):
                keys.append(_FAULT_KEY[(part, value if isinstance(value, (str, bool)) else "constant")])
        return keys

    def predict(self, case):
        """What this model gives on the case: a list of (output, rows that count), one per way of filling
        hidden scores (-inf, or -1e9 as many learners do), or None where numpy refuses the computation."""
        fills = (-np.inf, -1e9) if case.mask is not None and self.mask in ("where", "flipped") else (-np.inf,)
        found = [self._predict(case, fill) for fill in fills]
        return None if None in found else found

    def _predict(self, case, fill):
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        T = (lambda a: a.T) if self.dot_T else (lambda a: np.swapaxes(a, -1, -2))
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                S = Q @ T(K) if self.orient == "QK" else K @ T(Q)
                d_k = Q.shape[-1]
                S = S * {"sqrt_d_k": 1 / np.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
                         "times_sqrt": np.sqrt(d_k)}.get(self.scale, self.scale)
                keep, care = None, np.ones(S.shape[:-1], dtype=bool)
                if mask is not None and self.mask != "ignored":
                    keep = np.broadcast_to(~mask if self.mask == "flipped" else mask, S.shape)
                    if self.mask in ("where", "flipped"):
                        S = np.where(keep, S, fill)
                        care = keep.any(axis=-1)    # a row with nothing to attend to: any answer will do
                    elif self.mask == "added":
                        S = S + keep
                    elif self.mask == "multiplied":
                        S = S * keep
                axis = {"rows": -1, "columns": -2, "first": 0, "all": None}[self.axis]
                if not self.naive:
                    S = S - np.max(S, axis=axis, keepdims=True)
                E = np.exp(S)
                W = E / np.sum(E, axis=axis, keepdims=True)
                if keep is not None and self.mask == "after_softmax":
                    W = W * keep
                out = W @ V
        except Exception:
            return None
        return out, care


RIGHT = _Model()

# (part of the model, how it is done wrong) -> the key of the mistake
_FAULT_KEY = {
    ("scale", "none"): "no_scaling",
    ("scale", "d_k"): "divided_by_d_k",
    ("scale", "times_sqrt"): "multiplied_by_sqrt_d_k",
    ("scale", "constant"): "constant_scale",
    ("mask", "added"): "mask_added",
    ("axis", "columns"): "wrong_axis",
    ("axis", "first"): "wrong_axis",
    ("axis", "all"): "softmax_over_everything",
    ("mask", "after_softmax"): "mask_after_softmax",
    ("mask", "multiplied"): "mask_multiplied",
    ("mask", "flipped"): "mask_flipped",
    ("mask", "ignored"): "mask_ignored",
    ("naive", True): "no_max_subtraction",
    ("orient", "KQ"): "scores_transposed",
    ("dot_T", True): "batch_transpose",
}

FAULTS = {
    "no_scaling": "You do not scale the scores. Divide Q @ K^T by sqrt(d_k) before the softmax, with "
                  "d_k = K.shape[-1] (Vaswani et al. 2017, eq. 1).",
    "divided_by_d_k": "You divide the scores by d_k. Divide by its square root, np.sqrt(d_k).",
    "multiplied_by_sqrt_d_k": "You multiply the scores by sqrt(d_k). Divide them by it instead.",
    "constant_scale": "You divide the scores by {c} whatever d_k is, which is right only when d_k = {c2}. "
                      "Read d_k from the keys, d_k = K.shape[-1], and divide by np.sqrt(d_k): a fixed number such "
                      "as sqrt(d_model) does not follow the width of the keys.",
    "mask_added": "You add the boolean mask to the scores: True counts as 1 and False as 0, so hidden keys keep "
                  "their weight. Apply it instead: scores = np.where(mask, scores, -np.inf), before the softmax.",
    "wrong_axis": "Your softmax runs down the columns, so each key's weights sum to 1 instead of each query's. "
                  "Take it along the last axis: axis=-1, with keepdims=True when you divide.",
    "softmax_over_everything": "Your softmax divides by the sum over the whole matrix, so no row sums to 1. Sum "
                               "along each row: e.sum(axis=-1, keepdims=True).",
    "mask_after_softmax": "You apply the mask after the softmax, so a row's weights no longer sum to 1 (and its "
                          "output shrinks). Set the hidden scores to -inf before the softmax: "
                          "np.where(mask, scores, -np.inf).",
    "mask_multiplied": "You multiply the scores by the mask, which makes hidden scores 0, and exp(0) = 1 still "
                       "gives them weight. Set them to -inf instead: np.where(mask, scores, -np.inf).",
    "mask_flipped": "Your mask works the wrong way round: you hide the keys marked True and keep the ones marked "
                    "False. In this course True means 'may attend': np.where(mask, scores, -np.inf).",
    "mask_ignored": "Your function ignores the mask, so hidden keys still get weight. Before the softmax, set "
                    "their scores to -inf: np.where(mask, scores, -np.inf).",
    "no_max_subtraction": "Your softmax overflows on large scores: exp(1000) is inf, and inf / inf is NaN. "
                          "Subtract each row's maximum before np.exp (it cancels in the division): "
                          "e = np.exp(s - s.max(axis=-1, keepdims=True)).",
    "scores_transposed": "You compute the scores as K @ Q^T, which puts the keys on the rows; that goes unnoticed "
                         "only while there are as many queries as keys. Use Q @ K^T: queries on the rows.",
    "batch_transpose": "Your function works on one sentence but not on a batch. The usual cause: .T reverses "
                       "every axis, so K of shape (2, 3, 4) becomes (4, 3, 2). Transpose only the last two axes: "
                       "np.swapaxes(K, -1, -2).",
}
"""Every mistake :func:`diagnose` can name, with what it tells the learner."""


# --------------------------------------------------------------------------
# Running the learner's function
# --------------------------------------------------------------------------

@dataclass
class _Run:
    case: Case
    finished: bool = True
    error: BaseException | None = None
    value: object = None
    out: np.ndarray | None = None       # the output read as floats, or None
    problem: str | None = None          # why the output could not be read
    weights: np.ndarray | None = None
    printed: bool = False
    mutated: tuple = ()


def _call(fn, case, time_limit):
    """Run ``fn`` on fresh copies of the case's inputs, in a thread, waiting at most ``time_limit`` seconds."""
    args = [np.array(case.Q), np.array(case.K), np.array(case.V)]
    kwargs = {} if case.mask is None else {"mask": np.array(case.mask)}
    box = {}

    def target():
        try:
            with np.errstate(all="ignore"):
                box["value"] = fn(*args, **kwargs)
        except BaseException as exc:       # SystemExit and KeyboardInterrupt too: report, never raise
            box["error"] = exc

    run = _Run(case)
    printed = io.StringIO()
    thread = threading.Thread(target=target, name="diagnose", daemon=True)
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        thread.start()
        thread.join(time_limit)
    run.printed = bool(printed.getvalue())
    if thread.is_alive():
        run.finished = False
        return run
    run.error = box.get("error")
    if run.error is not None:
        return run
    originals = [case.Q, case.K, case.V] + ([case.mask] if kwargs else [])
    run.mutated = tuple(name for name, before, after in zip(("Q", "K", "V", "mask"), originals, args + list(kwargs.values()))
                        if not _same_array(before, after))
    run.value = value = box.get("value")
    if isinstance(value, tuple) and len(value) == 2 or (
            isinstance(value, list) and len(value) == 2 and isinstance(value[0], np.ndarray)):
        value, weights = value
        run.weights, _ = _read(weights)
    run.out, problem = _read(value)
    if value is None:
        run.problem = "returned None."
    elif problem is not None:
        run.problem = "returned something that is not an array of numbers. " + problem.text
    return run


def _same_array(a, b):
    try:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    except Exception:
        return False


# --------------------------------------------------------------------------
# Comparing what the function gave with what a model gives
# --------------------------------------------------------------------------

def _agrees(run, prediction, right_shape):
    """Does the function's result on this case look like one of the model's predictions?"""
    if prediction is None:                         # numpy refused: the function must have failed too
        return run.out is None or run.out.shape != right_shape
    return any(_matches(run.out, expected, care) for expected, care in prediction)


def _matches(out, expected, care):
    if out is None or out.shape != expected.shape:
        return False
    finite = np.isfinite(expected)
    with np.errstate(all="ignore"):
        close = np.isclose(out, expected, rtol=RTOL, atol=ATOL)
    same = np.where(finite, close, ~np.isfinite(out))
    return bool(np.all(same.all(axis=-1) | ~care))


def _fit_constant(run):
    """The constant scale s with softmax(s Q K^T) V equal to the function's output on this case, or None."""
    case, out = run.case, run.out
    if case.mask is not None or case.Q.ndim != 2 or out is None or not np.all(np.isfinite(out)):
        return None
    S = case.Q @ case.K.T

    def outputs(s):
        Z = S[None] * s[:, None, None]
        E = np.exp(Z - Z.max(axis=-1, keepdims=True))
        return (E / E.sum(axis=-1, keepdims=True)) @ case.V

    if out.shape != (S.shape[0], case.V.shape[-1]):
        return None
    with np.errstate(all="ignore"):
        grid = np.geomspace(1e-3, 1e2, 601)
        for _ in range(3):                         # a grid, then two finer grids around its best point
            err = np.abs(outputs(grid) - out).max(axis=(1, 2))
            best = int(np.argmin(err))
            lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
            grid = np.linspace(lo, hi, 201)
        s = float(grid[int(np.argmin(np.abs(outputs(grid) - out).max(axis=(1, 2))))])
    return s if np.allclose(outputs(np.array([s]))[0], out, rtol=RTOL, atol=ATOL) else None


_SINGLE = [("scale", "none"), ("scale", "d_k"), ("scale", "times_sqrt"), ("mask", "added"), ("axis", "columns"),
           ("axis", "first"), ("axis", "all"), ("mask", "after_softmax"), ("mask", "multiplied"), ("mask", "flipped"),
           ("mask", "ignored"), ("naive", True), ("orient", "KQ"), ("dot_T", True)]


def _candidates(constants, masks, batches):
    """Models with one mistake, then with two, in the order they are tried."""
    singles = [(p, v) for p, v in _SINGLE + [("scale", s) for s in constants]
               if (masks or p != "mask") and (batches or p != "dot_T")]
    for part, value in singles:
        yield _Model(**{part: value})
    for (p1, v1), (p2, v2) in itertools.combinations(singles, 2):
        if p1 != p2:
            yield _Model(**{p1: v1, p2: v2})


def _explain(runs, masks, batches):
    """The simplest model that gives what the function gave on every case, or None."""
    constants = []
    for run in runs:
        if not _agrees(run, RIGHT.predict(run.case), None):
            s = _fit_constant(run)
            if s is not None and not any(abs(s - c) <= 1e-3 * c for c in constants):
                constants.append(s)
    predictions = {}
    for model in _candidates(constants[:2], masks, batches):
        for run in runs:
            key = (model, run.case.name)
            if key not in predictions:
                predictions[key] = model.predict(run.case)
            right = RIGHT.predict(run.case)
            if not _agrees(run, predictions[key], None if right is None else right[0][0].shape):
                break
        else:
            return model
    return None


# --------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------

def _safe_str(x):
    try:
        text = str(x)
    except BaseException:
        text = "(a message that could not be shown)"
    return text if len(text) <= 200 else text[:200] + " ..."


def _first_difference(run):
    """'Row i ...: yours ..., expected ...' for the first row that differs, or what went wrong instead."""
    case = run.case
    expected, _ = scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)
    if not run.finished:
        return ""
    if run.error is not None:
        kind = type(run.error).__name__
        if isinstance(run.error, SystemExit):
            return "It called exit() (SystemExit), which would stop a script: return the output instead."
        return f"It raised {kind}: {_safe_str(run.error)}"
    if run.problem is not None:
        return "It " + run.problem
    out = run.out
    if out.shape != expected.shape:
        return (f"It returned shape {out.shape}; the output has shape (..., n_q, d_v) = {expected.shape}.")
    with np.errstate(all="ignore"):
        bad = ~np.isclose(out, expected, rtol=RTOL, atol=ATOL).all(axis=-1)
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    place = f"row {where[-1]}" + (f" of sentence {where[0]}" if len(where) > 1 else "")
    return f"First differing row, {place}: yours {_fmt(out[where])}, expected {_fmt(expected[where])}."


def _fault_text(key, constant):
    text = FAULTS[key]
    if key == "constant_scale":
        c = 1 / constant
        text = text.format(c=_fmt(c), c2=_fmt(c * c))
    return text


def _verdict(fn, runs, masks, batches):
    name = getattr(fn, "__name__", None)
    name = name if isinstance(name, str) and name.isidentifier() else "Your function"   # a lambda has none
    mutated = sorted({m for run in runs for m in run.mutated}, key="Q K V mask".split().index)
    changes = (f"it changes its input{'s' if len(mutated) > 1 else ''} {', '.join(mutated)} in place (as Q /= ... "
               "or m = mask; m[...] = ... do), and so changes the caller's arrays: make new arrays instead "
               "(Q = Q / ...).")
    also = f" Also, {changes}" if mutated else ""
    slow = next((run for run in runs if not run.finished), None)
    if slow is not None:
        return Diagnosis(False, "too_slow",
                         f"{name} did not finish within the time limit on {slow.case.words}. A right answer on "
                         "inputs this small takes well under a millisecond: look for a loop that never ends. "
                         "diagnose stopped waiting, but Python cannot stop the call itself: it keeps running in "
                         "the background, so restart the kernel if the notebook slows down.", slow.case.name)
    right = [_agrees(run, RIGHT.predict(run.case), None) for run in runs]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right output on every input, but {changes}")
        wrong_weights = next((run for run in runs if run.weights is not None and not _same_weights(run)), None)
        if wrong_weights is not None:
            return Diagnosis(False, "weights_wrong",
                             f"{name} gives the right output, but the weights it returns beside it are not the "
                             f"attention weights, on {wrong_weights.case.words}. Return the weights the output "
                             "was made from: return weights @ V, weights.", wrong_weights.case.name)
        untaught = [] if masks and batches else [w for w, on in (("masks", masks), ("batches", batches)) if not on]
        text = (f"Correct! {name} gives the right output on all {len(runs)} inputs "
                f"({', '.join(run.case.name for run in runs)}).")
        if untaught:
            text += f" ({' and '.join(untaught).capitalize()} were not tried: you meet them in notebook 04.)"
        if any(run.printed for run in runs):
            text += " (It prints while it runs; diagnose kept that out of sight.)"
        return Diagnosis(True, None, text)

    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(first)}"
    model = _explain(runs, masks, batches)
    if model is not None:
        keys = model.faults()
        constant = model.scale if not isinstance(model.scale, str) else None
        text = "\n".join(_fault_text(key, constant) for key in keys)
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name)
    return Diagnosis(False, _unexplained_key(first), f"{_unexplained_text(first, name)}\n{where}{also}",
                     first.case.name)


def _same_weights(run):
    _, expected = scaled_dot_product_attention(run.case.Q, run.case.K, run.case.V, mask=run.case.mask)
    w = run.weights
    if w is None or w.shape != expected.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(w, expected, rtol=RTOL, atol=ATOL))


def _returned_weights(run):
    _, expected = scaled_dot_product_attention(run.case.Q, run.case.K, run.case.V, mask=run.case.mask)
    return run.out is not None and run.out.shape == expected.shape and bool(
        np.allclose(run.out, expected, rtol=RTOL, atol=ATOL))


def _unexplained_key(run):
    if run.error is not None:
        if isinstance(run.error, TypeError) and run.case.mask is not None and "mask" in _safe_str(run.error):
            return "no_mask_argument"
        return "exit" if isinstance(run.error, SystemExit) else "raised"
    if run.value is None:
        return "returned_none"
    if run.problem is not None:
        return "not_numbers"
    if _returned_weights(run):
        return "returned_weights"
    if not np.all(np.isfinite(run.out)):
        return "nan_inf"
    expected, _ = scaled_dot_product_attention(run.case.Q, run.case.K, run.case.V, mask=run.case.mask)
    return "wrong_shape" if run.out.shape != expected.shape else "different"


def _unexplained_text(run, name):
    return {
        "no_mask_argument": f"{name} takes no mask. Give it one: def {name if name.isidentifier() else 'my_attention'}(Q, K, V, mask=None), and apply it "
                            "before the softmax when it is not None.",
        "exit": f"{name} stops the program (exit() or sys.exit()). Return the output instead.",
        "raised": f"{name} raised an error. Read the message below, and try your function on these inputs "
                  "yourself.",
        "returned_none": f"{name} returns nothing (None). End it with return output (or return output, weights).",
        "not_numbers": f"{name} returns something that is not an array of numbers.",
        "returned_weights": f"{name} returns the attention weights, not the output. The output is the weighted mix "
                            "of the values: return weights @ V (or both: return weights @ V, weights).",
        "nan_inf": f"{name} returns NaN or inf. Check for a division by zero, a mask filled with +inf, or exp() "
                   "of a large number.",
        "wrong_shape": f"{name} returns the wrong shape: the output has one row per query and one column per "
                       "value feature, (..., n_q, d_v).",
        "different": f"{name} gives a different output, and none of the mistakes diagnose knows explains it. "
                     "Compare it with scaled_dot_product_attention step by step: scores, scaling, mask, softmax, "
                     "weights @ V.",
    }[_unexplained_key(run)]


# --------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------

def diagnose(fn, masks=True, batches=True, time_limit=TIME_LIMIT):
    """Run a learner's attention function on :data:`BATTERY` and say what, if anything, is wrong.

    fn: the learner's function, ``fn(Q, K, V, mask=None)`` with Q (..., n_q, d_k),
        K (..., n_k, d_k), V (..., n_k, d_v) and a boolean mask (True = may
        attend) of shape (..., n_q, n_k); it returns the output
        (..., n_q, d_v), or (output, weights). It is called without ``mask``
        on the unmasked inputs, so a function without one passes those.
    masks, batches: False leaves out the masked inputs, or the batch of two
        sentences, for a stage of the course before they are taught
        (notebook 02: ``diagnose(fn, masks=False, batches=False)``).
    time_limit: seconds to wait for one call (soft: see the module docstring).

    Returns a :class:`Diagnosis` (a :class:`~helpers.exercises.Feedback`):
    ``.correct`` is True when every output is right (rtol 1e-4, atol 1e-6
    against scaled_dot_product_attention, Vaswani et al. 2017, eq. 1);
    otherwise ``.mistake`` names the faults found (keys of :data:`FAULTS`, or
    one of too_slow, mutates_inputs, weights_wrong, no_mask_argument, exit,
    raised, returned_none, not_numbers, returned_weights, nan_inf,
    wrong_shape, different) and ``.text`` says how to fix them, on which
    input the function first went wrong, and its first differing row.

    Never raises because of ``fn``. Raises ValueError when ``masks`` or
    ``batches`` is not True/False, or ``time_limit`` is not a positive number.
    """
    for arg, value in (("masks", masks), ("batches", batches)):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{arg} must be True or False; got {value!r}")
    if (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
            or not np.isfinite(float(time_limit)) or float(time_limit) <= 0):
        raise ValueError(f"time_limit must be a positive number of seconds; got {time_limit!r}")
    if not callable(fn):
        return Diagnosis(False, "not_a_function",
                         f"diagnose needs your function itself, and got {_safe_str(type(fn).__name__)}. Write "
                         "diagnose(my_attention): the name of the function, with no parentheses after it.")
    try:
        cases = [c for c in BATTERY if (masks or c.needs != "masks") and (batches or c.needs != "batches")]
        runs = []
        for case in cases:
            runs.append(_call(fn, case, float(time_limit)))
            if not runs[-1].finished:
                break
        return _verdict(fn, runs, bool(masks), bool(batches))
    except KeyboardInterrupt:
        return Diagnosis(False, "interrupted", "diagnose was interrupted before it could finish (the stop button?). "
                         "If your function runs for long, look for a loop that never ends.")
    except BaseException as exc:   # a fault of diagnose itself: still an answer, never a traceback
        return Diagnosis(False, "not_diagnosed",
                         f"diagnose could not finish ({_safe_str(type(exc).__name__)}). Run your function on a "
                         "small input yourself and compare it with scaled_dot_product_attention.")
