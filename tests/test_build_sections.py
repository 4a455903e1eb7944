"""Every piece the learner builds has its build section, and the README says where each one is (issue 21).

A build cell is a code cell that hands a workbook function to a checker:
``diagnose(workbook.<name>, ...)``, or the real-model notebook's judges
(``run_with_your_attention(workbook.<name>)``, ``check_your_block(workbook.<name>)``).
"""

import re

import nbformat
import pytest

from helpers.course import NOTEBOOKS_DIR
from helpers.paths import COURSE_ROOT as ROOT
from helpers.checkers.solutions import STUBS, function_name

BUILD_CALL = re.compile(r"\b(?:diagnose|run_with_your_attention|check_your_block)\(\s*workbook\.(\w+)")
README_LINE = re.compile(r"^- notebook (\d\d): (.+)$", re.M)


def built_by_notebook():
    found = {}
    for path in sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        names = []
        for cell in nb.cells:
            if cell.cell_type == "code":
                names += [n for n in BUILD_CALL.findall(cell.source) if n not in names]
        if names:
            found[path.name[:2]] = names
    return found


def readme_list():
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Your workbook", 1)[1].split("\n## ", 1)[0]
    return {nn: re.findall(r"`(\w+)`", rest) for nn, rest in README_LINE.findall(section)}


def test_the_readme_lists_each_notebooks_build_sections():
    assert readme_list() == built_by_notebook()


def test_every_build_cell_builds_a_function_of_the_workbook():
    for nn, names in built_by_notebook().items():
        functions = {function_name(piece) for piece in STUBS}
        assert set(names) <= functions, f"notebook {nn} builds {sorted(set(names) - functions)}, not in the workbook"


@pytest.mark.parametrize("name", sorted(function_name(piece) for piece in STUBS))
def test_every_workbook_function_is_built_in_a_notebook(name):
    built = {n for names in built_by_notebook().values() for n in names}
    assert name in built, f"the workbook's {name} is built in no notebook"


def test_the_course_map_says_where_each_piece_is_built():
    # helpers.course.BUILT_IN is what a checker names when a function calls an unwritten piece: its first
    # notebook is the first that builds the piece, and every notebook it names builds it.
    from helpers.course import BUILT_IN
    built = built_by_notebook()
    assert set(BUILT_IN) == {function_name(piece) for piece in STUBS}   # keyed by the workbook's function names
    for name, where in BUILT_IN.items():
        named = re.findall(r"notebook (\d\d)", where)
        builders = [nn for nn in sorted(built) if name in built[nn]]
        assert named and named[0] == builders[0], (name, where, builders)
        assert set(named) <= set(builders), (name, where, builders)
