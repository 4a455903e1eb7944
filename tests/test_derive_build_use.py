"""Notebooks 01 and 05 run on the learner's own pieces once they are right (issue 33, section 1: derive, build, use).

Each runs twice in a fresh kernel, in a copy of notebooks/ whose workbook.py is filled in: first with the
worked pieces (helpers.checkers.solutions.WORKED), then with one piece wrong beside the worked others:
in 01 a softmax that skips the maximum (no_max_subtraction), in 05 a split_heads that reshapes without
the transpose (reshape_without_transpose; the worked multi_head_attention calls it, so it gives way too).
Each cell that runs a piece comes after that piece's Build it and prints one line per piece saying whose
ran: "your softmax" once it is right, the course's naming the mistake otherwise. Either way every cell
(but the build cells, whose verdict is the point, and the cells nbval does not compare) prints what is
stored, once the whose-lines are folded as nbval folds them (nbval_sanitize.cfg): the learner's right
pieces give the notebook's numbers to its printed digits.
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
FOLDS = get_sanitize_patterns((ROOT / "nbval_sanitize.cfg").read_text())
BUILD = re.compile(r"diagnose\(\s*workbook\.(\w+)")
USE = re.compile(r"""piece\(\s*["'](\w+)["']([^()\n]*)\)""")
CELL_TIMEOUT = 120      # seconds one cell may take: the whole notebook runs in a few seconds
# as tools/execute_notebooks.py runs it (the Makefile unsets MPLBACKEND: Agg would drop the figures' outputs)
KERNEL_ENV = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, STATIC_FORMS_ENV: "1"}

NO_MAX = '''

def softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted: overflows at [1000, 1001]
    return e / e.sum(axis=axis, keepdims=True)
'''
RESHAPE_ONLY = '''

def split_heads(x, num_heads):
    *lead, n, d_model = x.shape
    return x.reshape(*lead, num_heads, n, d_model // num_heads)   # no swap of the axes: tokens mixed
'''
HEADS = ("split_heads", "merge_heads", "multi_head_attention")
NOTEBOOKS = {      # notebook: (its pieces, the wrong piece, the workbook with it, its key)
    "01_river_bank.ipynb": (("softmax", "attention"), "softmax", lambda: worked("attention") + NO_MAX,
                            "no_max_subtraction"),
    "05_multi_head.ipynb": (("attention",) + HEADS, "split_heads",
                            lambda: worked("softmax", "attention", "merge_heads", "multi_head_attention") + RESHAPE_ONLY,
                            "reshape_without_transpose"),
}


def worked(*pieces):
    return "".join("\n\n" + inspect.getsource(WORKED[p]) for p in pieces)


def run(tmp_path, name, workbook):
    """Notebook ``name`` as a fresh kernel prints it beside ``workbook`` (the text of a workbook.py)."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / name, folder / name)
    (folder / "workbook.py").write_text(workbook_source() + workbook)
    nb = nbformat.read(folder / name, as_version=4)
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


@pytest.fixture(scope="module", params=sorted(NOTEBOOKS))
def notebook(request):
    return request.param


@pytest.fixture(scope="module")
def stored(notebook):
    return nbformat.read(ROOT / "notebooks" / notebook, as_version=4)


@pytest.fixture(scope="module")
def right(notebook, tmp_path_factory):
    return run(tmp_path_factory.mktemp("right"), notebook, worked(*NOTEBOOKS[notebook][0]))


@pytest.fixture(scope="module")
def wrong(notebook, tmp_path_factory):
    return run(tmp_path_factory.mktemp("wrong"), notebook, NOTEBOOKS[notebook][2]())


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def uses(nb):
    """(index, pieces, cell) of each code cell that asks piece(...) for pieces, in the order it asks (a quiet
    one prints no line, and is left out)."""
    found = [(i, [name for name, rest in USE.findall(c.source) if not re.search(r"quiet\s*=\s*True", rest)], c)
             for i, c in enumerate(code_cells(nb))]
    return [(i, names, c) for i, names, c in found if names]


def lines(cell, names):
    """The whose-lines a cell printed first: one per piece it asked for."""
    return text(cell).splitlines()[:len(names)]


def test_every_use_comes_after_its_build_and_every_build_before_its_first_use(notebook, stored):
    pieces = NOTEBOOKS[notebook][0]
    built = {name: i for i, c in enumerate(code_cells(stored)) for name in BUILD.findall(c.source)}
    asked = {name: i for i, c in enumerate(code_cells(stored)) for name, _ in USE.findall(c.source)}
    own = set(pieces) - ({"attention"} if notebook != "01_river_bank.ipynb" else set())   # attention: built in 01
    assert set(built) == own and set(asked) == set(pieces), (built, asked)
    for i, c in enumerate(code_cells(stored)):
        for name, _ in USE.findall(c.source):
            assert name not in built or i > built[name], f"code cell {i} uses {name} before its Build it"
    # the stored outputs are the stubs': each of those cells says so, one line per piece
    for _, names, cell in uses(stored):
        assert lines(cell, names) == [f"the course's {name} (yours: not attempted yet)" for name in names], text(cell)


def test_right_pieces_run_the_cells_after_their_build_and_print_the_stored_numbers(notebook, stored, right):
    for i, names, cell in uses(right):
        assert lines(cell, names) == [f"your {name}" for name in names], (i, text(cell))
    assert_same_numbers(stored, right)
    verdicts = [text(c) for c in code_cells(right) if BUILD.search(c.source)]
    assert verdicts and all(v.startswith("Correct!") for v in verdicts), verdicts
    if notebook == "05_multi_head.ipynb":      # the explorer runs on the learner's piece and says so
        explorer = next(c for c in code_cells(right) if "heads_explorer(" in c.source)
        assert "Computed by your multi_head_attention." in text(explorer)
        assert "Computed by your" not in text(next(c for c in code_cells(stored) if "heads_explorer(" in c.source))


def test_a_wrong_piece_gives_way_to_the_course_and_is_named(notebook, stored, wrong):
    pieces, bad, _, key = NOTEBOOKS[notebook]
    said = {name: [] for name in pieces}
    for _, names, cell in uses(wrong):
        for name, line in zip(names, lines(cell, names)):
            said[name].append(line)
    assert said[bad] and all(l.startswith(f"the course's {bad} (yours: {key}") and
                             l.endswith(f"; see Build it in notebook {notebook[:2]})") for l in said[bad]), said[bad]
    for name in pieces:
        if name == bad:
            continue
        if name == "multi_head_attention":    # the worked one calls the wrong split_heads: it gives way too
            assert said[name] and all(l.startswith("the course's multi_head_attention (yours: ") for l in said[name])
        else:
            assert said[name] and set(said[name]) == {f"your {name}"}, said[name]   # the worked others are right
    assert_same_numbers(stored, wrong)


def assert_same_numbers(stored, fresh):
    old, new = code_cells(stored), code_cells(fresh)
    assert [c.id for c in old] == [c.id for c in new]
    compared = [not BUILD.search(c.source) and "nbval-ignore-output" not in c.metadata.get("tags", []) for c in old]
    differ = [c.id for c, d, yes in zip(old, new, compared) if yes and fold(text(c)) != fold(text(d))]
    assert not differ, "\n".join(f"{i}:\n{fold(text(d))}" for i, d in zip([c.id for c in new], new) if i in differ)
