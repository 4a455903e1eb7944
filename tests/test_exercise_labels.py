"""The labels of the exercises' headings (issue 33, section 2): defined once, in notebook 00, and used as defined.

Every exercise heading of notebooks 01-11 ("### Exercise N · ... (label)") ends with one label that 00's
"How a notebook works" defines (*easy*, *medium*, *understanding*), and no other notebook defines the labels
again (a second definition drifts from the first: 01 once called its own labels easy, real and understanding).
"""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
HEADING = re.compile(r"^#{2,4} Exercise\b.*$", re.M)
DEFINITION = re.compile(r"\*(\w+)\* (?:is|asks|chains|means)\b", re.I)


def markdown(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def defined():
    """The labels 00 defines: each *label* its Exercises paragraph explains."""
    text = "\n".join(markdown(ROOT / "notebooks" / "00_start_here.ipynb"))
    part = text.split("- **Exercises**", 1)[1].split("\n- ", 1)[0]
    return {m.group(1).lower() for m in DEFINITION.finditer(part)}


def test_00_defines_the_three_labels():
    assert defined() == {"easy", "medium", "understanding"}


@pytest.mark.parametrize("path", NOTEBOOKS[1:], ids=[p.stem[:2] for p in NOTEBOOKS[1:]])
def test_every_exercise_heading_carries_a_label_00_defines_and_none_defines_them_again(path):
    labels = defined()
    texts = markdown(path)
    headings = [h for t in texts for h in HEADING.findall(t)]
    assert headings, "every notebook 01-11 has exercises"
    wrong = [h for h in headings if not re.search(r"\((\w+)\)\s*$", h) or
             re.search(r"\((\w+)\)\s*$", h).group(1).lower() not in labels]
    assert not wrong, wrong
    again = [m.group(0) for t in texts for m in DEFINITION.finditer(t) if m.group(1).lower() in labels | {"real"}]
    assert not again, again
