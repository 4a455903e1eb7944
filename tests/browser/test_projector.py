"""The explorers on a classroom projector and in the dark theme, in a real JupyterLab in Chromium.

A projector of 1024 x 768 zoomed to 150% gives a page of 683 x 512 CSS pixels
at a device scale factor of 1.5; the test opens JupyterLab at that size with
the file browser closed, runs each notebook that has an explorer, and checks
that no explorer and no figure is wider than the notebook (nor fits only by
scrolling inside its box), with every slider at each of its ends too, and that
no slider track is narrower than 150 CSS px. A screenshot scrolled to each explorer
goes to artifacts/browser/ (projector-*.png; the learner's size is taken by
test_jupyterlab.py, laptop-*.png). The dark-theme test computes the WCAG
contrast of every piece of text in the explorers against what is behind it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from browser_checks import CONTRAST_JS, PROJECTOR
from test_jupyterlab import ARTIFACTS, ROOT, WIDGET_MIME, WIDGET_VIEWS, open_and_run

EXPLORER_NOTEBOOKS = [
    p.name for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    if any(WIDGET_MIME in o.get("data", {}) for c in nbformat.read(p, 4).cells for o in c.get("outputs", []))
]
LONG_TEXT = ("A teacher reads a long paragraph aloud to the class: the bank by the river was steep, "
             "the bank raised its interest rate, and the students compare every head of every layer afterwards.")
MIN_TRACK = 150  # CSS px: shorter, a slider's steps are too fine to hit on a projector

CLOSE_FILE_BROWSER_JS = "() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) { s.collapseLeft(); } }"

MEASURE_JS = """
(view) => {
  const notebook = view.closest('.jp-Notebook').getBoundingClientRect();
  const box = view.getBoundingClientRect();
  const tracks = [...view.querySelectorAll('.widget-slider .noUi-target, .widget-slider .slider')]
      .map(t => Math.round(t.getBoundingClientRect().width));
  const wide = [...view.querySelectorAll('*')].filter(e => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.right > notebook.right + 1 && !e.closest('[style*="overflow"]');
  }).map(e => e.className || e.tagName);
  // A part that fits only by scrolling inside its box (a table in an overflow:auto wrapper) is too wide too.
  const scrolls = [...view.querySelectorAll('.explorer-picture *')].filter(e =>
      getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1)
      .map(e => `${e.className || e.tagName}: ${e.scrollWidth} px in ${e.clientWidth}`);
  return {right: box.right, notebookRight: notebook.right, tracks: tracks, wide: wide.slice(0, 5), scrolls: scrolls.slice(0, 5)};
}
"""


def _shoot(page, view, path):
    view.scroll_into_view_if_needed()
    view.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    page.screenshot(path=str(path))


@pytest.mark.parametrize("name", EXPLORER_NOTEBOOKS)
def test_explorers_fit_a_projector(lab, browser, name):
    context = browser.new_context(**PROJECTOR)
    page = context.new_page()
    problems = []
    try:
        open_and_run(page, lab, name)
        page.evaluate(CLOSE_FILE_BROWSER_JS)
        page.wait_for_timeout(500)
        views = page.locator(WIDGET_VIEWS)
        if views.count() == 0:
            problems.append("no explorer drawn")
        for v in range(views.count()):
            view = views.nth(v)
            _shoot(page, view, ARTIFACTS / f"projector-{Path(name).stem}-explorer{v + 1}.png")
            m = view.evaluate(MEASURE_JS)
            if m["right"] > m["notebookRight"] + 1:
                problems.append(f"explorer {v + 1} runs {m['right'] - m['notebookRight']:.0f} px past the notebook's edge")
            if m["wide"] or m["scrolls"]:
                problems.append(f"explorer {v + 1}: parts wider than the notebook: {m['wide'] + m['scrolls']}")
            short = [t for t in m["tracks"] if t < MIN_TRACK]
            if short:
                problems.append(f"explorer {v + 1}: slider tracks of {short} CSS px (want at least {MIN_TRACK})")
            # Every slider at its far end (the widest pictures: most keys in a block, most heads), one at a time.
            handles = view.locator(".widget-slider .noUi-handle")
            for h in range(handles.count()):
                for key in ("End", "Home"):
                    handles.nth(h).focus()
                    page.keyboard.press(key)
                    page.wait_for_timeout(400)
                    m = view.evaluate(MEASURE_JS)
                    if m["wide"] or m["scrolls"]:
                        problems.append(f"explorer {v + 1}, slider {h + 1} at its {key}: too wide: {m['wide'] + m['scrolls']}")
                    if name == "08_cost_and_tiling.ipynb" and h == 0 and key == "End":
                        _shoot(page, view, ARTIFACTS / f"projector-{Path(name).stem}-explorer{v + 1}-widest.png")
        if name == "11_real_model.ipynb":  # a long text, as its "things to try" suggest: nothing overlaps
            box = views.first.locator(".widget-text input[type=text]")
            box.fill(LONG_TEXT)
            box.press("Enter")
            page.wait_for_function("(el) => el.querySelectorAll('.widget-dropdown select option').length > 30",
                                   arg=views.first.element_handle(), timeout=30_000)  # the new sentence's tokens
            page.wait_for_timeout(1000)
            _shoot(page, views.first, ARTIFACTS / f"projector-{Path(name).stem}-long-text.png")
            m = views.first.evaluate(MEASURE_JS)
            crowded = views.first.evaluate(
                "(el) => [...el.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1).length")
            if m["right"] > m["notebookRight"] + 1 or m["wide"]:
                problems.append(f"with a long text the explorer runs past the notebook's edge: {m['wide']}")
            hidden = views.first.evaluate(
                "(el) => [...el.querySelectorAll('.explorer-picture p')].filter(p => p.scrollWidth > p.clientWidth + 1"
                " || p.getBoundingClientRect().right > el.getBoundingClientRect().right + 1).length")
            if hidden:
                problems.append(f"with a long text {hidden} message line(s) run past the explorer's edge")
            if crowded:
                problems.append(f"with a long text {crowded} table cells are too narrow for their numbers")
        styles = page.evaluate("""() => [getComputedStyle(document.querySelector('.jp-MarkdownOutput')).maxWidth,
                                         getComputedStyle(document.querySelector('.jp-OutputArea-output pre')).wordBreak]""")
        if styles[0] == "none" or styles[1] != "normal":
            problems.append(f"the course's custom.css is not applied (prose max-width, output wrapping: {styles})")
        over = page.evaluate("""() => [...document.querySelectorAll('.jp-OutputArea-output img')].filter(i => {
            const nb = i.closest('.jp-Notebook').getBoundingClientRect();
            return i.getBoundingClientRect().right > nb.right + 1; }).length""")
        if over:
            problems.append(f"{over} figure(s) wider than the notebook")
    finally:
        try:
            page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:
            pass
        context.close()
    assert not problems, f"notebook {name} on a projector (683 x 512 CSS px at 1.5):\n- " + "\n- ".join(problems)


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_explorer_text_is_readable_in_both_themes(lab, browser, theme):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    name = "04_masking.ipynb"  # striped masked cells, toggles, messages and the kernel line
    try:
        open_and_run(page, lab, name)
        page.evaluate(f"() => window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
        page.wait_for_timeout(1500)
        view = page.locator(WIDGET_VIEWS).first
        view.locator("button.widget-toggle-button").first.click()  # a pressed toggle, to see it in the screenshot
        page.wait_for_timeout(500)
        _shoot(page, view, ARTIFACTS / f"theme-{theme.split()[-1].lower()}-{Path(name).stem}.png")
        low = view.evaluate(CONTRAST_JS)
    finally:
        try:
            page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
            page.wait_for_timeout(500)
            page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:
            pass
        context.close()
    assert not low, f"text under 4.5:1 in the {theme} theme:\n- " + "\n- ".join(low)
