"""The student edition (tools/make_student_edition.py) and hints in steps.

The edition of one small notebook is built once: no stored output shows a solution the instructor's
notebook shows, its hints stay, it is a course folder of its own, and nbval passes in it. Every notebook's
edition, copied as stored: its solutions module holds no worked function of a withheld piece (the checkers
still judge), its prose does not promise a worked version, its build cells are left out of nbval. The edition
of 01 and 04, executed: its make test passes for a student whose workbook holds right pieces, and with one
wrong piece, whose mistake its report of diagnose on every piece names (about a minute on a busy machine). Hints: the first
call is today's hint, the second a stronger step without the answer, and solution() withheld in an edition
unless its notebook keeps its solutions."""

import html
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.attention import causal_mask, softmax
from helpers.edition import EDITION_FILE, edition_settings, solutions_withheld
from helpers.exercises import ChoiceExercise, MaskedRowSumsExercise, exercise, solution
from helpers.checkers.solutions import workbook_source

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "07_limits.ipynb"      # short (a few seconds) and holds exercises with hints and solutions
spec = importlib.util.spec_from_file_location("make_student_edition", ROOT / "tools" / "make_student_edition.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)


def shown(cell):
    """Everything a stored code cell shows: printed text and each mime type's data."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append(str(out.get("text", "")))
        parts += [str(v) for v in out.get("data", {}).values()]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    dest = tmp_path_factory.mktemp("edition") / "student"
    tool.build(dest, notebooks=[NOTEBOOK], keep=[])
    return dest


def test_no_stored_output_shows_a_solution_the_course_shows(edition):
    course = nbformat.read(ROOT / "notebooks" / NOTEBOOK, as_version=4)
    student = nbformat.read(edition / "notebooks" / NOTEBOOK, as_version=4)
    spoilers = [shown(c).split("Solution (spoiler):\n", 1)[1] for c in course.cells
                if c.cell_type == "code" and "Solution (spoiler):" in shown(c)]
    assert len(spoilers) >= 2, "the course notebook shows its solutions"
    everything = "\n".join(shown(c) for c in student.cells if c.cell_type == "code")
    assert "Solution (spoiler)" not in everything
    for spoiler in spoilers:
        for line in (line.strip() for line in spoiler.splitlines()):
            if len(line) > 15:
                assert line not in everything and html.escape(line) not in everything, line
    withheld = [shown(c) for c in student.cells if c.cell_type == "code" and ".solution()" in c.source]
    assert withheld and all("Solution (withheld)" in text and "hint" in text for text in withheld)


def test_the_hints_stay_as_the_course_shows_them(edition):
    course = nbformat.read(ROOT / "notebooks" / NOTEBOOK, as_version=4)
    student = {c.id: c for c in nbformat.read(edition / "notebooks" / NOTEBOOK, as_version=4).cells}
    hints = [c for c in course.cells if c.cell_type == "code" and ".hint()" in c.source]
    assert hints and all(shown(student[c.id]) == shown(c) for c in hints)


def test_the_edition_is_a_course_folder_of_its_own(edition):
    assert json.loads((edition / EDITION_FILE).read_text())["keep_solutions"] == []
    assert (edition / "notebooks" / "workbook.py").read_text() == workbook_source()
    for needed in ("helpers/exercises/base.py", "data/river_bank.json", "requirements.txt", "pyproject.toml",
                   "binder/postBuild", "Makefile", "conftest.py", "nbval_sanitize.cfg"):
        assert (edition / needed).is_file(), needed
    for left_behind in ("tests", "tools", "INSTRUCTORS.md"):
        assert not (edition / left_behind).exists(), left_behind
    assert "tools/" not in (edition / "Makefile").read_text()
    assert edition_settings(edition / "notebooks")["edition"] == "student"
    assert edition_settings(ROOT / "notebooks") == {}


def test_the_editions_readme_is_its_own_and_names_nothing_it_lacks(edition):
    readme = (edition / "README.md").read_text()
    assert readme != (ROOT / "README.md").read_text() and f"notebooks/{NOTEBOOK}" in readme
    for absent in ("solution()", "INSTRUCTORS", "tools/", "tests/", "make html", "make student"):
        assert absent not in readme, absent
    targets = set(re.findall(r"^([a-z]+):", (edition / "Makefile").read_text(), re.M))
    named_targets = set(re.findall(r"\bmake ([a-z]+)", readme))
    assert named_targets == {"lab", "test"} and named_targets <= targets
    paths = [p for p in re.findall(r"`([^`\s]+)`", readme) if "/" in p or re.search(r"\.(py|ipynb|json|md|txt)$", p)]
    assert paths and all((edition / p).exists() for p in paths), [p for p in paths if not (edition / p).exists()]
    assert (edition / ".gitignore").read_text().startswith(".venv/")


def test_nbval_passes_in_the_edition(edition):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JPY_SESSION_NAME")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "--nbval",
                          "--nbval-sanitize-with", "nbval_sanitize.cfg", f"notebooks/{NOTEBOOK}"],   # the edition's own copy
                         cwd=edition, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(r"\d+ passed", run.stdout)


def test_a_dest_that_is_not_an_edition_is_never_replaced(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a student edition"):
        tool.build(tmp_path, notebooks=[NOTEBOOK], run=False)
    with pytest.raises(ValueError, match="notebooks must name course notebooks"):
        tool.build(tmp_path / "new", notebooks=["99_none"], run=False)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_a_rebuild_keeps_the_git_folder_and_refuses_to_delete_files_it_does_not_make(tmp_path):
    dest = tmp_path / "student"
    (dest / ".git").mkdir(parents=True)                           # git init first: a folder of only .git is fine
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    tool.build(dest, notebooks=[NOTEBOOK], run=False)
    (dest / "notes.md").write_text("the instructor's notes")
    (dest / "notebooks" / "__pycache__").mkdir()
    (dest / "notebooks" / "__pycache__" / "workbook.cpython-311.pyc").write_bytes(b"cache")
    (dest / "Makefile").write_text("edited")                      # a file the edition makes: replaced
    with pytest.raises(ValueError, match=r"holds files the student edition does not make: notes\.md\. .*--force"):
        tool.build(dest, notebooks=[NOTEBOOK], run=False)
    assert (dest / "Makefile").read_text() == "edited", "a refused rebuild deleted nothing"
    with pytest.raises(ValueError, match=r"notebooks/07_limits\.ipynb"):   # a notebook the build no longer makes
        tool.build(dest, notebooks=["04_masking"], run=False, force=False)
    tool.build(dest, notebooks=[NOTEBOOK], run=False, force=True)
    assert not (dest / "notes.md").exists() and "lab:" in (dest / "Makefile").read_text()
    assert (dest / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    tool.build(dest, notebooks=[NOTEBOOK], run=False)              # nothing unknown left: rebuilt without asking
    assert (dest / ".git" / "HEAD").is_file() and (dest / EDITION_FILE).is_file()
    (dest / "site" / "mathjax").mkdir(parents=True)                # the static site, exported as INSTRUCTORS.md says
    (dest / "site" / "index.html").write_text("<html>the course map</html>")
    (dest / "site" / "mathjax" / "tex-chtml.js").write_text("//")
    tool.build(dest, notebooks=[NOTEBOOK], run=False)              # a rebuild keeps it, as it keeps .git
    assert (dest / "site" / "index.html").read_text() == "<html>the course map</html>"
    assert (dest / "site" / "mathjax" / "tex-chtml.js").is_file()
    assert "site/" in (dest / ".gitignore").read_text().splitlines()


# --------------------------------------------------------------------------
# What the edition withholds: the worked pieces, and the prose that points to them
# --------------------------------------------------------------------------

def _body_lines(fn):
    """The code lines of a worked function's body that say something (comments dropped, longer than 20)."""
    lines = inspect.getsource(fn).splitlines()[1:]
    return [line.split("#")[0].strip() for line in lines if len(line.split("#")[0].strip()) > 20]


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """Every notebook's edition, copied as stored (run=False: the prose and the tags, not the outputs)."""
    dest = tmp_path_factory.mktemp("copied") / "student"
    tool.build(dest, keep=["01_river_bank.ipynb"], run=False)
    return dest


def test_the_editions_solutions_hold_no_worked_function_of_a_withheld_piece(copied):
    from helpers.checkers.solutions import WORKED

    settings = json.loads((copied / EDITION_FILE).read_text())
    withheld = settings["withheld_pieces"]
    # 01 is kept: its softmax and attention stay worked; every other piece is withheld
    assert set(withheld) == set(WORKED) - {"softmax", "attention"}, withheld
    edition = (copied / "helpers" / "checkers" / "solutions.py").read_text()
    code = re.sub(r'"""(.*?)"""', '""', edition, flags=re.S)          # the stubs' docstrings may name a shape
    kept = {line for piece in set(WORKED) - set(withheld) for line in _body_lines(WORKED[piece])}
    for piece in WORKED:
        shown = [line for line in _body_lines(WORKED[piece]) if line in code]
        if piece in withheld:
            shown = [line for line in shown if line not in kept]   # softmax's first line is rope's too
            assert not shown, (piece, shown)
            assert f'raise NotImplementedError("{piece}: its worked version is withheld' in edition, piece
        else:
            assert shown == _body_lines(WORKED[piece]), piece
    assert tool.withhold_worked(edition, []) == edition
    with pytest.raises(ValueError, match="pieces must have a worked function"):
        tool.withhold_worked(edition, ["no_such_piece"])


def test_in_the_edition_solution_says_withheld_and_the_checkers_still_judge(copied):
    script = """
import json, helpers, numpy as np
from helpers.attention import softmax, scaled_dot_product_attention, causal_mask
from helpers.checkers import diagnose
from helpers.checkers.solutions import WORKED, solution
ran = {}
try:
    WORKED["causal_mask"](3)
except NotImplementedError as exc:
    ran["stub"] = str(exc)
print(json.dumps({"helpers": helpers.__file__, "ran": ran,
    "solutions": {p: solution(p).text for p in ("softmax", "causal_mask", "rope")},
    "judged": [diagnose(softmax, piece="softmax").correct, diagnose(scaled_dot_product_attention).correct,
               diagnose(causal_mask, piece="causal_mask").correct,
               diagnose(lambda n: np.tril(np.ones((n, n), bool), -1), piece="causal_mask").mistake]}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND",)}
    env.update(PYTHONPATH=str(copied), JPY_SESSION_NAME="notebooks/01_river_bank.ipynb")   # a kept notebook
    run = subprocess.run([sys.executable, "-c", script], cwd=copied / "notebooks", env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(said["helpers"]).resolve().is_relative_to(copied.resolve())
    assert "withheld" in said["ran"]["stub"]
    assert "def softmax" in said["solutions"]["softmax"]                 # 01 keeps its own piece
    for piece in ("causal_mask", "rope"):                                # withheld even in a kept notebook
        assert "withheld" in said["solutions"][piece] and "np.tril" not in said["solutions"][piece], piece
    assert said["judged"] == [True, True, True, "diagonal_masked"]


def test_a_withheld_notebook_does_not_say_that_solution_shows_a_worked_version(copied):
    claim = re.compile(r"\.solution\(\)`[^.;]*\bshows?\b[^.;]*\bworked|hint and a worked solution")
    found, rewritten = [], 0
    for path in sorted((copied / "notebooks").glob("*.ipynb")):
        course = nbformat.read(ROOT / "notebooks" / path.name, as_version=4)
        for mine, cell in zip(course.cells, nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "markdown":
                continue
            if path.name == "01_river_bank.ipynb":                       # kept: as the course says it
                assert cell.source == mine.source
            elif claim.search(cell.source):
                found.append(f"{path.stem}: {claim.search(cell.source).group(0)}")
            rewritten += cell.source != mine.source
    assert not found, found
    assert rewritten >= 5, "the course's notebooks say it in their Build it sections"


def test_the_editions_build_cells_are_left_out_of_nbval_and_no_other_cell_is(copied):
    from helpers.exercises.static import BUILD_MIME

    for path in sorted((copied / "notebooks").glob("*.ipynb")):
        course = nbformat.read(ROOT / "notebooks" / path.name, as_version=4)
        for mine, cell in zip(course.cells, nbformat.read(path, as_version=4).cells):
            build = "workbook." in cell.source and any(BUILD_MIME in out.get("data", {})
                                                      for out in cell.get("outputs", []))
            tags, before = cell.metadata.get("tags", []), mine.metadata.get("tags", [])
            assert ("nbval-ignore-output" in tags) == (build or "nbval-ignore-output" in before), (path.stem, mine.id)


# --------------------------------------------------------------------------
# The edition's make test with a student's workbook
# --------------------------------------------------------------------------

SOLVED = ("01_river_bank.ipynb", "04_masking.ipynb")   # 01 builds softmax and attention, 04 the masks and a masked attention
NO_MAX = """

def softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted: overflows at [1000, 1001]
    return e / e.sum(axis=axis, keepdims=True)
"""


def edition_test(edition, workbook, notebooks):
    """The edition's make test (its nbval, its report) on ``notebooks`` with ``workbook`` after the stubs."""
    (edition / "notebooks" / "workbook.py").write_text(workbook_source() + workbook)
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JPY_SESSION_NAME", "PYTHONPATH")}
    env["PYTHONPATH"] = str(edition)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--nbval",
                           "--nbval-sanitize-with", "nbval_sanitize.cfg", *(f"notebooks/{n}" for n in notebooks)],
                          cwd=edition, env=env, capture_output=True, text=True, timeout=900)


