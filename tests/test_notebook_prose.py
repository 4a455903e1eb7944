"""No notebook types a result into its prose.

A result must be printed by code. So every decimal number written in a
markdown cell must be one of these:
- a number the notebook's own cells print, within half a unit of its last
  written decimal (a percentage may be printed as a fraction). Inputs and the
  sources' published values are printed too (the source's column of
  compare() and SourceAudit.table()), so quoting them passes;
- a number written in the source of one of the notebook's code cells (an
  input), matched as a whole number token, not as a piece of a longer one;
- a value a source publishes, as stored in the "published" entries of the
  data/ files that the notebook itself loads (load_example("name") in its
  code reads data/name.json), within half a unit of the written decimals.
  A notebook that loads no example may quote no published value it does
  not print. This is the per-notebook citation rule: a notebook cites what
  it loads, so notebooks written in parallel cannot lean on each other's data.
  A data file the code names directly ("flashattention.json") counts as loaded,
  and a published percentage may be stored as the percentage itself.
A result typed in by hand and never computed fails. Whole numbers (years,
widths) are not checked, nor are numbers in words, section numbers of a paper
("section 3.1", "sections 3.1 (...), 3.3"), or numbers in `code` that the
prose offers as values to type in.
"""

import json
import re

import nbformat
import numpy as np
import pytest

from helpers.course import NOTEBOOKS_DIR
from helpers.examples import DATA_DIR

NOTEBOOKS = sorted(p.name for p in NOTEBOOKS_DIR.glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])[−-]?\d+\.\d+(?!\w|\.\d)(\s*%)?")
PRINTED = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")
LOADED = re.compile(r"""load_example\(\s*["'](\w+)["']|["'](\w+)\.json["']""")
SECTIONS = re.compile(r"(?i)\b(?:sections?|sec\.|§)\s*\d+(?:\.\d+)*(?:\s*\([^)]*\))?"
                      r"(?:\s*(?:,|and)\s*\d+(?:\.\d+)*(?:\s*\([^)]*\))?)*")
CODE_SPAN = re.compile(r"`[^`]*`")


def _printed_numbers(nb):
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text.append(str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", "")))
    return [float(x) for x in PRINTED.findall("\n".join(text))]


def _published_numbers(nb):
    """Every value published in the data/ files this notebook's code loads."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    values = []
    for name in sorted({a or b for a, b in LOADED.findall(code)}):
        raw = json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
        for entry in raw.get("published", {}).values():
            try:
                values += np.ravel(np.asarray(entry["value"], dtype=float)).tolist()
            except (TypeError, ValueError):
                continue  # a published statement, not a number (e.g. "O(N) additional memory")
    return values


def _typed_but_not_printed(nb):
    allowed = _printed_numbers(nb) + _published_numbers(nb)
    code = " ".join(c.source for c in nb.cells if c.cell_type == "code")
    inputs = set(PRINTED.findall(code))
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        prose = CODE_SPAN.sub(" ", SECTIONS.sub(" ", cell.source))
        for match in NUMBER.finditer(prose):
            written = match.group().replace("−", "-").rstrip(" %")
            if written.lstrip("-") in inputs:
                continue  # an input, written as such in the code
            value, half_unit = float(written), 0.5 * 10.0 ** -len(written.split(".")[1]) + 1e-12
            candidates = [(value, half_unit)]
            if match.group(1):                        # a percentage: printed as a fraction, or stored as itself
                candidates.append((value / 100, half_unit / 100))
            if not any(abs(v - p) <= h for v, h in candidates for p in allowed):
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


def test_a_piece_of_a_longer_number_in_the_code_is_not_an_input():
    # "0.12" appears inside 0.123457 in the code, but is not written there as a number of its own.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 0.123457"),
                                         nbformat.v4.new_markdown_cell("The result is 0.12.")])
    assert [m.split(": ")[1] for m in _typed_but_not_printed(nb)] == ["0.12"]


def test_published_values_count_only_in_a_notebook_that_loads_their_file():
    # 0.326 is source 000's published weight on river (data/river_bank.json), printed by no cell here.
    quote = nbformat.v4.new_markdown_cell("The source's weight on river is 0.326.")
    loads = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('ex = load_example("river_bank")'), quote])
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('ex = load_example("bank_river")'), quote])
    none = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), quote])
    assert _typed_but_not_printed(loads) == []
    assert [m.split(": ")[1] for m in _typed_but_not_printed(other)] == ["0.326"]
    assert [m.split(": ")[1] for m in _typed_but_not_printed(none)] == ["0.326"]


def test_section_numbers_and_code_spans_are_not_results_but_typed_results_still_are():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell(
        "Vaswani et al. (2017, section 3.5) and sections 3.1 (the block), 3.3 (feed-forward); try `lr = 0.005`. "
        "The weight is 0.734.")])
    assert [m.split(": ")[1] for m in _typed_but_not_printed(nb)] == ["0.734"]


def test_a_data_file_named_in_the_code_counts_as_loaded_and_its_percentages_as_written():
    # 61.4 (percent) is FlashAttention's Path-X accuracy in data/flashattention.json (Dao et al. 2022, abstract).
    quote = nbformat.v4.new_markdown_cell("Path-X at 61.4% accuracy.")
    names = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('path = DATA_DIR / "flashattention.json"'), quote])
    none = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), quote])
    assert _typed_but_not_printed(names) == []
    assert [m.split(": ")[1] for m in _typed_but_not_printed(none)] == ["61.4%"]
