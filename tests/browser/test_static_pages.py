"""The course's static pages (make html) opened in Chromium, with no kernel and no network.

Each page is exported into a temporary folder and opened from disk. Every
request to another host is refused and counted, so a page that needs the web
fails here. Then: every figure has loaded and has alt text, every explorer
shows its picture and its kernel line, the equations render, and no page
shows a widget's Python repr ("VBox(", "Output(").
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
sys.path.insert(0, str(ROOT / "tools"))
import export_html  # noqa: E402
from export_html import is_explorer_output  # noqa: E402

from helpers.course import COURSE, ready_notebooks  # noqa: E402
from helpers.explorers import KERNEL_LINE  # noqa: E402

PAGES = [Path(n).stem for n in ready_notebooks()]
EQUATION_NOTEBOOK = "zz_equation_check"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    # A small notebook with equations, inline and displayed, exported the same way: the course's pages
    # may hold none today, and the maths must render offline the day one is written.
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "Scaled scores: $\\frac{q \\cdot k}{\\sqrt{d_k}}$, and\n\n$$\\mathrm{softmax}(x)_i = \\frac{e^{x_i}}{\\sum_j e^{x_j}}$$"))
    source = folder / f"{EQUATION_NOTEBOOK}.ipynb"
    nbformat.write(nb, source)
    export_html.export_site(folder, [ROOT / "notebooks" / f"{p}.ipynb" for p in PAGES])
    export_html.export_notebook(source, folder)
    return folder


def open_offline(browser, url, **context_args):
    """A page at ``url`` with every request off this disk refused; returns (page, context, refused)."""
    context = browser.new_context(**context_args)
    refused = []

    def route(r):
        if r.request.url.startswith(("file://", "data:")):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    return page, context, refused


def test_index_is_the_course_map_and_links_every_page(browser, site):
    page, context, refused = open_offline(browser, (site / "index.html").as_uri())
    try:
        links = page.eval_on_selector_all("a", "els => els.map(a => a.getAttribute('href'))")
        assert sorted(links) == sorted(f"{p}.html" for p in PAGES)
        assert all((site / link).exists() for link in links)
        assert ("(coming)" in page.inner_text("body")) == (len(PAGES) < len(COURSE))
        assert not refused, f"the index asked another host for {refused}"
    finally:
        context.close()


@pytest.mark.parametrize("name", PAGES)
def test_static_page_teaches_without_a_kernel(browser, site, name):
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri(),
                                          viewport={"width": 1100, "height": 900})
    try:
        problems = []
        body = page.inner_text("body")
        for repr_start in ("VBox(", "Output(", "HBox("):
            if repr_start in body:
                problems.append(f"the page shows a widget's Python repr {repr_start!r}")
        images = page.eval_on_selector_all(
            ".jp-OutputArea-output img", "els => els.map(i => [i.complete && i.naturalWidth > 0, i.alt])")
        for k, (loaded, alt) in enumerate(images):
            if not loaded:
                problems.append(f"figure {k + 1} did not load")
            if len(alt) < 20:
                problems.append(f"figure {k + 1} has no description in its alt text ({alt!r})")
        stored = sum("image/png" in o.get("data", {}) for c in nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", 4).cells
                     for o in c.get("outputs", []))
        if len(images) != stored:
            problems.append(f"{stored} figures stored, {len(images)} on the page")
        explorers = page.locator(".course-explorer-static")
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", 4)
        want = sum(is_explorer_output(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
        if explorers.count() != want:
            problems.append(f"{want} explorers stored, {explorers.count()} static forms on the page")
        for k in range(explorers.count()):
            ex = explorers.nth(k)
            text = " ".join(ex.inner_text().split())
            if KERNEL_LINE.replace("`", "") not in text.replace("`", ""):
                problems.append(f"explorer {k + 1} does not say that moving it needs a running kernel")
            box = ex.bounding_box()
            if not box or box["height"] < 20 or (ex.locator("table").count() == 0 and len(text) < len(KERNEL_LINE) + 20):
                problems.append(f"explorer {k + 1} shows no picture")
            ex.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"static-{name}-explorer{k + 1}.png"))
        if refused:
            problems.append(f"the page asked another host for {sorted(set(refused))[:5]}")
        page.screenshot(path=str(ARTIFACTS / f"static-{name}.png"))
        assert not problems, f"static page {name}.html:\n- " + "\n- ".join(problems)
    finally:
        context.close()


def test_equations_render_offline(browser, site):
    page, context, refused = open_offline(browser, (site / f"{EQUATION_NOTEBOOK}.html").as_uri())
    try:
        page.wait_for_function("() => document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container').length >= 2",
                               timeout=30_000)
        text = page.inner_text("body")
        assert "Math Processing Error" not in text and "\\sqrt" not in text and "$$" not in text
        assert not refused, f"maths asked another host for {refused}"
        page.screenshot(path=str(ARTIFACTS / "static-equations.png"))
    finally:
        context.close()
