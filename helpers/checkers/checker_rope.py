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
written back as all first features, then all second). ``degrees`` is either
way round (np.deg2rad or np.degrees; the verdict says which). Faults with a
parameter the checker fits (fitted.Family), named with the learner's own
value: ``wrong_base`` (any base but 10000, such as Llama's 500000),
``positions_shifted`` (counted positions from any whole number, and the
given ones shifted too or not; a shift by 1 of both is ``positions_from_one``)
and ``rope_layout_mixed`` (a pairing with the other pairing's frequency
layout: rotate_half with repeat_interleave frequencies, or neighbour pairs
with concatenated ones).
"""

from __future__ import annotations

import numpy as np

from helpers.checkers import checker_numeric, fitted
from helpers.checkers.battery import ROPE
from helpers.checkers.runner import LOW_ATOL, matches
from helpers.positions import apply_rope

__all__ = ["FAULTS", "PIECE"]

FAULTS = {
    "frequency_exponent": (
        "frequency", "Your pair i turns at 10000^(-i/d); the paper's rate is 10000^(-2i/d) (i counts pairs), so your "
        "later pairs turn too fast (the same numbers as the base 100 with -2i/d). Use "
        "10000.0 ** (-np.arange(0, d, 2) / d)."),
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
        "unit", "Your angles went through a conversion between degrees and radians. np.cos and np.sin take "
        "radians, and the formula's angle m theta_i is in radians already."),
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


BASE = 10000.0
"""The paper's base of the frequencies."""
UNIT_WAYS = {"read_as_degrees": np.deg2rad, "turned_into_degrees": np.rad2deg}
"""The two ways round of the ``degrees`` fault: the angle read as degrees (np.deg2rad, np.radians, * pi / 180),
or the radians turned into degrees before np.cos (np.degrees, np.rad2deg, * 180 / pi)."""
UNIT_WORDS = {
    "read_as_degrees": "Yours reads it as degrees (np.deg2rad, np.radians or * np.pi / 180 makes it 57 times "
                       "smaller): drop the conversion.",
    "turned_into_degrees": "Yours turns it into degrees first (np.degrees, np.rad2deg or * 180 / np.pi makes it "
                           "57 times larger), and np.cos reads those degrees as radians: drop the conversion.",
}


def _rope(args, faults, base=BASE, shift=0.0, given_too=False, way=None, mixed=None, count_axis=-2):
    """The rotated x with those faults; base: of the frequencies; shift: added to the positions counted (and to
    those given, ``given_too``); way: the ``degrees`` fault's way round (None: both, as a list); mixed: a pairing
    with the other pairing's frequency layout ("half": feature i with i + d/2, the frequencies repeated for
    neighbours; "neighbour": (2i, 2i + 1), the frequencies laid out for halves); count_axis: the axis of x whose
    length the positions counted run to (0: np.arange(x.shape[0]), which numpy refuses to broadcast in a batch)."""
    if "degrees" in faults and way is None:
        return [_rope(args, faults, base, shift, given_too, w, mixed, count_axis) for w in UNIT_WAYS]
    x = np.asarray(args["x"], dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    given = args["positions"]
    if "not_rotated" in faults:
        return np.array(x)
    counted = given is None or "positions_ignored" in faults          # 0 .. n-1 (or 1 .. n) counted, not read
    m = np.arange(x.shape[count_axis], dtype=float) if counted else np.asarray(given, float)
    if counted and "positions_from_one" in faults:
        m = m + 1.0
    if counted or given_too:
        m = m + shift
    exponent = {"frequency_exponent": -np.arange(d // 2) / d,
                "frequency_inverted": np.arange(0, d, 2) / d,
                "pair_index_ignored": np.zeros(d // 2)}.get(
        next((f for f in faults if FAULTS[f][0] == "frequency"), None), -np.arange(0, d, 2) / d)
    angle = m[:, None] * base ** exponent * (-1.0 if "rotation_sign" in faults else 1.0)
    if "degrees" in faults:
        angle = UNIT_WAYS[way](angle)
    if mixed is not None:                                              # one angle per feature, then x cos + rot(x) sin
        if mixed == "half":                                            # torch's repeat_interleave with rotate_half
            angle, turned = np.repeat(angle, 2, axis=-1), np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
        else:                                                          # cat((freqs, freqs)) with rotate_every_two
            angle, turned = np.concatenate([angle, angle], -1), np.stack([-x[..., 1::2], x[..., 0::2]], -1)
            turned = turned.reshape(x.shape)
        return x * np.cos(angle) + turned * np.sin(angle)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = ((slice(0, d // 2), slice(d // 2, d)) if "rotate_half_layout" in faults
                     else (slice(0, d, 2), slice(1, d, 2)))
    out = np.empty(x.shape)
    turned = x[..., first] * cos - x[..., second] * sin, x[..., first] * sin + x[..., second] * cos
    if "not_interleaved" in faults:
        first, second = slice(0, d // 2), slice(d // 2, d)
    out[..., first], out[..., second] = turned
    return out


def _model(args, faults):
    return _rope(args, faults)


def _unit_way(args, out):
    """The sentence that says which way round the ``degrees`` fault went in ``out`` (alone or with one other fault)."""
    for way in UNIT_WAYS:
        for more in [frozenset()] + [frozenset([k]) for k in FAULTS if FAULTS[k][0] != "unit"]:
            if matches(out, _rope(args, more | {"degrees"}, way=way)):
                return UNIT_WORDS[way]
    return "Drop the conversion."


# --------------------------------------------------------------------------
# Faults with a parameter (fitted.Family): another base, shifted positions, a pairing with the other's frequencies
# --------------------------------------------------------------------------

def _wrong_runs(runs):
    """The runs whose output has the right shape and is not the right one, smallest first."""
    return checker_numeric.wrong_runs(runs, lambda args: apply_rope(args["x"], args["positions"]))


def _fit_base(runs):
    """The base that gives the learner's output, fitted on a wrong run with a pair after the first (pair 0 turns
    at one radian per position whatever the base)."""
    for run in _wrong_runs(runs):
        if run.out.shape[-1] < 4:
            continue
        base = fitted.fit_scalar(lambda bases: np.stack([_rope(run.case.args, (), base=b) for b in bases]),
                                 run.out, 1.5, 1e9)
        return [] if base is None else fitted.nice_values(base)
    return []


def _base_words(base, run):
    return (f"Your frequencies use the base {fitted.number(base)}: theta_i = {fitted.number(base)}^(-2i/d). "
            "That base is a choice some models make, but this piece asks for the paper's, 10000: "
            "theta_i = 10000.0 ** (-np.arange(0, d, 2) / d).")


def _fit_shift(runs):
    """(s, given_too): the whole number s added to the positions, read off the slowest pair of one token of a wrong
    run (its rate is at most 0.01, so the angle tells s for any shift under 300); given_too: added to the
    positions given as well."""
    found = []
    for run in _wrong_runs(runs):
        x, out = (np.asarray(a, dtype=float) for a in (run.case.args["x"], run.out))
        n, d = x.shape[-2], x.shape[-1]
        if d < 4:
            continue
        x, out = x.reshape(-1, n, d)[0], out.reshape(-1, n, d)[0]
        a, b, a2, b2 = x[:, d - 2], x[:, d - 1], out[:, d - 2], out[:, d - 1]
        t = int(np.argmax(a * a + b * b))
        angle = np.arctan2(a[t] * b2[t] - b[t] * a2[t], a[t] * a2[t] + b[t] * b2[t])
        given = run.case.args["positions"]
        m = float(t if given is None else given[t])
        s = int(np.round(angle / BASE ** (-(d - 2) / d) - m))
        for value in ((s, False), (s, True)):
            if value not in found and s != 0:
                found.append(value)
    return found


def _shift_words(value, run):
    s, given_too = value
    also = (" You add it to the positions given too: use those as they are." if given_too else
            " (The positions given, you use as they are: right.)")
    return (f"Your positions are shifted by {s}: with positions=None your first token turns as if at position {s}, "
            f"the next at {s + 1}, and so on (an offset such as a cache's length, carried in). With positions=None "
            f"the first token is at position 0, where nothing turns: m = np.arange(n).{also}")


def _from_one_words(value, run):
    return FAULTS["positions_from_one"][1] + " You add 1 to the positions given too: use those as they are."


MIXED_WORDS = {
    "half": "You paired feature i with feature i + d/2 (rotate_half), but laid the frequencies out for neighbouring "
            "pairs (np.repeat(theta, 2), torch's repeat_interleave: features 2i and 2i + 1 share theta_i), so the two "
            "features of a pair turn at different rates and nothing is a rotation. Each pairing has its own layout: "
            "rotate_half goes with np.concatenate([theta, theta]); this piece asks for the paper's neighbours "
            "(2i, 2i + 1), x[..., 0::2] and x[..., 1::2], which go with np.repeat(theta, 2).",
    "neighbour": "You paired neighbours (2i, 2i + 1), as the paper does, but laid the frequencies out for the rotate-half "
                 "pairing (np.concatenate([theta, theta]): feature j turns at theta_(j mod d/2)), so the two features "
                 "of a pair turn at different rates and nothing is a rotation. Neighbour pairs share one rate: "
                 "features 2i and 2i + 1 both turn at theta_i, np.repeat(theta, 2).",
}


BROADCAST = "could not be broadcast"
"""What numpy says when the positions counted along the wrong axis meet the tokens (ValueError)."""


def _fit_count_axis(runs):
    """[0] when the positions look counted along x's first axis, np.arange(x.shape[0]) (or len(x)): right for one
    sentence (n, d), refused by numpy in a batch (B, n, d), so every call that raised raised numpy's broadcast
    error, and at least one did."""
    raised = [run for run in runs if run.error is not None]
    if raised and all(isinstance(run.error, ValueError) and BROADCAST in str(run.error) for run in raised):
        return [0]
    return []


def _count_axis_words(axis, run):
    x = np.asarray(run.case.args["x"])
    here = (f" (here {x.shape[0]} positions for {x.shape[-2]} tokens)" if x.ndim > 2 else "")
    return ("You count the positions along x's first axis, np.arange(x.shape[0]) (or len(x)): for one sentence "
            "(n, d) that is n, but for a batch (B, n, d) it is the batch size B, so there are B positions where there "
            f"are n tokens{here}, and numpy refuses to broadcast them. Count the tokens along the "
            "second-to-last axis: np.arange(x.shape[-2]).")


FAMILIES = (
    fitted.Family("wrong_base", "frequency", _fit_base,
                  lambda args, base, faults=(): _rope(args, faults, base=base), _base_words,
                  right=lambda base: abs(base - BASE) <= 1e-6 * BASE),
    fitted.Family("positions_from_one", "start", lambda runs: [v for v in _fit_shift(runs) if v == (1, True)],
                  lambda args, value, faults=(): _rope(args, faults, shift=1.0, given_too=True), _from_one_words),
    fitted.Family("positions_shifted", "start", lambda runs: [v for v in _fit_shift(runs) if v[0] != 1],
                  lambda args, value, faults=(): _rope(args, faults, shift=float(value[0]), given_too=value[1]), _shift_words),
    fitted.Family("rope_layout_mixed", "layout", lambda runs: list(MIXED_WORDS),
                  lambda args, mixed, faults=(): _rope(args, faults, mixed=mixed), lambda mixed, run: MIXED_WORDS[mixed]),
    fitted.Family("positions_from_first_axis", "count", _fit_count_axis,
                  lambda args, axis, faults=(): _rope(args, faults, count_axis=axis), _count_axis_words),
)
"""The faults with a parameter, tried after the fixed ones: another base (named with the learner's own), positions
shifted by any whole number (by 1 also where given: ``positions_from_one``), a pairing with the other pairing's
frequency layout (``rope_layout_mixed``, saying which), positions counted along x's first axis
(``positions_from_first_axis``: np.arange(x.shape[0]), numpy's broadcast error on a batch)."""


def _float16_atol(args):
    """How far a right RoPE computed in float16 may be off at each token: its angle m theta_i, rounded to float16, is
    off by up to about 2^-11 m radians, which moves an entry by that much times the entries' size (positions from
    100 make that 0.05 of it); plus the rounding every float16 computation has (LOW_ATOL of the size)."""
    x = np.asarray(args["x"], dtype=float)
    m = np.arange(x.shape[-2], dtype=float) if args["positions"] is None else np.asarray(args["positions"], float)
    size = max(1.0, float(np.abs(x).max()))
    return (LOW_ATOL + 2.0 ** -11 * np.abs(m)[:, None]) * size


PIECE = checker_numeric.Piece(
    name="rope", cases=ROPE, arguments=("x",), optional={"positions": (("positions", "pos", "position_ids", "m"), 1)},
    expected=lambda a: apply_rope(a["x"], a["positions"]), model=_model, faults=FAULTS,
    shape="(..., n, d), the shape of x", returns="the rotated array", notes={"degrees": _unit_way},
    families=FAMILIES, low_atol=_float16_atol,
    hint="Print yours for x = np.ones((3, 4)) beside apply_rope(np.ones((3, 4))): row 0 stays 1, 1, 1, 1, and row m "
         "turns pair (0, 1) by m radians and pair (2, 3) by m / 100.")
