"""The checker of ``attention``: a learner's ``fn(Q, K, V, mask=None)`` against scaled_dot_product_attention.

It runs the function on :data:`~helpers.exercises.battery.ATTENTION`, and
when the function is wrong looks for the simplest explanation: a model of
attention with one of the mistakes of :data:`FAULTS` (or two of them
together) that gives the same numbers on every input. Those mistakes have
all shipped in public code. The verdict names them, says how to fix each,
names the first input where the function went wrong and shows the first row
that differs, beside the expected one.

The function may return the output, or ``(output, weights)``; its
arguments may be called Q, K, V or q, k, v or query, key, value, and its
mask ``mask`` or ``attn_mask`` (read from the signature).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.exercises.battery import ATTENTION as BATTERY
from helpers.exercises.feedback import _fmt
from helpers.exercises.runner import (
    ATOL, LOW_ATOL, LOW_PRECISION, LOW_RTOL, RTOL, Diagnosis, call, fmt_pair, fn_name, matches, mutation_words,
    not_attempted, parameter, raised_words, read_numbers, side_by_side, too_slow,
)

__all__ = ["FAULTS", "RIGHT", "check"]

MASK_NAMES = ("mask", "attn_mask", "attention_mask", "attn_bias_mask")
"""What learners call the mask argument (torch's scaled_dot_product_attention: attn_mask; ComfyUI-ppm #18)."""


# --------------------------------------------------------------------------
# Models of attention, right or with named mistakes
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Model:
    """Attention with some of its parts done wrong. The defaults are the right way."""

    scale: object = "sqrt_d_k"   # "none", "d_k", "times_sqrt", "n_keys" (sqrt of the number of keys),
                                 # "d_v" (sqrt of the values' width), or a float: a constant scale
    orient: str = "QK"           # "KQ": scores = K Q^T
    axis: str = "rows"           # "columns" (axis -2) or "first" (axis 0): softmax down the columns;
                                 # "second" (axis=1: the queries' axis once heads or a batch come first);
                                 # "sum_columns" (each row's maximum subtracted, the sum taken down the
                                 # columns); "all": divided by the sum of everything
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
        # a softmax down the columns meets a column the mask hides everywhere: NaN, or zeros when guarded
        guards = (False, True) if case.mask is not None and self.axis != "rows" else (False,)
        # the number of keys read as len(K) (the batch size, on a batch) or as K.shape[-2]
        n_axes = (0, -2) if self.scale == "n_keys" else (-2,)
        found = [self._predict(case, fill, guard, n_axis) for fill in fills for guard in guards for n_axis in n_axes]
        return None if None in found else found

    def _predict(self, case, fill, guard=False, n_axis=-2):
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        T = (lambda a: a.T) if self.dot_T else (lambda a: np.swapaxes(a, -1, -2))
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                S = Q @ T(K) if self.orient == "QK" else K @ T(Q)
                d_k = Q.shape[-1]
                S = S * {"sqrt_d_k": 1 / np.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
                         "times_sqrt": np.sqrt(d_k), "n_keys": 1 / np.sqrt(K.shape[n_axis]),
                         "d_v": 1 / np.sqrt(V.shape[-1])}.get(self.scale, self.scale)
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
                axis = {"rows": -1, "columns": -2, "first": 0, "second": 1, "sum_columns": -2,
                        "all": None}[self.axis]
                if not self.naive:
                    top = np.max(S, axis=-1 if self.axis == "sum_columns" else axis, keepdims=True)
                    S = S - (np.where(np.isfinite(top), top, 0.0) if guard else top)
                E = np.exp(S)
                total = np.sum(E, axis=axis, keepdims=True)
                W = E / (np.where(total == 0, 1.0, total) if guard else total)
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
    ("axis", "second"): "wrong_axis",
    ("axis", "sum_columns"): "wrong_axis",
    ("axis", "all"): "softmax_over_everything",
    ("mask", "after_softmax"): "mask_after_softmax",
    ("mask", "multiplied"): "mask_multiplied",
    ("mask", "flipped"): "mask_flipped",
    ("mask", "ignored"): "mask_ignored",
    ("naive", True): "no_max_subtraction",
    ("orient", "KQ"): "scores_transposed",
    ("dot_T", True): "batch_transpose",
    ("scale", "n_keys"): "scale_by_n_keys",
    ("scale", "d_v"): "scale_by_d_v",
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
    "wrong_axis": "Your softmax runs down the columns, so each key's weights sum to 1 instead of each query's "
                  "(a fixed axis=1 does that too, once heads or a batch come first, as in a model). "
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
    "neg_inf_nan": "A query with nothing to attend to has scores that are all -inf, so a softmax that subtracts the "
                   "row's maximum computes -inf - (-inf), which is NaN, and the NaN reaches every query of the next "
                   "layer that reads this token. Where the maximum is -inf, subtract 0 instead, and where the sum of "
                   "exponentials is 0, divide by 1: the weights and the output come out all zeros (as your softmax "
                   "of notebook 01 does).",
    "scale_by_n_keys": "You divide by sqrt(len(K)), the square root of the number of keys; d_k is the keys' width, "
                       "K.shape[-1]. Divide by np.sqrt(K.shape[-1]).",
    "scale_by_d_v": "You divide by the square root of the values' width, d_v = V.shape[-1]; d_k is the keys' width, "
                    "K.shape[-1]. Divide by np.sqrt(K.shape[-1]).",
}
"""Every mistake :func:`diagnose` can name, with what it tells the learner."""


