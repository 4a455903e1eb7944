"""Position information: where each token stands.

Attention alone cannot see word order (notebook 06): permuting the tokens
permutes the outputs. ``sinusoidal_positional_encoding`` is Vaswani et al.'s
(2017, section 3.5) answer, added to the token vectors. The input checks are
in helpers/inputs.py.
"""

from __future__ import annotations

import numpy as np

from helpers.inputs import even_width, positive_whole

__all__ = ["sinusoidal_positional_encoding"]


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
