"""The checker of ``softmax``: a learner's ``fn(x, axis=-1)`` against helpers.attention.softmax.

A right softmax is positive, sums to 1 along ``axis``, does not overflow on
scores of 1000 (it subtracts the maximum first), gives -inf entries weight
0, and gives a slice that is -inf everywhere all zeros (a query with nothing
to attend to), not NaN. Each mistake below is a model of the computation
with one part done another way (:class:`_Softmax`); the checker names the
simplest model (one mistake, then two) that gives what the function gave on
every input of :data:`~helpers.exercises.battery.SOFTMAX`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from helpers.attention import softmax
from helpers.exercises.battery import SOFTMAX
from helpers.exercises.runner import (
    LOW_ATOL, LOW_PRECISION, LOW_RTOL, Diagnosis, call, failed, fn_name, matches, mutation_words, not_attempted, parameter,
    raised_words, side_by_side, too_slow,
)

__all__ = ["FAULTS", "check"]

AXIS_NAMES = ("axis", "dim")


@dataclass(frozen=True)
class _Softmax:
    """A softmax with some of its parts done wrong. The defaults are the right way."""

    max_subtracted: bool = True   # False: exp(x) of the scores themselves
    guard: str = "zeros"          # "none": a slice of -inf gives NaN (-inf - -inf); "rows": NaN in any row with -inf
    axis: str = "given"           # "first": always axis 0; "all": the maximum and the sum of everything;
                                  # "sum_all": the maximum along the axis, the sum of everything; "last": the axis ignored
    normalised: bool = True       # False: exp only, never divided by the sum

    def keys(self):
        right, found = _Softmax(), []
        for part, key in _PART_KEY.items():
            value = getattr(self, part)
            if value != getattr(right, part):
                found.append(key if isinstance(key, str) else key[value])
        return found

    def predict(self, x, axis):
        ax = {"given": axis, "first": 0, "all": None, "sum_all": None, "last": -1}[self.axis]
        with np.errstate(all="ignore"):
            s = np.asarray(x, dtype=float)
            if self.max_subtracted:
                top = np.max(s, axis=axis if self.axis == "sum_all" else ax, keepdims=True)
                if self.guard == "zeros":
                    top = np.where(np.isfinite(top), top, 0.0)
                s = s - top
            e = np.exp(s)
            if not self.normalised:
                return e
            total = np.sum(e, axis=ax, keepdims=True)
            if self.guard == "zeros":
                total = np.where(total == 0, 1.0, total)
            w = e / total
            if self.guard == "rows":
                w = np.where(np.isneginf(x).any(axis=ax, keepdims=True), np.nan, w)
            return w


_PART_KEY = {
    "max_subtracted": "no_max_subtraction",
    "guard": "neg_inf_nan",
    "axis": {"first": "wrong_axis", "all": "softmax_over_everything", "sum_all": "softmax_over_everything",
             "last": "axis_ignored"},
    "normalised": "exp_not_normalised",
}
_SINGLE = [("max_subtracted", False), ("guard", "none"), ("guard", "rows"), ("axis", "first"), ("axis", "all"),
           ("axis", "last"), ("normalised", False), ("axis", "sum_all")]

FAULTS = {
    "no_max_subtraction": "Your softmax overflows on large scores: exp(1000) is inf, and inf / inf is NaN. "
                          "Subtract the maximum along the axis before np.exp (it cancels in the division): "
                          "e = np.exp(x - x.max(axis=axis, keepdims=True)).",
    "neg_inf_nan": "Your softmax gives NaN where a mask put -inf. A slice that is -inf everywhere (a query with "
                   "nothing to attend to) has maximum -inf, and -inf - (-inf) is NaN. Give it all zeros, as the "
                   "course does: use 0 where the maximum is -inf (np.where(np.isfinite(m), m, 0)) and divide by 1 "
                   "where the sum is 0.",
    "wrong_axis": "Your softmax sums to 1 along the first axis (down the columns), not along the axis it is given. "
                  "Pass axis on: np.sum(e, axis=axis, keepdims=True), and the same for the maximum.",
    "softmax_over_everything": "Your softmax divides by the sum over the whole array, so no row sums to 1. Sum "
                               "along the axis: e.sum(axis=axis, keepdims=True).",
    "axis_ignored": "Your softmax ignores its axis argument: it always sums along the last axis. Use axis in the "
                    "maximum and the sum: x.max(axis=axis, keepdims=True), e.sum(axis=axis, keepdims=True).",
    "exp_not_normalised": "You return exp of the scores without dividing by their sum, so the weights do not sum "
                          "to 1. Divide: e / e.sum(axis=axis, keepdims=True).",
}
"""Every mistake the softmax checker can name, with what it tells the learner."""


def _expected(case):
    return softmax(case.args["x"], axis=case.args.get("axis", -1))


def _run(fn, case, time_limit, axis_place):
    args, kwargs = [("x", case.args["x"])], {}
    if "axis" in case.args:
        if axis_place is None:
            axis_place = ("keyword", "axis")
        how, where = axis_place
        if how == "position":
            args.append(("axis", case.args["axis"]))
        else:
            kwargs[where] = case.args["axis"]
    return call(fn, case, args, kwargs, time_limit)


def _agrees(run, model):
    if run.out is None:
        return False
    return matches(run.out, model.predict(run.case.args["x"], run.case.args.get("axis", -1)))


def _explain(runs):
    singles = [_Softmax(**{p: v}) for p, v in _SINGLE]
    pairs = [replace(a, **{p2: v2}) for (p1, v1), (p2, v2) in itertools.combinations(_SINGLE, 2) if p1 != p2
             for a in [_Softmax(**{p1: v1})]]
    return next((m for m in singles + pairs if all(_agrees(run, m) for run in runs)), None)


def _first_difference(run):
    expected = _expected(run.case)
    if run.out is None:
        return raised_words(run, None)
    out = run.out
    if out.shape != expected.shape:
        return f"It returned shape {out.shape}; a softmax keeps the shape of x, {expected.shape}."
    if out.ndim == 1:
        return "Yours beside the expected weights:\n" + side_by_side(out, expected)
    axis = run.case.args.get("axis", -1)
    o, e = np.moveaxis(out, axis, -1), np.moveaxis(expected, axis, -1)
    with np.errstate(all="ignore"):
        bad = ~np.isclose(o, e, rtol=1e-4, atol=1e-6, equal_nan=False).all(axis=-1)
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else (0,) * (o.ndim - 1)
    label = "row" if axis in (-1, out.ndim - 1) else "slice along axis " + str(axis)
    return f"First differing {label} {list(where)}:\n" + side_by_side(o[where], e[where])


def check(fn, time_limit):
    """Run ``fn`` on the softmax battery and return its Diagnosis."""
    axis_place = parameter(fn, AXIS_NAMES, 1)
    runs = []
    for case in SOFTMAX:
        runs.append(_run(fn, case, time_limit, axis_place))
        if not runs[-1].finished:
            break
    for early in (not_attempted(fn, runs, "softmax"), too_slow(fn, runs, "softmax")):
        if early is not None:
            return early
    name = fn_name(fn)
    changes, mutated = mutation_words(runs, ["x"])
    right = [_agrees(run, _Softmax()) for run in runs]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right weights on every input, but {changes}",
                             None, "softmax")
        text = f"Correct! {name} gives the right weights on all {len(runs)} inputs ({', '.join(r.case.name for r in runs)})."
        return Diagnosis(True, None, text, None, "softmax")
    also = f" Also, {changes}" if mutated else ""
    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(first)}"
    if all(run.out is not None and matches(run.out, _expected(run.case), None, LOW_RTOL, LOW_ATOL) for run in runs):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}",
                         first.case.name, "softmax")
    model = _explain(runs)
    if model is not None:
        keys = model.keys()
        text = "\n".join(FAULTS[k] for k in keys)
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name, "softmax")
    key, text = _unexplained(first, name)
    return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, "softmax")


def _unexplained(run, name):
    if isinstance(run.error, TypeError) and "axis" in run.case.args:
        return "no_axis_argument", (f"{name} takes no axis. Give it one: def {name}(x, axis=-1), and use it "
                                    "in the maximum and the sum.")
    if failed(run, name, "the weights") is not None:
        return failed(run, name, "the weights")
    if run.problem is not None:
        return "not_numbers", f"{name} returns something that is not an array of numbers."
    if run.out.shape != _expected(run.case).shape:
        return "wrong_shape", f"{name} returns the wrong shape: a softmax returns an array the shape of x."
    if not np.all(np.isfinite(run.out)):
        return "nan_inf", f"{name} returns NaN or inf where the weights are finite."
    return "different", (f"{name} gives different weights, and none of the mistakes diagnose knows explains it. "
                         "Compare it with the formula step by step: subtract the maximum, exp, divide by the sum.")
