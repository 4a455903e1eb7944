"""Faults with a parameter: the checker fits it to the learner's output, then names the learner's own value.

Many misconceptions are families whose members differ by a number or a
choice: a scale (any constant, or the square root of another size of the
inputs), an axis, a permutation of axes, a fill value in place of -inf, a
shift of the positions, a base of the frequencies, a factor of a gradient.
A catalogue of one fixed model per member misses every member nobody
listed. A :class:`Family` instead reads candidate values off the learner's
outputs (``fit``), computes the piece with a value (``model``), and a value
explains the function when the model gives the function's output on every
input of the battery; the verdict then names that value (``words``).

Every checker uses :func:`explain`; the numeric fitter :func:`fit_scalar`
and :func:`size_rules` (a number named by what it equals among the inputs'
sizes: "sqrt(8) = sqrt(n_q), the number of queries") serve the families of
every piece, so no checker writes its own.

Used by the checker modules (checker_*.py); it imports nothing of the course.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Family", "SizeRule", "explain", "fit_scalar", "size_rules", "nice_values", "number", "AxesPermutation",
           "fit_permutation", "swap_spellings", "outputs_of"]


@dataclass(frozen=True)
class Family:
    """One misconception with a parameter.

    key: its fault key (one key per family, e.g. "constant_scale").
    part: the part of the computation it gets wrong (a family is not combined with a fault of the same part).
    fit: runs -> candidate values (hashable; a float, an axis, a :class:`SizeRule`, ...), read off the
        outputs of the runs that went wrong. May return nothing.
    model: (args, value) -> the output the piece gives with that value: an array, a list of arrays (ways
        of writing it), or None where numpy refuses the computation. A model written (args, value, faults=...)
        also takes fixed faults of the piece (a frozenset of keys, passed to the piece's own model): the family
        is then combined with one fixed fault of another part (:func:`explain_with_faults`).
    words: (value, run) -> the sentence that names the value, for the first input that went wrong.
    right: value -> True when that value is the right computation (it is then never named).
    """

    key: str
    part: str
    fit: Callable
    model: Callable
    words: Callable
    right: Callable = staticmethod(lambda value: False)

    @property
    def takes_faults(self):
        """Does the model take fixed faults too (a third parameter)?"""
        try:
            return len(inspect.signature(self.model).parameters) >= 3
        except (TypeError, ValueError):
            return False

    def predict(self, args, value, faults=frozenset()):
        """The model's outputs (with those fixed faults too, if any) as a list of float arrays, or None where the
        model (numpy) refuses."""
        return outputs_of(lambda: self.model(args, value, frozenset(faults)) if faults else self.model(args, value))


def outputs_of(compute):
    """What a model of a piece gives, ``compute()``: an array, or a list of arrays (the ways of writing a fault),
    as a list of float arrays; None where the model (numpy) refuses the computation. numpy's warnings are kept
    quiet: a model with a fault overflows or divides by zero on purpose."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = compute()
    except Exception:
        return None
    if found is None:
        return None
    return [np.asarray(f, dtype=float) for f in (found if isinstance(found, list) else [found])]


def explain(families, runs, agrees):
    """(family, value) of the first family whose fitted value explains every run, or None.

    agrees(run, family, value) -> whether the function's result on that run is the family's with that value
    (each checker says what agreeing means for its piece: the rows that count, a refused computation)."""
    found = explain_with_faults(families, runs, lambda run, family, value, faults: agrees(run, family, value))
    return None if found is None else found[:2]


def explain_with_faults(families, runs, agrees, faults_for=lambda family: (), wrong=(),
                        accept=lambda family, value, faults: True):
    """(family, value, faults) of the simplest explanation of every run, or None: each family alone (faults
    empty), in order; then each family with one set of fixed faults of ``faults_for(family)`` (for a family whose
    model takes faults: the piece's fixed faults of another part, one at a time).

    agrees(run, family, value, faults) -> whether the function's result on that run is the model's. Each family is
    fitted once (on ``runs``, in their order); the runs of ``wrong`` (those that went wrong) are compared first, so
    that a model that does not explain them is refused early. accept(family, value, faults): a last check of an
    explanation that agrees (a checker's: a model that numpy refuses on every input explains nothing)."""
    ordered = list(wrong) + [run for run in runs if not any(run is w for w in wrong)]
    fits = []
    for family in families:
        try:
            values = list(dict.fromkeys(family.fit(runs) or ()))
        except Exception:                 # a fit never turns a verdict into a crash
            continue
        fits.append((family, [v for v in values if not _is_right(family, v)]))
    for combined in (False, True):
        for family, values in fits:
            extra = [frozenset(f) for f in faults_for(family)] if combined and family.takes_faults else []
            for faults in ([frozenset()] if not combined else extra):
                for value in values:
                    try:
                        if all(agrees(run, family, value, faults) for run in ordered) and accept(
                                family, value, faults):
                            return family, value, faults
                    except Exception:
                        continue
    return None


def _is_right(family, value):
    try:
        return bool(family.right(value))
    except Exception:
        return True


def fit_scalar(outputs, target, lo, hi, log=True, rtol=1e-4, atol=1e-6):
    """The parameter p in [lo, hi] with ``outputs(p)`` equal to ``target`` (to rtol, atol), or None.

    outputs: an array of parameters (k,) -> their outputs stacked (k, *target.shape). A grid of 601 points
    (geometric when ``log``), then two finer grids around its best point; the best p is returned only when its
    output matches. For a parameter the output depends on smoothly and one to one near the answer (a scale of
    the scores, a base of the frequencies, a factor)."""
    target = np.asarray(target, dtype=float)
    if not np.all(np.isfinite(target)):
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = np.geomspace(lo, hi, 601) if log else np.linspace(lo, hi, 601)
        axes = tuple(range(1, target.ndim + 1))
        for _ in range(3):                     # a grid, then two finer grids around its best point
            err = np.nanmax(np.abs(outputs(grid) - target[None]), axis=axes) if target.ndim else np.abs(
                outputs(grid) - target)
            err = np.where(np.isfinite(err), err, np.inf)
            best = int(np.argmin(err))
            grid = np.linspace(grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)], 201)
        err = np.abs(outputs(grid) - target[None]).reshape(grid.size, -1).max(axis=1)
        err = np.where(np.isfinite(err), err, np.inf)
        p = float(grid[int(np.argmin(err))])
        found = np.asarray(outputs(np.array([p])))[0]
    return p if np.allclose(found, target, rtol=rtol, atol=atol) else None


