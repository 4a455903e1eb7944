"""The real model's explorer on the static page: what its output stores (helpers/explorers/real_model_static.py).

The stored numbers are compared with the live explorer's own picture (its HTML, cell by cell) and with
real_model_state; the messages rebuilt from the stored templates with real_model_state's messages.
The browser half (the page's script drawing them) is tests/browser/test_static_real_model.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import helpers.explorers.real_model as W
from helpers.explorers import real_model_static as RS
from helpers.explorers.static import STATIC_FORMS_ENV

ROOT = Path(__file__).resolve().parents[1]
GRID = re.compile(r"<script type='application/json' class='course-explorer-grid'>(.*?)</script>", re.S)
# The live heatmap's cells and the strip's value boxes, as plots.weights_table_html / weights_row_html write them.
LIVE_CELL = re.compile(r"<td style='[^']*background:(#[0-9a-f]{6});color:(\w+)' title='[^']*'>([^<]*)</td>")
LIVE_BOX = re.compile(r"background:(#[0-9a-f]{6});color:(\w+)'>([^<]*)</div></div>")
#: 18 words, one token each: 20 tokens with [CLS] and [SEP], the most the page stores.
TWENTY = "the bank raised its interest rate and the river was steep by the old town hall today again"
BUDGET = 1_000_000  # bytes of stored HTML for this explorer (issue 23)


@pytest.fixture(scope="module")
def explorer():
    return W.real_model_explorer()


@pytest.fixture(scope="module")
def data(explorer):
    return RS.grid_data(explorer, explorer.static_controls())


def stored_spec(page):
    found = GRID.search(page)
    assert found, "no stored grid in the explorer's HTML"
    return json.loads(found.group(1))


def head_entry(data, layer, head):
    return data["grid"][layer * len(data["heads"]) + head]


def rebuilt_messages(data, layer, head, token):
    """The messages as real_model.js builds them from the stored templates and numbers."""
    t, tokens, e = data["templates"], data["tokens"], head_entry(data, layer, head)
    strip = (e.get("s") or e["w"]).split()
    n = len(tokens)
    keys = t["keys_sep"].join(RS.fill(t["key"], {"position": j, "token": tokens[j], "weight": strip[token * n + j]})
                              for j in e["top"][token])
    first = RS.fill(t["message"], {"layer": layer, "head": head, "token": tokens[token], "position": token,
                                   "keys": keys, "entropy": e["r"].split()[token]})
    return (first, *data["messages"])


def check_state(data, layer, head, token):
    """The stored numbers of one state equal the live picture's and real_model_state's, as printed."""
    s = W.real_model_state(data["text"], layer, head, token)
    e, n = head_entry(data, layer, head), len(s.tokens)
    live_table, live_strip = W._table_html(s), W._strip_html(s)
    cells = LIVE_CELL.findall(live_table)
    assert len(cells) == n * n
    palette = [tuple(p) for p in data["palette"]]
    assert [palette[int(c)] for c in e["c"].split()] == [(bg, fg) for bg, fg, _ in cells]   # colours as drawn live
    assert e["w"].split() == [text for _, _, text in cells]                                 # the heatmap's numbers
    strip = (e.get("s") or e["w"]).split()[token * n:(token + 1) * n]
    assert strip == [text for _, _, text in LIVE_BOX.findall(live_strip)]                    # the strip's numbers
    # ... and they are real_model_state's weights rounded to the printed decimals (3 up to 12 tokens, _draw_real)
    decimals = data["decimals"]
    assert np.all(np.abs(np.array(e["w"].split(), float).reshape(n, n) - s.weights) <= 0.5 * 10.0 ** -decimals + 1e-12)
    assert np.all(np.abs(np.array(strip, float) - s.row) <= 0.0005 + 1e-12)
    assert e["top"][token] == [j for j, _, _ in s.top_keys[:3]]
    assert abs(float(e["r"].split()[token]) - s.row_entropy) <= 0.005 + 1e-12
    assert abs(float(e["e"]) - s.head_entropy) <= 0.005 + 1e-12
    assert rebuilt_messages(data, layer, head, token) == s.messages


def test_every_layer_and_head_of_bank_is_stored_as_shown(data):
    bank = data["tokens"].index("bank")
    for layer in range(6):
        for head in range(12):
            check_state(data, layer, head, bank)


def test_every_token_of_one_head_is_stored_as_shown(data):
    for token in range(len(data["tokens"])):
        check_state(data, 3, 7, token)


def test_the_grid_covers_the_sentence_shown_every_layer_head_and_token(explorer, data):
    assert data["text"] == explorer.controls["text"].value == W.REAL_SENTENCE
    assert data["layers"] == list(range(6)) and data["heads"] == list(range(12))
    assert len(data["grid"]) == 72 and all(len(e["top"]) == len(data["tokens"]) for e in data["grid"])
    # 10 tokens: the heatmap prints 3 decimals, as the strip does, so the strip's numbers are not stored twice
    assert len(data["tokens"]) == 10 and data["decimals"] == 3 and all("s" not in e for e in data["grid"])


def test_a_sentence_of_13_to_20_tokens_stores_the_strip_apart(explorer):
    text = "the bank raised its interest rate and the river was steep by the town"
    ex = W.real_model_explorer(text=text, token=2)
    d = RS.grid_data(ex, ex.static_controls())
    n = len(d["tokens"])
    assert 12 < n <= RS.STATIC_MAX_TOKENS and d["decimals"] == 2 and all("s" in e for e in d["grid"])
    for layer, head, token in [(0, 0, 0), (2, 4, 2), (5, 11, n - 1)]:
        check_state(d, layer, head, token)


def test_the_typed_sentence_is_the_one_stored(monkeypatch):
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    ex = W.real_model_explorer()
    ex.controls["text"].value = "The bank raised its interest rate."
    spec = stored_spec(ex._repr_mimebundle_()["text/html"])
    assert spec["real"]["text"] == "The bank raised its interest rate."
    assert [label for label, _ in spec["controls"][2]["options"]] == [f"{i}: {t}" for i, t in
                                                                      enumerate(ex.state.tokens)]
    assert "\u201cThe bank raised its interest rate.\u201d" in spec["intro"] and "make lab" in spec["intro"]


def test_the_form_has_the_live_controls_and_their_start(monkeypatch, explorer):
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    spec = stored_spec(explorer._repr_mimebundle_()["text/html"])
    assert spec["name"] == "real_model" and spec["draw"] == RS.DRAWER
    layer, head, token = spec["controls"]
    assert (layer["kind"], layer["value"], [v for _, v in layer["options"]]) == ("range", 0, list(range(6)))
    assert (head["kind"], head["value"], [v for _, v in head["options"]]) == ("range", 4, list(range(12)))
    assert (token["kind"], token["value"]) == ("select", 2)
    assert [label for label, _ in token["options"]] == [label for label, _ in explorer.controls["token"].options]


def test_the_stored_html_fits_the_budget(monkeypatch, explorer):
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    assert len(explorer.static_html().encode()) < BUDGET
    # the largest sentence the page stores: 20 tokens, 2 decimals and the strip apart
    ex = W.real_model_explorer(text=TWENTY, token=2)
    assert len(ex.state.tokens) == RS.STATIC_MAX_TOKENS
    assert len(ex.static_html().encode()) < BUDGET


def test_a_longer_sentence_keeps_the_still_picture_and_says_why(monkeypatch):
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    ex = W.real_model_explorer(text=TWENTY + " now", token=2)
    assert len(ex.state.tokens) == RS.STATIC_MAX_TOKENS + 1
    page = ex.static_html()
    assert "course-explorer-grid" not in page and "<script" not in page
    assert f"up to {RS.STATIC_MAX_TOKENS} tokens" in page and "make lab" in page


def test_the_grid_is_built_only_under_make_execute(monkeypatch):
    monkeypatch.delenv(STATIC_FORMS_ENV, raising=False)
    monkeypatch.setattr(RS, "grid_html", lambda *a, **k: pytest.fail("the live display built the static grid"))
    ex = W.real_model_explorer()
    bundle = ex._repr_mimebundle_()
    assert "course-explorer-grid" not in bundle["text/html"] and ex.picture.value in bundle["text/html"]
    monkeypatch.undo()
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    assert "course-explorer-grid" in ex._repr_mimebundle_()["text/html"]


def test_fill_is_one_pass():
    assert RS.fill("{a} and {b}", {"a": "{b}", "b": "x"}) == "{b} and x"


def test_notebook_11_stores_the_grid_within_the_budget():
    nb = nbformat.read(ROOT / "notebooks" / "11_real_model.ipynb", 4)
    pages = [o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
             if "course-explorer-grid" in o.get("data", {}).get("text/html", "")]
    assert len(pages) == 1, "notebook 11 should store one real-model grid (re-execute it with make execute)"
    assert stored_spec(pages[0])["name"] == "real_model"
    assert len(pages[0].encode()) < BUDGET
