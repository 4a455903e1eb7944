"""The course's static pages (make html) opened in Chromium, with no kernel and no network.

Each page is exported into a temporary folder and opened from disk. Every
request to another host is refused and counted, so a page that needs the web
fails here. Then: every figure has loaded and has alt text, every explorer
shows its picture and its controls (or, stored without its grid, its kernel
line), the equations render, and no page
shows a widget's Python repr ("VBox(", "Output("). The site holds together:
the index links every page, and every page links the previous and the next
page of the course map and the map, at its top and bottom, with relative links
that lead there. On a projector's page (683 x 512 CSS px at 1.5) nothing is
wider than the content column and nothing scrolls sideways; in the reader's
dark scheme the page is dark, its text light, and the prose, the printed
output and the explorers' text keep a WCAG contrast of 4.5:1 (in the light
scheme too). Screenshots go to artifacts/browser/ (static-*.png).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
sys.path.insert(0, str(ROOT / "tools"))
import export_html  # noqa: E402
from export_html import is_explorer_output  # noqa: E402

from browser_checks import CONTRAST_JS, PROJECTOR  # noqa: E402
from helpers.course import COURSE, ready_notebooks  # noqa: E402
from helpers.explorers import KERNEL_LINE  # noqa: E402
from helpers.plots import relative_luminance  # noqa: E402

PAGES = [Path(n).stem for n in ready_notebooks()]
TITLES = {Path(name).stem: title for name, title, _ in COURSE}
EQUATION_NOTEBOOK = "zz_equation_check"
SHOWN = ("00_start_here", "04_masking", "08_cost_and_tiling", "11_real_model")  # screenshots in every look


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
            live = ex.locator(".course-static-live[data-explorer]")
            if live.count() and live.first.is_visible():
                # The interactive form (helpers/explorers/static.py): its native controls, and its line on
                # what still needs a kernel, in the still picture's place.
                if ex.locator(".course-static-live input, .course-static-live select, .course-static-live button").count() == 0:
                    problems.append(f"explorer {k + 1} moves on the page but shows no control")
                if "make lab" not in text or ex.locator(".course-explorer-still").first.is_visible():
                    problems.append(f"explorer {k + 1}: the live form must replace the still picture and say what needs make lab")
            elif KERNEL_LINE.replace("`", "") not in text.replace("`", ""):
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


NAV_JS = """
() => {
  const cells = document.querySelectorAll('main .jp-Cell');
  return [...document.querySelectorAll('nav.course-nav')].map(nav => ({
    place: nav.classList.contains('course-nav-top') ? 'top' : nav.classList.contains('course-nav-bottom') ? 'bottom' : '?',
    beforeCells: !!(nav.compareDocumentPosition(cells[0]) & Node.DOCUMENT_POSITION_FOLLOWING),
    afterCells: !!(nav.compareDocumentPosition(cells[cells.length - 1]) & Node.DOCUMENT_POSITION_PRECEDING),
    links: [...nav.querySelectorAll('a')].map(a => ({kind: a.className, href: a.getAttribute('href'), url: a.href,
                                                    text: a.textContent}))
  }));
}
"""


def _neighbours(name):
    """What page ``name``'s links must lead to: {link class: page stem}, None where it has no such link."""
    k = PAGES.index(name)
    return {"course-prev": PAGES[k - 1] if k > 0 else None, "course-map-link": "index",
            "course-next": PAGES[k + 1] if k + 1 < len(PAGES) else None}


@pytest.mark.parametrize("name", PAGES)
def test_every_page_links_the_previous_and_next_page_and_the_map(browser, site, name):
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri())
    try:
        navs = page.evaluate(NAV_JS)
        assert [n["place"] for n in navs] == ["top", "bottom"], f"{name}: the links at the top and bottom: {navs}"
        assert navs[0]["beforeCells"] and navs[1]["afterCells"], f"{name}: the links are not above and below the cells"
        want = _neighbours(name)
        for nav in navs:
            got = {link["kind"]: link for link in nav["links"]}
            assert set(got) == {kind for kind, target in want.items() if target}, f"{name} ({nav['place']}): {got}"
            for kind, target in want.items():
                if target is None:
                    continue
                link = got[kind]
                assert link["href"] == f"{target}.html", link           # relative: from disk and from any host
                assert link["url"] == (site / f"{target}.html").as_uri() and (site / link["href"]).exists(), link
                if target != "index":
                    assert TITLES[target] in link["text"], f"{name}: the link to {target} must name it: {link['text']!r}"
        # Follow one link as a reader would: the browser lands on that page, whose links lead back.
        kind = "course-next" if want["course-next"] else "course-prev"
        page.click(f"nav.course-nav-top a.{kind}")
        page.wait_for_load_state("load")
        assert page.url == (site / f"{want[kind]}.html").as_uri()
        back = {link["kind"]: link["href"] for link in page.evaluate(NAV_JS)[0]["links"]}
        assert back["course-prev" if kind == "course-next" else "course-next"] == f"{name}.html"
        page.click("nav.course-nav-bottom a.course-map-link")
        page.wait_for_load_state("load")
        assert page.url == (site / "index.html").as_uri()
        assert not refused, f"{name}: asked another host for {refused}"
    finally:
        context.close()


