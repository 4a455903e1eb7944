"""The checker of ``positional_encoding``: a learner's ``fn(n, d_model)`` against sinusoidal_positional_encoding.

    PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))      (Vaswani et al. 2017, section 3.5)

Each misconception is one part of the formula written another way: the
layout of the columns (``concatenated``: all sines, then all cosines;
``sin_cos_swapped``), the exponent (``exponent_i_over_d``: 10000^(i/d)
instead of 10000^(2i/d); ``column_as_i`` and ``two_i_plus_one``: the column
number in place of i or 2i; ``multiplied``: pos times 10000^(2i/d)), the
unit (``degrees``, either way round: np.deg2rad or np.degrees; the verdict
says which), the positions (``positions_from_one``; ``first_row_zeros``:
row 0 kept blank for a padding token, the other rows right, so not a
shift) and the axes (``transposed``: shape (d_model, n), positions on the
columns; the key of the exercises' matrices with rows and columns swapped),
and the signature (``arguments_swapped``: written as
positional_encoding(d_model, n), so the battery's calls fn(n, d_model) swap
the two). Two faults have a parameter the checker fits (fitted.Family) and
names with the learner's own value: ``wrong_base`` (any base of the
frequencies but 10000) and ``positions_shifted`` (positions from any whole
number but 0 and 1). The keys
exponent_i_over_d, column_as_i, two_i_plus_one, multiplied, sin_cos_swapped
and degrees are those of SinusoidalEntryExercise (helpers/exercises/order.py) for
the same mistakes.
"""

from __future__ import annotations

import numpy as np

from helpers.checkers import checker_numeric, fitted
from helpers.checkers.battery import POSITIONAL
from helpers.checkers.runner import LOW_ATOL, matches
from helpers.positions import sinusoidal_positional_encoding

__all__ = ["FAULTS", "PIECE"]

FAULTS = {
    "concatenated": (
        "layout", "You put all the sines first and all the cosines after them. The formula interleaves them: "
        "column 2i holds the sine of pair i and column 2i + 1 its cosine (pe[:, 0::2] = sin, pe[:, 1::2] = cos)."),
    "sin_cos_swapped": (
        "layout", "Your even columns hold cosines and your odd ones sines. Even columns (2i) hold sines, odd "
        "columns (2i + 1) cosines: row 0 is 0, 1, 0, 1, ..."),
    "exponent_i_over_d": (
        "exponent", "Your exponent is i / d_model; the formula's is 2i / d_model (i counts pairs of columns), so "
        "your later pairs turn too fast (the same numbers as the base 100 with 2i / d_model). Use "
        "10000 ** (np.arange(0, d_model, 2) / d_model)."),
    "column_as_i": (
        "exponent", "You put the column number in place of i: the exponent is 2 * column / d_model. The i of the "
        "formula counts pairs of columns, so columns 2i and 2i + 1 share one rate: 10000 ** (2i / d_model)."),
    "two_i_plus_one": (
        "exponent", "Your exponent is the column number over d_model, so a cosine column turns at its own rate. "
        "Columns 2i and 2i + 1 share the exponent 2i / d_model; the + 1 only says it is the cosine of the pair."),
    "multiplied": (
        "exponent", "You multiplied the position by 10000^(2i/d_model). The formula divides: pos / 10000^(2i/d_model), "
        "so that later pairs turn more slowly."),
    "degrees": (
        "unit", "Your angles went through a conversion between degrees and radians. np.sin and np.cos take "
        "radians, and the formula's angle pos / 10000^(2i/d_model) is in radians already."),
    "positions_from_one": (
        "positions", "Your positions start at 1. The first token is at position 0, so row 0 is sin(0) = 0 and "
        "cos(0) = 1: pos = np.arange(n)."),
    "first_row_zeros": (
        "positions", "Your row 0 is all zeros; your other rows are right. Some code keeps row 0 blank for a padding "
        "token (pe[1:, 0::2] = np.sin(...)), but position 0 is the first token's: its row is sin(0) = 0, cos(0) = 1, "
        "so 0, 1, 0, 1, ... Fill every row: pe[:, 0::2] = np.sin(angles), pe[:, 1::2] = np.cos(angles)."),
    "transposed": (
        "axes", "Your encoding is transposed: positions on the columns, features on the rows, shape (d_model, n). "
        "Row pos must be the vector of position pos, shape (n, d_model): pos runs down, the columns across."),
    "arguments_swapped": (
        "arguments", "Arguments in the wrong order? Your function reads its first argument as d_model and its "
        "second as n; it is called positional_encoding(n, d_model), and with the two swapped it gives the right "
        "encoding. Put n first: def positional_encoding(n, d_model)."),
}
"""Every mistake the positional_encoding checker names: key -> (part, what it tells the learner)."""


