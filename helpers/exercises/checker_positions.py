"""The checker of ``positional_encoding``: a learner's ``fn(n, d_model)`` against sinusoidal_positional_encoding.

    PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))      (Vaswani et al. 2017, section 3.5)

Each misconception is one part of the formula written another way: the
layout of the columns (``concatenated``: all sines, then all cosines;
``sin_cos_swapped``), the exponent (``exponent_i_over_d``: 10000^(i/d)
instead of 10000^(2i/d); ``column_as_i`` and ``two_i_plus_one``: the column
number in place of i or 2i; ``multiplied``: pos times 10000^(2i/d)), the
unit (``degrees``), the positions (``positions_from_one``) and the axes
(``transposed``: shape (d_model, n), positions on the columns; the key of
the exercises' matrices with rows and columns swapped), and the signature
(``arguments_swapped``: written as positional_encoding(d_model, n), so the
battery's calls fn(n, d_model) swap the two). The keys
exponent_i_over_d, column_as_i, two_i_plus_one, multiplied, sin_cos_swapped
and degrees are those of notebook 06's SinusoidalEntryExercise for the same
mistakes.
"""

from __future__ import annotations

import numpy as np

from helpers.exercises import checker_numeric
from helpers.exercises.battery import POSITIONAL
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
        "your later pairs turn too fast. Use 10000 ** (np.arange(0, d_model, 2) / d_model)."),
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
        "unit", "Your angles are read as degrees. np.sin and np.cos take radians, and the formula's angle is "
        "pos / 10000^(2i/d_model) radians: drop the conversion (np.deg2rad or * np.pi / 180)."),
    "positions_from_one": (
        "positions", "Your positions start at 1. The first token is at position 0, so row 0 is sin(0) = 0 and "
        "cos(0) = 1: pos = np.arange(n)."),
    "transposed": (
        "axes", "Your encoding is transposed: positions on the columns, features on the rows, shape (d_model, n). "
        "Row pos must be the vector of position pos, shape (n, d_model): pos runs down, the columns across."),
    "arguments_swapped": (
        "arguments", "Arguments in the wrong order? Your function reads its first argument as d_model and its "
        "second as n; it is called positional_encoding(n, d_model), and with the two swapped it gives the right "
        "encoding. Put n first: def positional_encoding(n, d_model)."),
}
"""Every mistake the positional_encoding checker names: key -> (part, what it tells the learner)."""


def _model(args, faults):
    n, d_model = args["n"], args["d_model"]
    if "arguments_swapped" in faults:                                  # def positional_encoding(d_model, n)
        n, d_model = d_model, n
        if d_model % 2:
            return None                                                # an odd width: the learner's slices refuse it
    pos = np.arange(n, dtype=float)[:, None] + (1.0 if "positions_from_one" in faults else 0.0)
    column = np.arange(d_model)
    two_i = column - column % 2                                        # 2i for both columns of pair i
    exponent = {"exponent_i_over_d": two_i / 2, "column_as_i": 2 * column,
                "two_i_plus_one": column}.get(next((f for f in faults if FAULTS[f][0] == "exponent"), None), two_i)
    rate = 10000.0 ** (exponent / d_model)
    angles = pos * rate if "multiplied" in faults else pos / rate
    if "degrees" in faults:
        angles = np.deg2rad(angles)
    sines = column % 2 == (1 if "sin_cos_swapped" in faults else 0)
    pe = np.where(sines, np.sin(angles), np.cos(angles))
    if "concatenated" in faults:                                       # the sines of every pair, then the cosines
        pe = np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)
    return pe.T if "transposed" in faults else pe


PIECE = checker_numeric.Piece(
    name="positional_encoding", cases=POSITIONAL, arguments=("n", "d_model"),
    expected=lambda a: sinusoidal_positional_encoding(a["n"], a["d_model"]), model=_model, faults=FAULTS,
    shape="(n, d_model)", returns="the encoding",
    hint="Print yours for n = 4, d_model = 4 beside sinusoidal_positional_encoding(4, 4): row 0 is 0, 1, 0, 1.")