def report(stdout):
    """The edition's workbook report: {function name: verdict}."""
    part = stdout.split("your workbook: diagnose on every piece", 1)[1]
    return dict(line.split(": ", 1) for line in part.splitlines()[1:] if ": " in line and not line.startswith("="))


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    dest = tmp_path_factory.mktemp("solved") / "student"
    tool.build(dest, notebooks=list(SOLVED), keep=[])
    return dest


def test_a_student_with_right_pieces_passes_the_editions_make_test_and_its_report_says_so(solved):
    from helpers.checkers.solutions import STUBS, WORKED, function_name

    right = "".join("\n\n" + inspect.getsource(fn) for fn in WORKED.values())
    run = edition_test(solved, right, SOLVED)
    assert run.returncode == 0, run.stdout[-4000:]
    said = report(run.stdout)
    assert set(said) == {function_name(p) for p in STUBS}, said
    assert all(said[function_name(p)] == "right" for p in STUBS if p != "encoder_block"), said
    assert "check_your_block" in said["encoder_block"]


def test_a_wrong_piece_falls_back_to_the_course_and_the_report_names_its_mistake(solved):
    from helpers.checkers.solutions import WORKED

    others = "".join("\n\n" + inspect.getsource(fn) for piece, fn in WORKED.items() if piece != "softmax")
    run = edition_test(solved, others + NO_MAX, SOLVED[:1])
    assert run.returncode == 0, run.stdout[-4000:]               # the cells ran the course's softmax in its place
    said = report(run.stdout)
    assert "no_max_subtraction" in said["softmax"].split(": ")[0], said["softmax"]
    assert said["attention"] == "right" and said["causal_mask"] == "right"
    assert report_alone(solved, "")["softmax"] == "not attempted yet"      # the pristine workbook
    broken = report_alone(solved, "\ndef softmax(x:\n")
    assert list(broken) == ["workbook.py could not be imported (SyntaxError"], broken