BASE = 10000.0
"""The formula's base of the frequencies."""
UNIT_WAYS = {"read_as_degrees": np.deg2rad, "turned_into_degrees": np.rad2deg}
"""The two ways round of the ``degrees`` fault: the angle read as degrees (np.deg2rad, np.radians, * pi / 180),
or the radians turned into degrees before np.sin (np.degrees, np.rad2deg, * 180 / pi)."""


def _encoding(n, d_model, faults, base=BASE, shift=0.0, way=None):
    """The encoding with those faults, a base and a shift of the positions; ``way``: the ``degrees`` fault's way
    (None: both, as a list)."""
    if "degrees" in faults and way is None:
        return [_encoding(n, d_model, faults, base, shift, w) for w in UNIT_WAYS]
    pos = np.arange(n, dtype=float)[:, None] + shift + (1.0 if "positions_from_one" in faults else 0.0)
    column = np.arange(d_model)
    two_i = column - column % 2                                        # 2i for both columns of pair i
    exponent = {"exponent_i_over_d": two_i / 2, "column_as_i": 2 * column,
                "two_i_plus_one": column}.get(next((f for f in faults if FAULTS[f][0] == "exponent"), None), two_i)
    rate = base ** (exponent / d_model)
    angles = pos * rate if "multiplied" in faults else pos / rate
    if "degrees" in faults:
        angles = UNIT_WAYS[way](angles)
    sines = column % 2 == (1 if "sin_cos_swapped" in faults else 0)
    pe = np.where(sines, np.sin(angles), np.cos(angles))
    if "first_row_zeros" in faults:                                    # row 0 kept blank for a padding token
        pe[:1] = 0.0
    if "concatenated" in faults:                                       # the sines of every pair, then the cosines
        pe = np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)
    return pe.T if "transposed" in faults else pe


def _model(args, faults, base=BASE, shift=0.0):
    n, d_model = args["n"], args["d_model"]
    if "arguments_swapped" in faults:                                  # def positional_encoding(d_model, n)
        n, d_model = d_model, n
        if d_model % 2:
            return None                                                # an odd width: the learner's slices refuse it
    return _encoding(n, d_model, faults, base, shift)


def _unit_way(args, out):
    """The sentence that says which way round the ``degrees`` fault went in ``out`` (alone or with one other fault)."""
    others = [frozenset()] + [frozenset([k]) for k in FAULTS if FAULTS[k][0] != "unit"]
    for way in UNIT_WAYS:
        for more in others:
            faults = more | {"degrees"}
            n, d_model = (args["d_model"], args["n"]) if "arguments_swapped" in faults else (args["n"], args["d_model"])
            if d_model % 2 == 0 and matches(out, np.asarray(_encoding(n, d_model, faults, way=way), dtype=float)):
                return UNIT_WORDS[way]
    return "Drop the conversion."


UNIT_WORDS = {
    "read_as_degrees": "Yours reads it as degrees (np.deg2rad, np.radians or * np.pi / 180 makes it 57 times "
                       "smaller): drop the conversion.",
    "turned_into_degrees": "Yours turns it into degrees first (np.degrees, np.rad2deg or * 180 / np.pi makes it "
                           "57 times larger), and np.sin reads those degrees as radians: drop the conversion.",
}


# --------------------------------------------------------------------------
# Faults with a parameter (fitted.Family): another base, positions shifted by any whole number
# --------------------------------------------------------------------------

def _wrong_runs(runs):
    """The runs whose output has the right shape and is not the right one, smallest first."""
    return checker_numeric.wrong_runs(runs, lambda args: sinusoidal_positional_encoding(args["n"], args["d_model"]))


