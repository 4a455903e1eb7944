"""The exercises of the static pages (make html) answered in Chromium, with no kernel and no network.

Every page holding exercises is exported into a temporary folder and opened from disk, every request to
another host refused. Each numeric exercise is answered with its stored right answer typed as numpy prints
it, with its first named mistake, and with nonsense ("banana", "[1, 2", nothing); each choice is clicked
right and wrong; each gets the kernel's own text in its data-feedback. The keyboard works (Tab to the box,
type, Enter), and a page without scripts shows the printed feedback and no control.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_html  # noqa: E402
from test_static_pages import open_offline  # noqa: E402

from helpers.course import NOTEBOOKS_DIR, ready_notebooks  # noqa: E402
from helpers.exercises.static import MIME  # noqa: E402

UNREADABLE = "I could not read that: type a number or a list like [0.1, 0.2]"


def stored_exercises(stem):
    nb = nbformat.read(NOTEBOOKS_DIR / f"{stem}.ipynb", as_version=4)
    return [out["data"][MIME] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if MIME in out.get("data", {})]


PAGES = [Path(n).stem for n in ready_notebooks() if stored_exercises(Path(n).stem)]


def as_numpy_prints(value):
    """A stored value typed as numpy prints it (default print options; "-inf" for -inf)."""
    def back(v):
        return [back(x) for x in v] if isinstance(v, list) else float(v)
    arr = np.array(back(value), dtype=float)
    return str(arr) if arr.ndim else str(float(arr))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    export_html.export_site(folder, [NOTEBOOKS_DIR / f"{p}.ipynb" for p in PAGES])
    return folder


def answered(box, text):
    field = box.locator("input[type=text], textarea")
    field.fill(text)
    box.locator("button", has_text="Check").click()
    return box.locator("[data-feedback]").text_content()


@pytest.mark.parametrize("name", PAGES)
def test_every_exercise_answers_right_a_named_mistake_and_nonsense(browser, site, name):
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri(), viewport={"width": 1100, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        stored = stored_exercises(name)
        answerable = [d for d in stored if "needs_kernel" not in d]
        boxes = page.locator(".course-exercise[data-exercise]")
        assert boxes.count() == len(answerable)
        notes = page.locator("[data-needs-kernel]")
        assert notes.count() == len(stored) - len(answerable)
        for k in range(notes.count()):
            assert "make lab" in notes.nth(k).inner_text()
        problems = []
        for k, data in enumerate(answerable):
            box = boxes.nth(k)
            ident = f"{name}:{data['name']}"
            assert box.get_attribute("data-exercise") == ident
            assert box.locator("[data-feedback]").get_attribute("aria-live") == "polite"
            if data["kind"] == "choice":
                wrong = next(key for key, _ in data["options"] if key != data["answer"])
                for key in (data["answer"], wrong):
                    box.locator(f"input[type=radio][value='{key}']").check()
                    box.locator("button", has_text="Check").click()
                    got = box.locator("[data-feedback]").text_content()
                    if got != data["feedback"][key]:
                        problems.append(f"{ident} chose {key!r}: {got[:80]!r}")
                continue
            tries = [(as_numpy_prints(data["expected"]), data["correct"])]
            if data["mistakes"]:
                first = data["mistakes"][0]
                tries.append((as_numpy_prints(first["value"]), first["text"]))
            tries += [(nonsense, UNREADABLE) for nonsense in ("banana", "[1, 2", "")]
            for typed, want in tries:
                got = answered(box, typed)
                if got != want:
                    problems.append(f"{ident} typed {typed!r}: wanted {want[:60]!r}, got {got[:60]!r}")
        assert not problems, "\n".join(problems)
        assert not errors, errors
        assert not refused, f"the page asked another host for {refused}"
    finally:
        context.close()


def test_the_keyboard_tabs_to_the_box_types_and_checks_with_enter(browser, site):
    name = "04_masking"
    data = next(d for d in stored_exercises(name) if d["kind"] == "numeric")
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri())
    try:
        box = page.locator(f"[data-exercise='{name}:{data['name']}']")
        box.locator("xpath=preceding-sibling::pre[1]").click()     # the printed feedback, just before the form
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.closest('[data-exercise]') !== null && "
                             "['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)")
        page.keyboard.type(as_numpy_prints(data["expected"]))
        page.keyboard.press("Enter")
        assert box.locator("[data-feedback]").text_content() == data["correct"]
        assert not refused
    finally:
        context.close()


def test_without_scripts_the_page_shows_the_printed_feedback_and_no_dead_control(browser, site):
    name = "04_masking"
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri(), java_script_enabled=False)
    try:
        boxes = page.locator("[data-exercise]")
        assert boxes.count() == len(stored_exercises(name)) >= 1
        assert page.locator("[data-exercise] input, [data-exercise] textarea, [data-exercise] button").count() == 0
        printed = page.locator("pre.course-exercise-printed").first
        assert printed.is_visible() and "Not attempted yet" in printed.inner_text()
    finally:
        context.close()


# --------------------------------------------------------------------------
# The reader of typed answers, on data written here
# --------------------------------------------------------------------------

HINT = "Look again."
NOT_YET = "Not yet. Hint: " + HINT


def numeric(name, expected, atol, mistakes=()):
    return {"name": name, "kind": "numeric", "expected": expected, "atol": atol, "masked_fill": -1e4,
            "correct": f"RIGHT {name}", "hint": HINT,
            "mistakes": [{"key": key, "value": value, "text": key.upper()} for key, value in mistakes]}


# (data, [(typed, the feedback it must get)]): a boolean mask, a number, a tolerance per column, a vector
READER_CASES = [
    (numeric("mask", [[1.0, 0.0], [1.0, 1.0]], 5e-4,
             [("flipped", [[0.0, 1.0], [0.0, 0.0]]), ("masked", [[1.0, "-inf"], [1.0, 1.0]]),
              ("nan_entry", [["nan", 0.0], [1.0, 1.0]])]),
     [("[[ True False]\n [ True  True]]", "RIGHT mask"), ("[[1, 0], [1, 1]]", "RIGHT mask"),
      ("array([[1., 0.],\n       [1., 1.]])", "RIGHT mask"), ("[[1 0] [1 1]]", "RIGHT mask"),
      ("[[1.0004, 0], [1, 1]]", "RIGHT mask"), ("[[1.001, 0], [1, 1]]", NOT_YET),
      ("[[False True] [False False]]", "FLIPPED"), ("[[1, -inf], [1, 1]]", "MASKED"),
      ("[[1, -np.inf], [1, 1]]", "MASKED"), ("[[1, -1e9], [1, 1]]", "MASKED"),
      ("[[nan, 0], [1, 1]]", NOT_YET),          # as the kernel: NaN matches nothing, not even a NaN mistake
      ("[1, 0, 1, 1]", NOT_YET), ("[[1, 0], [1]]", UNREADABLE), ("[[1, 0], [1, 1]]]", UNREADABLE),
      ("banana", UNREADABLE), ("", UNREADABLE), ("[1, 2", UNREADABLE), ("[[1, 0], [1, x]]", UNREADABLE)]),
    (numeric("half", 0.5, 5e-4, [("double", 1.0), ("negative", "-inf")]),
     [("0.5", "RIGHT half"), (" 0.5 ", "RIGHT half"), (".5", "RIGHT half"), ("5e-1", "RIGHT half"),
      ("np.float64(0.5)", "RIGHT half"), ("(0.5)", "RIGHT half"), ("[0.5]", NOT_YET), ("1", "DOUBLE"),
      ("-inf", "NEGATIVE"), ("inf", NOT_YET), ("nan", NOT_YET), ("True", UNREADABLE), ("0.5.1", UNREADABLE)]),
    (numeric("columns", [[1.0, 2.0], [3.0, 4.0]], [0.1, 0.001]),
     [("[[1.05, 2], [3, 4]]", "RIGHT columns"), ("[[1, 2.05], [3, 4]]", NOT_YET), ("[[1, 2], [3.09, 4.0009]]", "RIGHT columns")]),
    (numeric("pair", [0.3, 0.5], 5e-4),
     [("0.3 0.5", "RIGHT pair"), ("0.3, 0.5", "RIGHT pair"), ("[0.3,0.5]", "RIGHT pair"), ("(0.3, 0.5)", "RIGHT pair"),
      ("[0.3, 0.5,]", "RIGHT pair"), ("[0.5, 0.3]", NOT_YET)]),
]


@pytest.fixture(scope="module")
def reader_page(tmp_path_factory):
    from helpers.exercises.static import exercise_html
    parts = [exercise_html("printed", data, "99_reader", with_script=k == len(READER_CASES) - 1)
             for k, (data, _) in enumerate(READER_CASES)]
    page = tmp_path_factory.mktemp("reader") / "reader.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>" + "\n".join(parts)
                    + "</body></html>", encoding="utf-8")
    return page


@pytest.mark.parametrize("k", range(len(READER_CASES)), ids=[d["name"] for d, _ in READER_CASES])
def test_typed_answers_are_read_as_a_learner_pastes_them(browser, reader_page, k):
    data, cases = READER_CASES[k]
    page, context, refused = open_offline(browser, reader_page.as_uri())
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        box = page.locator(f"[data-exercise='99_reader:{data['name']}']")
        wrong = [(typed, want, got) for typed, want in cases if (got := answered(box, typed)) != want]
        assert not wrong, "\n".join(f"{t!r}: wanted {w!r}, got {g!r}" for t, w, g in wrong)
        assert not errors and not refused
    finally:
        context.close()


def test_in_jupyterlab_a_check_shows_its_text_as_before(lab, page):
    # JupyterLab has no renderer for the exercise's data, so it shows the text/plain beside it: the same
    # feedback the check printed before it stored data for the static page.
    from test_jupyterlab import open_and_run
    open_and_run(page, lab, "04_masking.ipynb")
    data = stored_exercises("04_masking")[0]
    shown = page.locator(".jp-OutputArea-output", has_text="Not attempted yet: replace the")
    assert shown.count() >= 1
    assert shown.last.get_attribute("data-mime-type") == "text/plain"
    assert "application/json" not in shown.last.inner_html() and data["correct"] not in page.inner_text("body")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
