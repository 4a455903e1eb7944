"""Every notebook, run in a real JupyterLab in a real Chromium, as a learner meets it.

For each notebook: open it, clear it, run all cells, wait until every cell has
run and the kernel is idle, then check what the learner sees: no red output,
no "Error displaying widget", no widget stuck loading, every widget and figure
drawn. Then move every control of every widget (sliders with the keyboard,
toggles, checkboxes and dropdowns with the mouse) and check that the picture
beside it changed. A screenshot of each notebook goes to artifacts/browser/.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"

NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_VIEWS = ".jp-OutputArea-output:has(> .jupyter-widgets)"  # a widget view as JupyterLab draws it
RUN_TIMEOUT_MS = 90_000

# A fingerprint of what a widget shows, leaving out its controls (whose own
# read-outs change when moved): images, text, HTML and Output contents.
PICTURE_JS = """
(el) => {
  const controls = '.widget-slider, .widget-toggle-buttons, .widget-toggle-button, .widget-dropdown,'
                 + ' .widget-checkbox, .widget-text, .widget-textarea, .widget-select, .widget-button';
  const parts = [];
  const hash = (s) => { let h = 0; for (let i = 0; i < s.length; i++) { h = (h * 31 + s.charCodeAt(i)) | 0; } return s.length + ':' + h; };
  el.querySelectorAll('img').forEach(i => { if (!i.closest(controls)) parts.push(hash(i.src)); });
  el.querySelectorAll('.widget-html-content, .widget-htmlmath-content, .widget-label, .widget-output').forEach(n => {
    if (!n.closest(controls)) parts.push(hash(n.innerHTML));
  });
  return parts.join('|');
}
"""

ALL_CELLS_RUN_JS = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return false;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  return cells.every(c => {
    const prompt = c.node.querySelector('.jp-InputPrompt');   // null while a cell is not drawn yet
    return c.model.executionCount !== null && prompt !== null && !/\\*/.test(prompt.textContent);
  });
}
"""


def stored_expectations(name):
    """How many widget views and figures a fresh run must draw, from the stored notebook."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    widgets = figures = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            widgets += WIDGET_MIME in data
            figures += "image/png" in data and "nbval-ignore-output" not in cell.metadata.get("tags", [])
    return widgets, figures


def stored_progress_bars(name):
    """How many progress bars the stored notebook holds (from their widget models, e.g. tqdm's notebook bar)."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return sum(m.get("model_name") in ("FloatProgressModel", "IntProgressModel") for m in state.values())


def open_and_run(page, lab, name):
    page.goto(lab.url(f"/lab/tree/notebooks/{name}?reset"))
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=RUN_TIMEOUT_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_CELLS_RUN_JS, timeout=RUN_TIMEOUT_MS, polling=250)
    # Widgets render after their output arrives; give "Loading widget..." time to go.
    try:
        page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=15_000)
    except Exception:
        pass


def what_the_learner_sees(page, name):
    """Problems on the page after a run, each said as the learner would meet it."""
    problems = []
    red = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    for i in range(red.count()):
        problems.append(f"red output (an error or warning): {red.nth(i).inner_text()[:400]!r}")
    body = "\n".join(page.locator(".jp-OutputArea").all_inner_texts())
    if "Error displaying widget" in body:
        problems.append("'Error displaying widget' where a widget should be")
    if "Loading widget" in body:
        problems.append("a widget stuck on 'Loading widget...'")
    want_widgets, want_figures = stored_expectations(name)
    drawn = page.locator(WIDGET_VIEWS).count()
    if drawn < want_widgets:
        problems.append(
            f"{want_widgets} widget(s) expected but {drawn} drawn: the learner sees text such as "
            f"'VBox(children=...)' or nothing where the controls should be"
        )
    # A progress bar (tqdm's notebook bar, notebook 09) must be drawn and filled to its end once its cell has run.
    fills = page.evaluate("() => [...document.querySelectorAll('.jp-OutputArea .widget-hprogress .progress-bar')]"
                          ".map(b => b.style.width)")
    want_bars = stored_progress_bars(name)
    if len(fills) < want_bars:
        problems.append(f"{want_bars} progress bar(s) expected but {len(fills)} drawn")
    problems += [f"progress bar {i + 1} stopped at {fill!r}, not at 100%" for i, fill in enumerate(fills) if fill != "100%"]
    broken = page.locator(".jp-OutputArea .explorer-error")  # an explorer's own error message
    for i in range(broken.count()):
        problems.append(f"an explorer shows an error instead of its picture: {broken.nth(i).inner_text()[:300]!r}")
    images = page.locator(".jp-OutputArea-output img")
    loaded = page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output img')].filter(i => i.complete && i.naturalWidth > 0).length"
    )
    if loaded < want_figures:
        problems.append(f"{want_figures} figure(s) expected, {loaded} drawn (of {images.count()} images): a figure is missing")
    return problems


def controls_of(view):
    """Every control of one widget view, as (kind, locator) pairs."""
    found = []
    for kind, selector in (("slider", ".widget-slider .noUi-handle"),
                           ("toggle", "button.widget-toggle-button"),
                           ("checkbox", ".widget-checkbox input[type=checkbox]"),
                           ("dropdown", ".widget-dropdown select"),
                           ("text", ".widget-text input[type=text]")):
        loc = view.locator(selector)
        found += [(kind, loc.nth(i)) for i in range(loc.count())]
    return found