def _fit_base(runs):
    """The bases of the frequencies that give the learner's output, read off a wrong run with a pair after the
    first (the first turns at 1 radian per position whatever the base), and a second position: off the whole
    encoding, then off its even columns alone and its odd columns alone (each read as sines, then as cosines), so
    that a fault of the other columns (their exponent) or of the layout (sines and cosines swapped) leaves the base
    readable for the family combined with that fault."""
    for run in _wrong_runs(runs):
        n, d_model = run.case.args["n"], run.case.args["d_model"]
        if n < 2 or d_model < 4:
            continue
        pos = np.arange(n, dtype=float)[None, :, None]
        column = np.arange(d_model)
        found = []
        ways = [(column, column % 2 == 0)] + [(cols, np.full(cols.size, sine)) for cols in (column[0::2], column[1::2])
                                               for sine in (True, False)]
        for cols, sines in ways:             # the whole; the even columns as sines, as cosines; the odd ones
            exponent = (cols - cols % 2) / d_model

            def outputs(bases):
                angles = pos / np.asarray(bases, dtype=float)[:, None, None] ** exponent
                return np.where(sines, np.sin(angles), np.cos(angles))
            base = fitted.fit_scalar(outputs, run.out[:, cols], 1.5, 1e9)
            if base is not None:
                found += [b for b in fitted.nice_values(base) if b not in found]
            if found and len(cols) == d_model:
                break
        return found
    return []


def _base_words(base, run):
    return (f"Your frequencies use the base {fitted.number(base)}: pos / {fitted.number(base)}^(2i/d_model). "
            f"The formula's base is 10000: pos / 10000^(2i/d_model), so that the slowest pair turns once in about "
            f"60000 positions. Write 10000.0 ** (np.arange(0, d_model, 2) / d_model).")


def _fit_shift(runs):
    """Whole numbers s with row 0 the encoding of position s, read off the slowest pair (its angle s / 10000^((d_model
    - 2)/d_model) stays below pi for any shift under 300)."""
    found = []
    for run in _wrong_runs(runs):
        d_model = run.case.args["d_model"]
        if d_model < 4:
            continue
        angle = np.arctan2(run.out[0, d_model - 2], run.out[0, d_model - 1])
        s = int(np.round(angle * BASE ** ((d_model - 2) / d_model)))
        if s not in found and s not in (0, 1):       # 1 is positions_from_one, a fault of its own
            found.append(s)
    return found


def _shift_words(shift, run):
    return (f"Your positions start at {shift}: your row 0 is the encoding of position {shift}, row 1 of position "
            f"{shift + 1}, and so on (an offset such as a padding index or a cache's length, carried in). "
            "The first token is at position 0, so row 0 is sin(0) = 0 and cos(0) = 1: pos = np.arange(n).")


FAMILIES = (
    fitted.Family("wrong_base", "base", _fit_base,
                  lambda args, base, faults=frozenset(): _model(args, faults, base=base),
                  _base_words, right=lambda base: abs(base - BASE) <= 1e-6 * BASE),
    fitted.Family("positions_shifted", "positions", _fit_shift,
                  lambda args, shift, faults=frozenset(): _model(args, faults, shift=float(shift)), _shift_words,
                  right=lambda shift: shift in (0, 1)),
)
"""The faults with a parameter, tried after the fixed ones: another base (named with the learner's own), positions
shifted by any whole number other than 1 (``positions_from_one``, a fixed fault)."""


def _float16_atol(args):
    """How far a right encoding computed in float16 may be off at each position: its angle pos / 10000^(2i/d_model),
    rounded to float16, is off by up to about 2^-11 pos radians (0.02 at position 40); plus LOW_ATOL."""
    return LOW_ATOL + 2.0 ** -11 * np.arange(args["n"], dtype=float)[:, None]


PIECE = checker_numeric.Piece(
    name="positional_encoding", cases=POSITIONAL, arguments=("n", "d_model"),
    expected=lambda a: sinusoidal_positional_encoding(a["n"], a["d_model"]), model=_model, faults=FAULTS,
    shape="(n, d_model)", returns="the encoding", notes={"degrees": _unit_way}, families=FAMILIES,
    low_atol=_float16_atol,
    hint="Print yours for n = 4, d_model = 4 beside sinusoidal_positional_encoding(4, 4): row 0 is 0, 1, 0, 1.")
