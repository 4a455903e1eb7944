"""Notebooks 03-05 type no results into their prose.

A result must be printed by code. So a decimal number in a markdown cell must
be an input (it appears in the source of one of the notebook's code cells) or
a value a source publishes (it appears in the worked examples in data/, which
hold every published number with where it stands in its source).
"""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+")
PUBLISHED = " ".join(p.read_text() for p in sorted((ROOT / "data").glob("*.json")))


def typed_in(path):
    nb = nbformat.read(path, as_version=4)
    code = " ".join(c.source for c in nb.cells if c.cell_type == "code")
    return [(c.id, number) for c in nb.cells if c.cell_type == "markdown"
            for number in DECIMAL.findall(c.source) if number not in code and number not in PUBLISHED]


@pytest.mark.parametrize("name", ["03_scaling.ipynb", "04_masking.ipynb", "05_multi_head.ipynb"])
def test_prose_quotes_no_number_that_code_does_not_print(name):
    assert typed_in(ROOT / "notebooks" / name) == []


def test_the_check_finds_a_typed_in_result(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 0.123457\nprint(x * 2)"),
                                         nbformat.v4.new_markdown_cell("With 0.123457 as input, the result is 0.246914.")])
    nbformat.write(nb, tmp_path / "t.ipynb")
    assert [number for _, number in typed_in(tmp_path / "t.ipynb")] == ["0.246914"]
