"""The checker of ``softmax``: a learner's ``fn(x, axis=-1)`` against helpers.attention.softmax.

A right softmax is positive, sums to 1 along ``axis``, does not overflow on
scores of 1000 (it subtracts each slice's own maximum first), gives -inf
entries weight 0, and gives a slice that is -inf everywhere all zeros (a
query with nothing to attend to), not NaN. Each mistake below is a model of
the computation with one part done another way (:class:`_Softmax`): the
maximum (none, or one for the whole array), the guard of an all -inf slice,
the axis (the whole array, or an axis written in: ``axis=1`` is named as
such), the division, keepdims (the sum or the maximum without it, or the
``(e.T / e.sum(-1)).T`` way round it). The checker names the simplest model
(one mistake, then two) that gives what the function gave on every input of
:data:`~helpers.checkers.battery.SOFTMAX`; a model that numpy refuses
agrees with a function that raised. Then the one fault with a parameter,
``finite_fill`` (-inf replaced by a finite number inside the function; the
verdict names the number when the weights show it). Last, before a symptom
(``raised``, ``nan_inf``, ``wrong_shape``), the model that gives the same
symptom on the first input that went wrong, and agrees on every input
before it, names its cause.

The axis argument is read from the signature: ``axis`` or ``dim`` by name,
or any parameter in the second place whose default is a whole number
(``def softmax(z, ax=-1)``).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
from dataclasses import dataclass, replace

import numpy as np

from helpers.attention import softmax
from helpers.checkers import fitted
from helpers.checkers.battery import SOFTMAX
from helpers.checkers.runner import (
    LOW_ATOL, LOW_PRECISION, LOW_RTOL, Diagnosis, call, failed, fn_name, matches, mutation_words, not_attempted, parameter,
    raised_words, side_by_side, too_slow,
)

__all__ = ["FAULTS", "check"]

AXIS_NAMES = ("axis", "dim")
FIXED_AXES = (0, -1, 1, 2, -2, -3)
"""The axes a learner may write into the function instead of using its axis argument."""


@dataclass(frozen=True)
class _Softmax:
    """A softmax with some of its parts done wrong. The defaults are the right way."""

    max_subtracted: object = True   # False: exp(x) of the scores themselves; "global": one maximum, x.max();
                                    # "min": the minimum along the axis, unguarded (x - (-inf) is inf)
    guard: str = "zeros"          # "none": a slice of -inf gives NaN (-inf - -inf); "rows": NaN in any row with -inf
    axis: object = "given"        # "all": the maximum and the sum of everything; "sum_all": the maximum along the
                                  # axis, the sum of everything; an int: that axis always, the argument ignored
    normalised: bool = True       # False: exp only, never divided by the sum
    keepdims: str = "both"        # "sum", "max", "neither": that reduction without keepdims=True;
                                  # "transposed": (e.T / e.sum(-1)).T, the axis ignored
    default: object = "last"      # the axis when none is passed: None (def softmax(x, axis=None): everything), 0

    def keys(self):
        right, found = _Softmax(), []
        for part, key in _PART_KEY.items():
            value = getattr(self, part)
            if value != getattr(right, part):
                found.append(key(value) if callable(key) else key)
        return found

    def predict(self, x, axis=None):
        """The output, or raises as numpy does where this way of writing it fails (an axis that is not there,
        shapes that do not broadcast). axis: the one passed, or None when the call passes none (the default's)."""
        if axis is None:
            if self.default != "last" and self.axis == "given":      # the learner's default takes the axis's place
                return replace(self, default="last", axis="all" if self.default is None else self.default).predict(
                    x, -1)
            axis = -1
        ax = {"given": axis, "all": None, "sum_all": None}.get(self.axis, self.axis)
        if self.keepdims == "transposed":         # written for the last axis, whatever it is given
            ax = axis = -1 if self.axis in ("given", "sum_all") else ax
        with np.errstate(all="ignore"):
            s = np.asarray(x, dtype=float)
            if self.max_subtracted:
                over = None if self.max_subtracted == "global" else (axis if self.axis == "sum_all" else ax)
                reduce = np.min if self.max_subtracted == "min" else np.max
                top = reduce(s, axis=over, keepdims=self.keepdims not in ("max", "neither"))
                if self.guard == "zeros" and self.max_subtracted != "min":
                    top = np.where(np.isfinite(top), top, 0.0)
                s = s - top
            e = np.exp(s)
            if not self.normalised:
                return e
            if self.keepdims == "transposed":
                total = np.sum(e, axis=-1)
                w = (e.T / (np.where(total == 0, 1.0, total) if self.guard == "zeros" else total)).T
            else:
                total = np.sum(e, axis=ax, keepdims=self.keepdims not in ("sum", "neither"))
                if self.guard == "zeros":
                    total = np.where(total == 0, 1.0, total)
                w = e / total
            if self.guard == "rows":
                w = np.where(np.isneginf(x).any(axis=ax, keepdims=True), np.nan, w)
            return w


def _axis_key(value):
    if value in ("all", "sum_all"):
        return "softmax_over_everything"
    return "wrong_axis" if value in (0, -2) else "axis_ignored"


_PART_KEY = {
    "max_subtracted": lambda value: {False: "no_max_subtraction", "min": "min_subtracted"}.get(value,
                                                                                          "max_over_everything"),
    "guard": "neg_inf_nan",
    "axis": _axis_key,
    "normalised": "exp_not_normalised",
    "keepdims": "no_keepdims",
    "default": "wrong_default_axis",
}
_SINGLE = [("max_subtracted", False), ("guard", "none"), ("guard", "rows"), ("axis", 0), ("axis", "all"),
           ("axis", -1), ("normalised", False), ("axis", "sum_all"), ("max_subtracted", "global"),
           ("keepdims", "sum"), ("keepdims", "neither"), ("keepdims", "max"), ("keepdims", "transposed"),
           ("axis", 1), ("axis", 2), ("axis", -2), ("axis", -3), ("max_subtracted", "min"), ("default", None),
           ("default", 0)]

FAULTS = {
    "no_max_subtraction": "Your softmax overflows on large scores: exp(1000) is inf, and inf / inf is NaN. "
                          "Subtract the maximum along the axis before np.exp (it cancels in the division): "
                          "e = np.exp(x - x.max(axis=axis, keepdims=True)).",
    "neg_inf_nan": "Your softmax gives NaN where a mask put -inf. A slice that is -inf everywhere (a query with "
                   "nothing to attend to) has maximum -inf, and -inf - (-inf) is NaN. Give it all zeros, as the "
                   "course does: use 0 where the maximum is -inf (np.where(np.isfinite(m), m, 0)) and divide by 1 "
                   "where the sum is 0.",
    "wrong_axis": "Your softmax sums to 1 along {axis_words}, not along the axis it is given. "
                  "Pass axis on: np.sum(e, axis=axis, keepdims=True), and the same for the maximum.",
    "softmax_over_everything": "Your softmax divides by the sum over the whole array, so no row sums to 1. Sum "
                               "along the axis: e.sum(axis=axis, keepdims=True).",
    "axis_ignored": "Your softmax ignores its axis argument: it always sums along {axis_words}. Use axis in the "
                    "maximum and the sum: x.max(axis=axis, keepdims=True), e.sum(axis=axis, keepdims=True).",
    "exp_not_normalised": "You return exp of the scores without dividing by their sum, so the weights do not sum "
                          "to 1. Divide: e / e.sum(axis=axis, keepdims=True).",
    "max_over_everything": "Your softmax subtracts one maximum for the whole array (x.max() with no axis), not "
                           "each slice's own. It cancels in the division, so most rows come out right, but a row "
                           "far below the largest score (here [0, 0] beside [1000, 1001]) has exp(0 - 1001) = 0 "
                           "everywhere, and 0 / 0 is NaN (or all zeros, where the sum is guarded). Subtract each slice's "
                           "maximum: "
                           "x.max(axis=axis, keepdims=True).",
    "no_keepdims": "{keepdims_words} Keep the axis: x.max(axis=axis, keepdims=True) and "
                   "e.sum(axis=axis, keepdims=True) line up with x for every shape and every axis.",
    "finite_fill": "{fill_words}",
    "min_subtracted": "Your softmax subtracts the minimum along the axis, not the maximum. The shift cancels in the "
                      "division, so scores close together come out right, but x - min is never below 0: a slice "
                      "that spreads over more than about 709 overflows exp to inf (inf / inf is NaN), and a -inf "
                      "entry makes the minimum -inf, so x - (-inf) is inf and the whole slice is NaN. Subtract the "
                      "maximum, which makes every exponent at most 0: e = np.exp(x - x.max(axis=axis, keepdims=True)).",
    "wrong_default_axis": "{default_words}",
}
"""Every mistake the softmax checker can name, with what it tells the learner ({...}: filled in with the
learner's own axis, form or fill value)."""

_AXIS_WORDS = {0: "the first axis (down the columns)", -1: "the last axis",
               1: "axis 1 (axis=1 written in): the last axis of a matrix, but one row has no axis 1 and in a batch "
                  "(B, n, m) it is the wrong one",
               2: "axis 2 (axis=2 written in): the last axis of a batch (B, n, m), but one row or a matrix has no "
                  "axis 2",
               -2: "axis -2 (axis=-2 written in: down the columns of each matrix)",
               -3: "axis -3 (axis=-3 written in): the batch axis of (B, n, m), which one row or a matrix does not "
                   "have"}
_DEFAULT_WORDS = {
    None: "Your softmax's axis defaults to None (def softmax(x, axis=None)), and numpy reads axis=None as the whole "
          "array: called without an axis, as attention calls it (softmax(scores)), it takes the maximum and the sum "
          "over every entry, so no row sums to 1. Given an axis, it is right. Make the last axis the default: "
          "def softmax(x, axis=-1).",
    0: "Your softmax's axis defaults to 0 (def softmax(x, axis=0)): called without an axis, as attention calls it "
       "(softmax(scores)), it sums down the columns, over the queries, not along each row of keys. Given an axis, "
       "it is right. Make the last axis the default: def softmax(x, axis=-1).",
}
_KEEPDIMS_WORDS = {
    "sum": "Your sum along the axis drops that axis (no keepdims=True), so it no longer lines up with x: "
           "np.sum(e, axis=-1) of a (3, 4) matrix has shape (3,), and broadcasting divides along the last axis "
           "instead (on a square matrix silently wrong, on any other numpy refuses). It is right on one row only.",
    "max": "Your maximum along the axis drops that axis (no keepdims=True), so it no longer lines up with x: "
           "np.max(x, axis=-1) of a (3, 4) matrix has shape (3,), and x - m subtracts it along the last axis "
           "instead (on a square matrix silently wrong, on any other numpy refuses). It is right on one row only.",
    "neither": "Your maximum and your sum along the axis drop that axis (no keepdims=True), so they no longer line "
               "up with x: np.sum(e, axis=-1) of a (3, 4) matrix has shape (3,), and broadcasting lines it up with "
               "the last axis instead (on a square matrix silently wrong, on any other numpy refuses). It is "
               "right on one row only.",
    "transposed": "Your (e.T / e.sum(-1)).T lines the sums up for one row or a matrix only: on a batch (B, n, m), "
                  ".T reverses every axis and numpy refuses (or broadcasts to the wrong shape), and it always sums "
                  "along the last axis, whatever axis it is given.",
}


def _fault_text(key, model=None, value=None, run=None):
    """FAULTS[key] with the learner's own axis, form (from ``model``) or fill value filled in."""
    if key == "finite_fill":
        return _fill_words(value, [run] if run is not None else ())
    text = FAULTS[key]
    if model is not None and "{axis_words}" in text:
        text = text.replace("{axis_words}", _AXIS_WORDS[model.axis])
    if model is not None and "{default_words}" in text:
        text = text.replace("{default_words}", _DEFAULT_WORDS[model.default])
    if model is not None and "{keepdims_words}" in text:
        text = text.replace("{keepdims_words}", _KEEPDIMS_WORDS[model.keepdims])
    return text


# --------------------------------------------------------------------------
# The fault with a parameter: -inf replaced by a finite number inside the function
# --------------------------------------------------------------------------

LARGE_FILL = -1e9
"""The fill that stands for every number large enough that exp(fill - max) is 0: the weights cannot tell which."""


def _hidden_slices(runs):
    """The lengths of the slices that are -inf everywhere in the battery ([3, 7]), for "1/3 each"."""
    found = []
    for run in runs:
        x = np.moveaxis(run.case.args["x"], run.case.args.get("axis", -1), -1)
        if x.ndim and np.isneginf(x).all(axis=-1).any() and x.shape[-1] not in found:
            found.append(x.shape[-1])
    return found


def _fit_fill(runs):
    """The fill values the weights show: for a slice with both -inf and finite entries, w_hidden / w_seen =
    exp(fill - x_seen), so fill = x_seen + log(w_hidden / w_seen); then LARGE_FILL, for a fill they cannot show."""
    found = []
    for run in runs:
        x, out = run.case.args["x"], run.out
        if out is None or out.shape != np.shape(x):
            continue
        axis = run.case.args.get("axis", -1)
        xs, ws = np.moveaxis(np.asarray(x, float), axis, -1), np.moveaxis(out, axis, -1)
        for index in np.ndindex(xs.shape[:-1]):
            row, w = xs[index], ws[index]
            hidden = np.isneginf(row)
            if hidden.any() and not hidden.all():
                i = int(np.argmax(np.where(hidden, -np.inf, w)))
                j = int(np.argmax(hidden))
                with np.errstate(all="ignore"):
                    fill = row[i] + np.log(w[j] / w[i])
                if np.isfinite(fill) and w[j] > 0:
                    found.append(float(f"{fill:.6g}"))
    return found + [LARGE_FILL]


def _filled(args, value):
    x = np.asarray(args["x"], dtype=float)
    return softmax(np.where(np.isneginf(x), value, x), axis=args.get("axis", -1))


def _fill_words(value, runs=()):
    sizes = _hidden_slices(runs)
    each = ", ".join(f"1/{n} = {1 / n:.3g} each in a slice of {n}" for n in sizes)
    slice_words = (f"a slice that is -inf everywhere becomes that number everywhere, so each of its n entries "
                   f"gets 1/n{f' ({each} here)' if each else ''} where the contract says all "
                   "zeros: a query with nothing to attend to would read every value, equally. Keep -inf as it "
                   "is, and guard that slice instead: subtract 0 where the maximum is -inf "
                   "(np.where(np.isfinite(m), m, 0)) and divide by 1 where the sum is 0.")
    if value == LARGE_FILL:
        return ("Your softmax replaces -inf by a large negative number before the exp (-1e9, np.finfo(float).min, "
                "np.nan_to_num: the weights cannot tell which, as exp of any of them is 0). A hidden key still gets "
                "weight 0, but " + slice_words)
    return (f"Your softmax replaces -inf by {value:g} before the exp. A hidden key then gets weight "
            f"exp({value:g} - max) instead of 0, and " + slice_words)


FILL = fitted.Family("finite_fill", "guard", _fit_fill, _filled, lambda value, run: _fill_words(value, [run]))
"""-inf replaced by a finite number inside the function (hyunwoongko/transformer #10: -1e9)."""


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


def _outcome(model, run):
    """What ``model`` gives on this run's input: ("out", array) or ("raised", the exception numpy raised)."""
    try:
        return "out", model.predict(run.case.args["x"], run.case.args.get("axis"))
    except Exception as exc:
        return "raised", exc


def _agrees(run, model):
    """Does the function's result on this run look like the model's? Where numpy refuses the model, a function
    that raised the same error (its shapes and numbers aside) agrees."""
    kind, got = _outcome(model, run)
    if kind == "raised":
        return isinstance(run.error, Exception) and _same_error(run.error, got)
    return run.out is not None and matches(run.out, got)


def _same_error(a, b):
    """The same kind of error with the same message, shapes and numbers aside."""
    def words(exc):
        return re.sub(r"\([^)]*\)|-?\d+", "", str(exc))
    return type(a) is type(b) and words(a) == words(b)


def _models(default="last"):
    """Every model with one fault, then two of different parts; a wrong default of the axis only as ``default``
    (the function's own, read from its signature: the battery's one input with an axis cannot tell a default of 0
    from an axis=0 written in)."""
    found = [m for m in _all_models() if m.default in ("last", default)]
    return sorted(found, key=lambda m: m != _Softmax(default=default))     # the signature's own default first


def _signature_default(fn, place):
    """The default of the function's axis parameter (found at ``place``, runner.parameter's), or "last" when it has
    none to read."""
    try:
        params = inspect.signature(fn).parameters
        how, where = place
        p = params[where] if how == "keyword" else list(params.values())[where]
    except Exception:
        return "last"
    return "last" if p.default is inspect.Parameter.empty else p.default


@functools.lru_cache(maxsize=1)
def _all_models():
    singles = [_Softmax(**{p: v}) for p, v in _SINGLE]
    pairs = [replace(a, **{p2: v2}) for (p1, v1), (p2, v2) in itertools.combinations(_SINGLE, 2) if p1 != p2
             for a in [_Softmax(**{p1: v1})]]
    return singles + pairs


def _explain(runs, default="last"):
    """The simplest model that gives what the function gave on every input, or None."""
    return next((m for m in _models(default) if all(_agrees(run, m) for run in runs)), None)


def _cause_of_symptom(runs, first, default="last"):
    """The simplest model that gives the function's symptom on the first input that went wrong (the same error,
    NaN where it has NaN, the same shape) and agrees on every input before it; None if none does, or when that
    input shows no symptom (finite numbers of the right shape: then it is just different)."""
    if first.out is not None and first.out.shape == np.shape(first.case.args["x"]) and np.all(np.isfinite(first.out)):
        return None
    if isinstance(first.error, BaseException) and not isinstance(first.error, Exception):
        return None                                             # SystemExit and the like: no model exits
    before = runs[: runs.index(first)]
    for model in _models(default):
        if _agrees(first, model) and all(_agrees(run, model) for run in before):
            return model
    return None


def _first_difference(run):
    expected = _expected(run.case)
    if run.out is None:
        with np.printoptions(precision=3, suppress=True):
            return f"{raised_words(run, None)}\nThe expected weights: {np.array2string(expected, separator=' ')}"
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


FIRST_ONLY = ("That is what goes wrong first. It does not explain everything your softmax gives on the other "
              "inputs: fix it, then run diagnose again.")
"""Said after the cause of a symptom, which explains the first input that went wrong, not every input."""


def check(fn, time_limit):
    """Run ``fn`` on the softmax battery and return its Diagnosis."""
    axis_place = parameter(fn, AXIS_NAMES, 1, default_int=True)
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
    right = [run.out is not None and matches(run.out, _expected(run.case)) for run in runs]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right weights on every input, but {changes}",
                             None, "softmax")
        text = f"Correct! {name} gives the right weights on all {len(runs)} inputs ({', '.join(r.case.name for r in runs)})."
        return Diagnosis(True, None, text, None, "softmax")
    also = f"\nAlso, {changes}" if mutated else ""
    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(first)}"
    if all(run.out is not None and matches(run.out, _expected(run.case), None, LOW_RTOL, LOW_ATOL) for run in runs):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}",
                         first.case.name, "softmax")
    default = _signature_default(fn, axis_place) if axis_place is not None else "last"
    model = _explain(runs, default)
    if model is not None:
        return _named(model, f"\n{where}{also}", first)
    no_axis = [run for run in runs if "axis" in run.case.args and isinstance(run.error, TypeError)
               and "axis" in str(run.error)]
    rest = [run for run in runs if not any(run is r for r in no_axis)]
    model = _explain(rest, default) if no_axis and rest and not all(right[runs.index(r)] for r in rest) else None
    if model is not None:
        return _named_without_axis(fn, name, model, f"\n{where}{also}", first)
    found = fitted.explain((FILL,), runs, lambda run, family, value: run.out is not None and any(
        matches(run.out, p) for p in (family.predict(run.case.args, value) or [])))
    if found is not None:
        return Diagnosis(False, "finite_fill", f"{_fill_words(found[1], runs)}\n{where}{also}", first.case.name,
                         "softmax")
    if isinstance(first.error, TypeError) and "axis" in first.case.args:
        key, text = _unexplained(first, name)
        return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, "softmax")
    model = _cause_of_symptom(runs, first, default)
    if model is not None:
        return _named(model, f" {FIRST_ONLY}\n{where}{also}", first)
    key, text = _unexplained(first, name)
    return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, "softmax")


