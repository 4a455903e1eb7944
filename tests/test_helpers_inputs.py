"""Bad input to the display helpers (examples, plots, environment) gets a clear ValueError."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.environment import check_environment, pinned_versions  # noqa: E402
from helpers.examples import available_examples, compare, load_example  # noqa: E402
from helpers.plots import plane_plot, weights_heatmap  # noqa: E402

rb = load_example("river_bank")


def test_only_worked_examples_are_offered():
    assert "river_bank" in available_examples()
    assert "minilm_reference" not in available_examples()  # reference values, not an example
    with pytest.raises(ValueError, match=r"name must be one of the worked examples .* got 'minilm_reference'"):
        load_example("minilm_reference")


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(labels=["a"] * 50), r"labels must give one label per entry \(4 for weights_bank\); got 50"),
    (dict(extra=-5), r"extra must be a whole number of decimals >= 0; got -5"),
])
def test_compare_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        compare(rb.published["weights_bank"].value, rb.published["weights_bank"], **kwargs)


def test_compare_needs_a_published_entry():
    with pytest.raises(ValueError, match="published must be a Published entry"):
        compare([1.0], {"value": 1.0})


def test_compare_prints_ours_beside_published(capsys):
    # published 0.132 0.326 0.250 0.293 at 3 decimals: 0.3250 is 0.001 off 0.326, beyond half a unit
    compare(np.array([0.1321, 0.3250, 0.2497, 0.2927]), rb.published["weights_bank"], labels=rb.tokens)
    lines = capsys.readouterr().out.splitlines()
    river = next(line for line in lines if line.strip().startswith("river"))
    assert river.split() == ["river", "0.32500", "0.326", "-0.00100", "NO"]
    assert sum(line.endswith("yes") for line in lines) == 3


W = np.full((2, 2), 0.5)


@pytest.mark.parametrize("args, kwargs, pattern", [
    ((W, None, ["a", "b"], "t"), {}, r"query_labels must be a list of 2 labels; got None"),
    ((W, "ab", ["a", "b"], "t"), {}, r"query_labels must be a list of 2 labels; got 'ab'"),
    ((W, ["a"], ["a", "b"], "t"), {}, r"query_labels must give 2 labels"),
    ((np.array([[np.nan, 1.0]]), ["a"], ["a", "b"], "t"), {}, r"weights must be attention weights"),
    ((np.array([[5.0, 0.0]]), ["a"], ["a", "b"], "t"), {}, r"weights must be attention weights"),
    ((np.zeros((0, 2)), [], ["a", "b"], "t"), {}, r"weights must be a non-empty matrix"),
    ((W, ["a", "b"], ["a", "b"], "t"), {"decimals": -1}, r"decimals must be a whole number from 0 to 6"),
])
def test_heatmap_bad_input(args, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        weights_heatmap(*args, **kwargs)


def test_heatmap_writes_every_weight_and_stretches_colours_on_request():
    fig = weights_heatmap(np.array([[0.25, 0.75], [0.1, 0.9]]), ["a", "b"], ["c", "d"], "t", vmax=None)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["0.250", "0.750", "0.100", "0.900"]
    assert ax.images[0].get_clim() == (0.0, 0.9)
    plt.close(fig)


def test_plane_plot_needs_one_label_per_point():
    with pytest.raises(ValueError, match="labels must give 2 labels"):
        plane_plot(np.zeros((2, 2)), ["only one"])
    with pytest.raises(ValueError, match=r"points must have shape \(n, 2\) with n >= 1"):
        plane_plot(np.zeros((0, 2)), [])


def test_environment_check(capsys, tmp_path):
    assert check_environment("numpy") is True  # a single name, not its letters
    assert capsys.readouterr().out.count("\n") == 4
    with pytest.raises(ValueError, match="does not exist"):
        pinned_versions(tmp_path / "missing.txt")
    req = tmp_path / "req.txt"
    req.write_text("numpy==0.0.1\n")
    assert check_environment(["numpy"], req) is False
    assert "DIFFERENT" in capsys.readouterr().out


def test_plane_plot_puts_a_label_where_it_is_told_with_a_leader_when_far():
    fig = plane_plot(np.array([[0.0, 0.0], [1.0, 1.0]]), ["near", "far"], moves=[((0, 0), (1, 0), "q")],
                     label_offsets={"near": (-12, -10), "far": (40, -30), "q": (6, 8)})
    texts = {t.get_text(): t for t in fig.axes[0].texts}
    assert texts["near"].xyann == (-12, -10) and texts["near"].arrow_patch is None     # 16 points away: no line
    assert texts["far"].xyann == (40, -30) and texts["far"].arrow_patch is not None    # 50 points away: a leader
    assert texts["q"].xyann == (6, 8)
    plt.close(fig)
    fig = plane_plot(np.array([[0.0, 0.0]]), ["a"])
    assert fig.axes[0].texts[0].xyann == (6, 4)                                       # the default, above right
    plt.close(fig)
    with pytest.raises(ValueError, match="label_offsets must map labels to"):
        plane_plot(np.array([[0.0, 0.0]]), ["a"], label_offsets={"a": 3})