@dataclass(frozen=True)
class SizeRule:
    """A number as a rule on the inputs' sizes: ``factor * sizes[name] ** power``; name None: the constant factor."""

    name: str | None
    power: float = 0.5
    factor: float = 1.0

    def value(self, sizes):
        return self.factor if self.name is None else self.factor * float(sizes[self.name]) ** self.power

    def formula(self, sizes=None):
        """'sqrt(n_q)', 'sqrt(2 d_k)', 'd_k', '8' ... and, given sizes, ' = sqrt(8)' style: 'sqrt(n_q) = sqrt(8)'."""
        if self.name is None:
            return _number(self.factor)
        if self.power == 0.5:
            inside = self.name if self.factor == 1 else f"{_number(self.factor ** 2)} {self.name}"
            text = f"sqrt({inside})"
            if sizes is not None:
                text += f" = sqrt({_number(self.factor ** 2 * sizes[self.name])})"
        else:
            text = self.name if self.factor == 1 else f"{_number(self.factor)} {self.name}"
            if self.power != 1:
                text += f"^{_number(self.power)}"
            if sizes is not None:
                text += f" = {_number(self.value(sizes))}"
        return text


def _number(x):
    return str(int(round(x))) if abs(x - round(x)) < 1e-9 else f"{x:.4g}"


RULE_FACTORS = {0.5: (1.0, np.sqrt(2.0), np.sqrt(0.5)), 1.0: (1.0, 2.0, 0.5)}
"""The rules :func:`size_rules` tries: sqrt(size), sqrt(2 size), sqrt(size / 2); size, 2 size, size / 2."""


def size_rules(value, sizes, rtol=1e-3):
    """Every :class:`SizeRule` over ``sizes`` (name -> int) that equals ``value`` here, simplest first, then the
    constant itself: the candidates a scale (or any size-like number) is named by. Across inputs of other
    sizes only the rule the learner's code follows keeps explaining the output."""
    found = []
    for power, factors in RULE_FACTORS.items():
        for factor in factors:
            for name, size in sizes.items():
                rule = SizeRule(name, power, float(factor))
                if size > 0 and abs(rule.value(sizes) - value) <= rtol * abs(value):
                    found.append(rule)
    found.append(SizeRule(None, 1.0, float(value)))
    return found


