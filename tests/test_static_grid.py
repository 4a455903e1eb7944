"""The explorers' interactive static form (helpers/explorers/static.py): the stored grid of states.

The browser half (the site's explorers moved in Chromium and compared with the state functions) is
tests/browser/test_static_explorers.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from helpers import explorers as W
from helpers.explorers import static
from helpers.explorers.static import Control, grid_states, pieces, state_key

ROOT = Path(__file__).resolve().parents[1]
GRID = re.compile(r"<script type='application/json' class='course-explorer-grid'>(.*?)</script>", re.S)
#: The issue's budgets: stored HTML per explorer (the real model's, drawn by its own script, 1 MB).
BUDGET, REAL_BUDGET = 300_000, 1_000_000
EXPLORERS = {"setup": W.setup_check, "dk": W.dk_explorer, "mask": W.mask_explorer, "heads": W.heads_explorer,
             "tiling": W.tiling_explorer, "window": W.window_explorer}


def grid_of(page):
    """The JSON grid stored in an explorer's static HTML (None when it holds none)."""
    found = GRID.search(page)
    return None if found is None else json.loads(found.group(1))


def rebuilt(grid, key):
    """A state's HTML as the script rebuilds it: its pieces joined, each data-s=N back to its style."""
    text = "".join(grid["pieces"][i] for i in grid["states"][key])
    return re.sub(r"data-s=(\d+)", lambda m: f"style='{grid['styles'][int(m.group(1))]}'", text)


@pytest.fixture
def wanted(monkeypatch):
    monkeypatch.setenv(static.STATIC_FORMS_ENV, "1")


@pytest.mark.parametrize("name", EXPLORERS)
def test_every_state_of_the_grid_rebuilds_the_live_picture_exactly(wanted, name):
    ex = EXPLORERS[name]()
    grid = grid_of(ex._repr_mimebundle_()["text/html"])
    assert grid["name"] == name
    states = ex.static_states()
    assert set(grid["states"]) == set(states)
    for key, picture in states.items():
        values = dict(zip([c["name"] for c in grid["controls"]], json.loads(key)))
        expected = ex._picture(ex.compute(**values))     # what the live explorer draws for these values
        assert picture == expected
        assert rebuilt(grid, key).replace('"', "'") == expected.replace('"', "'")


def test_the_grid_covers_every_setting_of_each_control(wanted):
    # d_k: 20 widths x scaled or not; the mask: 2^4 sets of hidden keys x causal x before/after (4 tokens);
    # heads: every divisor of 24 up to 12; tiling: ceil(4/b) steps for b = 1..4 (4 + 2 + 2 + 1), x causal.
    counts = {name: len(make().static_states()) for name, make in EXPLORERS.items()}
    assert counts == {"setup": 8, "dk": 20 * 2, "mask": 16 * 2 * 2, "heads": 7, "tiling": 9 * 2, "window": 8 * 6}


def test_a_mask_grid_past_six_tokens_holds_each_key_hidden_alone(wanted, monkeypatch):
    # The course's examples have at most 6 tokens (bank_interest: every subset, 2^6 x 4 states); an
    # instructor's longer one is played here by lowering the bound below bank_river's 3 tokens.
    assert len(W.mask_explorer("bank_interest").static_states()) == 2 ** 6 * 4
    assert "nearest the explorer's start" not in W.mask_explorer("bank_river").static_grid()
    monkeypatch.setattr(W.mask, "MASK_GRID_TOKENS", 2)
    ex = W.mask_explorer("bank_river")
    hidden = {tuple(json.loads(k)[1]) for k in ex.static_states()}
    assert hidden == {(), (0,), (1,), (2,)}
    assert "hidden alone" in ex.missing_note and "make lab" in ex.missing_note


def test_a_grid_past_the_budget_keeps_the_states_nearest_the_start(wanted):
    ex = W.mask_explorer("bank_interest")          # 256 states of 6 x 6 tables: about 900 kB in all
    page = ex.static_grid()
    grid = grid_of(page)
    kept = [json.loads(k) for k in grid["states"]]
    assert len(page.encode()) <= static.GRID_BUDGET < len(static.grid_html(
        "mask", ex.static_controls(), ex.static_states(), "", "").encode())
    assert [True, [], "before"] in kept and 30 < len(kept) < 256
    moved = [(c != True) + len(h) + (w != "before") for c, h, w in kept]          # noqa: E712
    assert max(moved) <= min((c != True) + len(h) + (w != "before")                # noqa: E712
                             for c, h, w in map(json.loads, ex.static_states()) if [c, h, w] not in kept)
    assert "nearest the explorer's start" in grid["missing"] and "256" in grid["missing"]


def test_the_tiling_step_follows_the_block_size_on_the_page_too(wanted):
    controls = {c.name: c for c in W.tiling_explorer().static_controls()}
    assert controls["step"].follows == "block_size" and controls["block_size"].follows is None
    assert [v for _, v in controls["step"].options] == [1, 2, 3, 4]


