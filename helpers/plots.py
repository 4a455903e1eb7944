"""Figures for the course: they take arrays and draw; they compute no attention.

Every heatmap of attention weights puts queries on the rows and keys on the
columns, prints the weight in each cell, and uses the cividis colormap
(readable in grey and by colour-blind readers) on the fixed range 0 to 1, so
two heatmaps can be compared by colour.
"""

from __future__ import annotations

import matplotlib as _mpl
import matplotlib.pyplot as plt
import numpy as np

from helpers.inputs import refuse_masked_array

__all__ = ["weights_heatmap", "plane_plot", "contrast_ratio", "relative_luminance", "ANNOTATE_MAX_TOKENS",
           "describe", "description"]

CMAP = "cividis"
_CIVIDIS_HEX = [_mpl.colors.to_hex(c) for c in _mpl.colormaps[CMAP].resampled(256)(np.linspace(0, 1, 256))]



# --------------------------------------------------------------------------
# Descriptions: every figure says in words what it shows. The course's figure
# functions attach one (``describe``); when IPython displays a figure, the
# description becomes the PNG's alt text (output metadata {"image/png": {"alt": ...}},
# which the course's HTML export writes as the img's alt) and a caption line
# printed just above the picture, in the notebook itself.
# --------------------------------------------------------------------------

def describe(fig, text):
    """Attach a description of what ``fig`` shows (added to any it already has); returns ``fig``.

    Raises ValueError unless text is a non-empty str.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str describing the figure; got {text!r}")
    if not hasattr(fig, "axes"):
        raise ValueError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    fig._course_descriptions = getattr(fig, "_course_descriptions", []) + [" ".join(text.split())]
    return fig


def description(fig):
    """What ``fig`` shows, in words: the descriptions attached to it, else its titles and axis labels."""
    said = getattr(fig, "_course_descriptions", [])
    if said:
        return " ".join(said)
    parts = [ax.get_title() + (f" ({ax.get_xlabel()} against {ax.get_ylabel()})" if ax.get_xlabel() else "")
             for ax in fig.axes if ax.get_title()]
    return "A figure: " + "; ".join(parts) + "." if parts else "A figure without a title."


def _caption(text, width=76):
    import textwrap
    return "\n".join(textwrap.wrap(f"Figure: {text}", width=width, break_long_words=False,
                                    break_on_hyphens=False))


def _install_description_formatter():
    """Make IPython's PNG of a Figure carry its description as alt text, with a caption line above it.

    The inline backend registers its own PNG formatter for Figure when it is
    activated (at the first figure, or by ``%matplotlib``); this wraps the one
    registered, and checks again before every cell, so a later activation is
    wrapped too. Does nothing outside IPython.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the course
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    from matplotlib.figure import Figure

    def wrap(*_):
        formatter = shell.display_formatter.formatters["image/png"]
        current = formatter.lookup_by_type(Figure) if Figure in formatter.type_printers else None
        if current is None or getattr(current, "_course_wrapped", False):
            return

        def png_with_description(fig, _original=current):
            data = _original(fig)
            if data is None:
                return None
            text = description(fig)
            from IPython.display import publish_display_data
            publish_display_data({"text/plain": _caption(text)}, metadata={"course": "figure-caption"})
            return data, {"alt": text}

        png_with_description._course_wrapped = True
        formatter.for_type(Figure, png_with_description)

    try:  # activate the inline backend now, so its formatter exists to be wrapped
        import matplotlib
        if "inline" in matplotlib.get_backend():
            plt.switch_backend(matplotlib.get_backend())
    except Exception:  # pragma: no cover - any other backend: wrap whatever is registered
        pass
    wrap()
    if not getattr(shell, "_course_description_hook", False):
        shell.events.register("pre_run_cell", wrap)
        shell._course_description_hook = True


def _top(w, query_labels, key_labels):
    """'0.62 from bank to river': the largest weight of a matrix and where it is."""
    i, j = np.unravel_index(int(np.argmax(w)), w.shape)
    return f"{w[i, j]:.2f} from {query_labels[i]} to {key_labels[j]}"


def _strongest(w, query_labels, key_labels, name):
    return f"{name}: largest weight {_top(w, query_labels, key_labels)}"

#: The one size rule of the course's heatmaps. Up to this many tokens (rows or
#: columns) a heatmap writes each weight in its cell and labels every token.
#: Past it the numbers could not be read (nor drawn in seconds: a 512-token
#: heatmap has 262,144 cells), so the heatmap is drawn without per-cell
#: numbers, at a capped figure size, with at most this many tick labels per
#: axis (every k-th token), and its title says so. The same threshold keeps
#: numbers readable on a projector (1024 x 768 at 150%); the HTML tables drop
#: their numbers past it too and keep each weight in the cell's tooltip.
ANNOTATE_MAX_TOKENS = 20
#: An HTML heatmap (``weights_table_html``) keeps its numbers up to twice that
#: many tokens, since its cells have a fixed size in pixels and the page
#: scrolls (the real-model explorer draws windows of this size). Past it the
#: table shows its top-left corner of that size and says so in its title.
TABLE_MAX_TOKENS = 2 * ANNOTATE_MAX_TOKENS
#: The largest figure a heatmap function makes, in inches (width, height).
MAX_FIGURE_INCHES = (12.0, 12.0)


def _labels(labels, count, name):
    """``labels`` as a list of ``count`` strings, or ValueError naming ``name``."""
    if labels is None or isinstance(labels, str):
        raise ValueError(f"{name} must be a list of {count} labels; got {labels!r}")
    labels = [str(label) for label in labels]
    if len(labels) != count:
        raise ValueError(f"{name} must give {count} labels, one per {'row' if 'query' in name else 'entry'}; got {len(labels)}")
    return labels


