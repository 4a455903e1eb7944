"""Contrast (WCAG 2.1) of every text colour the explorers and heatmaps put on a coloured background.

The formula is WCAG 2.1's (relative luminance, then (L1 + 0.05) / (L2 + 0.05));
its known values anchor it: black on white is 21:1, and #777777 on white is
4.48:1, the grey WebAIM's checker gives as just failing AA. AA for normal
text is 4.5:1.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import plots as P
from helpers import explorers as W

AA = 4.5


def test_contrast_formula_against_published_values():
    assert P.contrast_ratio("black", "white") == pytest.approx(21.0)
    assert P.contrast_ratio("white", "white") == pytest.approx(1.0)
    assert P.contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # WebAIM: 4.48:1
    assert P.contrast_ratio("#ffffff", "#777777") == P.contrast_ratio("#777777", "#ffffff")  # order-free


def test_every_cividis_cell_gets_readable_text():
    for value in np.linspace(0, 1, 1001):
        background = P._cell_colour(value)
        assert P.contrast_ratio(P._text_colour(value), background) >= AA, (value, background)


def test_the_old_threshold_failed_where_the_new_rule_passes():
    # The mid-grey of cividis with white text was 3.85:1 (the finding); the rule now picks black there.
    worst_white = min(P.contrast_ratio("white", P._cell_colour(v)) for v in np.linspace(0.4, 0.55, 100))
    assert worst_white < AA
    assert all(P._text_colour(v) == "black" for v in np.linspace(0.5, 0.55, 20))


def test_every_cell_of_an_html_heatmap_passes():
    w = np.linspace(0, 1, 36).reshape(6, 6)
    masked = np.eye(6, dtype=bool)
    table = P.weights_table_html(w, list("abcdef"), list("abcdef"), masked=masked)
    pairs = re.findall(r"background:(#[0-9a-f]{6});color:(\w+)", table)
    assert len(pairs) == 30  # every unmasked cell
    for background, text in pairs:
        assert P.contrast_ratio(text, background) >= AA
    # Masked cells: dark grey text on pale stripes, both stripe colours.
    for stripe in P.MASKED_STRIPES:
        assert P.contrast_ratio(P.MASKED_TEXT, stripe) >= AA
    assert table.count(f"color:{P.MASKED_TEXT}") >= 6


def test_row_strip_boxes_pass():
    strip = P.weights_row_html(np.linspace(0, 1, 11), [str(i) for i in range(11)])
    pairs = re.findall(r"background:(#[0-9a-f]{6});color:(\w+)", strip)
    assert len(pairs) == 11 and all(P.contrast_ratio(t, b) >= AA for b, t in pairs)


def test_matplotlib_heatmap_text_passes():
    w = np.linspace(0, 1, 16).reshape(4, 4)
    fig = P.weights_heatmap(w, list("abcd"), list("abcd"), title="t")
    ax = fig.axes[0]
    image = ax.images[0]
    for text in ax.texts:
        i, j = (int(round(v)) for v in text.get_position()[::-1])
        background = image.cmap(image.norm(w[i, j]))
        assert P.contrast_ratio(text.get_color(), background) >= AA


def test_pressed_toggle_passes_and_differs_in_more_than_colour():
    assert P.contrast_ratio(W.PRESSED_TEXT, W.PRESSED_BACKGROUND) >= AA
    assert "font-weight:bold" in W.EXPLORER_CSS and "box-shadow:inset" in W.EXPLORER_CSS
    assert "text-decoration:underline" in W.EXPLORER_CSS  # and its label underlined
