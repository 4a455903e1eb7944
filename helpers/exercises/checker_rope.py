"""The checker of ``rope``: a learner's ``fn(x, positions=None)`` against helpers.positions.apply_rope.

    out[2i]     = x[2i] cos(m theta_i) - x[2i+1] sin(m theta_i)
    out[2i + 1] = x[2i] sin(m theta_i) + x[2i+1] cos(m theta_i),   theta_i = 10000^(-2i/d)

for the token at position m (Su et al. 2021, RoFormer, section 3.4.2, eq. 34).
Each misconception is one part of the formula written another way: the
frequencies (``frequency_exponent``: 10000^(-i/d) instead of 10000^(-2i/d);
``frequency_inverted``: 10000^(+2i/d); ``pair_index_ignored``: pair 0's rate
for every pair), the direction (``rotation_sign``; ``not_rotated``: x given
back), the unit (``degrees``, notebook 06's key), the positions
(``positions_from_one`` when none are given, ``positions_ignored``; the two
together are positions from 1 whatever is given) and the pairing
(``rotate_half_layout``: feature i turned with feature i + d/2, the layout of
several libraries, valid when queries and keys both use it, but not the
paper's pairing this piece asks for; ``not_interleaved``: the right pairs,
written back as all first features, then all second).
"""

from __future__ import annotations

import numpy as np

from helpers.exercises import checker_numeric
from helpers.exercises.battery import ROPE
from helpers.positions import apply_rope

__all__ = ["FAULTS", "PIECE"]

FAULTS = {
    "frequency_exponent": (
        "frequency", "Your pair i turns at 10000^(-i/d); the paper's rate is 10000^(-2i/d) (i counts pairs), so your "
        "later pairs turn too fast. Use 10000.0 ** (-np.arange(0, d, 2) / d)."),
    "frequency_inverted": (
        "frequency", "Your pairs turn at 10000^(+2i/d), faster and faster. The exponent is negative: pair 0 turns one "
        "radian per position, later pairs ever more slowly."),
    "rotation_sign": (
        "sign", "You turned each pair the other way (by -m theta_i). The paper's rotation is "
        "out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i] sin + x[2i+1] cos. (Turning queries and keys both the "
        "other way would still give relative scores, but it is not the rotation asked for.)"),
    "pair_index_ignored": (
        "frequency", "Every pair of yours turns at pair 0's rate, one radian per position. Pair i turns at "
        "10000^(-2i/d): compute one rate per pair, 10000.0 ** (-np.arange(0, d, 2) / d)."),
    "not_rotated": (
        "sign", "Nothing turned: your output equals x. Turn pair (2i, 2i + 1) of the token at position m by the "
        "angle m theta_i."),
    "degrees": (
        "unit", "Your angles are read as degrees. np.cos and np.sin take radians, and so does the formula: "
        "m theta_i is the angle in radians."),
    "positions_from_one": (
        "start", "Your positions start at 1. With positions=None the first token is at position 0, where "
        "nothing turns: m = np.arange(n)."),
    "positions_ignored": (
        "given", "You ignored the positions given and counted your own (0, 1, 2, ...) always. Use them when they "
        "are not None (fractions allowed)."),
    "rotate_half_layout": (
        "layout", "You paired feature i with feature i + d/2 (the 'rotate half' layout of several libraries). That is "
        "a valid rotary embedding when queries and keys both use it, but this piece asks for the paper's pairing: "
        "neighbours (2i, 2i + 1), x[..., 0::2] and x[..., 1::2]."),
    "not_interleaved": (
        "layout", "Your pairs are turned right but written back as all first features, then all second "
        "(out[..., :d//2], out[..., d//2:]): write the two results into out[..., 0::2] and out[..., 1::2] instead."),
}
"""Every mistake the rope checker names: key -> (part, what it tells the learner)."""


def _model(args, faults):
    x = np.asarray(args["x"], dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    given = args["positions"]
    if "not_rotated" in faults:
        return np.array(x)
    counted = given is None or "positions_ignored" in faults          # 0 .. n-1 (or 1 .. n) counted, not read
    m = np.arange(n, dtype=float) if counted else np.asarray(given, float)
    if counted and "positions_from_one" in faults:
        m = m + 1.0
    exponent = {"frequency_exponent": -np.arange(d // 2) / d,
                "frequency_inverted": np.arange(0, d, 2) / d,
                "pair_index_ignored": np.zeros(d // 2)}.get(
        next((f for f in faults if FAULTS[f][0] == "frequency"), None), -np.arange(0, d, 2) / d)
    angle = m[:, None] * 10000.0 ** exponent * (-1.0 if "rotation_sign" in faults else 1.0)
    if "degrees" in faults:
        angle = np.deg2rad(angle)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = ((slice(0, d // 2), slice(d // 2, d)) if "rotate_half_layout" in faults
                     else (slice(0, d, 2), slice(1, d, 2)))
    out = np.empty(x.shape)
    turned = x[..., first] * cos - x[..., second] * sin, x[..., first] * sin + x[..., second] * cos
    if "not_interleaved" in faults:
        first, second = slice(0, d // 2), slice(d // 2, d)
    out[..., first], out[..., second] = turned
    return out


PIECE = checker_numeric.Piece(
    name="rope", cases=ROPE, arguments=("x",), optional={"positions": (("positions", "pos", "position_ids", "m"), 1)},
    expected=lambda a: apply_rope(a["x"], a["positions"]), model=_model, faults=FAULTS,
    shape="(..., n, d), the shape of x", returns="the rotated array",
    hint="Print yours for x = [[1, 0]] * 3 (d = 2) beside apply_rope: row m must be (cos m, sin m).")
