"""Notebook 01 runs on the learner's own pieces once they are right (issue 33, section 1: derive, build, use).

Notebook 01 runs twice in a fresh kernel, in a copy of notebooks/ whose workbook.py is filled in: first
with the worked softmax and attention (helpers.checkers.solutions.WORKED), then with a softmax that
skips the maximum (no_max_subtraction) beside the worked attention. Each cell that runs a piece comes
after that piece's Build it and prints one line saying whose ran: "your softmax" once it is right, the
course's naming the mistake otherwise. Either way every cell (but the build cells, whose verdict is the
point) prints what is stored, once the whose-lines are folded as nbval folds them
(nbval_sanitize.cfg): the learner's right pieces give the notebook's numbers to its printed digits.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor
from nbval.plugin import get_sanitize_patterns

from helpers.checkers.solutions import WORKED, workbook_source
from helpers.explorers.static import STATIC_FORMS_ENV

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "01_river_bank.ipynb"
FOLDS = get_sanitize_patterns((ROOT / "nbval_sanitize.cfg").read_text())
BUILD = re.compile(r"diagnose\(\s*workbook\.(\w+)")
USE = re.compile(r"""piece\(\s*["'](\w+)["']""")
CELL_TIMEOUT = 120      # seconds one cell may take: the whole notebook runs in a few seconds
# as tools/execute_notebooks.py runs it (the Makefile unsets MPLBACKEND: Agg would drop the figures' outputs)
KERNEL_ENV = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, STATIC_FORMS_ENV: "1"}

NO_MAX = '''

def softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted: overflows at [1000, 1001]
    return e / e.sum(axis=axis, keepdims=True)
'''


def worked(*pieces):
    return "".join("\n\n" + inspect.getsource(WORKED[p]) for p in pieces)


def run(tmp_path, workbook):
    """Notebook 01 as a fresh kernel prints it beside ``workbook`` (the text of a workbook.py)."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(NOTEBOOK, folder / NOTEBOOK.name)
    (folder / "workbook.py").write_text(workbook_source() + workbook)
    nb = nbformat.read(folder / NOTEBOOK.name, as_version=4)
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(folder)}}).execute(env=KERNEL_ENV)
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})   # as tools/execute_notebooks.py stores it
    return nb


def text(cell):
    """A code cell's printed text and the text/plain of what it showed, as nbval compares them."""
    return "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def fold(s):
    for regex, replace in FOLDS:
        s = re.sub(regex, replace, s)
    return s


@pytest.fixture(scope="module")
def stored():
    return nbformat.read(NOTEBOOK, as_version=4)


@pytest.fixture(scope="module")
def right(tmp_path_factory):
    return run(tmp_path_factory.mktemp("right"), worked("softmax", "attention"))


@pytest.fixture(scope="module")
def wrong_softmax(tmp_path_factory):
    return run(tmp_path_factory.mktemp("wrong"), worked("attention") + NO_MAX)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def uses(nb):
    """(index, piece, cell) of each code cell that asks piece(...) for a piece."""
    return [(i, name, c) for i, c in enumerate(code_cells(nb)) for name in USE.findall(c.source)[:1]]


def test_every_use_comes_after_its_build_and_every_build_before_its_first_use(stored):
    built = {name: i for i, c in enumerate(code_cells(stored)) for name in BUILD.findall(c.source)}
    assert set(built) == {"softmax", "attention"}
    found = uses(stored)
    assert {name for _, name, _ in found} == {"softmax", "attention"}
    for i, name, _ in found:
        assert i > built[name], f"code cell {i} uses {name} before its Build it (code cell {built[name]})"
    # the stored outputs are the stubs': each of those cells says so in its first line
    for _, name, cell in found:
        assert text(cell).startswith(f"the course's {name} (yours: not attempted yet)\n"), text(cell)


def test_right_pieces_run_the_cells_after_their_build_and_print_the_stored_numbers(stored, right):
    for i, name, cell in uses(right):
        assert text(cell).startswith(f"your {name}\n"), (i, text(cell))
    assert_same_numbers(stored, right)
    verdicts = [text(c) for c in code_cells(right) if BUILD.search(c.source)]
    assert verdicts and all(v.startswith("Correct!") for v in verdicts), verdicts


def test_a_wrong_softmax_gives_way_to_the_course_and_is_named(stored, wrong_softmax):
    lines = {name: [] for name in ("softmax", "attention")}
    for _, name, cell in uses(wrong_softmax):
        lines[name].append(text(cell).splitlines()[0])
    assert lines["softmax"] and all(l.startswith("the course's softmax (yours: no_max_subtraction") and
                                    l.endswith("; see Build it in notebook 01)") for l in lines["softmax"])
    assert lines["attention"] and set(lines["attention"]) == {"your attention"}   # the worked attention is right
    assert_same_numbers(stored, wrong_softmax)


def assert_same_numbers(stored, fresh):
    old, new = code_cells(stored), code_cells(fresh)
    assert [c.id for c in old] == [c.id for c in new]
    differ = [c.id for c, d in zip(old, new) if not BUILD.search(c.source) and fold(text(c)) != fold(text(d))]
    assert not differ, "\n".join(f"{i}:\n{fold(text(d))}" for i, d in zip([c.id for c in new], new) if i in differ)
