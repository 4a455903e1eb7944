"""Where an attention output can land: the convex hull of the values, on the 2-D plane.

An attention output is a weighted average of the values, with weights that
are positive and sum to 1 (Vaswani et al. 2017, section 3.2.1, eq. (1)). So
it always lies in the convex hull of the values: the smallest convex region
holding them all, a polygon on the plane. This module finds that polygon and
says whether a point lies inside it, on its edge or outside it.

Only two dimensions: the plane of notebooks 01, 02 and 07. numpy only.
"""

from __future__ import annotations

import numpy as np

from helpers.inputs import real_array

__all__ = ["convex_hull_2d", "hull_position", "edge_beyond", "convex_weights", "TOLERANCE"]

TOLERANCE = 1e-9
"""How far (in the units of the points) a point may stray from an edge and
still count as on it: rounding of a float computation, nothing more."""

LARGEST = 1e100
"""The largest coordinate accepted: products of two differences of such numbers stay finite."""


def _points(points, name, one=False):
    """``points`` as a finite float array (m, 2) (or one point (2,)), or ValueError naming ``name``."""
    want = "a point (x, y) of 2 numbers" if one else "an array of shape (m, 2) with m >= 1: one (x, y) per row"
    arr = real_array(points, name)  # real numbers, finite: the course's one check
    if (one and arr.shape != (2,)) or (not one and (arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1)):
        raise ValueError(f"{name} must be {want}; got shape {arr.shape}")
    if np.abs(arr).max() > LARGEST:
        raise ValueError(f"{name} must hold numbers of size at most {LARGEST:g} (larger ones overflow when "
                         f"multiplied); got {float(np.abs(arr).max()):g}")
    return arr


def _cross(o, a, b):
    """The z part of (a - o) x (b - o): > 0 when o -> a -> b turns left (counter-clockwise)."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def convex_hull_2d(points):
    """The corners of the convex hull of 2-D points, counter-clockwise (Andrew's monotone chain).

    Parameters
    ----------
    points : array (m, 2), m >= 1, finite.

    Returns
    -------
    ndarray (h, 2): the corners, counter-clockwise, starting from the lowest
    x (then lowest y). A point lying on an edge between two corners (three
    points in a line) is not a corner and is left out. All points equal
    gives one corner; points all on one line give the two ends (h = 2).

    Raises
    ------
    ValueError naming ``points`` if it is not a finite array of shape (m, 2), m >= 1.
    """
    P = _points(points, "points")
    P = np.unique(P, axis=0)            # sorted by x, then y; duplicates gone
    if len(P) <= 2:
        return P

    def chain(seq):
        out = []
        for p in seq:
            while len(out) >= 2 and _cross(out[-2], out[-1], p) <= TOLERANCE:
                out.pop()               # a right turn or a straight line: out[-1] is not a corner
            out.append(p)
        return out

    lower, upper = chain(P), chain(P[::-1])
    hull = np.array(lower[:-1] + upper[:-1])
    return hull if len(hull) >= 2 else P[[0, -1]]


def hull_position(point, points):
    """Whether ``point`` lies inside, on the edge of, or outside the convex hull of ``points``.

    Parameters
    ----------
    point : (x, y), finite.
    points : array (m, 2), m >= 1, finite (for attention: the values).

    Returns
    -------
    str: "inside" (strictly inside the polygon), "edge" (on its boundary,
    within ``TOLERANCE``: a corner or a point of an edge), or "outside".
    When the hull has no inside (one point, or points on one line), a point
    of that point or segment is "edge".

    For attention: a softmax gives every key a weight above 0, so a query
    that sees every key has its output "inside" (or on a degenerate hull);
    an output on the edge needs some keys at weight exactly 0, which only a
    mask gives.

    Raises
    ------
    ValueError naming the argument for a point that is not 2 finite numbers
    or points that are not a finite array (m, 2).
    """
    p = _points(point, "point", one=True)
    hull = convex_hull_2d(points)
    if len(hull) == 1:
        return "edge" if np.linalg.norm(p - hull[0]) <= TOLERANCE else "outside"
    if len(hull) == 2:
        a, b = hull
        t = float(np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0))
        return "edge" if np.linalg.norm(p - (a + t * (b - a))) <= TOLERANCE else "outside"
    distances = _edge_distances(p, hull)
    if np.any(distances < -TOLERANCE):
        return "outside"
    return "edge" if np.any(distances <= TOLERANCE) else "inside"


def _edge_distances(p, hull):
    """Signed distance of p from the line of each edge hull[k] -> hull[k+1]: > 0 on the inner side."""
    return np.array([_cross(a, b, p) / np.linalg.norm(b - a) for a, b in zip(hull, np.roll(hull, -1, axis=0))])


def edge_beyond(point, points):
    """The edge of the hull that ``point`` lies furthest beyond, or None if it is not outside.

    Returns (a, b), two corners (each an ndarray (2,)) of the convex hull of
    ``points``, such that ``point`` lies on the far side of the line through
    them; of all such edges, the one it is furthest from. None when
    ``hull_position`` is not "outside" or the hull has fewer than 3 corners.
    Raises ValueError as ``hull_position`` does.
    """
    p = _points(point, "point", one=True)
    hull = convex_hull_2d(points)
    if len(hull) < 3 or hull_position(p, hull) != "outside":
        return None
    k = int(np.argmin(_edge_distances(p, hull)))
    return hull[k], hull[(k + 1) % len(hull)]


def convex_weights(point, points):
    """Weights w >= 0 with sum 1 and w @ points = point, for a point in the hull; None outside it.

    At most three weights are above 0: those of the corners of the triangle
    (of a fan of triangles from the first hull corner) that holds the point.

    Parameters
    ----------
    point : (x, y); points : array (m, 2), m >= 1, finite.

    Returns
    -------
    ndarray (m,) of weights, one per row of ``points`` (for a corner given
    twice, the first copy gets its weight), or None when ``point`` is outside
    the hull. Raises ValueError as ``hull_position`` does.
    """
    p = _points(point, "point", one=True)
    P = _points(points, "points")
    if hull_position(p, P) == "outside":
        return None
    hull = convex_hull_2d(P)
    corners = [int(np.flatnonzero(np.all(P == c, axis=1))[0]) for c in hull]
    w = np.zeros(len(P))
    if len(hull) == 1:
        w[corners[0]] = 1.0
        return w
    if len(hull) == 2:
        a, b = hull
        t = float(np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0))
        w[corners[0]], w[corners[1]] = 1.0 - t, t
        return w
    best = None
    for k in range(1, len(hull) - 1):       # triangles (0, k, k+1) fan out from corner 0
        a, b, c = hull[0], hull[k], hull[k + 1]
        area = _cross(a, b, c)
        lam = np.array([_cross(b, c, p), _cross(c, a, p), _cross(a, b, p)]) / area   # barycentric coordinates
        if best is None or lam.min() > best[0].min():
            best = (lam, (0, k, k + 1))
    lam, idx = best
    lam = np.clip(lam, 0.0, None)
    lam /= lam.sum()
    for weight, k in zip(lam, idx):
        w[corners[k]] += weight
    return w