def move(page, kind, control):
    """Move one control as a learner would; False when it is a choice already made."""
    if kind == "toggle" and control.evaluate(
            "(el) => !!el.closest('.widget-toggle-buttons') && el.classList.contains('mod-active')"):
        return False  # the option already chosen in a group: clicking it changes nothing
    if kind == "text":  # type a new sentence, as a learner would, and press Enter
        control.click()
        control.fill("A learner types a sentence of their own here.")
        control.press("Enter")
    elif kind == "slider":
        readout = control.locator("xpath=ancestor::*[contains(@class,'widget-slider')][1]//*[contains(@class,'widget-readout')]")
        before = readout.first.inner_text() if readout.count() else None
        control.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(150)
        if readout.count() and readout.first.inner_text() == before:  # at its maximum: go the other way
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("ArrowLeft")
    elif kind == "dropdown":
        options = control.locator("option")
        values = [options.nth(i).get_attribute("value") for i in range(options.count())]
        current = control.input_value()
        other = next(v for v in values if v != current)
        control.click()
        control.select_option(other)
    else:
        control.click()
    return True


def test_lab_opens_on_start_here_without_news_popup(lab, page):
    # On a fresh workspace, as a new learner's first `make lab` does: other tests of this worker's session
    # (the static pages' JupyterLab checks) may have run first and left a notebook open in the saved one.
    shutil.rmtree(lab.root / "workspaces", ignore_errors=True)
    page.goto(lab.url("/"))
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.context", timeout=RUN_TIMEOUT_MS,
    )
    page.wait_for_timeout(1000)
    opened = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    assert opened == "notebooks/00_start_here.ipynb", f"JupyterLab opened on {opened!r}"
    page.wait_for_timeout(3000)  # the news question, when enabled, appears within a second or two
    toasts = page.locator(".Toastify__toast").all_inner_texts()
    assert not [t for t in toasts if "news" in t.lower()], f"a news pop-up appeared: {toasts}"
    page.screenshot(path=str(ARTIFACTS / "lab-start.png"))


def describe(control):
    """The words a learner sees on or beside a control."""
    text = control.evaluate(
        "(el) => (el.closest('.widget-inline-hbox, .widget-toggle-buttons, .widget-checkbox') || el).innerText")
    return " ".join(text.split())[:60]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_in_jupyterlab(lab, page, name):
    shot = ARTIFACTS / f"{Path(name).stem}.png"
    try:
        open_and_run(page, lab, name)
        problems = what_the_learner_sees(page, name)
        views = page.locator(WIDGET_VIEWS)
        for v in range(views.count()):
            view = views.nth(v)
            for kind, control in controls_of(view):
                control.scroll_into_view_if_needed()
                before = view.evaluate(PICTURE_JS)
                if not move(page, kind, control):
                    continue
                try:
                    page.wait_for_function(
                        f"([el, before]) => ({PICTURE_JS})(el) !== before", arg=[view.element_handle(), before],
                        timeout=10_000,
                    )
                except Exception:
                    problems.append(f"widget {v + 1}: moving the {kind} {describe(control)!r} did not change its picture")
                if kind == "slider":  # its two ends, where the odd settings live
                    for key in ("End", "Home"):
                        control.focus()
                        page.keyboard.press(key)
                        page.wait_for_timeout(300)
                        if view.locator(".explorer-error").count():
                            break
                broken = view.locator(".explorer-error")
                if broken.count():
                    problems.append(f"widget {v + 1}: after moving the {kind} {describe(control)!r} the explorer shows "
                                    f"an error instead of its picture: {broken.first.inner_text()[:300]!r}")
                    break
        problems += [p for p in what_the_learner_sees(page, name) if p not in problems]
        for v in range(views.count()):  # each explorer at the learner's size (the projector's: test_projector.py)
            views.nth(v).evaluate("(el) => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(200)
            page.screenshot(path=str(ARTIFACTS / f"laptop-{Path(name).stem}-explorer{v + 1}.png"))
    except Exception as exc:
        problems = [f"the run did not finish: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"]
    finally:
        page.keyboard.press("Escape")  # close an open dropdown list
        page.evaluate("() => { const p = document.querySelector('.jp-WindowedPanel-outer'); if (p) p.scrollTop = 0; }")
        page.screenshot(path=str(shot))
        try:  # free the kernel: one notebook at a time keeps the 2-core machine responsive
            page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:
            pass
    assert not problems, (
        f"notebook {name} in JupyterLab:\n- " + "\n- ".join(problems)
        + f"\nscreenshot: {shot.relative_to(ROOT)}; server log: {lab.log_path.relative_to(ROOT)}"
    )


# After test_lab_opens_on_start_here_without_news_popup, which must meet a fresh workspace first.
def test_jupyterlab_without_a_kernel_run_shows_no_dead_controls(lab, page):
    # The stored notebook opened, nothing run: JupyterLab shows the untrusted output's HTML sanitised
    # (no script, no data-* attributes), or the widget view of the saved state; never the static form's controls.
    page.goto(lab.url("/lab/tree/notebooks/04_masking.ipynb?reset"))
    page.wait_for_selector(".jp-OutputArea-output", timeout=60_000)
    page.wait_for_timeout(3000)
    output = page.locator(".jp-OutputArea-output:has(.course-explorer-still), .jp-OutputArea-output:has(.widget-vbox)")
    assert output.count() >= 1
    shown = output.first
    shown.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "lab-unrun-mask.png"))
    assert shown.locator(".course-static-live, input[type=range][name], button[name='hidden']").count() == 0
    if shown.locator(".course-explorer-still").count():
        assert shown.locator(".course-explorer-still").is_visible()
        assert shown.locator("table").count() >= 1