def report_alone(edition, workbook):
    """The edition's report (its conftest's workbook_report) on ``workbook`` after the stubs, without nbval."""
    (edition / "notebooks" / "workbook.py").write_text(workbook_source() + workbook)
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JPY_SESSION_NAME", "PYTHONPATH")}
    run = subprocess.run([sys.executable, "-c", "import conftest; print('your workbook: diagnose on every piece');"
                          "print('\\n'.join(conftest.workbook_report()))"], cwd=edition, env={**env, "PYTHONPATH": str(edition)},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return report(run.stdout)


# --------------------------------------------------------------------------
# The flag: which notebooks keep their solutions
# --------------------------------------------------------------------------

@pytest.fixture
def in_edition(tmp_path, monkeypatch):
    """A kernel's working directory inside a student edition that keeps 01's solutions."""
    (tmp_path / EDITION_FILE).write_text(json.dumps({"edition": "student", "keep_solutions": ["01_river_bank.ipynb"]}))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    return monkeypatch


def quick():
    return exercise("Square a.", inputs={"a": 3.0}, answer=lambda a: a * a, hint="Multiply a by itself.",
                    solution="answer = 3.0 * 3.0   # 9")


def test_solutions_are_withheld_in_an_edition_but_where_a_notebook_keeps_them(in_edition):
    ex = quick()
    assert solutions_withheld()                      # the notebook is unknown: withheld
    hidden = ex.solution()
    assert hidden.label == "Solution (withheld)" and "3.0 * 3.0" not in hidden.text and "hint" in hidden.text
    assert "def softmax" not in solution("softmax").text and "withheld" in solution("softmax").text
    in_edition.setenv("JPY_SESSION_NAME", "notebooks/04_masking.ipynb")
    assert ex.solution().label == "Solution (withheld)"
    in_edition.setenv("JPY_SESSION_NAME", "notebooks/01_river_bank.ipynb")   # as JupyterLab sets it
    assert ex.solution().text == "answer = 3.0 * 3.0   # 9"
    assert "def softmax" in solution("softmax").text


def test_the_instructors_course_shows_every_solution():
    assert not solutions_withheld(start=ROOT / "notebooks")
    assert quick().solution().label == "Solution (spoiler)"


# --------------------------------------------------------------------------
# Hints in steps
# --------------------------------------------------------------------------

def test_the_first_hint_is_todays_and_the_second_is_stronger_and_then_it_stays():
    ex = exercise("Weights of [4, 2, 0] with d_k = 4.", inputs={"s": np.array([4.0, 2.0, 0.0])},
                  answer=lambda s: softmax(s / 2), hint="Divide first.",
                  mistakes={"no_scaling": ("You skipped the division by sqrt(d_k).", lambda s: softmax(s))})
    first, second, third = ex.hint(), ex.hint(), ex.hint()
    assert (first.label, first.text) == ("Hint", "Divide first.")
    assert second.label == "Hint 2 of 2 (stronger)"
    assert "You skipped the division by sqrt(d_k)." in second.text     # one-line solution: the traps it knows
    assert (third.label, third.text) == (second.label, second.text) and "strongest hint" in third.text


def test_the_step_is_the_solution_without_its_numbers_and_without_its_last_line():
    W = softmax(np.random.default_rng(0).normal(size=(3, 3)))
    ex = MaskedRowSumsExercise(W, causal_mask(3), labels=["the", "bank", "flooded"],
                               names={"weights": "W_alone", "mask": "causal_mask(3)"})
    ex.hint()
    step = ex.hint().text
    assert "#" not in step.split("\n\n")[0]                        # no worked numbers
    assert "answer = ...\n" in step + "\n"                          # the last line is the learner's
    # pasting the solution's last line over "answer = ..." gives the right answer: the step left only it out
    last = [line for line in ex.solution_text.splitlines() if line.startswith("answer =")][-1].split("#")[0]
    code = step.split("\n", 1)[1].split("\n\n")[0].replace("answer = ...", last)
    namespace = {"np": np, "W_alone": W, "causal_mask": causal_mask}
    exec(code, namespace)
    assert ex.feedback(namespace["answer"]).correct


def test_a_choice_rules_out_one_wrong_option_and_never_one_of_two():
    three = ChoiceExercise("Which?", {"a": "one", "b": "two", "c": "three"}, "b",
                           why={"a": "a counts twice.", "b": "right", "c": "c counts none."}, hint="Count.")
    three.hint()
    step = three.hint().text
    assert step.startswith("You can rule out (a): one\nWhy not: a counts twice.") and "(b)" not in step
    two = ChoiceExercise("Yes?", {"yes": "yes", "no": "no"}, "yes", why={"no": "no, because."}, hint="Think.")
    assert [two.hint().text for _ in range(2)][1].startswith("Think.")


def test_an_instructor_writes_the_steps_as_a_list():
    ex = exercise("Square a.", inputs={"a": 3.0}, answer=lambda a: a * a, hint=["Nudge.", "Multiply a by a."])
    assert [ex.hint().text.split("\n")[0] for _ in range(3)] == ["Nudge.", "Multiply a by a.", "Multiply a by a."]
    three = exercise("Square a.", inputs={"a": 3.0}, answer=lambda a: a * a, hint=["Nudge.", "Square it.", "a * a."])
    three.hint()
    assert "Run this cell again for a stronger hint" in three.hint().text      # a step with a stronger one after it
    assert "strongest hint" in three.hint().text
    with pytest.raises(ValueError, match="hint must be a text"):
        exercise("Square a.", inputs={"a": 3.0}, answer=lambda a: a * a, hint=[])


def stored_solutions():
    """(notebook, cell source, solution text) of every worked solution the course's notebooks store."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and ".solution()" in cell.source:
                for out in cell.get("outputs", []):
                    text = out.get("data", {}).get("text/plain") or out.get("text", "")
                    if text.startswith("Solution (spoiler):\n"):
                        found.append((path.stem, cell.source.split(".solution")[0].strip(), text.split("\n", 1)[1]))
    return found


def code_lines(text):
    """The non-comment lines of a solution, stripped."""
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def test_no_step_hint_is_the_whole_solution_but_a_last_line_that_only_names_its_values():
    from helpers.exercises.base import _code_step      # what every exercise's derived second hint is made by

    solutions = stored_solutions()
    assert len(solutions) >= 30, "the notebooks store their worked solutions"
    only_names = re.compile(r"^answer = [\[(]?\s*my_\w+(\s*,\s*my_\w+)*\s*[\])]?$")
    trivial = []
    for notebook, name, solution_text in solutions:
        lines, step = code_lines(solution_text), _code_step(solution_text)
        if step is None:
            continue
        shown_lines = code_lines(step.split("\n", 1)[1])
        assert shown_lines[-1] == "answer = ..." and shown_lines[:-1] == lines[:len(shown_lines) - 1], name
        if only_names.match(lines[-1]):
            trivial.append(f"{notebook[:2]}:{name}")
            assert not set(lines[:-1]) <= set(shown_lines), (notebook, name, step)
    assert {"01:ex_hidden", "08:ex_step"} <= set(trivial), trivial


def test_the_step_of_a_weights_matrix_leaves_the_softmax_to_the_learner():
    from helpers.exercises import AttentionWeightsExercise

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ex = AttentionWeightsExercise(X, np.eye(2), np.eye(2), labels=["a", "b", "c"], names={"X": "X", "W_Q": "W_Q",
                                                                                           "W_K": "W_K"})
    ex.hint()
    step = ex.hint().text
    assert "my_weights =" in ex.solution_text and "answer = my_weights" in ex.solution_text
    assert "my_weights =" not in step and "np.exp" not in step and "\nanswer = ...\n" in step, step
