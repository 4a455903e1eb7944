"""Figures for the course: they take arrays and draw; they compute no attention.

Every heatmap of attention weights puts queries on the rows and keys on the
columns, prints the weight in each cell, and uses the cividis colormap
(readable in grey and by colour-blind readers) on the fixed range 0 to 1, so
two heatmaps can be compared by colour.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["weights_heatmap", "plane_plot"]

CMAP = "cividis"


def _labels(labels, count, name):
    """``labels`` as a list of ``count`` strings, or ValueError naming ``name``."""
    if labels is None or isinstance(labels, str):
        raise ValueError(f"{name} must be a list of {count} labels; got {labels!r}")
    labels = [str(label) for label in labels]
    if len(labels) != count:
        raise ValueError(f"{name} must give {count} labels, one per {'row' if 'query' in name else 'entry'}; got {len(labels)}")
    return labels


def _text_colour(value):
    """Dark text on the light (high) end of cividis, light text on the dark end."""
    return "black" if value > 0.55 else "white"


def weights_heatmap(weights, query_labels, key_labels, title, ax=None, decimals=3, vmax=1.0):
    """Draw attention weights as a heatmap with each weight written in its cell.

    weights: array (n_q, n_k) with entries in [0, 1]; rows are queries.
    query_labels: n_q labels for the rows; key_labels: n_k labels for the columns.
    title: the axes title.
    ax: optional matplotlib Axes to draw into; a new small figure otherwise.
    decimals: decimals of the weights written in the cells (0 to 6).
    vmax: the weight drawn in the brightest colour. 1.0 (the default) puts
        every heatmap on the same scale; None stretches the colours up to the
        largest weight, which shows small differences better.

    Returns the matplotlib Figure. Raises ValueError for weights that are not
    a non-empty matrix of numbers in [0, 1] or labels that do not fit.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.size == 0:
        raise ValueError(f"weights must be a non-empty matrix (n_q, n_k); got shape {w.shape}")
    if not np.all(np.isfinite(w)) or (w < 0).any() or (w > 1 + 1e-9).any():
        raise ValueError(f"weights must be attention weights, numbers in [0, 1]; got values from {np.nanmin(w)} to {np.nanmax(w)}")
    query_labels = _labels(query_labels, w.shape[0], "query_labels")
    key_labels = _labels(key_labels, w.shape[1], "key_labels")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be a whole number from 0 to 6; got {decimals!r}")
    top = float(w.max()) if vmax is None else float(vmax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.9 * w.shape[1], 0.8 + 0.6 * w.shape[0]), layout="constrained")
    else:
        fig = ax.figure
    top = top if top > 0 else 1.0
    image = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=top, aspect="auto")
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            ax.text(j, i, f"{w[i, j]:.{decimals}f}", ha="center", va="center",
                    color=_text_colour(w[i, j] / top), fontsize=9)
    ax.set_xticks(range(w.shape[1]), labels=list(key_labels))
    ax.set_yticks(range(w.shape[0]), labels=list(query_labels))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="attention weight", shrink=0.8)
    return fig


def plane_plot(points, labels, moves=None, axis_labels=("x1", "x2"), title="", ax=None):
    """Plot 2-D vectors as labelled points, with arrows for moved ones.

    points: array (n, 2), the vectors to mark (e.g. the token embeddings).
    labels: n labels.
    moves: optional list of (start, end, label) pairs of 2-D points; each
        is drawn as an arrow from start to end, labelled at the end.
    axis_labels: names of the two dimensions.

    Returns the matplotlib Figure.
    """
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] == 0:
        raise ValueError(f"points must have shape (n, 2) with n >= 1; got {P.shape}")
    labels = _labels(labels, P.shape[0], "labels")
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.6, 4.0), layout="constrained")
    else:
        fig = ax.figure
    ax.scatter(P[:, 0], P[:, 1], color="0.35", zorder=3)
    for (x, y), label in zip(P, labels):
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=10)
    for start, end, label in moves or []:
        ax.annotate("", xy=end, xytext=start,
                    arrowprops=dict(arrowstyle="->", color="tab:blue", lw=2), zorder=4)
        ax.scatter([end[0]], [end[1]], color="tab:blue", marker="D", zorder=5)
        ax.annotate(label, end, textcoords="offset points", xytext=(6, -12), color="tab:blue", fontsize=10)
    everything = np.vstack([P] + [np.array([s, e]) for s, e, _ in (moves or [])])
    lo, hi = everything.min(axis=0), everything.max(axis=0)
    pad = 0.15 * max(float((hi - lo).max()), 1e-9)
    ax.set_xlim(min(lo[0], 0) - pad, hi[0] + 2 * pad)
    ax.set_ylim(min(lo[1], 0) - pad, hi[1] + 2 * pad)
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_title(title)
    return fig