def _named(model, rest, first):
    keys = model.keys()
    text = "\n".join(_fault_text(k, model) for k in keys)
    return Diagnosis(False, "+".join(keys), text + rest, first.case.name, "softmax")


def _named_without_axis(fn, name, model, rest, first):
    """A model that explains every input but the one with an axis, which the function refused (it takes none):
    np.exp passed as the softmax (a ufunc: named as that), or a def with no axis argument."""
    keys = model.keys()
    if isinstance(fn, np.ufunc) and "exp_not_normalised" in keys and set(keys) <= {"exp_not_normalised",
                                                                                  "no_max_subtraction"}:
        text = (f"You pass np.{name} itself as the softmax: it gives exp of each score, never divided by the sum, so "
                "the weights do not sum to 1 (nor does it subtract the maximum, or take an axis). Write a function "
                "of your own: "
                "def softmax(x, axis=-1): e = np.exp(x - x.max(axis=axis, keepdims=True)); "
                "return e / e.sum(axis=axis, keepdims=True).")
        return Diagnosis(False, "exp_not_normalised", text + rest, first.case.name, "softmax")
    text = "\n".join([_fault_text(k, model) for k in keys] + [_unexplained_axis(name)])
    return Diagnosis(False, "+".join(keys + ["no_axis_argument"]), text + rest, first.case.name, "softmax")


def _unexplained_axis(name):
    return f"{name} takes no axis. Give it one: def {name}(x, axis=-1), and use it in the maximum and the sum."


def _unexplained(run, name):
    if isinstance(run.error, TypeError) and "axis" in run.case.args:
        return "no_axis_argument", _unexplained_axis(name)
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
