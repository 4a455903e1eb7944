"""Figures that stay readable on a projector (1024 x 768 at 150% zoom) and say what they show."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots as P


def _numbers(ax):
    return [t for t in ax.texts if t.get_text().replace(".", "").isdigit()]


@pytest.mark.parametrize("n", [P.ANNOTATE_MAX_TOKENS, P.ANNOTATE_MAX_TOKENS + 1])
def test_heatmaps_drop_cell_numbers_past_the_shared_threshold(n):
    w = np.full((n, n), 1.0 / n)
    labels = [f"t{i}" for i in range(n)]
    keep = n <= P.ANNOTATE_MAX_TOKENS
    fig = P.weights_heatmap(w, labels, labels, title="t")
    assert len(_numbers(fig.axes[0])) == (n * n if keep else 0)
    assert ("too many tokens" in P.description(fig)) != keep
    table = P.weights_table_html(w, labels, labels)
    assert (f">{1.0 / n:.3f}</td>" in table) == keep
    assert (f"More than {P.ANNOTATE_MAX_TOKENS} tokens" in table) != keep
    assert table.count("title='t0 to t1: ") == 1  # the weight stays readable in the tooltip
    plt.close("all")


def test_heads_figure_fits_a_projector_width_with_readable_numbers():
    fig = P.heads_heatmaps(np.full((8, 4, 4), 0.25), list("abcd"), list("abcd"))
    assert fig.get_figwidth() <= P.FIGURE_MAX_WIDTH
    assert min(t.get_fontsize() for ax in fig.axes for t in _numbers(ax)) >= 9
    plt.close(fig)


def test_rows_of_panels_wider_than_the_threshold_drop_their_numbers():
    k = P.ANNOTATE_MAX_TOKENS // 2 + 1   # one panel within the threshold, two side by side past it
    w = np.full((k, k), 0.1)
    labels = [str(i) for i in range(k)]
    wide = P.heatmap_panels([[(w, labels, labels, "a"), (w, labels, labels, "b")]])
    assert [ax.get_title() for ax in wide.axes if ax.images and ax.get_title()] == ["a", "b"]  # side by side still
    assert sum(len(_numbers(ax)) for ax in wide.axes) == 0 and "too small to read" in P.description(wide)
    narrow = P.heatmap_panels([[(w, labels, labels, "a")], [(w, labels, labels, "b")]])
    assert sum(len(_numbers(ax)) for ax in narrow.axes) == 2 * k * k and "too small" not in P.description(narrow)
    plt.close("all")


def test_describe_and_description():
    fig, ax = plt.subplots()
    assert P.description(fig) == "A figure without a title."
    ax.set_title("scores")
    assert P.description(fig) == "A figure: scores."
    assert P.describe(fig, "  two\n words ") is fig and P.description(fig) == "two words"
    P.describe(fig, "more")
    assert P.description(fig) == "two words more"
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValueError, match="text must be a non-empty str"):
            P.describe(fig, bad)
    with pytest.raises(ValueError, match="fig must be a matplotlib Figure; got str"):
        P.describe("fig", "text")
    plt.close(fig)


def test_every_figure_function_describes_its_figure():
    w = np.array([[0.2, 0.8], [0.6, 0.4]])
    figs = [
        P.weights_heatmap(w, ["a", "b"], ["c", "d"], title="T"),
        P.plane_plot([[0, 1], [1, 0]], ["a", "b"], moves=[((0, 1), (1, 1), "a after")]),
        P.heads_heatmaps(np.stack([w, w]), ["a", "b"], ["c", "d"]),
        P.lines_plot([1, 2], {"s": [3, 4]}, "x", "y"),
        P.layer_head_grid(w, "G", vmax=1.0, colour_label="weight"),
        P.heatmap_panels([[(w, ["a", "b"], ["c", "d"], "P")]]),
    ]
    said = [P.description(f) for f in figs]
    assert "largest 0.80 from a to d" in said[0]
    assert "b at (1.00, 0.00)" in said[1] and "to a after at (1.00, 1.00)" in said[1]
    assert "head 0: largest weight 0.80 from a to d" in said[2]   # heads numbered from 0, as the code does
    assert "s goes from 3 to 4" in said[3]
    assert "largest 0.80 (layer 0 head 1)" in said[4]
    assert "'P': largest weight 0.80 from a to d" in said[5]
    plt.close("all")


def test_caption_wraps_at_word_boundaries():
    text = "a " * 30 + "0.123456789 " * 3 + "end"
    lines = P._caption(text, width=40).splitlines()
    assert all(len(line) <= 40 for line in lines) and " ".join(lines) == "Figure: " + " ".join(text.split())


def test_masked_cells_are_hatched_with_a_legend_not_drawn_as_zero_weights():
    w = np.array([[1.0, 0.0], [0.4, 0.6]])
    masked = np.array([[False, True], [False, False]])
    fig = P.weights_heatmap(w, ["a", "b"], ["a", "b"], title="causal", masked=masked)
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_xy() == (0.5, -0.5)  # the cell of row a, key b
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["masked (weight exactly 0)"]
    assert "1 masked cells hatched grey" in P.description(fig)
    plain = P.weights_heatmap(w, ["a", "b"], ["a", "b"], title="plain")
    assert not [p for p in plain.axes[0].patches if p.get_hatch()] and plain.axes[0].get_legend() is None
    for bad in (np.ones((2, 3), dtype=bool), np.zeros((2, 2))):
        with pytest.raises(ValueError, match="masked must be a boolean array of the shape of weights"):
            P.weights_heatmap(w, ["a", "b"], ["a", "b"], title="t", masked=bad)
    solo = P.weights_heatmap(w, ["a", "b"], ["a", "b"], title="t", colour_bar=False)
    assert len(solo.axes) == 1  # no colour bar axes
    plt.close("all")


def test_scaled_and_unscaled_lines_keep_one_colour_and_marker_course_wide():
    for order in (["q · k (unscaled)", "q · k / √d_k (scaled)"], ["scaled", "unscaled"]):
        fig = P.lines_plot([1, 2], {label: [1, 2] for label in order}, "x", "y")
        styles = {line.get_label(): (line.get_color(), line.get_marker()) for line in fig.axes[0].lines}
        for label, style in styles.items():
            assert style == (P.UNSCALED_STYLE if "unscaled" in label else P.SCALED_STYLE)
        assert fig.axes[0].get_legend() is not None
    plt.close("all")
