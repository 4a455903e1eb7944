"""The explorers on the static site (make html), moved in Chromium with no kernel and no network.

Each page with an explorer is exported from the stored notebook into a temporary folder and opened from
disk, every request to another host refused. On each, every control is moved (the keyboard for sliders,
clicks for checkboxes and buttons) over a coarse sweep of its values, and the numbers the page then shows
are compared with the state function's for those values (dk_state, mask_state, heads_state,
tiling_state, window_state, the set-up check's count), to the digits printed. The page must also fit a
projector (683 x 512 CSS px at scale 1.5) with nothing wider than its column, keep its text at 4.5:1 in
the dark colour scheme, and show only the still picture where scripts do not run. The real model's
explorer has its own test (test_static_real_model.py).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import export_html  # noqa: E402

from browser_checks import CONTRAST_JS, PROJECTOR  # noqa: E402
from helpers import explorers as W  # noqa: E402
from test_static_pages import ARTIFACTS, open_offline  # noqa: E402

PAGES = {"setup": "00_start_here", "dk": "03_scaling", "mask": "04_masking", "heads": "05_multi_head",
         "tiling": "08_cost_and_tiling", "window": "10_current_models"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explorer-site")
    export_html.export_site(folder, [ROOT / "notebooks" / f"{p}.ipynb" for p in PAGES.values()])
    return folder


class Form:
    """The live static form of one explorer on a page: move its controls, read what it shows."""

    def __init__(self, page, name):
        self.page, self.root = page, page.locator(f".course-static-live[data-explorer='{name}']")
        self.root.wait_for(state="visible")

    def slide(self, name, index):
        """The slider ``name`` to its ``index``-th value, with the keyboard (Home, then the right arrow)."""
        handle = self.root.locator(f"input[type=range][name='{name}']")
        handle.focus()
        self.page.keyboard.press("Home")
        for _ in range(index):
            self.page.keyboard.press("ArrowRight")

    def tick(self, name, on):
        box = self.root.locator(f"input[type=checkbox][name='{name}']")
        if box.is_checked() != on:
            box.focus()
            self.page.keyboard.press("Space")

    def press(self, name, label):
        self.root.locator(f"button[name='{name}']", has_text=label).first.click()

    def toggles(self, name, wanted):
        buttons = self.root.locator(f"button[name='{name}']")
        for i in range(buttons.count()):
            if (buttons.nth(i).get_attribute("aria-pressed") == "true") != (i in wanted):
                buttons.nth(i).focus()
                self.page.keyboard.press("Enter")

    def tables(self):
        """Each heatmap of the picture as rows of cell texts (the weights, then the row notes)."""
        return self.root.locator(".explorer-picture table").evaluate_all(
            "ts => ts.map(t => [...t.querySelectorAll('tr')].slice(1).map(r => [...r.querySelectorAll('td')]"
            ".map(c => c.textContent.trim())))")

    def text(self):
        return " ".join(self.root.locator(".explorer-picture").inner_text().split())


def weights_shown(table, n_k):
    return np.array([[float(x) for x in row[:n_k]] for row in table])


@contextlib.contextmanager
def explorer_form(browser, site, name):
    """The live static form of explorer ``name`` on its page, opened offline; no other host may be asked."""
    page, context, refused = open_offline(browser, (site / f"{PAGES[name]}.html").as_uri())
    try:
        yield Form(page, name)
        assert not refused, f"the page asked another host for {refused[:3]}"
    finally:
        context.close()


def same(shown, expected, decimals):
    return np.array_equal(shown, np.round(np.asarray(expected, dtype=float), decimals)) or np.all(
        np.abs(shown - expected) <= 0.5 * 10.0 ** -decimals + 1e-12)


def test_setup_check_moves(browser, site):
    with explorer_form(browser, site, "setup") as form:
        for n in range(1, 9):
            form.slide("n", n - 1)
            assert f"{n} token{'s' if n > 1 else ''}: {n * n} dot product{'s' if n > 1 else ''}" in form.text()


def test_dk_explorer_moves(browser, site):
    with explorer_form(browser, site, "dk") as form:
        for index, scaled in itertools.product((0, 5, 11, 19), (True, False)):
            form.slide("d_k", index)
            form.tick("scaled", scaled)
            state = W.dk_state(W.DK_CHOICES[index], scaled)
            (table,) = form.tables()
            assert same(weights_shown(table, 6), state.weights, 3), (index, scaled)
            assert [row[6] for row in table] == [f"{e:.3f}" for e in state.entropy]
            assert f"standard deviation {state.score_std:.2f}" in form.text()


def test_mask_explorer_moves(browser, site):
    with explorer_form(browser, site, "mask") as form:
        for causal, where, hidden in itertools.product((True, False), ("before", "after"),
                                                       ((), (1,), (0, 3), (0, 1, 2, 3))):
            form.tick("causal", causal)
            form.press("where", "before the softmax" if where == "before" else "after the softmax")
            form.toggles("hidden", hidden)
            state = W.mask_state(causal, hidden, where)
            (table,) = form.tables()
            assert same(weights_shown(table, 4), state.weights, 3), (causal, where, hidden)
            assert [row[4] for row in table] == [f"{s:.3f}" for s in state.row_sums]
            assert state.messages[0][:60] in form.text()


def test_heads_explorer_moves(browser, site):
    with explorer_form(browser, site, "heads") as form:
        for num_heads in W.HEADS_CHOICES:
            form.press("num_heads", str(num_heads))
            state = W.heads_state(num_heads)
            tables = form.tables()
            assert len(tables) == num_heads
            for h, table in enumerate(tables):
                assert same(weights_shown(table, 4), state.weights[h], 2), (num_heads, h)
            assert ", ".join(f"{e:.2f}" for e in state.head_entropy) in form.text()


def test_tiling_explorer_moves_and_its_step_follows_the_block_size(browser, site):
    with explorer_form(browser, site, "tiling") as form:
        for causal, block_size in itertools.product((False, True), (1, 2, 3, 4)):
            form.tick("causal", causal)
            form.slide("block_size", block_size - 1)
            steps = -(-4 // block_size)
            step_max = form.root.locator("input[name='step']").get_attribute("max")
            assert int(step_max) == steps - 1, (block_size, step_max)       # the slider's range follows
            for step in range(1, steps + 1):
                form.slide("step", step - 1)
                state = W.tiling_state(block_size, step, causal)
                table, values = form.tables()[:2]
                assert same(weights_shown(table, 4), state.weights, 3), (causal, block_size, step)
                assert state.messages[0][:50] in form.text()
                start, stop = state.block        # the running values, row by row: the block's scores, m and l
                num = W.tiling._num
                assert [row for row in values if row] == [
                    [num(x) for x in state.scores[q, start:stop]]
                    + [num(state.max_before[q]), num(state.max_after[q]), num(state.sum_before[q]),
                       num(state.sum_after[q])] for q in range(4)], (causal, block_size, step)


def test_window_explorer_moves(browser, site):
    with explorer_form(browser, site, "window") as form:
        for window, layers in itertools.product((1, 4, 8), (1, 3, 6)):
            form.slide("window", window - 1)
            form.slide("layers", layers - 1)
            state = W.window_state(window, layers)
            (table,) = form.tables()
            reached = [sum(cell == "\u25cf" for cell in row) for row in table]
            assert reached == [int(r) for r in state.reach.sum(axis=1)], (window, layers)
            assert state.messages[0] in form.text()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_static_explorer_fits_a_projector_and_the_dark_scheme(browser, site, name):
    problems = []
    for scheme, options in (("light", PROJECTOR), ("dark", {"viewport": {"width": 1100, "height": 900}})):
        page, context, refused = open_offline(browser, (site / f"{PAGES[name]}.html").as_uri(),
                                              color_scheme=scheme, **options)
        try:
            form = Form(page, name)
            form.root.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"static-live-{name}-{scheme}.png"))
            if scheme == "light":
                wide = form.root.evaluate("""(root) => {
                    const column = root.closest('.jp-OutputArea-output, .jp-Cell, body').getBoundingClientRect();
                    return [...root.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > column.right + 1)
                        .map(e => e.tagName + '.' + e.className).slice(0, 5); }""")
                if wide:
                    problems.append(f"on a projector, parts run past the column: {wide}")
                if page.evaluate("() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1"):
                    problems.append("on a projector the page scrolls sideways")
            else:
                low = form.root.evaluate(CONTRAST_JS)
                if low:
                    problems.append(f"in the dark scheme, text under 4.5:1: {low[:5]}")
            if refused:
                problems.append(f"asked another host for {refused[:3]}")
        finally:
            context.close()
    assert not problems, f"{name} explorer on its static page:\n- " + "\n- ".join(problems)


def test_without_scripts_only_the_still_picture_shows(browser, site):
    page, context, _ = open_offline(browser, (site / f"{PAGES['mask']}.html").as_uri(), java_script_enabled=False)
    try:
        still = page.locator(".course-explorer-still")
        assert still.count() == 1 and still.first.is_visible()
        assert page.locator(".course-static-live, .course-explorer-static input, .course-explorer-static button").count() == 0
    finally:
        context.close()

