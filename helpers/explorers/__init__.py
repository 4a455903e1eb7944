"""Explorers: widgets that recompute attention as you move a control.

Each explorer comes in two parts:

- a pure function of the control values (``dk_state``, ``mask_state``,
  ``heads_state``) that returns a small frozen record of every number the
  picture shows. Notebooks print from it; tests call it directly.
- a widget (``dk_explorer()``, ``mask_explorer()``, ``heads_explorer()``):
  one ``ipywidgets.VBox`` holding the controls and the picture. Its current
  record is ``.state`` (None after a failed update, whose message is then
  in ``.error``), its controls are ``.controls`` by name, and its picture
  is the HTML widget ``.picture``.

The picture is an HTML heatmap (``plots.weights_table_html``) rather than a
matplotlib figure: each change replaces the HTML of one widget of fixed
height, so the page neither flickers nor jumps, nothing piles up, and an
update costs about a millisecond instead of the 50-100 ms of drawing a PNG.
An exception inside an update is caught and shown in the picture's place.

Where each part lives (``from helpers.explorers import X`` finds every public name):

    base.py        Explorer, the shell every explorer shares, and its static form (KERNEL_LINE)
    setup.py       notebook 00: setup_check
    dk.py          notebook 03: d_k and the scaling
    mask.py        notebook 04: the causal mask, hidden keys, masking before or after the softmax
    heads.py       notebook 05: the number of heads
    tiling.py      notebook 08: the online softmax, block by block
    real_model.py  notebook 11: a sentence through all-MiniLM-L6-v2
    window.py      notebook 10: how far stacked sliding windows reach
"""

from __future__ import annotations

from helpers.explorers.base import (
    EXPLORER_CSS,
    KERNEL_LINE,
    NO_KERNEL_LINE,
    PRESSED_BACKGROUND,
    PRESSED_TEXT,
    Explorer,
)
from helpers.explorers.dk import DK_CHOICES, DkState, dk_explorer, dk_state
from helpers.explorers.heads import (
    HEADS_CHOICES,
    HEADS_D_MODEL,
    HeadsState,
    heads_explorer,
    heads_state,
    random_model,
)
from helpers.explorers.mask import MaskState, mask_explorer, mask_state
from helpers.explorers.real_model import (
    REAL_MAX_DRAWN,
    REAL_ROW_KEYS,
    REAL_SENTENCE,
    RealModelState,
    TextProblem,
    real_model_explorer,
    real_model_run,
    real_model_state,
)
from helpers.explorers.setup import setup_check
from helpers.explorers.tiling import TilingState, tiling_explorer, tiling_state
from helpers.explorers.window import WindowState, window_explorer, window_state

__all__ = [
    "Explorer", "KERNEL_LINE", "NO_KERNEL_LINE", "EXPLORER_CSS", "PRESSED_BACKGROUND", "PRESSED_TEXT", "setup_check",
    "DkState", "dk_state", "dk_explorer", "DK_CHOICES",
    "MaskState", "mask_state", "mask_explorer",
    "HeadsState", "heads_state", "heads_explorer", "random_model", "HEADS_CHOICES", "HEADS_D_MODEL",
    "TilingState", "tiling_state", "tiling_explorer",
    "RealModelState", "real_model_state", "real_model_run", "real_model_explorer",
    "REAL_SENTENCE", "REAL_MAX_DRAWN", "REAL_ROW_KEYS", "TextProblem",
    "WindowState", "window_state", "window_explorer",
]