def test_controls_keep_the_live_labels_and_notes():
    controls = {c.name: c for c in W.heads_explorer().static_controls()}
    assert controls["num_heads"].kind == "buttons" and controls["num_heads"].label == "num_heads"
    assert "d_model = 24" in controls["num_heads"].note
    mask = {c.name: c for c in W.mask_explorer().static_controls()}
    assert mask["hidden"].kind == "toggles" and [lab for lab, _ in mask["hidden"].options][0] == "hide 'the'"
    assert mask["where"].options == [("before the softmax", "before"), ("after the softmax (bug)", "after")]
    dk = {c.name: c for c in W.dk_explorer().static_controls()}
    assert dk["d_k"].kind == "range" and [v for _, v in dk["d_k"].options] == list(W.DK_CHOICES)


def test_the_set_up_check_says_on_the_web_page_that_it_checks_nothing_there(wanted):
    grid = grid_of(W.setup_check()._repr_mimebundle_()["text/html"])
    assert grid["line"] == W.setup.SETUP_STATIC_LINE and "does not check your set-up" in grid["line"]
    assert grid_of(W.dk_explorer()._repr_mimebundle_()["text/html"])["line"] == W.base.STATIC_LINE


def test_no_grid_while_a_live_cell_displays(monkeypatch):
    monkeypatch.delenv(static.STATIC_FORMS_ENV, raising=False)
    page = W.dk_explorer()._repr_mimebundle_()["text/html"]
    assert grid_of(page) is None and "course-explorer-still" in page


def test_pieces_cut_at_top_level_elements_and_join_back():
    text = "<div a='1'><p>x</p><br></div><br>tail<table><tr><td>1</td></tr></table><img src='x'>"
    assert pieces(text) == ["<div a='1'><p>x</p><br></div>", "<br>", "tail", "<table><tr><td>1</td></tr></table>",
                            "<img src='x'>"]
    assert "".join(pieces(text)) == text


def test_grid_states_skip_settings_the_state_function_refuses():
    controls = [Control("a", "a", "range", [("1", 1), ("2", 2)], 1), Control("b", "b", "checkbox", [], True)]

    def draw(values):
        if values["a"] == 2 and not values["b"]:
            raise ValueError("not this one")
        return f"<p>{values}</p>"
    assert set(grid_states(controls, draw)) == {state_key([1, True]), state_key([1, False]), state_key([2, True])}


def test_a_control_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        Control("a", "a", "slider", [], 1)


def stored_grids():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                page = out.get("data", {}).get("text/html", "")
                if "course-explorer-static" in page:
                    yield path.name, page


@pytest.mark.parametrize("notebook,page", list(stored_grids()), ids=lambda v: v if v.endswith("ipynb") else "")
def test_stored_explorers_hold_their_grid_within_budget(notebook, page):
    grid = grid_of(page)
    assert grid is not None, f"{notebook}: an explorer without its grid: re-run make execute"
    size = len(page.encode("utf-8"))
    assert size <= (REAL_BUDGET if grid["name"] == "real_model" else BUDGET), f"{notebook}: {size} bytes"
    assert "base64" not in page


def test_markup_in_the_data_cannot_end_the_script_or_break_its_json():
    # A label or an instructor's token may hold "</script>" or "<!--": stored as \u003c, plain JSON still.
    controls = [Control("a", "a </script><!-- b", "range", [("</script>", 1), ("<!--", 2)], 1)]
    page = static.grid_html("t", controls, {state_key([1]): "<p>one</p>", state_key([2]): "<p>two</p>"},
                            "missing <!--", "line")
    stored = GRID.search(page).group(1)
    assert "</" not in stored and "<!" not in stored
    grid = json.loads(stored)
    assert grid["controls"][0]["label"] == "a </script><!-- b" and grid["missing"] == "missing <!--"


def test_a_grid_that_cannot_be_built_leaves_the_still_picture(wanted, monkeypatch):
    ex = W.dk_explorer()

    def broken(budget):
        raise ValueError("control 'x': a static page has no control for FloatSlider")
    monkeypatch.setattr(ex, "static_grid", broken)
    page = ex._repr_mimebundle_()["text/html"]
    assert grid_of(page) is None and ex.picture.value in page and page.endswith("</div></div>")


def test_whole_float_values_are_keyed_as_the_script_writes_them():
    # JSON.stringify([1.0, 0.5]) is "[1,0.5]" in a browser; Python's json.dumps would write "[1.0,0.5]".
    assert state_key([1.0, 0.5, [2.0], True]) == "[1,0.5,[2],true]"


def test_the_budget_counts_the_still_picture_too(wanted, monkeypatch):
    monkeypatch.setattr(static, "GRID_BUDGET", 120_000)
    monkeypatch.setattr(W.base, "GRID_BUDGET", 120_000)
    page = W.mask_explorer()._repr_mimebundle_()["text/html"]      # 165 kB when whole
    assert len(page.encode()) <= 120_000 and "nearest the explorer's start" in grid_of(page)["missing"]
