"""The exercises of the static pages (make html) answered in Chromium, with no kernel and no network.

Every page holding exercises is exported into a temporary folder and opened from disk, every request to
another host refused. Each numeric exercise is answered with its stored right answer typed as numpy prints
it, with its first named mistake, and with nonsense ("banana", "[1, 2", nothing); each choice is clicked
right and wrong; each gets the kernel's own text in its data-feedback. The keyboard works (Tab to the box,
type, Enter), and a page without scripts shows the printed feedback and no control. Where the script builds
a form, the kernel's "Not attempted yet" (there is no cell to run on the page) is hidden; a build cell says
that your own function runs only in a kernel; choices are labelled as ChoiceExercise.question() prints them;
and an answer rounded too far gets the kernel's own text, checked against the kernel on exercises built here.
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
from helpers.exercises.feedback import NOT_ATTEMPTED  # noqa: E402
from helpers.exercises.static import BUILD_MIME, MIME  # noqa: E402

UNREADABLE = "I could not read that: type a number or a list like [0.1, 0.2]."


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
        # the output holding the form (focusable, tabindex 0): its printed "Not attempted yet", which was
        # clicked here before, is hidden where the form is built
        box.locator("xpath=parent::*").focus()
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
        marked = page.locator("pre[data-not-attempted]")
        assert marked.count() >= 1 and all(marked.nth(k).is_visible() for k in range(marked.count()))
    finally:
        context.close()


def test_where_a_form_is_built_the_kernels_not_attempted_text_is_hidden_and_other_text_stays(browser, site):
    name = "04_masking"
    page, context, refused = open_offline(browser, (site / f"{name}.html").as_uri())
    try:
        forms = page.locator(".course-exercise[data-exercise][data-built]")
        assert forms.count() == len([d for d in stored_exercises(name) if "needs_kernel" not in d]) >= 1
        for k in range(forms.count()):
            printed = forms.nth(k).locator("xpath=preceding-sibling::pre[1]")
            if printed.inner_text().strip() == NOT_ATTEMPTED:
                assert not printed.is_visible()
            else:
                assert printed.is_visible()
        hidden = page.locator("pre.course-exercise-printed[data-not-attempted]")
        assert hidden.count() >= 1 and not any(hidden.nth(k).is_visible() for k in range(hidden.count()))
        builds = page.locator("[data-build]")                  # the build cells: text, then the make-lab line
        assert builds.count() >= 3
        for k in range(builds.count()):
            assert builds.nth(k).is_visible() and "no function can be run" in builds.nth(k).inner_text()
            assert builds.nth(k).locator("xpath=preceding-sibling::pre[1]").is_visible()
        assert not refused
    finally:
        context.close()


def test_every_build_cell_of_every_page_says_it_needs_a_kernel(site):
    for name in PAGES:
        nb = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
        markers = sum(BUILD_MIME in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
        page = (site / f"{name}.html").read_text(encoding="utf-8")
        assert page.count("data-build=") == markers, name


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
    (numeric("minus", [-0.5, -1.5], 5e-4, [("masked", [-0.5, "-inf"])]),   # the page prints "−∞" (U+2212, U+221E)
     [("[\u22120.5, \u22121.5]", "RIGHT minus"), ("\u22120.5 \u22121.5", "RIGHT minus"), ("[\u22120.5, \u2212\u221e]", "MASKED"),
      ("[\u22120.5, -inf]", "MASKED"), ("[-0.5, \u2212inf]", "MASKED"), ("[0.5, -inf]", NOT_YET)]),
    (numeric("count", 33554432.0, 0.5, [("half", 16777216.0)]),
     [("33554432", "RIGHT count"), ("33,554,432", "Type the number without commas: 33554432."),
      ("16,777,216", "Type the number without commas: 16777216."), ("16777216", "HALF"),
      ("256,", NOT_YET), ("(256,)", NOT_YET), ("33 554 432", NOT_YET)]),
    (numeric("entry", -0.819, 5e-4, [("unscaled", -1.2)]),   # a decimal comma: a point, when that makes an answer
     [("-0,819", "Use a point for decimals: -0.819."), ("\u22120,819", "Use a point for decimals: -0.819."),
      ("-1,2", "Use a point for decimals: -1.2."), ("0,500", NOT_YET),
      ("-0.819", "RIGHT entry")]),
    (numeric("one", [256.0], 0.5),                        # "256," is a one-element list, as (256,) is
     [("256,", "RIGHT one"), ("(256,)", "RIGHT one"), ("[256]", "RIGHT one"), ("256", NOT_YET),
      ("1,024", NOT_YET)]),                               # commas in a list answer: a list of two numbers
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


def test_choice_labels_are_as_the_kernels_question_prints_them(browser, tmp_path):
    from helpers.exercises import ChoiceExercise
    from helpers.exercises.static import exercise_data, exercise_html
    letters = ChoiceExercise("Which?", {"a": "rows", "b": "columns"}, answer="a", hint="Rows.")
    words = ChoiceExercise("Does it?", {"yes": "it does", "no": "it does not"}, answer="no", hint="No.")
    parts = [exercise_html("printed", exercise_data(ex, name, withheld=False), "99_choice", with_script=k == 1)
             for k, (ex, name) in enumerate([(letters, "letters"), (words, "words")])]
    path = tmp_path / "choice.html"
    path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>" + "\n".join(parts)
                    + "</body></html>", encoding="utf-8")
    page, context, refused = open_offline(browser, path.as_uri())
    try:
        for ex, name in [(letters, "letters"), (words, "words")]:
            labels = page.locator(f"[data-exercise='99_choice:{name}'] label:has(input[type=radio])")
            shown = [" ".join(labels.nth(k).inner_text().split()) for k in range(labels.count())]
            printed = [" ".join(line.split()) for line in capture_question(ex)[1:]]
            assert shown == printed                           # "(a) rows", "yes: it does"
        assert not refused
    finally:
        context.close()


def capture_question(ex):
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ex.question()
    return out.getvalue().splitlines()


def rounded_exercise():
    """A numeric exercise whose right answer has many decimals, one named mistake (exercises built here)."""
    from helpers.exercises import _NumericExercise
    from helpers.exercises.feedback import EXACT_ATOL

    class Scores(_NumericExercise):
        def __init__(self):
            self.expected = np.array([0.123456, 1.871234, -2.449012])
            self.atol, self.shape_note, self.title = EXACT_ATOL, "three numbers", "the scores"
            self.hint_text, self.solution_text, self.correct_note = "Look again.", "answer = ...", "Yes."
            self._set_variants([("doubled", "Not doubled.", 2 * self.expected)])
    return Scores()


def test_an_answer_rounded_too_far_gets_the_kernels_own_text(browser, tmp_path):
    from helpers.exercises.static import exercise_data, exercise_html
    ex = rounded_exercise()
    data = exercise_data(ex, "rounded", withheld=False)
    path = tmp_path / "rounded.html"
    path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    + exercise_html("printed", data, "99_rounded", with_script=True) + "</body></html>", encoding="utf-8")
    typed = [np.round(ex.expected, k) for k in (3, 2, 1, 0)] + [np.round(2 * ex.expected, 1),
             np.round(ex.expected, 2) + [0.01, 0, 0], np.round(ex.expected[:2], 1), np.array([0.12, 1.87, -2.4])]
    page, context, refused = open_offline(browser, path.as_uri())
    try:
        box = page.locator("[data-exercise='99_rounded:rounded']")
        seen = set()
        for value in typed:
            kernel = ex.feedback(value)
            want = kernel.text if kernel.correct or kernel.mistake in {"rounded", "doubled"} else NOT_YET_OF(data)
            seen.add(kernel.mistake)
            got = answered(box, str(value))
            assert got == want, f"{value}: kernel {kernel.mistake!r}; page {got[:70]!r}"
        assert {None, "rounded"} <= seen and len({ex.feedback(np.round(ex.expected, k)).text for k in (2, 1, 0)}) == 3
        assert not refused
    finally:
        context.close()


def NOT_YET_OF(data):
    return "Not yet. Hint: " + data["hint"]


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