# --------------------------------------------------------------------------
# Comparing what the function gave with what a model gives
# --------------------------------------------------------------------------

def _agrees(run, prediction, right_shape):
    """Does the function's result on this case look like one of the model's predictions?"""
    if prediction is None:                         # numpy refused: the function must have failed too
        return run.out is None or run.out.shape != right_shape
    return any(matches(run.out, expected, care) for expected, care in prediction)


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
           ("mask", "ignored"), ("naive", True), ("orient", "KQ"), ("dot_T", True), ("scale", "n_keys"),
           ("scale", "d_v"), ("axis", "second"), ("axis", "sum_columns")]


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
# Running it, and words
# --------------------------------------------------------------------------

def _expected(case):
    return scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)


def _run(fn, case, time_limit, mask_place):
    args = [("Q", case.Q), ("K", case.K), ("V", case.V)]
    kwargs = {}
    if case.mask is not None:
        how, where = mask_place
        if how == "position":
            args.append(("mask", case.mask))
        else:
            kwargs[where] = case.mask
    run = call(fn, case, args, kwargs, time_limit, read=lambda value: read_numbers(value, pair=True))
    run.mutated = tuple("mask" if m in MASK_NAMES else m for m in run.mutated)
    return run


def _first_difference(run):
    """'First differing row ...: yours ..., expected ...' and a small table, or what went wrong instead."""
    expected, weights = _expected(run.case)
    if not run.finished:
        return ""
    if run.error is not None or run.problem is not None:
        return raised_words(run, None)
    out = run.out
    if out.shape != expected.shape:
        return (f"It returned shape {out.shape}; the output must have shape (..., n_q, d_v) = {expected.shape}.")
    with np.errstate(all="ignore"):
        bad = ~np.isclose(out, expected, rtol=RTOL, atol=ATOL).all(axis=-1)
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    place = f"row {where[-1]}" + (f" of sentence {where[0]}" if len(where) > 1 else "")
    table = side_by_side(out[where[:-1]], expected[where[:-1]]) if out.shape[-2] <= 8 else ""
    yours, wanted = fmt_pair(out[where], expected[where])
    text = f"First differing row, {place}: yours {yours}, expected {wanted}."
    return text + (f"\nYour output beside the expected one{' for sentence ' + str(where[0]) if len(where) > 1 else ''}:"
                   f"\n{table}" if table else "")


def _fault_text(key, constant):
    text = FAULTS[key]
    if key == "constant_scale":
        c = 1 / constant
        text = text.format(c=_fmt(c), c2=_fmt(c * c))
    return text