def fit_factor(out, expected):
    """The constant c with ``out`` = c * ``expected`` (least squares over every entry), or None: when the shapes
    differ, either holds NaN or inf, or ``expected`` is all zero. For a fault that multiplies a whole result by a
    number (a gradient doubled, halved, divided by a size); the family's model then checks c on every input."""
    try:
        out, expected = np.asarray(out, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return None
    if out.shape != expected.shape or not (np.all(np.isfinite(out)) and np.all(np.isfinite(expected))):
        return None
    norm = float(np.sum(expected * expected))
    return float(np.sum(out * expected)) / norm if norm > 0 else None


def axis_candidates(ndim, but_last=False):
    """The fixed axes (integers in the learner's code: the same on inputs of every size, refused by numpy where the
    input has no such axis) of an array of up to ``ndim`` dimensions that an axis family tries, in its order.

    but_last False: every axis, positive first: 0, 1, ..., -1, -2, ... (the family's ``right`` leaves out the right
    one). but_last True: every axis a reduction (a softmax, a sum) may be written along but the last, for a piece
    whose right axis is -1: -2 first (the usual slip), then each fixed axis from 0, then the others from the end."""
    if but_last:
        return [-2] + list(range(ndim - 1)) + [-k for k in range(3, ndim + 1)]
    return list(range(ndim)) + [-k for k in range(1, ndim + 1)]


def nice_values(p, digits=(0, 3, 2, 1)):
    """Round numbers near a fitted value p, then p itself: the candidates a family tries, so that a base fitted as
    999.9997 is named 1000. digits: 0 for the nearest whole number, k for k significant digits."""
    found = []
    for k in digits:
        try:
            q = float(np.round(p)) if k == 0 else float(f"{p:.{k}g}")
        except (OverflowError, ValueError):
            continue
        if q not in found and abs(q - p) <= 1e-3 * abs(p):
            found.append(q)
    return found + ([float(p)] if float(p) not in found else [])


def number(x):
    """A fitted number as a verdict writes it: '1000', '500000', '2.5', '0.3333'."""
    return _number(x)


__all__ += ["fit_factor", "axis_candidates", "explain_with_faults", "READS"]


# --------------------------------------------------------------------------
# Axes: a permutation written with fixed axes
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class AxesPermutation:
    """A transpose written with fixed axes, as code writes it: ``swapaxes(i, j)`` (``swap``) or ``transpose(*axes)``.

    Fixed axes mean the same code does different things to arrays of different numbers of axes: swapaxes(1, 2)
    swaps tokens and heads of (B, n, h, d_k) but heads and d_k of (n, h, d_k); transpose(1, 0, 2) refuses a
    4-D array. :meth:`apply` does what numpy does (and raises where numpy refuses).

    read: how the code reads the array before it transposes (:data:`READS`): "" as it is; "batch_of_one", code
    written for arrays of ``ndim`` axes that makes one of ``ndim - 1`` a batch of one (x[None], reshape(1, ...))
    and drops that axis after; "stack_first", a reshape to (x.shape[-3], -1, x.shape[-2], x.shape[-1]): the code
    believes axis -3 stands first, before the batch (heads stacked before the batch, (h, B, n, d_k)), and reads
    the memory of (B, h, ...) so."""

    axes: tuple
    swap: bool = False
    read: str = ""
    ndim: int = 0

    def _plain(self, a):
        return np.swapaxes(a, *self.axes) if self.swap else np.transpose(a, self.axes)

    def _batched(self, a):
        return self.read == "batch_of_one" and a.ndim == self.ndim - 1

    def _batch_goes_to(self, ndim):
        """Where the transpose puts axis 0 of an array of ``ndim`` axes."""
        return self._plain(np.empty((2,) + (1,) * (ndim - 1))).shape.index(2)

    def apply(self, a):
        if self._batched(a):
            return np.squeeze(self._plain(a[None]), axis=self._batch_goes_to(a.ndim + 1))
        if self.read == "stack_first":
            a = a.reshape(a.shape[-3], -1, *a.shape[-2:])
        return self._plain(a)

    def undo(self, a):
        """The inverse transpose, written with the same axes (a swap is its own inverse); a batch of one is added
        and dropped again. A "stack_first" read is not undone (its inverse reshape needs the array's shape)."""
        if self._batched(a):
            return self.undo(np.expand_dims(a, self._batch_goes_to(a.ndim + 1)))[0]
        return self._plain(a) if self.swap else np.transpose(a, np.argsort(self.axes))

    def formula(self):
        return f"swapaxes({self.axes[0]}, {self.axes[1]})" if self.swap else f"transpose{tuple(self.axes)}"


READS = ("", "batch_of_one", "stack_first")
"""The ways of reading an array before a fixed-axes transpose that :class:`AxesPermutation` models."""


def swap_spellings(i, j, ndim):
    """The ways code writes the swap of axes i and j (0 <= i < j < ndim) with fixed axes: positive, from the end,
    and mixed, positive first: each does something else to an array of another number of axes."""
    found = []
    for a in (i, i - ndim):
        for b in (j, j - ndim):
            found.append(AxesPermutation((a, b), swap=True))
    found.sort(key=lambda p: (sum(x < 0 for x in p.axes) not in (0, 2), sum(x < 0 for x in p.axes)))
    return found


def fit_permutation(source, target, after=lambda y: [y], match=None, reads=("",)):
    """Every :class:`AxesPermutation` with ``after(p.apply(source))`` holding ``target`` (any of its ways), simplest
    first: each swap in its fixed spellings (:func:`swap_spellings`), then each other order as ``transpose(...)``;
    then the same for each other read of ``reads`` (:data:`READS`; "batch_of_one": each permutation found on
    ``source`` as code written for its number of axes, then those of ``source`` made a batch of one).

    after: y -> the arrays the code makes of the transposed array (a reshape, say); match(a, b) -> bool
    (default np.allclose of same shapes). The identity is left out (no transpose at all is a fault of its own),
    but not a read followed by the identity. For a permutation fitted on one input and then checked on inputs of
    other numbers of axes."""
    source, target = np.asarray(source), np.asarray(target)
    match = match or (lambda a, b: a.shape == b.shape and bool(np.allclose(a, b, equal_nan=True)))
    plain = _fit_orders(source, target, after, match, lambda order: AxesPermutation(order), skip_identity=True)
    found = list(plain)
    for read in reads:
        if read == "batch_of_one":
            found += [dataclasses.replace(p, read=read, ndim=source.ndim) for p in plain]
            found += _fit_orders(source, target, after, match, lambda order: AxesPermutation(
                order, read=read, ndim=source.ndim + 1), skip_identity=False, ndim=source.ndim + 1)
        elif read == "stack_first" and source.ndim >= 3:
            found += _fit_orders(source, target, after, match, lambda order: AxesPermutation(
                order, read=read), skip_identity=False, ndim=4)
    return list(dict.fromkeys(found))


def _fit_orders(source, target, after, match, make, skip_identity, ndim=None):
    """The permutations ``make(order)`` (orders of ``ndim`` axes, source.ndim by default) whose ``after`` of
    ``apply(source)`` holds ``target``: swaps first (spelled each fixed way), then the other orders."""
    ndim = source.ndim if ndim is None else ndim
    swaps, others = [], []
    if ndim > 6:
        return []
    for order in itertools.permutations(range(ndim)):
        if skip_identity and list(order) == list(range(ndim)):
            continue
        perm = make(tuple(order))
        try:
            with np.errstate(all="ignore"):
                ways = after(perm.apply(source))
            if not any(w is not None and match(np.asarray(w), target) for w in ways):
                continue
        except Exception:
            continue
        moved = [k for k in range(ndim) if order[k] != k]
        if len(moved) == 2:
            swaps += [dataclasses.replace(make(tuple(order)), axes=p.axes, swap=True)
                      for p in swap_spellings(moved[0], moved[1], ndim)]
        others.append(perm)
    return swaps + others


def fixed_permutations(ndims, orders_of=()):
    """Every fixed-axes transpose code may write for arrays of the numbers of axes in ``ndims``, simplest first: each
    swap of two axes in each of its spellings (:func:`swap_spellings`), for each number of axes in turn, then each
    other order of ``orders_of`` axes (numbers of axes) as ``transpose(...)``; no identity, no repeat. For a family
    whose transpose happens inside the computation, where no output shows the transposed array to fit it to
    (the keys of attention, the heads of multi-head attention): each is tried on every input instead."""
    found = []
    for ndim in ndims:
        for i, j in itertools.combinations(range(ndim), 2):
            found += [p for p in swap_spellings(i, j, ndim) if p not in found]
    for ndim in orders_of:
        found += [p for p in (AxesPermutation(order) for order in itertools.permutations(range(ndim))
                              if list(order) != list(range(ndim))) if p not in found]
    return found


def what_it_swaps(perm, ndim, names):
    """'it swaps the heads' axis with each head's features (d_k)' style: what ``perm`` does to an array of ``ndim``
    axes named ``names`` (one name per axis); or that numpy refuses it there."""
    try:                        # axes of distinct sizes: each size tells where its axis went
        moved = [k - 2 for k in perm.apply(np.empty(tuple(range(2, ndim + 2)))).shape]
    except Exception:
        return f"numpy refuses it: {perm.formula()} names the axes of an array of another number of axes"
    changed = [k for k in range(ndim) if moved[k] != k]
    if not changed:
        return "it leaves every axis where it is"
    if len(changed) == 2:
        i, j = changed
        return f"it swaps {names[i]} with {names[j]}"
    return "it puts the axes in the order " + ", ".join(names[k] for k in moved)


__all__ += ["fixed_permutations", "what_it_swaps"]