def test_a_page_off_the_course_map_links_only_the_map(browser, site):
    page, context, refused = open_offline(browser, (site / f"{EQUATION_NOTEBOOK}.html").as_uri())
    try:
        navs = page.evaluate(NAV_JS)
        assert [[link["href"] for link in n["links"]] for n in navs] == [["index.html"], ["index.html"]]
    finally:
        context.close()


#: Everything in the page's content column (main, inside its padding) that runs past it, and everything in it
#: that scrolls or cuts its content off sideways (a table in a scrolling box is wider than the column too).
FIT_JS = """
() => {
  const main = document.querySelector('main'), pad = getComputedStyle(main);
  const box = main.getBoundingClientRect();
  const left = box.left + parseFloat(pad.paddingLeft), right = box.right - parseFloat(pad.paddingRight);
  const what = (e) => (e.closest('.course-explorer-static') ? 'explorer: ' : '') + e.tagName.toLowerCase()
      + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ')[0] : '')
      + ' ' + JSON.stringify((e.alt || e.textContent || '').trim().slice(0, 40));
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) problems.push(`the page scrolls sideways: ${doc.scrollWidth} px in ${doc.clientWidth}`);
  main.querySelectorAll('*').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) return;          // hidden, or visually hidden for screen readers
    if (r.right > right + 1 || r.left < left - 1) {
      problems.push(`${what(e)}: ${Math.round(r.left)} to ${Math.round(r.right)} px, the column is ${Math.round(left)} to ${Math.round(right)}`);
    }
    if (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1) {
      problems.push(`${what(e)} scrolls or cuts off sideways: ${e.scrollWidth} px of content in ${e.clientWidth}`);
    }
  });
  return problems;
}
"""
MATHJAX_DONE_JS = "() => new Promise(done => (window.MathJax && MathJax.Hub) ? MathJax.Hub.Queue(done) : done())"


@pytest.mark.parametrize("name", PAGES + ["index"])
def test_every_page_fits_a_projector(browser, site, name):
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri(), **PROJECTOR)
    try:
        page.evaluate(MATHJAX_DONE_JS)
        problems = page.evaluate(FIT_JS)
        if name in SHOWN:
            explorer = page.locator(".course-explorer-static")
            if explorer.count():
                explorer.first.evaluate("(el) => el.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / f"static-{name}-projector.png"))
        assert not refused, f"{name}: asked another host for {refused}"
        assert not problems, (f"{name}.html on a projector (683 x 512 CSS px at 1.5), {len(problems)} problems:\n- "
                              + "\n- ".join(problems[:12]))
    finally:
        context.close()


def _luminance(css_colour):
    """The relative luminance of a computed CSS colour, 'rgb(r, g, b)' or 'rgba(r, g, b, a)' (alpha left out)."""
    return relative_luminance(tuple(float(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3]))


#: The text a reader reads: the prose, the printed output, the explorers, the links between pages.
READ = ".jp-MarkdownOutput, .jp-RenderedText, .course-explorer-static, .course-nav"


@pytest.mark.parametrize("scheme", ["dark", "light"])
@pytest.mark.parametrize("name", PAGES + ["index"])
def test_the_page_follows_the_readers_colour_scheme(browser, site, name, scheme):
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri(), color_scheme=scheme,
                                          viewport={"width": 1100, "height": 900})
    try:
        background, text = page.evaluate("""() => [getComputedStyle(document.body).backgroundColor,
                                                   getComputedStyle(document.querySelector('.jp-MarkdownOutput p')).color]""")
        low = page.evaluate(f"() => [...document.querySelectorAll('{READ}')].flatMap({CONTRAST_JS})")
        boxes = page.eval_on_selector_all(".jp-RenderedImage img", "els => els.map(i => getComputedStyle(i).backgroundColor)")
        if name in SHOWN:
            explorer = page.locator(".course-explorer-static")
            if explorer.count():
                explorer.first.evaluate("(el) => el.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / f"static-{name}-{scheme}.png"))
        if scheme == "dark":
            assert _luminance(background) < 0.05 and _luminance(text) > 0.5, (
                f"{name}: in the dark scheme the page is {background} and its text {text}")
            # Matplotlib draws its figures for a light page: each keeps a white box.
            assert all(_luminance(b) > 0.9 for b in boxes), f"{name}: figures without a light box: {boxes}"
        else:
            assert _luminance(background) > 0.9 and _luminance(text) < 0.05, (
                f"{name}: in the light scheme the page is {background} and its text {text}")
        assert not low, f"{name}: text under 4.5:1 in the {scheme} scheme:\n- " + "\n- ".join(low[:12])
        assert not refused, f"{name}: asked another host for {refused}"
    finally:
        context.close()
