"""The explorer pictures and the figures of notebooks 03-05 in helpers.plots."""

import re

import matplotlib
import numpy as np
import pytest

from helpers.plots import heads_heatmaps, html_grid, lines_plot, values_table_html, weights_table_html


def cells(html):
    return re.findall(r"<td style='([^']*)'[^>]*>([^<]*)</td>", html)


def test_table_cells_are_cividis_at_the_weight_with_the_weight_written():
    w = np.array([[0.0, 1.0], [0.25, 0.75]])
    out = weights_table_html(w, ["a", "b"], ["x", "y"], title="t")
    found = cells(out)
    assert [text for _, text in found] == ["0.000", "1.000", "0.250", "0.750"]
    cividis = matplotlib.colormaps["cividis"]
    for (style, _), value in zip(found, w.ravel()):
        expected = matplotlib.colors.to_hex(cividis(value))
        got = re.search(r"background:(#[0-9a-f]{6})", style).group(1)
        # the table uses 256 steps of the colormap: within one step of the exact colour
        diff = np.abs(np.array(matplotlib.colors.to_rgb(got)) - matplotlib.colors.to_rgb(expected))
        assert diff.max() < 0.02, (value, got, expected)
    # rows are queries, columns are keys: the row labels come before each row's cells
    assert out.index(">a</th>") < out.index("0.000") < out.index(">b</th>") < out.index("0.250")


def test_table_marks_masked_cells_and_adds_row_notes():
    w = np.array([[1.0, 0.0], [0.5, 0.5]])
    out = weights_table_html(w, ["a", "b"], ["a", "b"], masked=np.array([[False, True], [False, False]]),
                             row_notes={"sum": [1.0, 1.0], "output": ["(1, 0)", "<b>"]})
    assert out.count("title='masked'") == 1
    assert "masked (weight exactly 0)" in out
    assert "&lt;b&gt;" in out  # labels and notes are escaped


def test_values_table_puts_each_value_in_its_row_and_column():
    out = values_table_html(["a", "<b>"], [("m", [("before", [0.5, "−∞"]), ("after", [1.0, 2.0])]),
                                           ("l", [("after", ["x", 3.25])])], title="running", decimals=2)
    # Two heading rows: the groups over their columns, then the columns; then one row per label.
    assert "colspan='2'" in out and "colspan='1'" in out and "<caption" in out and "running" in out
    rows = re.findall(r"<tr>(.*?)</tr>", out)
    assert len(rows) == 4
    assert re.findall(r">([^<>]+)</th>", rows[1]) == ["before", "after", "after"]
    assert re.findall(r">([^<>]*)</td>", rows[2]) == ["0.50", "1.00", "x"]
    assert re.findall(r">([^<>]*)</td>", rows[3]) == ["−∞", "2.00", "3.25"]
    assert "&lt;b&gt;" in rows[3]  # labels are escaped
    with pytest.raises(ValueError, match=r"groups: column 'after' of 'l' needs 2 values, one per row; got 1"):
        values_table_html(["a", "b"], [("l", [("after", [1.0])])])


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(weights=np.zeros(3), query_labels=[], key_labels=[]), r"weights must be a non-empty matrix"),
    (dict(weights=np.zeros((2, 2)), query_labels=["a"], key_labels=["a", "b"]), r"query_labels must give 2 labels"),
    (dict(weights=np.zeros((2, 2)), query_labels=["a", "b"], key_labels=["a", "b"], masked=np.zeros((2, 3))), r"masked must have"),
    (dict(weights=np.zeros((2, 2)), query_labels=["a", "b"], key_labels=["a", "b"], row_notes={"s": [1]}), r"needs 2 values"),
])
def test_table_bad_input(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        weights_table_html(**kwargs)


def test_grid_lays_pieces_out_in_columns():
    out = html_grid(["<i>1</i>", "<i>2</i>", "<i>3</i>"], columns=2)
    assert "repeat(2," in out and out.count("<i>") == 3
    with pytest.raises(ValueError, match="columns must be None or a positive whole number; got 0"):
        html_grid([], columns=0)


def test_grid_wraps_to_the_width_by_default():
    out = html_grid(["<i>1</i>", "<i>2</i>"])
    assert "flex-wrap:wrap" in out and "repeat(" not in out and out.count("<i>") == 2


def test_heads_heatmaps_draws_one_image_per_head():
    w = np.full((6, 3, 3), 1 / 3)
    fig = heads_heatmaps(w, "abc", "abc", columns=4)
    images = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert len(images) == 6
    assert all(len(ax.texts) == 9 for ax in images)
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match=r"need one title per head \(6\); got 1"):
        heads_heatmaps(w, "abc", "abc", titles=["x"])


def test_lines_plot_checks_shapes():
    fig = lines_plot([1, 2, 4], {"a": [1, 2, 3]}, "x", "y", reference=("ref", [1, 2, 4]))
    assert len(fig.axes[0].lines) == 2
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match=r"the line 'a' must have the shape of x \(3,\); got \(2,\)"):
        lines_plot([1, 2, 4], {"a": [1, 2]}, "x", "y")
