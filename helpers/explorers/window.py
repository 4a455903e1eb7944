"""Notebook 10's explorer: how far a token reaches through stacked sliding-window layers (``window_state``,
``window_explorer``)."""

from __future__ import annotations

import html
import numbers
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from helpers.attention import sliding_window_mask
from helpers.explorers.base import Explorer
from helpers.inputs import positive_whole

__all__ = ["WindowState", "window_state", "window_explorer", "WINDOW_N", "WINDOW_MAX", "LAYERS_MAX"]

#: The explorer's sentence length, and the largest window and number of layers its sliders offer.
WINDOW_N, WINDOW_MAX, LAYERS_MAX = 16, 8, 6
REACHED, NOT_REACHED = "#1565c0", "#ffffff"          # white text on the blue: 5.7:1, and a dot, not hue alone


@dataclass(frozen=True)
class WindowState:
    """What the window explorer shows for one setting.

    reach: (n, n) bool, entry [i, j] True when token j can reach token i's output through ``layers``
    stacked causal sliding-window layers (the boolean product of the masks). last_reach: how many
    positions the last token draws on; formula: layers * (window - 1) + 1, capped at n.
    """

    window: int
    layers: int
    n: int
    reach: np.ndarray
    last_reach: int
    formula: int
    messages: tuple


def window_state(window=3, layers=2, n=WINDOW_N):
    """The reach of ``layers`` causal sliding-window layers of width ``window`` over n tokens.

    One layer's mask is ``sliding_window_mask(n, window)`` (Jiang et al. 2023, section 2). Token j
    reaches token i after two layers when some token k has j in its window and is in i's: the
    boolean matrix product of the masks; L layers multiply L masks. Returns a :class:`WindowState`.
    Raises ValueError naming the argument unless window, layers and n are positive whole numbers.
    """
    window, layers = positive_whole(window, "window"), positive_whole(layers, "layers")
    mask = sliding_window_mask(positive_whole(n, "n"), window).astype(int)
    reach = mask.copy()
    for _ in range(layers - 1):
        reach = ((reach @ mask) > 0).astype(int)                    # one more layer: through any token k
    reach = reach.astype(bool)
    last, formula = int(reach[-1].sum()), min(n, layers * (window - 1) + 1)
    messages = (f"{layers} layer{'s' if layers > 1 else ''} of window {window}: the last token draws on {last} "
                f"of {n} positions; layers × (window − 1) + 1 = {layers * (window - 1) + 1}"
                + (f", capped at n = {n}." if formula < layers * (window - 1) + 1 else "."),)
    return WindowState(window=window, layers=layers, n=n, reach=reach, last_reach=last, formula=formula,
                       messages=messages)


def _draw_window(state):
    cell = "width:18px;height:18px;text-align:center;font-size:11px;border:1px solid #999;padding:0"
    head = "".join(f"<th style='{cell};border:none'>{j}</th>" for j in range(state.n))
    rows = []
    for i in range(state.n):
        cells = "".join(f"<td style='{cell};background:{REACHED};color:#fff'>&#9679;</td>" if state.reach[i, j]
                        else f"<td style='{cell};background:{NOT_REACHED}'></td>" for j in range(state.n))
        rows.append(f"<tr><th style='{cell};border:none'>{i}</th>{cells}</tr>")
    title = html.escape(f"Which positions (columns) reach each token (rows) after {state.layers} layer"
                        f"{'s' if state.layers > 1 else ''} of window {state.window}")
    return (f"<div class='explorer-text'><b>{title}</b></div>"
            f"<table style='border-collapse:collapse;font-family:sans-serif'><tr><th></th>{head}</tr>"
            + "".join(rows) + "</table>")


def window_explorer(window=3, layers=2):
    """Explore stacked sliding windows: sliders for ``window`` (1-8) and ``layers`` (1-6), n = 16 tokens.

    The picture marks, for every token (row), the positions (columns) its output can draw on.
    Returns an :class:`Explorer`; ``.state`` is a :class:`WindowState`. Raises ValueError unless
    window and layers are whole numbers in the sliders' ranges.
    """
    for value, name, top in ((window, "window", WINDOW_MAX), (layers, "layers", LAYERS_MAX)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= top:
            raise ValueError(f"{name} must be a whole number from 1 to {top} (the slider's range); got {value!r}")
    sliders = {name: widgets.IntSlider(value=int(value), min=1, max=top, description=name,
                                       layout=widgets.Layout(width="360px"))   # tracks of 150+ CSS px projected
               for name, value, top in (("window", window, WINDOW_MAX), ("layers", layers, LAYERS_MAX))}
    return Explorer(lambda window, layers: window_state(window, layers), _draw_window, sliders,
                    [[sliders["window"], sliders["layers"]]], height=f"{(WINDOW_N + 1) * 20 + 70}px",
                    name="window")