def _as_checked_array(x, name, dtype=float):
    """``x`` as an ndarray of ``dtype``, or ValueError naming ``name``; numpy masked arrays are refused.

    A figure cannot honour a masked array's mask (np.asarray drops it), and
    its True means *hidden*, the opposite of the course's masks: so the
    learner is asked for the plain numbers (masked weights are usually 0).
    """
    refuse_masked_array(x, name, how=(
        f"draw the plain numbers: np.ma.filled({name}, 0.0) puts 0 (the weight of a masked key) where the "
        f"entries are hidden, and ~np.ma.getmaskarray({name}) is the course's mask (True = may attend)"))
    try:
        return np.asarray(x, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be an array of numbers; could not read it as one ({exc})") from None


def _capped(width, height):
    """A figure size (inches) no larger than MAX_FIGURE_INCHES, shrunk keeping its proportions."""
    shrink = min(1.0, MAX_FIGURE_INCHES[0] / width, MAX_FIGURE_INCHES[1] / height)
    return (width * shrink, height * shrink)


def _is_large(*sizes):
    """Whether a heatmap with these numbers of rows and columns is past ANNOTATE_MAX_TOKENS."""
    return max(sizes) > ANNOTATE_MAX_TOKENS


def _ticks(ax, axis, labels, n=None, **style):
    """Tick labels on ``axis`` ("x" or "y") for ``n`` rows or columns (default len(labels)).

    Every token is labelled up to ANNOTATE_MAX_TOKENS; past it every k-th
    one, as "position: token", so that at most ANNOTATE_MAX_TOKENS labels are
    drawn. Empty ``labels`` puts the ticks without labels. Returns k.
    """
    n = len(labels) if n is None else n
    step = max(1, -(-n // ANNOTATE_MAX_TOKENS))  # ceil: at most ANNOTATE_MAX_TOKENS labels
    where = list(range(0, n, step))
    shown = [f"{i}: {labels[i]}" if step > 1 else labels[i] for i in where] if labels else []
    (ax.set_xticks if axis == "x" else ax.set_yticks)(where, labels=shown, **style)
    return step


def _large_note(n_q, n_k, step_q, step_k):
    """The title's note on a heatmap past ANNOTATE_MAX_TOKENS: what it leaves out."""
    if step_q == step_k:
        labels = f"; 1 token in {step_q} labelled" if step_q > 1 else ""
    else:
        labels = "; " + ", ".join(f"1 {what} in {step} labelled" for what, step in (("query", step_q), ("key", step_k))
                                  if step > 1)
    return f"\n({n_q} x {n_k}, over {ANNOTATE_MAX_TOKENS} tokens: weights not written in cells{labels})"


def relative_luminance(colour):
    """The relative luminance of a colour (any matplotlib colour spec), as WCAG 2.1 defines it (0 black, 1 white)."""
    rgb = np.array(_mpl.colors.to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(foreground, background):
    """The WCAG 2.1 contrast ratio of two colours, from 1 (same) to 21 (black on white).
    Normal text needs at least 4.5 (level AA)."""
    a, b = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def _text_colour(value):
    """Black or white, whichever contrasts more with the cividis colour of ``value`` in [0, 1]
    (every cividis colour gets at least 4.5:1 from one of them)."""
    background = _cell_colour(value)
    return "black" if contrast_ratio("black", background) >= contrast_ratio("white", background) else "white"


def weights_heatmap(weights, query_labels, key_labels, title, ax=None, decimals=3, vmax=1.0, masked=None,
                    colour_bar=True):
    """Draw attention weights as a heatmap with each weight written in its cell.

    weights: array (n_q, n_k) with entries in [0, 1]; rows are queries.
    query_labels: n_q labels for the rows; key_labels: n_k labels for the columns.
    title: the axes title.
    ax: optional matplotlib Axes to draw into; a new small figure otherwise.
    decimals: decimals of the weights written in the cells (0 to 6).
    vmax: the weight drawn in the brightest colour. 1.0 (the default) puts
        every heatmap on the same scale; None stretches the colours up to the
        largest weight, which shows small differences better.
    masked: optional boolean array (n_q, n_k), True where a key is masked
        for that query: such cells are hatched grey, not coloured as a weight
        of 0, with a legend "masked (weight exactly 0)" under the axes.
    colour_bar: False leaves the colour bar out (e.g. for all but one of
        several heatmaps on the same scale side by side).

    Past ANNOTATE_MAX_TOKENS rows or columns the weights are not written in
    the cells, the figure is capped at MAX_FIGURE_INCHES, at most
    ANNOTATE_MAX_TOKENS tokens per axis are labelled (as "position: token"),
    and the title says so. A 512-token heatmap takes about a second.

    Returns the matplotlib Figure. Raises ValueError for weights that are not
    a non-empty matrix of numbers in [0, 1], labels that do not fit, or a
    mask of another shape.
    """
    w, query_labels, key_labels = _labelled_weights(weights, query_labels, key_labels)
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be a whole number from 0 to 6; got {decimals!r}")
    hide = np.zeros(w.shape, dtype=bool) if masked is None else np.asarray(masked)
    if hide.shape != w.shape or hide.dtype != bool:
        raise ValueError(f"masked must be a boolean array of the shape of weights {w.shape}; got "
                         f"{hide.dtype} of shape {hide.shape}")
    top = float(w.max()) if vmax is None else float(vmax)
    large = _is_large(*w.shape)
    if ax is None:
        fig, ax = plt.subplots(figsize=_capped(1.0 + 0.9 * w.shape[1], 0.8 + 0.6 * w.shape[0]), layout="constrained")
    else:
        fig = ax.figure
    top = top if top > 0 else 1.0
    image = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=top, aspect="auto")
    numbers = not large
    for i, j in zip(*np.nonzero(hide)):
        ax.add_patch(_mpl.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=MASKED_STRIPES[0],
                                            edgecolor=MASKED_TEXT, hatch="///", linewidth=0))
    for i in range(w.shape[0] if numbers else 0):
        for j in range(w.shape[1]):
            ax.text(j, i, f"{w[i, j]:.{decimals}f}", ha="center", va="center", fontsize=9,
                    color=MASKED_TEXT if hide[i, j] else _text_colour(w[i, j] / top),
                    bbox=dict(facecolor=MASKED_STRIPES[0], edgecolor="none", pad=1) if hide[i, j] else None)
    step_k = _ticks(ax, "x", list(key_labels), rotation=90 if large else 0)
    step_q = _ticks(ax, "y", list(query_labels))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title + (_large_note(*w.shape, step_q, step_k) if large else ""))
    if colour_bar:
        fig.colorbar(image, ax=ax, label="attention weight", shrink=0.8)
    if hide.any():
        ax.legend(handles=[_mpl.patches.Patch(facecolor=MASKED_STRIPES[0], edgecolor=MASKED_TEXT, hatch="///",
                                              label="masked (weight exactly 0)")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, frameon=False)
    describe(fig, f"Heatmap '{title}': attention weights, {w.shape[0]} queries ({', '.join(query_labels[:ANNOTATE_MAX_TOKENS])}"
                  f"{', ...' if w.shape[0] > ANNOTATE_MAX_TOKENS else ''}) on the rows, "
                  f"{w.shape[1]} keys on the columns, brighter for a larger weight"
                  + ("" if numbers else " (no numbers in the cells: too many tokens)")
                  + (f", {int(hide.sum())} masked cells hatched grey" if hide.any() else "")
                  + f"; largest {_top(w, query_labels, key_labels)}, smallest {float(w.min()):.2f}.")
    return fig


def _label_place(offset):
    """annotate's xytext for a label ``offset`` (dx, dy) points from its point, with a thin leader line past 20."""
    dx, dy = (float(v) for v in offset)
    leader = dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=0, shrinkB=3) if dx * dx + dy * dy > 400 else None
    return {"xytext": (dx, dy), "arrowprops": leader}


def plane_plot(points, labels, moves=None, axis_labels=("x1", "x2"), title="", ax=None, label_offsets=None):
    """Plot 2-D vectors as labelled points, with arrows for moved ones.

    points: array (n, 2), the vectors to mark (e.g. the token embeddings).
    labels: n labels.
    moves: optional list of (start, end, label) pairs of 2-D points; each
        is drawn as an arrow from start to end, labelled at the end.
    axis_labels: names of the two dimensions.
    label_offsets: optional dict label -> (dx, dy), where that point's label
        goes, in points from the point (default (6, 4), above right), so that
        labels of nearby points do not overlap (one moved more than 20 points
        away is joined to its point by a thin line); a move's label may be given too.
    Past ANNOTATE_MAX_TOKENS points only every k-th point is labelled (at
    most ANNOTATE_MAX_TOKENS labels, as "position: label"), and the title
    says so.

    Returns the matplotlib Figure.
    """
    P = _as_checked_array(points, "points")
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] == 0:
        raise ValueError(f"points must have shape (n, 2) with n >= 1; got {P.shape}")
    labels = _labels(labels, P.shape[0], "labels")
    offsets = dict(label_offsets or {})
    if any(not (isinstance(v, (tuple, list)) and len(v) == 2) for v in offsets.values()):
        raise ValueError(f"label_offsets must map labels to (dx, dy) pairs in points; got {label_offsets!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.6, 4.0), layout="constrained")
    else:
        fig = ax.figure
    ax.scatter(P[:, 0], P[:, 1], color="0.35", zorder=3)
    step = max(1, -(-len(P) // ANNOTATE_MAX_TOKENS))  # past ANNOTATE_MAX_TOKENS points, label every k-th
    for i in range(0, len(P), step):
        ax.annotate(labels[i] if step == 1 else f"{i}: {labels[i]}", tuple(P[i]), textcoords="offset points",
                    fontsize=10, **_label_place(offsets.get(labels[i], (6, 4))))
    if step > 1:
        title += f"\n({len(P)} points, over {ANNOTATE_MAX_TOKENS}: 1 in {step} labelled, as position: label)"
    for start, end, label in moves or []:
        ax.annotate("", xy=end, xytext=start,
                    arrowprops=dict(arrowstyle="->", color="tab:blue", lw=2), zorder=4)
        ax.scatter([end[0]], [end[1]], color="tab:blue", marker="D", zorder=5)
        ax.annotate(label, end, textcoords="offset points", color="tab:blue", fontsize=10,
                    **_label_place(offsets.get(label, (6, -12))))
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
    describe(fig, (f"'{title}': " if title else "") + f"points on the plane of {axis_labels[0]} (across) and "
             f"{axis_labels[1]} (up): " + ", ".join(f"{label} at ({x:.2f}, {y:.2f})" for (x, y), label in zip(P, labels))
             + "".join(f"; an arrow from ({s[0]:.2f}, {s[1]:.2f}) to {label} at ({e[0]:.2f}, {e[1]:.2f})"
                       for s, e, label in (moves or [])) + ".")
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
        P = _as_checked_array(s["points"], "points")
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
        start, end = _as_checked_array(s["start"], "start"), _as_checked_array(s["end"], "end")
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
    describe(fig, (f"'{title}': " if title else "") + f"words of {len(sentences)} sentences on the plane of "
             f"{axis_labels[0]} (across) and {axis_labels[1]} (up), each sentence in its own colour and marker; "
             + "; ".join(f"in '{s['name']}', {s['moved']} moves from ({s['start'][0]:.2f}, {s['start'][1]:.2f}) to "
                         f"({s['end'][0]:.2f}, {s['end'][1]:.2f})" for s in sentences) + ".")
    return fig


__all__ += ["senses_plot"]


# --------------------------------------------------------------------------
# Explorer pictures and the figures of notebooks 03-05.
#
# The explorers redraw on every control change, and turning a matplotlib
# figure into a PNG costs 50-100 ms here. So their live heatmap is an HTML
# table instead: the same cividis colours (taken from matplotlib's colormap)
# on the same fixed range 0 to 1, the weight written in each cell, queries on
# rows and keys on columns. Building one costs about a millisecond.
# --------------------------------------------------------------------------

import html as _html

__all__ += ["weights_table_html", "values_table_html", "html_grid", "heads_heatmaps", "lines_plot"]

#: Masked cells: grey stripes (their text colour and stripe colours are checked for contrast in the tests).
MASKED_TEXT, MASKED_STRIPES = "#505050", ("#e4e4e4", "#ffffff")
_MASKED_CELL = (f"background:repeating-linear-gradient(135deg,{MASKED_STRIPES[0]} 0 3px,{MASKED_STRIPES[1]} 3px 6px);"
                f"color:{MASKED_TEXT}")


def _labelled_weights(weights, query_labels, key_labels):
    """``(weights, query_labels, key_labels)`` as a float matrix (n_q, n_k) of numbers
    in [0, 1] and two lists of strings, or ValueError unless there is one label per
    row and column."""
    w = _as_checked_array(weights, "weights")
    if w.ndim != 2 or w.size == 0:
        raise ValueError(f"weights must be a non-empty matrix (n_q, n_k); got shape {w.shape}")
    if np.isnan(w).any():
        raise ValueError(f"weights must be attention weights, numbers in [0, 1]; got NaN in shape {w.shape}")
    if (w < 0).any() or (w > 1 + 1e-9).any():
        raise ValueError(f"weights must be attention weights, numbers in [0, 1]; got values from {w.min()} to {w.max()}")
    return w, _labels(query_labels, w.shape[0], "query_labels"), _labels(key_labels, w.shape[1], "key_labels")


def _cell_colour(value):
    """The cividis colour of a weight in [0, 1] (clipped), as '#rrggbb'."""
    return _CIVIDIS_HEX[int(round(min(max(float(value), 0.0), 1.0) * 255))]


def _note_text(value, decimals):
    return _html.escape(value) if isinstance(value, str) else f"{float(value):.{decimals}f}"


def weights_table_html(weights, query_labels, key_labels, title="", masked=None, row_notes=None,
                       decimals=3, cell_width=46, font_size=12, colour_bar=True,
                       masked_label="masked (weight exactly 0)"):
    """Attention weights as an HTML heatmap: a table of cividis-coloured cells.

    weights: array (n_q, n_k) with entries in [0, 1]; rows are queries,
        columns are keys. The colour of a cell is cividis at the weight, on
        the fixed range 0 to 1, like :func:`weights_heatmap`.
    query_labels, key_labels: n_q and n_k labels.
    title: a line above the table.
    masked: optional boolean array (n_q, n_k), True where a key is masked
        for that query; such cells are striped grey, not coloured.
    row_notes: optional {column heading: n_q values} shown right of the
        table (numbers printed with ``decimals``, strings as they are).
    decimals: decimals of the weights. cell_width (px), font_size (px).
    colour_bar: add a 0-to-1 colour key under the table.
    Past TABLE_MAX_TOKENS queries or keys, only the top-left corner of that
    size is drawn, and the title says so.
    masked_label: what the colour key says the striped cells are.

    Returns a string of HTML (for an ``ipywidgets.HTML`` or ``IPython.display.HTML``).
    Raises ValueError on mismatched shapes or labels.
    """
    w, query_labels, key_labels = _labelled_weights(weights, query_labels, key_labels)
    hide = np.zeros(w.shape, dtype=bool) if masked is None else _as_checked_array(masked, "masked", bool)
    if hide.shape != w.shape:
        raise ValueError(f"masked must have the shape of weights {w.shape}; got {hide.shape}")
    notes = dict(row_notes or {})
    for heading, values in notes.items():
        if len(values) != w.shape[0]:
            raise ValueError(f"row_notes[{heading!r}] needs {w.shape[0]} values, one per query; got {len(values)}")
    if max(w.shape) > TABLE_MAX_TOKENS:  # a corner only: 512 x 512 cells would be 33 MB of HTML
        n_q, n_k = w.shape
        a, b = min(n_q, TABLE_MAX_TOKENS), min(n_k, TABLE_MAX_TOKENS)
        w, hide, query_labels, key_labels = w[:a, :b], hide[:a, :b], query_labels[:a], key_labels[:b]
        notes = {heading: list(values)[:a] for heading, values in notes.items()}
        title = (f"{title} " if title else "") + (
            f"(queries 0 to {a - 1} and keys 0 to {b - 1} of {n_q} x {n_k}: past {TABLE_MAX_TOKENS} tokens the "
            f"table shows this corner; pass weights[i:j, k:l] and their labels for another window)")
    esc = _html.escape
    numbers = max(w.shape) <= ANNOTATE_MAX_TOKENS
    cell = (f"min-width:{cell_width}px;width:{cell_width}px;height:{round(font_size * 1.9)}px;text-align:center;"
            "padding:0;white-space:nowrap;border:1px solid var(--jp-layout-color0, #fff)")
    head = f"padding:0 5px;font-weight:normal;color:{_PAGE_TEXT};white-space:nowrap"
    rows = [f"<tr><th scope='col' style='{head};text-align:right;font-style:italic'>query \\ key</th>"
            + "".join(f"<th scope='col' style='{head}'>{esc(str(k))}</th>" for k in key_labels)
            + "".join(f"<th scope='col' style='{head};padding-left:10px'>{esc(h)}</th>" for h in notes) + "</tr>"]
    for i, q in enumerate(query_labels):
        tds = []
        for j in range(w.shape[1]):
            value = f"{w[i, j]:.{decimals}f}"
            text = value if numbers else ""
            if hide[i, j]:
                tds.append(f"<td style='{cell};{_MASKED_CELL}' title='masked'>{text}</td>")
            else:
                tds.append(f"<td style='{cell};background:{_cell_colour(w[i, j])};color:{_text_colour(w[i, j])}'"
                           f" title='{esc(str(q))} to {esc(str(key_labels[j]))}: {value}'>{text}</td>")
        extra = "".join(f"<td style='padding:0 5px 0 10px;text-align:right;white-space:nowrap'>{_note_text(v[i], decimals)}</td>"
                        for v in notes.values())
        rows.append(f"<tr><th scope='row' style='{head};text-align:right'>{esc(str(q))}</th>{''.join(tds)}{extra}</tr>")
    parts = [f"<div class='course-heatmap' style='font-family:sans-serif;font-size:{font_size}px;line-height:1.2;"
             f"color:{_PAGE_TEXT};max-width:100%;overflow-x:auto'>"]
    caption = title or "Attention weights: queries on the rows, keys on the columns"
    caption_style = "font-weight:bold;margin:2px 0 4px 0;text-align:left" if title else _VISUALLY_HIDDEN
    parts.append(f"<table style='border-collapse:collapse;font-variant-numeric:tabular-nums'>"
                 f"<caption style='{caption_style}'>{esc(caption)}</caption>{''.join(rows)}</table>")
    if not numbers:
        parts.append(f"<div style='margin-top:4px'>More than {ANNOTATE_MAX_TOKENS} tokens: the weights are not "
                     "written in the cells (too small to read); point at a cell to see its weight.</div>")
    if colour_bar:
        stops = ",".join(_CIVIDIS_HEX[::32] + [_CIVIDIS_HEX[-1]])
        key = "" if masked is None else (f"<span style='display:inline-block;width:14px;height:10px;margin-left:14px;"
                                         f"{_MASKED_CELL}'></span> {esc(masked_label)}")
        parts.append(f"<div style='margin-top:4px'>0 <span style='display:inline-block;width:120px;height:10px;"
                     f"background:linear-gradient(to right,{stops})'></span> 1 attention weight{key}</div>")
    parts.append("</div>")
    return "".join(parts)


def values_table_html(row_labels, groups, title="", corner="query", decimals=3, font_size=12):
    """A small table of numbers, one row per query, in columns under group headings (e.g. an
    explorer's running values, drawn under its heatmap so that neither runs off a narrow page).

    row_labels: n labels, one per row. groups: a sequence of (group heading, columns), where
        columns is a sequence of (column heading, n values); values are numbers (printed with
        ``decimals``) or strings (shown as they are). title: a line above the table.
    corner: the heading of the label column. font_size (px).

    Group headings wrap onto more lines where their columns are narrower than they are.

    Returns a string of HTML. Raises ValueError for a column without one value per row.
    """
    labels = [str(r) for r in row_labels]
    esc = _html.escape
    head = f"padding:0 6px;font-weight:normal;color:{_PAGE_TEXT};white-space:nowrap;text-align:center"
    first = [f"<th scope='col' rowspan='2' style='{head};text-align:right;font-style:italic'>{esc(corner)}</th>"]
    second, columns = [], []
    for group, cols in groups:
        cols = list(cols)
        for heading, values in cols:
            if len(values) != len(labels):
                raise ValueError(f"groups: column {heading!r} of {group!r} needs {len(labels)} values, one per row; "
                                 f"got {len(values)}")
            columns.append(values)
        first.append(f"<th scope='colgroup' colspan='{len(cols)}' style='{head};white-space:normal;"
                     f"border-bottom:1px solid {_PAGE_TEXT}'>{esc(group)}</th>")
        second += [f"<th scope='col' style='{head};text-align:right'>{esc(str(heading))}</th>" for heading, _ in cols]
    rows = [f"<tr>{''.join(first)}</tr>", f"<tr>{''.join(second)}</tr>"]
    for i, label in enumerate(labels):
        cells = "".join(f"<td style='padding:0 6px;text-align:right;white-space:nowrap'>{_note_text(v[i], decimals)}</td>"
                        for v in columns)
        rows.append(f"<tr><th scope='row' style='{head};text-align:right'>{esc(label)}</th>{cells}</tr>")
    caption = (f"<caption style='font-weight:bold;margin:2px 0 4px 0;text-align:left'>{esc(title)}</caption>"
               if title else "")
    return (f"<div class='course-values' style='font-family:sans-serif;font-size:{font_size}px;line-height:1.6;"
            f"color:{_PAGE_TEXT};max-width:100%;overflow-x:auto'><table style='border-collapse:collapse;"
            f"font-variant-numeric:tabular-nums'>{caption}{''.join(rows)}</table></div>")


#: Text on the page (not on a coloured cell): JupyterLab's theme colour, so it stays readable in the dark theme.
_PAGE_TEXT = "var(--jp-content-font-color1, #222)"
_MARK = "var(--jp-content-font-color0, #000)"
_VISUALLY_HIDDEN = "position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap"


def html_grid(pieces, columns=None, gap=14):
    """Lay HTML pieces (e.g. one heatmap per head) out side by side.

    columns: None (the default) wraps the pieces onto as many rows as the
    width available needs, so a narrow page (a projector at 150% zoom)
    gets fewer pieces per row instead of a grid running off its edge; a
    positive whole number puts exactly that many in each row.
    """
    if columns is None:
        cells = "".join(f"<div style='max-width:100%'>{p}</div>" for p in pieces)
        return f"<div style='display:flex;flex-wrap:wrap;align-items:flex-start;gap:{gap}px'>{cells}</div>"
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be None or a positive whole number; got {columns!r}")
    cells = "".join(f"<div>{p}</div>" for p in pieces)
    return f"<div style='display:grid;grid-template-columns:repeat({columns},max-content);gap:{gap}px'>{cells}</div>"


#: Widest a figure of many heatmaps is drawn, in inches: about the width of a notebook on a projector
#: (1024 x 768 at 150% zoom), so it is shown at nearly its own size and its numbers stay readable.
FIGURE_MAX_WIDTH = 6.4


def _panel_shrink(panel, cols, rows):
    """How much panels of ``panel`` inches in a cols x rows grid shrink so that it, with its margins, fits MAX_FIGURE_INCHES."""
    return min(1.0, (MAX_FIGURE_INCHES[0] - 1.4) / (panel[0] * cols), (MAX_FIGURE_INCHES[1] - 1.0) / (panel[1] * rows))


def heads_heatmaps(weights, query_labels, key_labels, titles=None, columns=None, decimals=2, suptitle=""):
    """One small heatmap per head, side by side, sharing one colour bar.

    weights: array (num_heads, n_q, n_k), e.g. the weights of
        ``multi_head_attention``; queries on rows, keys on columns.
    titles: optional num_heads titles (default 'head 0', 'head 1', ...: numbered from 0, as the code does).
    columns: heatmaps per row of the figure; None (the default) puts as
        many as fit in FIGURE_MAX_WIDTH inches with cells large enough for
        9-point numbers, or, when those rows would be taller than
        MAX_FIGURE_INCHES, the grid whose panels shrink least to fit it (the
        panels shrink, never the margins, so 12 heads of 512 tokens are a
        3 x 4 grid of 2.3-inch heatmaps). Past ANNOTATE_MAX_TOKENS tokens: no numbers in the
        cells, a capped figure, thinned tick labels, and the suptitle says so
        (as :func:`weights_heatmap`).

    Returns the matplotlib Figure.
    """
    w = _as_checked_array(weights, "weights")
    if w.ndim != 3:
        raise ValueError(f"weights must have shape (num_heads, n_q, n_k); got {w.shape}")
    h, n_q, n_k = w.shape
    titles = list(titles) if titles is not None else [f"head {i}" for i in range(h)]
    if len(titles) != h:
        raise ValueError(f"need one title per head ({h}); got {len(titles)}")
    cell = 0.55
    large = _is_large(n_q, n_k)
    panel = (3.2, 3.2) if large else (cell * n_k + 0.2, cell * n_q + 0.5)  # inches per heatmap
    if columns is None:
        columns = max(1, int((FIGURE_MAX_WIDTH - 1.4) // panel[0]))
        if _panel_shrink(panel, min(columns, h), -(-h // min(columns, h))) < 1.0:
            # Too tall for MAX_FIGURE_INCHES: the grid whose panels shrink least (one column of 12
            # heads at 512 tokens would shrink the whole figure to a sliver 140 px wide).
            columns = max(range(1, h + 1), key=lambda c: (_panel_shrink(panel, c, -(-h // c)), -c))
    elif isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be None or a positive whole number; got {columns!r}")
    cols = min(columns, h)
    rows = -(-h // cols)
    shrink = _panel_shrink(panel, cols, rows)  # the panels shrink to fit the cap, the margins do not
    fig, axes = plt.subplots(rows, cols, figsize=(1.4 + shrink * panel[0] * cols, 1.0 + shrink * panel[1] * rows),
                             layout="constrained", squeeze=False)
    numbers = max(n_q, n_k) <= ANNOTATE_MAX_TOKENS
    for k, ax in enumerate(axes.flat):
        if k >= h:
            ax.axis("off")
            continue
        image = ax.imshow(w[k], cmap=CMAP, vmin=0.0, vmax=1.0)
        for (i, j), value in np.ndenumerate(w[k] if numbers else np.zeros((0, 0))):
            ax.text(j, i, f"{value:.{decimals}f}", ha="center", va="center", fontsize=9, color=_text_colour(value))
        step_k = _ticks(ax, "x", list(key_labels) if k + cols >= h else [], n_k, rotation=90, fontsize=9)
        step_q = _ticks(ax, "y", list(query_labels) if k % cols == 0 else [], n_q, fontsize=9)
        ax.set_title(titles[k], fontsize=10)
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
    fig.supxlabel("key (attended to)", fontsize=10)
    fig.supylabel("query (attending)", fontsize=10)
    if suptitle or large:
        note = _large_note(n_q, n_k, step_q, step_k) if large else ""
        fig.suptitle(suptitle + note if suptitle else note.lstrip("\n"))
    describe(fig, (f"{suptitle}: " if suptitle else "") + f"{h} heatmaps of attention weights, one per head ("
             + ", ".join(titles) + f"), each with {n_q} queries on the rows and {n_k} keys on the columns"
             + ("" if numbers else " (no numbers in the cells: too many tokens)") + "; "
             + "; ".join(_strongest(w[k], query_labels, key_labels, titles[k]) for k in range(h)) + ".")
    return fig


#: One meaning per colour across the course: a line of scaled scores is always blue with circles and a
#: line of unscaled scores always orange with squares (the marker tells them apart without the hue).
SCALED_STYLE, UNSCALED_STYLE = ("tab:blue", "o"), ("tab:orange", "s")
_OTHER_STYLES = [("tab:green", "^"), ("tab:purple", "v"), ("tab:brown", "D"), ("tab:gray", "P")]


def _series_style(label, k):
    """(colour, marker) of a line: by its label when it names scaled or unscaled scores, else by its order."""
    words = str(label).lower()
    if "unscaled" in words:
        return UNSCALED_STYLE
    if "scaled" in words:
        return SCALED_STYLE
    return _OTHER_STYLES[k % len(_OTHER_STYLES)]


def lines_plot(x, series, xlabel, ylabel, title="", ax=None, logx=False, logy=False, reference=None):
    """Plot one or more curves against the same x, with an optional reference line.

    x: 1-D array. series: {label: 1-D array of len(x)}, drawn with markers.
    reference: optional (label, 1-D array), drawn as a dashed grey line
        (e.g. a prediction the measurements should follow).
    logx, logy: logarithmic axes (base 2 for x, base 10 for y).

    Returns the matplotlib Figure.
    """
    x = _as_checked_array(x, "x")
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.6, 3.2), layout="constrained")
    else:
        fig = ax.figure
    lines = list(series.items()) + ([reference] if reference is not None else [])
    for k, (label, y) in enumerate(lines):
        y = _as_checked_array(y, f"series[{label!r}]" if k < len(series) else "reference")
        if y.shape != x.shape:
            raise ValueError(f"the line {label!r} must have the shape of x {x.shape}; got {y.shape}")
        if k == len(series):
            ax.plot(x, y, "--", color="0.45", lw=1.2, label=label)
        else:
            colour, marker = _series_style(label, k)
            ax.plot(x, y, marker=marker, ms=5, color=colour, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ends = "; ".join(f"{label} goes from {float(np.asarray(y, dtype=float)[0]):.3g} to {float(np.asarray(y, dtype=float)[-1]):.3g}"
                     for label, y in lines)
    describe(fig, (f"'{title}': " if title else "") + f"{ylabel} against {xlabel} from {x[0]:.3g} to {x[-1]:.3g}"
             + {(True, True): " (logarithmic axes)", (True, False): " (logarithmic x axis)",
                (False, True): " (logarithmic y axis)", (False, False): ""}[(bool(logx), bool(logy))] + f"; {ends}.")
    return fig


# --------------------------------------------------------------------------
# Figures of notebook 11 (a real trained model): grids of heads, panels of
# heatmaps of different sizes, and one query's whole row for its explorer.
# --------------------------------------------------------------------------

__all__ += ["layer_head_grid", "heatmap_panels", "weights_row_html"]


def layer_head_grid(values, title, vmax, colour_label, ax=None, decimals=2, vmin=0.0):
    """One number per head of every layer as a grid: layers on the rows, heads on the columns.

    values: array (num_layers, num_heads), e.g. each head's mean entropy or
        its mean weight on [CLS]. Layers and heads are labelled from 0, as
        numpy indexes them.
    title: the axes title. vmin, vmax: the range of the cividis colours
        (e.g. 0 to log n for entropy, 0 to 1 for weights).
    colour_label: what the colour bar measures. decimals: of the numbers
        written in the cells.

    Returns the matplotlib Figure. Raises ValueError for values that are not
    a non-empty matrix of finite numbers or a range with vmax <= vmin.
    """
    v = _as_checked_array(values, "values")
    if v.ndim != 2 or v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must be a non-empty matrix (num_layers, num_heads) of finite numbers; got shape {v.shape}")
    if not float(vmax) > float(vmin):
        raise ValueError(f"vmax must be larger than vmin; got vmin {vmin!r}, vmax {vmax!r}")
    layers, heads = v.shape
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.4 + 0.55 * heads, 0.9 + 0.42 * layers), layout="constrained")
    else:
        fig = ax.figure
    image = ax.imshow(v, cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto")
    for (i, j), value in np.ndenumerate(v):
        ax.text(j, i, f"{value:.{decimals}f}", ha="center", va="center", fontsize=8,
                color=_text_colour((value - vmin) / (vmax - vmin)))
    ax.set_xticks(range(heads), labels=[str(h) for h in range(heads)])
    ax.set_yticks(range(layers), labels=[str(layer) for layer in range(layers)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, label=colour_label, shrink=0.9)
    hi, lo = np.unravel_index(int(np.argmax(v)), v.shape), np.unravel_index(int(np.argmin(v)), v.shape)
    describe(fig, f"Grid '{title}': {colour_label}, one number per head, layers 0 to {layers - 1} on the rows, heads "
                  f"0 to {heads - 1} on the columns, brighter for a larger value; largest {v[hi]:.2f} (layer {hi[0]} "
                  f"head {hi[1]}), smallest {v[lo]:.2f} (layer {lo[0]} head {lo[1]}).")
    return fig


def heatmap_panels(panels, decimals=2, cell=0.36, suptitle=""):
    """Several attention heatmaps of possibly different sizes in a grid, sharing one colour bar.

    panels: a list of rows; each row a list of (weights, query_labels,
        key_labels, title), weights of shape (n_q, n_k) with entries in [0, 1].
        Rows are queries, columns are keys, each weight written in its cell,
        cividis on the fixed range 0 to 1 (as :func:`weights_heatmap`).
    decimals: of the weights written in the cells. cell: inches per cell
        (the numbers are 28 points per inch of cell, at most 9 points).
    A panel carries no numbers in its cells when it, or the row of panels
    it sits in, spans more than ANNOTATE_MAX_TOKENS keys (the description
    says so): such a figure is shrunk to the page's width and its numbers
    would be unreadable on a projector. Past ANNOTATE_MAX_TOKENS tokens in
    any panel the figure is also capped, its tick labels thinned, and the
    suptitle says so (as :func:`weights_heatmap`).

    Returns the matplotlib Figure. Raises ValueError as :func:`weights_heatmap`
    does for weights or labels that do not fit, or for an empty grid.
    """
    rows = [list(row) for row in panels]
    if not rows or not all(rows):
        raise ValueError("panels must be a non-empty list of non-empty rows of (weights, query_labels, key_labels, title)")
    checked = [[(*_labelled_weights(w, q, k), title) for w, q, k, title in row] for row in rows]
    # A panel gets numbers in its cells when it, and the row of panels it sits in, spans at most
    # ANNOTATE_MAX_TOKENS keys: wider, the figure is shrunk to the page and its numbers become unreadable.
    numbered = [[max(p[0].shape) <= ANNOTATE_MAX_TOKENS and sum(q[0].shape[1] for q in row) <= ANNOTATE_MAX_TOKENS
                 for p in row] for row in checked]
    columns = max(len(row) for row in checked)
    widths = [max(row[c][0].shape[1] for row in checked if c < len(row)) for c in range(columns)]
    heights = [max(p[0].shape[0] for p in row) for row in checked]
    large = _is_large(*widths, *heights)
    label_room = 0.09 * min(max(len(str(label)) for row in checked for p in row for label in p[1]), 30)
    fig = plt.figure(figsize=_capped(1.6 + label_room * columns + cell * sum(widths),
                                     0.9 + 0.6 * len(checked) + cell * sum(heights) + (0.3 if suptitle else 0)),
                     layout="constrained")
    grid = fig.add_gridspec(len(checked), columns, width_ratios=widths, height_ratios=heights)
    axes, steps = [], set()
    for r, row in enumerate(checked):
        for c, (w, query_labels, key_labels, title) in enumerate(row):
            numbers = numbered[r][c]
            ax = fig.add_subplot(grid[r, c])
            image = ax.imshow(w, cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
            for (i, j), value in np.ndenumerate(w if numbers and not large else np.zeros((0, 0))):
                ax.text(j, i, f"{value:.{decimals}f}", ha="center", va="center", fontsize=min(9.0, 28 * cell),
                        color=_text_colour(value))
            steps.add(_ticks(ax, "x", key_labels, rotation=90, fontsize=8))
            steps.add(_ticks(ax, "y", query_labels, fontsize=8))
            ax.set_title(title, fontsize=9)
            axes.append(ax)
    # A colour bar about 4 inches tall, however tall the grid.
    fig.colorbar(image, ax=axes, label="attention weight", shrink=min(0.8, 4.0 / fig.get_figheight()))
    fig.supxlabel("key (attended to)", fontsize=9)
    fig.supylabel("query (attending)", fontsize=9)
    if large:  # one note for the grid: the largest panel's size and the coarsest labelling
        step = max(steps)
        suptitle += (f"\n(panels up to {max(heights)} x {max(widths)}, over {ANNOTATE_MAX_TOKENS} tokens: weights "
                     f"not written in cells" + (f"; at most 1 token in {step} labelled)" if step > 1 else ")"))
    if suptitle:
        fig.suptitle(suptitle.lstrip("\n"), fontsize=11)
    describe(fig, (f"{suptitle.strip()}: " if suptitle else "") + f"{sum(len(r) for r in checked)} heatmaps of attention weights, "
             "queries on the rows and keys on the columns, brighter for a larger weight"
             + ("" if all(all(r) for r in numbered) and not large else
                " (no numbers in the cells where a row of panels spans more than "
                f"{ANNOTATE_MAX_TOKENS} keys: they would be too small to read)") + "; "
             + "; ".join(_strongest(w, q, k, f"'{t}'") for r in checked for w, q, k, t in r) + ".")
    return fig


def weights_row_html(row, key_labels, title="", marked=None, decimals=3):
    """One query's attention weights over every key as a strip of small boxes that wraps.

    row: array (n_k,) of weights in [0, 1]; key_labels: n_k labels. Each
    key is a box with its label above its weight, the weight's box coloured
    cividis on the fixed range 0 to 1 (like :func:`weights_table_html`), so a
    row of any length (up to the model's 512 tokens) fits the page width.
    marked: optional position of a key to mark (e.g. the query itself): a
        double outline in the page's text colour, set off from the box, and
        its label in bold after a ▸, so it is seen without telling hues apart.

    Returns a string of HTML. Raises ValueError for a row that is not a
    non-empty vector of weights, or labels that do not fit.
    """
    w = _as_checked_array(row, "row")
    if w.ndim != 1:
        raise ValueError(f"row must be one row of weights, shape (n_k,); got shape {w.shape}")
    w, _, key_labels = _labelled_weights(w[None, :], ["row"], key_labels)
    esc = _html.escape
    boxes = []
    for j, (value, label) in enumerate(zip(w[0], key_labels)):
        outline = f"outline:3px double {_MARK};outline-offset:2px;" if j == marked else ""
        label = ("▸\u00a0" + label) if j == marked else label
        bold = "font-weight:bold;" if j == marked else ""
        boxes.append(
            f"<div style='display:inline-block;margin:0 2px 4px 0;text-align:center;vertical-align:top' title='key {j}: {esc(label)}'>"
            f"<div style='font-size:11px;color:{_PAGE_TEXT};{bold}max-width:70px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap'>{esc(label)}</div>"
            f"<div style='{outline}min-width:40px;padding:2px 3px;font-size:11px;background:{_cell_colour(value)};"
            f"color:{_text_colour(value)}'>{value:.{decimals}f}</div></div>")
    head = f"<div style='font-weight:bold;margin:2px 0 4px 0'>{esc(title)}</div>" if title else ""
    return (f"<div style='font-family:sans-serif;font-size:12px;line-height:1.2;font-variant-numeric:tabular-nums;"
            f"color:{_PAGE_TEXT}'>"
            f"{head}<div>{''.join(boxes)}</div></div>")


_install_description_formatter()


# --------------------------------------------------------------------------
# Notebook 03: how large the gradient that reaches the query is, one panel per key width.
# --------------------------------------------------------------------------

__all__ += ["size_histograms"]


def size_histograms(samples, floor, xlabel="size of dL/dq", title="", bins=24):
    """One histogram panel per key width: the sizes of many rows' gradients, scaled beside unscaled.

    samples: {panel title (e.g. "d_k = 64"): {"scaled": 1-D sizes, "unscaled": 1-D sizes}}.
    floor: {panel title: a positive size}; a size below it ("almost nothing") is
        counted in a bar of its own at the left edge, marked by a dotted line.
    The x axis is logarithmic and shared by every panel. Scaled rows are a filled
    blue histogram, unscaled rows an orange outline, dashed and hatched: the two
    differ in more than hue. Returns the Figure.
    Raises ValueError naming the argument for an empty, non-finite or negative sample,
    a floor that is not positive, or a panel without both series.
    """
    if not isinstance(samples, dict) or not samples:
        raise ValueError(f"samples must map panel titles to {{'scaled': sizes, 'unscaled': sizes}}; got {samples!r}")
    checked = {}
    for panel, series in samples.items():
        if not isinstance(series, dict) or set(series) != {"scaled", "unscaled"}:
            raise ValueError(f"samples[{panel!r}] must have exactly the keys 'scaled' and 'unscaled'; got {series!r}")
        f = float(floor.get(panel, np.nan)) if isinstance(floor, dict) else np.nan
        if not np.isfinite(f) or f <= 0:
            raise ValueError(f"floor[{panel!r}] must be a positive size; got {floor!r}")
        arrays = {}
        for name, values in series.items():
            a = _as_checked_array(values, f"samples[{panel!r}][{name!r}]").ravel()
            if a.size == 0 or np.any(a < 0):
                raise ValueError(f"samples[{panel!r}][{name!r}] must be non-empty sizes (>= 0); got {a.size} values")
            arrays[name] = a
        checked[panel] = (arrays, f)
    low = min(f for _, f in checked.values()) / 10
    high = max(max(a.max() for a in arrays.values()) for arrays, _ in checked.values()) * 1.5
    edges = np.geomspace(low, high, bins + 1)
    fig, axes = plt.subplots(1, len(checked), figsize=(2.8 * len(checked), 2.7), sharex=True, sharey=True,
                             layout="constrained", squeeze=False)
    said = []
    for ax, (panel, (arrays, f)) in zip(axes[0], checked.items()):
        parts = []
        for name, style in (("scaled", dict(histtype="stepfilled", alpha=0.55, color=SCALED_STYLE[0],
                                             edgecolor=SCALED_STYLE[0], linestyle="-")),
                            ("unscaled", dict(histtype="step", color=UNSCALED_STYLE[0], linestyle="--",
                                              linewidth=1.8, hatch="//"))):
            a = np.clip(arrays[name], low * 1.01, None)          # "almost nothing" lands in the first bar
            ax.hist(a, bins=edges, weights=np.full(a.size, 1 / a.size), label=name, **style)
            parts.append(f"{name}: median {np.median(arrays[name]):.3g}, "
                         f"{np.mean(arrays[name] < f):.0%} below {f:.2g}")
        ax.axvline(f, color="0.3", linestyle=":", linewidth=1.2)
        ax.annotate(" \u2190 almost nothing", xy=(f, 0.97), xycoords=("data", "axes fraction"), ha="left", va="top",
                    fontsize=7, color="0.25")
        ax.set_xscale("log")
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        said.append(f"{panel}: " + "; ".join(parts))
    axes[0][0].set_ylabel("share of rows")
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize=8, loc="outside right upper")
    if title:
        fig.suptitle(title, fontsize=11)
    describe(fig, (f"'{title}': " if title else "") + f"histograms of {xlabel} (logarithmic axis), one panel per "
             "key width, scaled filled, unscaled dashed outline; the dotted line marks 'almost nothing'; "
             + "; ".join(said) + ".")
    return fig