def senses_plot(sentences, axis_labels=("x1", "x2"), title="", ax=None):
    """Several sentences' words on one plane, each with one word's move drawn as an arrow.

    sentences: list of dicts, one per sentence, with keys
        name: the sentence, for the legend;
        points: array (n, 2), its words' vectors; labels: their n names;
        start, end: 2-D points, where the followed word starts and ends;
        moved: the followed word's name (e.g. "bank");
        after_offset: optional (dx, dy) in points for the "after" label
        (default (6, -14), below right; a negative dx puts it on the left).
    A word at the same place with the same name in several sentences (a
    shared word) is drawn once, in grey. Each sentence gets its own colour
    and marker (blue circles, orange squares, ...), readable by colour-blind
    readers and in grey.

    Returns the matplotlib Figure.
    """
    styles = [("tab:blue", "o"), ("tab:orange", "s"), ("tab:green", "^"), ("tab:purple", "v")]
    if not 1 <= len(sentences) <= len(styles):
        raise ValueError(f"sentences must hold 1 to {len(styles)} sentences; got {len(sentences)}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 4.6), layout="constrained")
    else:
        fig = ax.figure
    seen = {}
    for s in sentences:
        P = np.asarray(s["points"], dtype=float)
        if P.ndim != 2 or P.shape[1] != 2 or len(s["labels"]) != len(P):
            raise ValueError(f"points of {s['name']!r} must have shape (n, 2) with n labels; got {P.shape} and {len(s['labels'])} labels")
        for p, label in zip(P, s["labels"]):
            seen.setdefault((label, float(p[0]), float(p[1])), []).append(s["name"])
    everything = [np.array([key[1], key[2]]) for key in seen]
    for k, s in enumerate(sentences):
        colour, marker = styles[k]
        mine = [(key, names) for key, names in seen.items() if s["name"] in names and len(names) == 1]
        xs = [key[1] for key, _ in mine]
        ys = [key[2] for key, _ in mine]
        ax.scatter(xs, ys, color=colour, marker=marker, zorder=3, label=s["name"])
        for (label, x, y), _ in mine:
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9, color=colour)
        start, end = np.asarray(s["start"], dtype=float), np.asarray(s["end"], dtype=float)
        ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=colour, lw=2), zorder=4)
        ax.scatter([end[0]], [end[1]], color=colour, marker="D", s=50, edgecolor="black", zorder=5)
        offset = s.get("after_offset", (6, -14))
        ax.annotate(f"{s['moved']} after", end, textcoords="offset points", xytext=offset,
                    ha="right" if offset[0] < 0 else "left", color=colour, fontsize=9, fontweight="bold")
        everything += [start, end]
    shared = [key for key, names in seen.items() if len(names) > 1]
    if shared:
        ax.scatter([key[1] for key in shared], [key[2] for key in shared], color="0.35", zorder=3,
                   label="in both" if len(sentences) == 2 else "shared")
        for label, x, y in shared:
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9, color="0.2")
    E = np.vstack(everything)
    lo, hi = E.min(axis=0), E.max(axis=0)
    pad = 0.15 * max(float((hi - lo).max()), 1e-9)
    ax.set_xlim(min(lo[0], 0) - pad, hi[0] + 3 * pad)
    ax.set_ylim(min(lo[1], 0) - pad, hi[1] + pad)
    ax.axhline(0, color="0.8", lw=0.8, zorder=1)
    ax.axvline(0, color="0.8", lw=0.8, zorder=1)
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title)
    return fig


__all__ += ["senses_plot"]
