"""Exercises that answer on the static page (helpers/exercises/static.py): the data a check stores, and its form.

A check in a kernel displays its feedback text beside the exercise's data; elsewhere it prints as before.
The data of a numeric exercise answers as the kernel does (its correct text, each named mistake's value and
text), rounded so that no value moves by more than a thousandth of the tolerance; a choice stores every
option's text. The stored notebooks' data equal the data of their exercises rebuilt in this process, ids are
unique across the course, and a student edition stores no answer of an exercise whose solution it withholds.
A build cell's verdict (diagnose, run_with_your_attention, check_your_block) carries a marker the export
turns into a line saying that the page cannot run your function; the index says what the exported pages
answer, read from what they store. The page's behaviour is tested in Chromium:
tests/browser/test_static_exercises_browser.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from exercise_cases import run_in_process
from helpers.course import NOTEBOOKS_DIR, ready_notebooks
from helpers.exercises import ChoiceExercise, KeyDesignExercise, MaskExercise, _NumericExercise
from helpers.exercises import static
from helpers.exercises.feedback import EXACT_ATOL, MASKED_FILL, NOT_ATTEMPTED, Feedback
from helpers.exercises.static import BUILD_MIME, MIME, add_exercise_html, exercise_data, name_in, stored

ROOT = Path(__file__).resolve().parent.parent


def unstored(v):
    """Stored nested lists back to an array ("inf", "-inf", "nan" as floats)."""
    return np.asarray(v if not isinstance(v, str) else float(v), dtype=float) if not isinstance(v, list) else \
        np.array([unstored(x) for x in v], dtype=float)


class MaskedScoresExercise(_NumericExercise):
    """The scaled scores of q against the rows of K; one named mistake masks the last key (-inf in it)."""

    def __init__(self, q, K):
        hide = np.array([False, False, True])
        scores = K @ q
        self.expected = scores / np.sqrt(len(q))
        self.atol, self.shape_note, self.title = EXACT_ATOL, "three numbers", "the scaled scores"
        self.hint_text = "Dot products, divided by sqrt(d_k)."
        self.solution_text, self.correct_note = "answer = ...", "Scaled by 1/sqrt(d_k)."
        self._set_variants([
            ("no_scaling", "You forgot to divide by sqrt(d_k).", scores),
            ("masked", "No key is hidden here: the last one is not masked.", np.where(hide, -np.inf, self.expected)),
            ("squared", "Not squared: divided by sqrt(d_k).", scores / len(q))])


def scores_exercise():
    """A numeric exercise with a masked (-inf) entry and three named mistakes."""
    return MaskedScoresExercise(np.array([1.0, 2.0]), np.array([[0.3, 0.7], [1 / 3, 2 / 3], [0.1, 0.9]]))


def choice_exercise():
    return ChoiceExercise("Which axis does the softmax run over?", {"a": "the queries", "b": "the keys"},
                          answer="b", why={"a": "Then each column would sum to 1.", "b": "Each row sums to 1."},
                          hint="Which sums to 1: a row or a column?")


# --------------------------------------------------------------------------
# The mechanism, on exercises built here
# --------------------------------------------------------------------------

def test_a_numeric_exercise_stores_the_kernels_texts_for_its_answer_and_each_named_mistake():
    ex = scores_exercise()
    data = exercise_data(ex, "ex_scores", withheld=False)
    json.dumps(data, allow_nan=False)                  # plain JSON: infinities are strings
    assert data["kind"] == "numeric" and data["name"] == "ex_scores"
    assert data["mistakes"][1]["value"][2] == "-inf" and data["masked_fill"] == MASKED_FILL
    assert data["correct"] == ex.feedback(ex.expected).text and data["correct"].startswith("Correct!")
    assert [m["key"] for m in data["mistakes"]] == ex.mistakes == ["no_scaling", "masked", "squared"]
    for m in data["mistakes"]:
        value = unstored(m["value"])
        assert m["text"] == ex.feedback(value).text == ex.feedback(np.asarray(ex._variants[ex.mistakes.index(m["key"])][2])).text
        assert ex.feedback(value).mistake == m["key"]  # the rounded value still names its mistake
    assert data["hint"] == ex.hint_text == ex.hint_steps()[0]
    assert data["atol"] == ex.atol


def test_a_numeric_exercise_stores_the_kernels_rounded_too_far_text_in_the_order_it_tries_the_decimals():
    ex = MaskedScoresExercise(np.array([1.0, 2.0]), np.array([[0.3, 0.7], [0.1, 0.9], [0.5, 0.5]]))
    data = exercise_data(ex, "ex_scores", withheld=False)
    assert [k for k, _ in data["rounded"]] == [2, 1, 0]                 # _rounded_to's order
    said = {}
    for k in (2, 1, 0):                                                 # the expected value rounded to k decimals
        got = ex.feedback(np.round(ex.expected, k))
        if got.mistake == "rounded":
            said[k] = got.text
    assert said, "no rounding of these scores is 'rounded too far'; choose other inputs"
    for k, text in data["rounded"]:
        assert text.startswith("Rounded too far") and (k not in said or said[k] == text)


def test_rounding_moves_no_value_by_more_than_a_thousandth_of_the_tolerance():
    ex = scores_exercise()
    data = exercise_data(ex, "ex_scores", withheld=False)
    for want, got in [(ex.expected, data["expected"])] + [(v, m["value"]) for (_, _, v), m in zip(ex._variants, data["mistakes"])]:
        got = unstored(got)
        finite = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), finite) and np.array_equal(got[~finite], want[~finite])
        assert np.all(np.abs(got[finite] - want[finite]) <= ex.atol / 1000)
    # 9 decimals at most, 12 significant digits at most but never below the units (the bits a BLAS kernel changes are far below both)
    assert stored(1 / 3) == 0.333333333 and stored(-2 / 3 * 1e-12) == 0.0 and stored(-0.0) == 0.0
    assert stored(123456789.123456789) == 123456789.123 and stored(2.0 ** 70) == 2.0 ** 70
    assert stored(1924145348608.0) == 1924145348608.0     # 08's n x n cache count: whole numbers stay exact
    assert stored(0.1 + 0.2) == 0.3 and stored([np.inf, -np.inf, np.nan]) == ["inf", "-inf", "nan"]
    noisy = 0.30228026852 * (1 + 3e-16)                # a value's last bits as another BLAS kernel gives them
    assert stored(noisy) == stored(0.30228026852)


def test_a_choice_stores_every_options_text_and_the_right_key():
    ex = choice_exercise()
    data = exercise_data(ex, "ex_axis", withheld=False)
    assert data["kind"] == "choice" and data["answer"] == "b"
    assert data["options"] == [["a", "the queries"], ["b", "the keys"]]
    assert data["feedback"] == {"a": ex.feedback("a").text, "b": ex.feedback("b").text}
    assert data["feedback"]["b"].startswith("Correct!") and data["feedback"]["a"].startswith("Not quite.")
    assert data["hint"] == "Which sums to 1: a row or a column?"


def test_exercises_the_page_cannot_judge_and_withheld_ones_store_only_why():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    design = KeyDesignExercise(X, np.eye(2), np.array([[1.0, 0.0], [0.0, 0.2]]), ["a", "b", "c"], "a", "b")
    mask = MaskExercise([2, 3])
    for ex in (design, mask):
        data = exercise_data(ex, "ex", withheld=False)
        assert set(data) == {"name", "kind", "needs_kernel"} and data["needs_kernel"].endswith(".")
    assert "many right answers" in exercise_data(design, "ex", withheld=False)["needs_kernel"]
    for ex in (scores_exercise(), choice_exercise()):
        data = exercise_data(ex, "ex", withheld=True)
        assert set(data) == {"name", "kind", "needs_kernel"} and "edition" in data["needs_kernel"]


def test_outside_a_kernel_a_check_prints_as_before(capsys):
    ex = choice_exercise()
    ex.check("b")
    assert capsys.readouterr().out == ex.feedback("b").text + "\n"


def test_in_a_kernel_a_check_displays_its_text_beside_its_data(monkeypatch):
    ex = choice_exercise()
    shown = []

    class Shell:                                      # what a kernel's shell gives the check: its namespace
        user_ns = {"ex_axis": ex, "_": ex, "other": 1}

    monkeypatch.setattr(static, "_in_kernel", lambda: Shell())
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    ex.check("a")
    (bundle, raw), = shown
    assert raw and set(bundle) == {"text/plain", MIME}
    assert bundle["text/plain"] == ex.feedback("a").text
    assert bundle[MIME] == exercise_data(ex, "ex_axis")


def test_build_cells_show_their_text_with_a_marker_the_export_turns_into_a_make_lab_line():
    from IPython.core.formatters import DisplayFormatter

    from helpers.exercises import diagnose
    from helpers.checkers.finale import BlockVerdict, ModelVerdict

    def softmax(x, axis=-1):
        raise NotImplementedError

    verdicts = [(diagnose(softmax, piece="softmax"), "softmax"), (ModelVerdict(False, "x", "model text"), "real_model_attention"),
                (BlockVerdict(False, "x", "block text"), "encoder_block")]
    nb = nbformat.v4.new_notebook()
    for verdict, piece in verdicts:
        bundle, _ = DisplayFormatter().format(verdict)           # what IPython stores for the cell's result
        assert bundle == {"text/plain": verdict.text, BUILD_MIME: {"kind": "build", "piece": piece}}
        nb.cells.append(nbformat.v4.new_code_cell("diagnose(fn)", outputs=[nbformat.v4.new_output(
            "execute_result", data=bundle, execution_count=1)]))
    assert verdicts[0][0].mistake == "not_attempted"
    add_exercise_html(nb, "99_test")
    for cell, (verdict, _) in zip(nb.cells, verdicts):
        page = cell.outputs[0].data["text/html"]
        printed, line = page.split("</pre>", 1)
        assert printed == '<pre class="course-exercise-printed">' + verdict.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert "no function can be run" in line and "make lab" in line and "workbook.py" in line
        assert "<script" not in page                             # no exercise on this page: no script


def test_every_stored_build_cell_carries_the_marker():
    cells = 0
    for name in ready_notebooks():
        nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code" or not cell.source.strip().splitlines():
                continue
            last = cell.source.strip().splitlines()[-1]
            if last.startswith(("diagnose(", "run_with_your_attention(", "check_your_block(")):
                cells += 1
                results = [o for o in cell.outputs if o.output_type == "execute_result"]
                assert results and BUILD_MIME in results[0].data, f"{name}: {last}"
                assert results[0].data[BUILD_MIME]["kind"] == "build"
    assert cells >= 15


def test_the_printed_not_attempted_text_is_marked_so_the_script_can_hide_it_where_a_form_is_built():
    from helpers.exercises.static import exercise_html
    answerable = exercise_data(scores_exercise(), "ex_scores", withheld=False)
    hidden = exercise_data(scores_exercise(), "ex_scores", withheld=True)
    assert exercise_html(NOT_ATTEMPTED, answerable, "99").startswith('<pre class="course-exercise-printed" data-not-attempted>')
    assert "data-not-attempted" not in exercise_html("Correct! Well done.", answerable, "99")
    assert "data-not-attempted" not in exercise_html(NOT_ATTEMPTED, hidden, "99")   # no form: the text stays


def test_an_exercises_name_is_the_class_reports():
    ex = choice_exercise()
    assert name_in({"b": ex, "a": ex, "_a": ex}, ex) == "a"
    assert name_in({"x": 1}, ex) == "ChoiceExercise"


def test_the_export_adds_the_form_and_the_script_once():
    nb = nbformat.v4.new_notebook()
    datas = [exercise_data(scores_exercise(), "ex_scores", withheld=False),
             exercise_data(choice_exercise(), "ex_axis", withheld=False),
             exercise_data(choice_exercise(), "ex_hidden", withheld=True)]
    for data in datas:
        nb.cells.append(nbformat.v4.new_code_cell("ex.check(answer)", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/plain": "Not attempted yet: <a> & b", MIME: data})]))
    add_exercise_html(nb, "99_test")
    pages = [c.outputs[0].data["text/html"] for c in nb.cells]
    assert [p.count(static.script()) for p in pages] == [0, 0, 1]
    for page, data in zip(pages, datas):
        assert page.startswith('<pre class="course-exercise-printed">Not attempted yet: &lt;a&gt; &amp; b</pre>')
        assert f'data-exercise="99_test:{data["name"]}"' in page
    payload = pages[0].split('<script type="application/json">', 1)[1].split("</script>", 1)[0]
    assert json.loads(payload) == datas[0] and "<" not in payload
    hidden = pages[2].split("<style>", 1)[0]          # before the page's script: the needs-kernel line alone
    assert "make lab" in hidden and "<input" not in hidden and "application/json" not in hidden


# --------------------------------------------------------------------------
# The stored notebooks
# --------------------------------------------------------------------------

def stored_exercises(path):
    """[(cell index, data)] of every exercise output stored in the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)
    return [(i, out["data"][MIME]) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if MIME in out.get("data", {})]


