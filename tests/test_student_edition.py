"""The student edition (tools/make_student_edition.py) and hints in steps.

The edition of one small notebook is built once: no stored output shows a solution the instructor's
notebook shows, its hints stay, it is a course folder of its own, and nbval passes in it. Hints: the first
call is today's hint, the second a stronger step without the answer, and solution() withheld in an edition
unless its notebook keeps its solutions."""

import html
import importlib.util
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
    assert {"02:ex_attention", "08:ex_step"} <= set(trivial), trivial


def test_the_step_of_a_weights_matrix_leaves_the_softmax_to_the_learner():
    from helpers.exercises import AttentionWeightsExercise

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ex = AttentionWeightsExercise(X, np.eye(2), np.eye(2), labels=["a", "b", "c"], names={"X": "X", "W_Q": "W_Q",
                                                                                           "W_K": "W_K"})
    ex.hint()
    step = ex.hint().text
    assert "my_weights =" in ex.solution_text and "answer = my_weights" in ex.solution_text
    assert "my_weights =" not in step and "np.exp" not in step and "\nanswer = ...\n" in step, step
