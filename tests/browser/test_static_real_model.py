"""Notebook 11's real-model explorer on the static page, in Chromium, with no kernel and no network.

The stored notebook is exported (tools/export_html.py) into a temporary folder and opened from disk, every
request to another host refused and counted. The layer and head ranges are moved with the keyboard and the
token select over a coarse sweep (layers 0, 2, 5 x heads 0, 4, 11 x three tokens); for each setting, the
picture real_model.js draws is compared with the live explorer's own picture of real_model_state's state
(the same HTML, once the browser has parsed both), and its numbers, strip and messages with the state's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_html  # noqa: E402
from test_static_pages import open_offline  # noqa: E402

import helpers.explorers.real_model as W  # noqa: E402
from helpers.explorers.static import STATIC_FORMS_ENV  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "11_real_model.ipynb"
LIVE = ".course-static-live[data-explorer=real_model]"
PARSED_JS = "(html) => { const d = document.createElement('div'); d.innerHTML = html; return d.innerHTML; }"
STRIP_JS = "(root) => [...root.querySelectorAll(\"div[title^='key ']\")].map(b => [b.children[0].textContent, b.children[1].textContent])"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    export_html.export_site(folder, [NOTEBOOK])
    return folder


@pytest.fixture(scope="module")
def opened(browser, site):
    page, context, refused = open_offline(browser, (site / f"{NOTEBOOK.stem}.html").as_uri(),
                                          viewport={"width": 1100, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield page, refused, errors
    finally:
        context.close()


def stored_text(page):
    spec = page.eval_on_selector("script.course-explorer-grid", "s => JSON.parse(s.textContent)")
    return spec["real"]["text"]


def move(range_input, target):
    """Move a focused range to ``target`` with the arrow keys (one step per press)."""
    range_input.focus()
    now = int(range_input.input_value())
    for _ in range(abs(target - now)):
        range_input.press("ArrowRight" if target > now else "ArrowLeft")
    assert int(range_input.input_value()) == target


def test_the_form_replaces_the_still_picture_and_shows_the_stored_sentence(opened):
    page, refused, errors = opened
    live = page.locator(LIVE)
    assert live.count() == 1
    form = page.locator(".course-explorer-static").filter(has=live)
    assert not form.locator(".course-explorer-still").is_visible()
    intro = live.locator(".explorer-intro").inner_text()
    assert f"\u201c{stored_text(page)}\u201d" in intro and "to type a new sentence" in intro and "make lab" in intro
    assert live.get_attribute("data-state") == "[0,4,2]"       # the state the explorer was shown in
    assert not refused and not errors


def test_tab_walks_the_controls_and_keys_move_them(opened):
    page, _, errors = opened
    live = page.locator(LIVE)
    live.locator("input[name=layer]").focus()
    names = []
    for _ in range(2):
        page.keyboard.press("Tab")
        names.append(page.evaluate("document.activeElement.name"))
    assert names == ["head", "token"]
    select = live.locator("select[name=token]")
    before = select.input_value()
    page.keyboard.press("ArrowDown")                             # the focused select, by the keyboard
    assert select.input_value() == str(int(before) + 1)
    assert json.loads(live.get_attribute("data-state"))[2] == int(before) + 1
    select.select_option("2")
    assert not errors


def test_the_drawn_picture_equals_the_live_explorer_over_a_sweep(opened):
    page, refused, errors = opened
    text = stored_text(page)
    explorer = W.real_model_explorer(text=text)
    live = page.locator(LIVE)
    layer, head, select = (live.locator("input[name=layer]"), live.locator("input[name=head]"),
                           live.locator("select[name=token]"))
    tokens = W.real_model_state(text).tokens
    sweep_tokens = [0, tokens.index("bank"), len(tokens) - 1]
    problems = []
    for L in (0, 2, 5):
        move(layer, L)
        for H in (0, 4, 11):
            move(head, H)
            for T in sweep_tokens:
                select.select_option(str(T))
                where = f"layer {L}, head {H}, token {T}"
                state = W.real_model_state(text, L, H, T)
                if live.get_attribute("data-state") != json.dumps([L, H, T], separators=(",", ":")):
                    problems.append(f"{where}: data-state {live.get_attribute('data-state')}")
                picture = live.locator(".explorer-picture")
                # the same HTML as the live explorer's picture, once the browser has parsed both
                if picture.inner_html() != page.evaluate(PARSED_JS, explorer._picture(state)):
                    problems.append(f"{where}: the picture differs from the live explorer's")
                # the table's numbers: real_model_state's weights, rounded as printed (3 decimals for 10 tokens)
                cells = np.array(picture.locator("td").all_inner_texts(), float).reshape(len(tokens), len(tokens))
                if not np.all(np.abs(cells - state.weights) <= 0.0005 + 1e-12):
                    problems.append(f"{where}: the table's numbers are not the state's weights")
                marked = [t for t in picture.locator("th[scope=row]").all_inner_texts() if t.startswith("▸")]
                if marked != ["▸\u00a0" + tokens[T]]:
                    problems.append(f"{where}: the marked query is {marked}")
                strip = picture.evaluate(STRIP_JS)
                if [label.removeprefix("▸\u00a0") for label, _ in strip] != list(tokens) or \
                        not np.all(np.abs(np.array([v for _, v in strip], float) - state.row) <= 0.0005 + 1e-12):
                    problems.append(f"{where}: the strip is not the state's row")
                if tuple(picture.locator(":scope > p").all_inner_texts()) != state.messages:
                    problems.append(f"{where}: the messages differ from real_model_state's")
    assert not problems, "\n".join(problems[:10])
    assert not refused and not errors


def test_the_form_fits_a_projector(browser, site):
    page, context, refused = open_offline(browser, (site / f"{NOTEBOOK.stem}.html").as_uri(),
                                          viewport={"width": 683, "height": 512}, device_scale_factor=1.5)
    try:
        live = page.locator(LIVE)
        box = live.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 683
        assert live.locator("input[name=head]").bounding_box()["width"] >= 150
        assert not refused
    finally:
        context.close()


def test_a_sentence_with_markup_characters_and_two_decimals_is_drawn_as_live(browser, tmp_path, monkeypatch):
    """Tokens that HTML escapes (& " < > ') and 16 tokens: the heatmap prints 2 decimals, the strip 3."""
    monkeypatch.setenv(STATIC_FORMS_ENV, "1")
    text = 'Tom & "Jerry" <b> it\'s the bank'
    explorer = W.real_model_explorer(text=text, layer=1, head=2, token="bank")
    assert 12 < len(explorer.state.tokens) <= 20
    page_file = tmp_path / "real.html"
    page_file.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{explorer.static_html()}"
                         "</body></html>", encoding="utf-8")
    page, context, refused = open_offline(browser, page_file.as_uri())
    try:
        live = page.locator(LIVE)
        select = live.locator("select[name=token]")
        for L, H, T in [(1, 2, explorer.state.token), (4, 9, 2), (5, 0, 8)]:
            move(live.locator("input[name=layer]"), L)
            move(live.locator("input[name=head]"), H)
            select.select_option(str(T))
            state = W.real_model_state(text, L, H, T)
            assert live.locator(".explorer-picture").inner_html() == page.evaluate(PARSED_JS, explorer._picture(state))
        assert not refused
    finally:
        context.close()
