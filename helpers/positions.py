"""Position information: where each token stands.

Attention alone cannot see word order (notebook 06): permuting the tokens
permutes the outputs. ``sinusoidal_positional_encoding`` is Vaswani et al.'s
(2017, section 3.5) answer, added to the token vectors. ``apply_rope`` is
the rotary position embedding of current models (Su et al. 2021, RoFormer,
section 3): nothing is added; each query and key is rotated by its position,
so a score depends on the two positions only through their difference. The
input checks are in helpers/inputs.py.
"""

from __future__ import annotations

import numpy as np

from helpers.inputs import at_least, checked_base, checked_positions, even_width, positive_whole, real_array

__all__ = ["sinusoidal_positional_encoding", "apply_rope"]


def sinusoidal_positional_encoding(n, d_model):
    """The sinusoidal positional encoding of Vaswani et al. (2017), section 3.5.

        PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
        PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))

    for positions pos = 0 .. n-1 and i = 0 .. d_model/2 - 1. Each pair of
    columns is a clock turning at its own speed: column pair i turns by
    1 / 10000^(2i/d_model) radians per position, from once per 2*pi tokens
    (i = 0) to ever more slowly. Added to the token vectors X (n, d_model), it
    tells attention where each token stands. Every row has length
    sqrt(d_model / 2), since sin^2 + cos^2 = 1 for each pair.

    Parameters
    ----------
    n : positive whole number, the number of positions.
    d_model : positive even whole number, the width of the token vectors.

    Returns
    -------
    ndarray (n, d_model) of floats in [-1, 1]. Row 0 alternates 0, 1, 0, 1, ...

    Raises
    ------
    ValueError naming the argument when ``n`` is not a whole number >= 1, or
    ``d_model`` is not an even whole number >= 2 (the sin and cos columns
    come in pairs).
    """
    n = positive_whole(n, "n", "a positive whole number of positions")
    d_model = even_width(d_model)
    pos = np.arange(n, dtype=float)[:, None]                  # (n, 1)
    rate = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,), the 2i of the formula
    angles = pos * rate                                       # (n, d_model/2)
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def apply_rope(x, positions=None, base=10000.0):
    """Rotary position embedding (RoPE), Su et al. (2021), RoFormer, section 3.4.2, eq. 34.

    Each pair of features (2i, 2i + 1) of the token at position m is turned
    by the angle m * theta_i, theta_i = base^(-2i/d), i = 0 .. d/2 - 1:

        out[2i]     = x[2i] cos(m theta_i) - x[2i+1] sin(m theta_i)
        out[2i + 1] = x[2i] sin(m theta_i) + x[2i+1] cos(m theta_i)

    Applied to the queries and to the keys (never to the values), it makes
    the score q_m . k_n depend on the positions only through m - n (a
    rotation by m theta_i then by -n theta_i is one by (m - n) theta_i), and
    it keeps every vector's length. This is the pairing of the paper; some
    libraries pair feature i with i + d/2 instead ("rotate half"), which is
    right too when queries and keys use the same one.

    Parameters
    ----------
    x : array (..., n, d) of real numbers, d even: queries or keys.
    positions : optional array (n,) of real numbers >= 0, the position of
        each token; None means 0, 1, ..., n - 1. Fractions are allowed
        (position interpolation scales positions down to stretch a context).
    base : number > 1, 10000 in the paper.

    Returns
    -------
    ndarray (..., n, d), a new array.

    Raises
    ------
    ValueError naming the argument when x is not an array of finite real
    numbers of at least 2 dimensions, d is odd, ``positions`` is not of
    shape (n,), negative or not finite, or ``base`` is not a finite number > 1.
    """
    x = real_array(x, "x")
    at_least(x, "x", 2, "(..., n, d)")
    even_width(x.shape[-1], "the last dimension d of x", "the features are turned in pairs")
    m = checked_positions(positions, x.shape[-2])
    theta = checked_base(base) ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])  # (d/2,), the 2i of eq. 34
    angle = m[:, None] * theta                                                  # (n, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
