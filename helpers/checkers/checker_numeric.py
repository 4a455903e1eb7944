"""What the checkers of the pieces after attention share: a battery, the course's function, a model with named faults.

A piece (:class:`Piece`) is its battery of inputs (battery.py), the
course's own function, and a model of the computation in which each
misconception is one named part done wrong (a fault key). :func:`check`
runs the learner's function on every input, and when it is wrong looks for
the simplest explanation, as the attention checker does: the model with one
fault, then with two faults of different parts, then with a fault with a
parameter fitted to the output (fitted.Family) alone, then with one fixed
fault of another part, that gives the same numbers on every input. The verdict names the faults (joined with "+"),
says how to fix each, names the first input where the function went wrong
and shows its output beside the expected one, with as many digits as it
takes to see them differ. A right function computed in float16 is
``low_precision``; a stub is ``not_attempted``; what is not a computation
at all (raises, exits, None, text, the wrong shape, NaN) gets the key every
piece shares. It never raises because of what the function does.

Used by checker_heads.py, checker_positions.py and checker_backward.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from helpers.checkers import fitted
from helpers.checkers.runner import (
    LOW_ATOL, LOW_PRECISION, LOW_RTOL, Diagnosis, call, failed, fmt_pair, fn_name, matches, mutation_words,
    not_attempted, parameter, raised_words, read_numbers, side_by_side, too_slow,
)

__all__ = ["Piece", "check"]


@dataclass(frozen=True)
class Piece:
    """One piece of the course as its checker sees it.

    name: the piece ("split_heads"). cases: its battery (battery.Input, args by the signature's names).
    arguments: the names passed by position, in order. optional: name -> (names learners use, position)
    for an argument passed only when a case has it (a mask): read from the signature, a parameter of
    any name at that position with default None counts. defaults: name -> the workbook's default of an optional
    argument that has one (layer_norm's eps), which the advice to add a missing one then names.
    expected: args -> the course's output. model: (args, faults) -> the output of the computation with
    those faults (a frozenset of keys; empty: the right way), a list of outputs when a fault can be
    written two ways, or None where numpy refuses it.
    faults: key -> (part, what it tells the learner); two faults of one part are never combined.
    shape: the output's shape in words ("(..., num_heads, n, d_k)"). returns: what to return ("the heads").
    pair: the function may return (output, weights); the output is checked.
    hint: what to compare when no fault explains the output.
    notes: key -> (args, output) -> a sentence or None: said after that fault's text when the output of the
    first input that went wrong calls for it (a fault written two ways, each needing its own words).
    families: faults with a parameter (fitted.Family), tried when no fixed fault explains the output, alone and
    then (a family whose model takes faults: (args, value, faults)) with one fixed fault of another part; the
    verdict names the learner's own value.
    low_atol: args -> how far a right function computed in float16 may be off (a number, or an array that broadcasts
    against the output), where that grows with something else than the entries' size (an angle m theta rounded to
    float16 is off by about 2^-11 m radians); None: LOW_ATOL times the largest entry.
    """

    name: str
    cases: tuple
    arguments: tuple
    expected: Callable
    model: Callable
    faults: dict
    shape: str
    returns: str
    hint: str
    optional: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    pair: bool = False
    notes: dict = field(default_factory=dict)
    families: tuple = ()
    low_atol: Callable | None = None

    def check(self, fn, time_limit):
        """Run ``fn`` on this piece's battery and return its Diagnosis (what diagnose calls)."""
        return check(self, fn, time_limit)


def _predictions(piece, args, keys):
    return fitted.outputs_of(lambda: piece.model(args, frozenset(keys)))


def _agrees(run, predictions, right_shape):
    """Does the function's result on this case look like one of the model's predictions?"""
    if predictions is None:                        # numpy refused: the function must have failed too
        return run.out is None or run.out.shape != right_shape
    return run.out is not None and any(matches(run.out, p) for p in predictions)


def _explain(piece, runs):
    """The keys of the simplest model that gives what the function gave on every input, or None."""
    keys = list(piece.faults)
    candidates = [(k,) for k in keys] + [(a, b) for a, b in itertools.combinations(keys, 2)
                                         if piece.faults[a][0] != piece.faults[b][0]]
    shapes = [np.shape(piece.expected(run.case.args)) for run in runs]
    for candidate in candidates:
        if all(_agrees(run, _predictions(piece, run.case.args, candidate), shape) for run, shape in zip(runs, shapes)):
            return list(candidate)
    return None


def _run(piece, fn, case, time_limit, places):
    args = [(name, case.args[name]) for name in piece.arguments]
    kwargs = {}
    for name, place in places.items():
        if case.args.get(name) is not None:
            how, where = place
            if how == "position":
                args.append((name, case.args[name]))
            else:
                kwargs[where] = case.args[name]
    run = call(fn, case, args, kwargs, time_limit, read=lambda value: read_numbers(value, pair=piece.pair))
    run.mutated = tuple(m if m in case.args else next(iter(piece.optional), m) for m in run.mutated)
    return run


def _first_difference(piece, run):
    """Where the output first differs, shown beside the expected one; or what went wrong instead."""
    expected = np.asarray(piece.expected(run.case.args), dtype=float)
    if run.out is None:
        return raised_words(run, None)
    out = run.out
    if out.shape != expected.shape:
        return f"It returned shape {out.shape}; the output must have shape {piece.shape} = {expected.shape}."
    with np.errstate(all="ignore"):
        bad = ~np.isclose(out, expected, rtol=1e-4, atol=1e-6).all(axis=-1)
    if out.ndim <= 1:
        yours, wanted = fmt_pair(out, expected)
        return f"Its output: yours {yours}, expected {wanted}."
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else (0,) * (out.ndim - 1)
    yours, wanted = fmt_pair(out[where], expected[where])
    text = f"First differing row, at [{', '.join(map(str, where))}]: yours {yours}, expected {wanted}."
    block = where[:-1]
    if out[block].shape[0] <= 8 and out.shape[-1] <= 8:
        text += "\nYour output beside the expected one" + (f" at {list(block)}" if block else "") + ":\n"
        text += side_by_side(out[block], expected[block])
    return text


def _unexplained(piece, run, name):
    found = failed(run, name, piece.returns)
    if found is not None:
        if found[0] == "raised" and isinstance(run.error, TypeError):
            missing = [n for n in piece.optional if run.case.args.get(n) is not None and n in str(run.error)]
            if missing:
                arg = missing[0]
                if arg in piece.defaults:       # a default the workbook's signature gives (layer_norm's eps=1e-12)
                    return f"no_{arg}_argument", (f"{name} takes no {arg}. Give it one, {arg}={piece.defaults[arg]!r} "
                                                  "as the workbook's signature has it, and use the value it is given.")
                return f"no_{arg}_argument", (f"{name} takes no {arg}. Give it one, {arg}=None, "
                                              "and use it when it is not None.")
        return found
    if run.problem is not None:
        return "not_numbers", f"{name} returns something that is not an array of numbers."
    want = np.shape(piece.expected(run.case.args))
    if run.out.shape != want:
        return "wrong_shape", f"{name} returns the wrong shape: the output must have shape {piece.shape}."
    if not np.all(np.isfinite(run.out)):
        return "nan_inf", f"{name} returns NaN or inf where the output is finite."
    return "different", (f"{name} gives a different output, and none of the mistakes diagnose knows explains it. "
                         + piece.hint)


def wrong_runs(runs, expected):
    """The runs whose output has the shape of ``expected(args)`` (the course's output) and is not it, smallest
    first: where a family reads its value off the learner's numbers (a base, a shift)."""
    found = []
    for run in runs:
        want = np.asarray(expected(run.case.args))
        if run.out is not None and run.out.shape == want.shape and not matches(run.out, want):
            found.append(run)
    return sorted(found, key=lambda run: run.out.size)


def _size(a):
    """The largest finite entry's size, at least 1: float16 rounds a sum of products relative to its terms, so
    an entry that cancels to near 0 is off by about as much as the largest (a layer of multi-head attention)."""
    finite = np.abs(a[np.isfinite(a)])
    return max(1.0, float(finite.max())) if finite.size else 1.0


def _low_atol(piece, run, want):
    """The absolute tolerance of a right function computed in float16 on this run (Piece.low_atol)."""
    if piece.low_atol is not None:
        try:
            return np.asarray(piece.low_atol(run.case.args), dtype=float)
        except Exception:                  # a tolerance never turns a verdict into a crash
            pass
    return LOW_ATOL * _size(want)


def _note(piece, key, run):
    """The fault's note for this run's output (" " and the sentence), or ""."""
    if key not in piece.notes or run.out is None:
        return ""
    try:
        with np.errstate(all="ignore"):
            said = piece.notes[key](run.case.args, run.out)
    except Exception:                      # a note never turns a verdict into a crash
        return ""
    return " " + said if said else ""


def check(piece, fn, time_limit):
    """Run ``fn`` on the piece's battery and return its Diagnosis (never raises because of ``fn``)."""
    places = {name: parameter(fn, names, position, default_none=True) or ("keyword", names[0])
              for name, (names, position) in piece.optional.items()}
    runs = []
    for case in piece.cases:
        runs.append(_run(piece, fn, case, time_limit, places))
        if not runs[-1].finished:
            break
    for early in (not_attempted(fn, runs, piece.name), too_slow(fn, runs, piece.name)):
        if early is not None:
            return early
    name = fn_name(fn)
    changes, mutated = mutation_words(runs, list(piece.arguments) + list(piece.optional))
    expected = [np.asarray(piece.expected(run.case.args), dtype=float) for run in runs]
    right = [run.out is not None and matches(run.out, want) for run, want in zip(runs, expected)]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right output on every input, but {changes}",
                             None, piece.name)
        text = (f"Correct! {name} gives the right output on all {len(runs)} inputs "
                f"({', '.join(run.case.name for run in runs)}).")
        if any(run.printed for run in runs):
            text += " (It prints while it runs; diagnose kept that out of sight.)"
        return Diagnosis(True, None, text, None, piece.name)
    also = f"\nAlso, {changes}" if mutated else ""
    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(piece, first)}"
    if all(run.out is not None and matches(run.out, want, None, LOW_RTOL, _low_atol(piece, run, want))
           for run, want in zip(runs, expected)):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}",
                         first.case.name, piece.name)
    keys = _explain(piece, runs)
    if keys is not None:
        text = "\n".join(piece.faults[k][1] + _note(piece, k, first) for k in keys)
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name, piece.name)
    found = fitted.explain_with_faults(
        piece.families, runs, lambda run, family, value, faults: _agrees(
            run, family.predict(run.case.args, value, faults), np.shape(piece.expected(run.case.args))),
        faults_for=lambda family: [{k} for k in piece.faults if piece.faults[k][0] != family.part],
        wrong=[run for run, ok in zip(runs, right) if not ok],
        accept=lambda family, value, faults: any(family.predict(run.case.args, value, faults) is not None
                                                 for run in runs))          # refused everywhere: it raised
    if found is not None:
        family, value, faults = found
        keys = [family.key] + [k for k in piece.faults if k in faults]
        text = "\n".join([family.words(value, first)] + [piece.faults[k][1] + _note(piece, k, first) for k in keys[1:]])
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name, piece.name)
    key, text = _unexplained(piece, first, name)
    return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, piece.name)