WITH_EXERCISES = [name for name in ready_notebooks() if stored_exercises(NOTEBOOKS_DIR / name)]


def test_every_notebook_that_checks_an_exercise_stores_its_data_and_ids_are_unique():
    checked = [name for name in ready_notebooks() if ".check(answer)" in (NOTEBOOKS_DIR / name).read_text()]
    assert checked and WITH_EXERCISES == checked
    ids = [f"{Path(name).stem}:{data['name']}" for name in WITH_EXERCISES for _, data in stored_exercises(NOTEBOOKS_DIR / name)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert "04_masking:ex_sums" in ids


@pytest.mark.parametrize("name", WITH_EXERCISES)
def test_stored_data_answer_as_the_notebooks_own_exercises_do(name):
    namespace = run_in_process(NOTEBOOKS_DIR / name)
    for _, data in stored_exercises(NOTEBOOKS_DIR / name):
        ex = namespace[data["name"]]
        assert data == json.loads(json.dumps(exercise_data(ex, data["name"], withheld=False))), data["name"]
        if isinstance(ex, KeyDesignExercise):
            assert "needs_kernel" in data
            continue
        assert "needs_kernel" not in data, f"{name}:{data['name']} ({type(ex).__name__}) cannot be answered on the page"
        if data["kind"] == "choice":
            assert {k: ex.feedback(k).text for k in ex.OPTIONS} == data["feedback"]
            assert ex.feedback(data["answer"]).correct
            continue
        right = ex.feedback(unstored(data["expected"]))       # the stored, rounded value: still right, same text
        assert right.correct and right.text == data["correct"]
        for m in data["mistakes"]:
            got = ex.feedback(unstored(m["value"]))
            assert got.mistake == m["key"] and got.text == m["text"]
        texts = dict(data["rounded"])
        for k in (2, 1, 0):                # where the kernel says "rounded too far", the page has its text
            got = ex.feedback(np.round(unstored(data["expected"]), k))
            if got.mistake == "rounded":
                assert texts[k] == got.text, (data["name"], k)


# --------------------------------------------------------------------------
# The student edition
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_student_edition", ROOT / "tools" / "make_student_edition.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    dest = tmp_path_factory.mktemp("edition") / "student"
    tool.build(dest, notebooks=["07_limits.ipynb"], keep=[])
    return dest


def test_a_student_edition_stores_no_answer_of_an_exercise_whose_solution_it_withholds(edition):
    course = stored_exercises(NOTEBOOKS_DIR / "07_limits.ipynb")
    student = stored_exercises(edition / "notebooks" / "07_limits.ipynb")
    assert len(student) == len(course) >= 2 and all("needs_kernel" not in d for _, d in course)
    for _, data in student:
        assert set(data) == {"name", "kind", "needs_kernel"} and data["needs_kernel"] == static.WITHHELD


# --------------------------------------------------------------------------
# The index: what the exported pages answer, read from what they store
# --------------------------------------------------------------------------

def export_tool():
    sys.path.insert(0, str(ROOT / "tools"))
    import export_html
    return export_html


def index_words(page):
    import re
    return " ".join(re.sub(r"<[^>]+>", " ", page.split("<h1", 1)[1].split("<table", 1)[0]).split())


def without_build_cells(nb):
    """``nb`` without its build cells (07's layer_norm, since issue 33): a page whose exercises alone answer."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if not any(BUILD_MIME in o.get("data", {}) for o in c.get("outputs", []))]
    return nb


def test_the_course_index_says_which_exercises_answer_and_names_from_the_data_what_needs_make_lab():
    tool = export_tool()
    notebooks = {Path(n).stem: nbformat.read(NOTEBOOKS_DIR / n, as_version=4) for n in ready_notebooks()}
    text = tool.index_text(tool.page_facts(notebooks))
    assert "the numeric and choice exercises answer what you type" in text and "need one here" not in text
    assert "typing a new sentence into the explorer of notebook 11" in text and "make lab" in text
    builds = [stem[:2] for stem, nb in notebooks.items()
              if any(BUILD_MIME in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))]
    assert len(builds) >= 8 and "build cells" in text and all(num in text.split("build cells", 1)[1] for num in builds)
    # every exercise that needs a kernel for a reason of its own (01's key design) is named, with its reason
    own = [(stem, d) for stem in notebooks for _, d in stored_exercises(NOTEBOOKS_DIR / f"{stem}.ipynb")
           if "needs_kernel" in d and d["needs_kernel"] != static.WITHHELD]
    assert {stem[:2] for stem, _ in own} == {"01"}
    for stem, d in own:
        assert d["name"] in text and d["needs_kernel"].rstrip(".") in text and stem[:2] in text
    one = tool.index_text(tool.page_facts({"07_limits": without_build_cells(notebooks["07_limits"])}))
    assert "exercises answer" in one and "build cells" not in one and "notebook 11" not in one
    one = tool.index_text(tool.page_facts({"04_masking": notebooks["04_masking"]}))
    assert "the build cells, which run your own functions from workbook.py (notebook 04)" in one


def test_a_student_editions_index_says_its_exercises_need_a_kernel(edition, tmp_path):
    tool = export_tool()
    site = tmp_path / "site"
    tool.main([str(site), str(edition / "notebooks" / "07_limits.ipynb")])     # as INSTRUCTORS.md says to run it
    text = index_words((site / "index.html").read_text(encoding="utf-8"))
    assert "the exercises need one here" in text and "exercises answer" not in text and "make lab" in text
    page = (site / "07_limits.html").read_text(encoding="utf-8")
    assert page.count("data-needs-kernel") == len(stored_exercises(edition / "notebooks" / "07_limits.ipynb")) >= 2


def test_a_mixed_editions_index_names_the_notebooks_whose_answers_stay_in_the_kernel():
    # An edition that keeps one notebook's solutions (--keep) and withholds another's: both kinds of page.
    tool = export_tool()
    withheld = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("ex_score.check(answer)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "Not attempted yet.", static.MIME: {"name": "ex_score", "kind": "numeric",
                                                         "needs_kernel": static.WITHHELD}})]
    withheld.cells.append(cell)
    kept = without_build_cells(nbformat.read(NOTEBOOKS_DIR / "07_limits.ipynb", as_version=4))
    text = tool.index_text(tool.page_facts({"01_river_bank": withheld, "07_limits": kept}))
    assert "exercises answer what you type" in text
    assert "the exercises of notebook 01 whose answers this edition keeps in the kernel" in text
    assert "07" not in text.split("These need one", 1)[1]
