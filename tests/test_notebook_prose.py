"""No notebook types a result into its prose.

A result must be printed by code. So every decimal number written in a
markdown cell must be one of these:
- a number the notebook's own cells print, within half a unit of its last
  written decimal (a percentage may be printed as a fraction). Inputs and the
  sources' published values are printed too (the source's column of
  compare()), so quoting them passes;
- an input written in the source of one of the notebook's code cells;
- a value a source publishes, as stored in data/.
A result typed in by hand and never computed fails. Whole numbers (section
numbers, years, widths) are not checked, nor are numbers in words.
"""

import re

import nbformat
import pytest

from helpers.course import NOTEBOOKS_DIR
from helpers.examples import DATA_DIR

NOTEBOOKS = sorted(p.name for p in NOTEBOOKS_DIR.glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])[−-]?\d+\.\d+(?!\w|\.\d)(\s*%)?")
PRINTED = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")
PUBLISHED = " ".join(p.read_text(encoding="utf-8") for p in sorted(DATA_DIR.glob("*.json")))


def _printed_numbers(nb):
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text.append(str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", "")))
    return [float(x) for x in PRINTED.findall("\n".join(text))]


def _typed_but_not_printed(nb):
    printed = _printed_numbers(nb)
    code = " ".join(c.source for c in nb.cells if c.cell_type == "code")
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for match in NUMBER.finditer(cell.source):
            written = match.group().replace("−", "-").rstrip(" %")
            if written.lstrip("-") in code or written.lstrip("-") in PUBLISHED:
                continue  # an input, or a value a source publishes
            value, half_unit = float(written), 0.5 * 10.0 ** -len(written.split(".")[1]) + 1e-12
            if match.group(1):                        # a percentage: printed as a fraction
                value, half_unit = value / 100, half_unit / 100
            if not any(abs(value - p) <= half_unit for p in printed):
                missing.append(f"{cell.id}: {match.group()}")
    return missing


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_number_in_the_prose_is_printed_by_the_notebook(name):
    nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
    assert _typed_but_not_printed(nb) == []


def test_the_check_catches_a_typed_in_result():
    nb = nbformat.read(NOTEBOOKS_DIR / "02_two_senses.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("a longer key (4.471) and 91.3 % of the weight"))
    assert [m.split(": ")[1] for m in _typed_but_not_printed(nb)] == ["4.471", "91.3 %"]


def test_the_check_lets_inputs_through(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 0.123457\nprint(x * 2)"),
                                         nbformat.v4.new_markdown_cell("With 0.123457 as input, the result is 0.246915.")])
    assert [m.split(": ")[1] for m in _typed_but_not_printed(nb)] == ["0.246915"]