def _verdict(fn, runs, masks, batches):
    name = fn_name(fn)
    piece = "attention"
    for early in (not_attempted(fn, runs, piece), too_slow(fn, runs, piece)):
        if early is not None:
            return early
    changes, mutated = mutation_words(runs, "Q K V mask".split())
    also = f" Also, {changes}" if mutated else ""
    right = [_agrees(run, RIGHT.predict(run.case), None) for run in runs]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right output on every input, but {changes}")
        empty = next((run for run in runs if not _empty_rows_zero(run)), None)
        if empty is not None:
            return Diagnosis(False, "neg_inf_nan",
                             f"{name} is right on every row that has a key to read, but gives NaN where a query "
                             f"has none. {FAULTS['neg_inf_nan']}\nIt first goes wrong on {empty.case.words}. "
                             f"{_first_difference(empty)}", empty.case.name)
        wrong_weights = next((run for run in runs if run.weights is not None and not _same_weights(run)), None)
        if wrong_weights is not None:
            return Diagnosis(False, "weights_wrong",
                             f"{name} gives the right output, but the weights it returns beside it are not the "
                             f"attention weights, on {wrong_weights.case.words}. Return the weights the output "
                             "was made from: return weights @ V, weights.", wrong_weights.case.name)
        untaught = [] if masks and batches else [w for w, on in (("masks", masks), ("batches", batches)) if not on]
        text = (f"Correct! {name} gives the right output on all {len(runs)} inputs "
                f"({', '.join(run.case.name for run in runs)}).")
        if any(not _empty_rows_as_the_course(run) for run in runs):
            text += (" (Where a query has no key left, yours spreads its weight evenly, as a fill of -1e9 does; "
                     "the course's function gives zeros there. No query reads such a row, so both pass.)")
        if untaught:
            text += f" ({' and '.join(untaught).capitalize()} were not tried: you meet them in notebook 04.)"
        if any(run.printed for run in runs):
            text += " (It prints while it runs; diagnose kept that out of sight.)"
        return Diagnosis(True, None, text)

    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(first)}"
    if all(run.out is not None and matches(run.out, _expected(run.case)[0], _care(run.case), LOW_RTOL, LOW_ATOL)
           for run in runs):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}", first.case.name)
    model = _explain(runs, masks, batches)
    if model is not None:
        keys = model.faults()
        constant = model.scale if not isinstance(model.scale, str) else None
        text = "\n".join(_fault_text(key, constant) for key in keys)
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name)
    return Diagnosis(False, _unexplained_key(first), f"{_unexplained_text(first, name)}\n{where}{also}",
                     first.case.name)


def _empty_rows_zero(run):
    """True unless the case has a query with no key to read and the function's output there is NaN or inf.

    (A large negative fill such as -1e9 spreads such a row's weight evenly instead: no query reads a pad's
    row, and notebook 04 shows that spread as harmless, so it is accepted; NaN is not, since it reaches every
    query of the next layer.)"""
    if run.case.mask is None or run.out is None:
        return True
    rows = ~_care(run.case)                       # the queries with no key to read
    if not rows.any() or run.out.shape[:-1] != rows.shape:
        return True
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(run.out[rows])))


def _care(case):
    """The rows that count: a query with nothing to attend to may get any answer."""
    if case.mask is None:
        return None
    shape = np.broadcast_shapes(case.mask.shape, case.Q.shape[:-1] + case.K.shape[-2:-1])
    return np.broadcast_to(case.mask, shape).any(axis=-1)


def _same_weights(run):
    """The returned weights are the attention weights on every row that counts (:func:`_care`): a query with
    no key left may get any finite weights, as its output may (a -1e9 fill spreads them evenly)."""
    _, expected = _expected(run.case)
    w = run.weights
    if w is None or w.shape != expected.shape:
        return False
    return matches(w, expected, _care(run.case))


def _empty_rows_as_the_course(run):
    """False when a query with no key left got other numbers than the course's zeros (output or weights)."""
    care = _care(run.case)
    if care is None or care.all():
        return True
    out, weights = _expected(run.case)
    return matches(run.out, out) and (run.weights is None or matches(run.weights, weights))


def _returned_weights(run):
    _, expected = _expected(run.case)
    return run.out is not None and run.out.shape == expected.shape and bool(
        np.allclose(run.out, expected, rtol=RTOL, atol=ATOL))


def _unexplained_key(run):
    if run.error is not None:
        if isinstance(run.error, TypeError) and run.case.mask is not None and "mask" in str(run.error):
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
    expected, _ = _expected(run.case)
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


def check(fn, time_limit, masks=True, batches=True):
    """Run ``fn`` on the battery (without the masked inputs or the batch if told) and return its Diagnosis."""
    cases = [c for c in BATTERY if (masks or c.needs != "masks") and (batches or c.needs != "batches")]
    mask_place = parameter(fn, MASK_NAMES, 3, default_none=True) or ("keyword", "mask")
    runs = []
    for case in cases:
        runs.append(_run(fn, case, time_limit, mask_place))
        if not runs[-1].finished:
            break
    return _verdict(fn, runs, masks, batches)
