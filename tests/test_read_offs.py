"""No exercise's answer can be read off the page (issue 33, section 2): not above it, not in an explorer, not later.

For every exercise of notebooks 01-11, its expected answer is taken from what its check cell stores for the
static page (helpers/exercises/static.py: ``expected`` and ``atol`` of a numeric exercise, ``answer`` and
``options`` of a choice), so the test judges exactly the value the checker accepts. It must appear in none of:

- the outputs of its notebook above the exercise: every code cell before the exercise's heading (the last
  heading above the cell that makes it, "### Exercise N ..." or 09's "### Predict first"), so the
  statement's own echo of the inputs (a choice's options) is not counted;
- any explorer's stored state in its notebook, wherever it sits: the text and HTML of an output that holds a
  static grid (``course-explorer-grid``) or a widget view, every state of the grid included;
- any output of a later notebook.

What the page shows is what the student edition shows: its notebooks are these, re-executed, with each
"Solution (spoiler)" output withheld. So spoiler outputs are left out, and so is the exercise data a check
stores (an unknown MIME type no page draws, which the edition replaces by ``needs_kernel``). Where an output
has ``text/html``, its tags, styles and scripts are stripped to their text, and the JSON of a static grid is
read for its strings (a state's HTML, the real model's weights "0.289 0.060 ..."); its bare numbers (the
indices of a state's pieces, a control's values) are structure no page prints, and are left out.

The rule for a match, chosen so that a 0 or a 1 printed everywhere is no read-off:

- a text is read as the sequence of its numbers (``0.302``, ``-0.819``, ``1e-3``, ``33,554,432``; the words
  between them, token labels included, are skipped), each number kept as printed;
- an array answer matches only as a whole: k consecutive numbers (k = its size, in numpy's row-major order)
  each within the checker's tolerance of its entry (the learner could type them and be right). Arrays of one
  entry count as scalars;
- a scalar answer matches a printed number within the checker's tolerance that shows at least two significant
  digits, trailing zeros not counted (so "0", "1.0", "2", "100" or "0.50" never match: they are everywhere; "33", "1.225" and "-0.819" do). In a
  later notebook, whose explorers print thousands of numbers of the same range, a scalar matches only a
  number shown with at least five significant digits ("33,554,432" does; "1.225" and "448" do not: each
  such hit on main was a coincidence by hand check, as 03's entropy 1.225 against 01's score 1.225);
- a scalar answer written in the exercise's own statement (its heading's text, or the source of the cells from
  the heading to the check: 03's "d_k = 256" when the variance asked is 256) is an input the learner is given,
  not a read-off, and is skipped;
- a choice's answer text (the option the checker accepts) matches when it is printed verbatim; answers shorter
  than 20 characters ("canal", "row B") are skipped, as they are ordinary words.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIME = "application/vnd.course.exercise+json"       # helpers.exercises.static.MIME
WIDGET = "application/vnd.jupyter.widget-view+json"
GRID = re.compile(r"<script type=['\"]application/json['\"] class=['\"]course-explorer-grid['\"]>(.*?)</script>", re.S)
NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?(?:\d{1,3}(?:,\d{3})+(?![\d])|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")
SHORTEST_CHOICE = 20


def numbers(text):
    """The numbers of ``text`` as printed, in order: [(value, its significant digits but trailing zeros), ...]."""
    found = []
    for m in NUMBER.finditer(text):
        token = m.group(0).replace("\u2212", "-").replace(",", "")
        try:
            value = float(token)
        except ValueError:
            continue
        mantissa = re.split(r"[eE]", token)[0].lstrip("+-").replace(".", "").strip("0")   # "1.0", "100": one
        found.append((value, len(mantissa)))
    return found


def _json_texts(value, texts):
    """Collect the strings of a static grid's JSON into ``texts`` (its bare numbers are structure)."""
    if isinstance(value, str):
        texts.append(_html_text(value))
    elif isinstance(value, dict):
        for item in value.values():
            _json_texts(item, texts)
    elif isinstance(value, list):
        for item in value:
            _json_texts(item, texts)


def _html_text(markup):
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


@dataclass
class Shown:
    """One output as the page shows it: where it is, and its runs of numbers and its text."""

    notebook: str
    cell: int
    explorer: bool
    text: str
    runs: list

    def where(self):
        return f"{self.notebook} cell {self.cell}" + (" (explorer)" if self.explorer else "")


def shown_outputs(path):
    """Every output of the notebook at ``path`` that its student edition shows (see the module docstring)."""
    nb = nbformat.read(path, as_version=4)
    shown = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if MIME in data:
                continue
            plain = str(out.get("text", "")) + "\n" + str(data.get("text/plain", ""))
            if plain.lstrip().startswith("Solution (spoiler)"):
                continue
            markup = str(data.get("text/html", ""))
            explorer = WIDGET in data or bool(GRID.search(markup))
            texts = [plain]
            for grid in GRID.findall(markup):
                try:
                    _json_texts(json.loads(grid), texts)
                except ValueError:
                    texts.append(_html_text(grid))
            texts.append(_html_text(GRID.sub(" ", markup)))
            text = "\n".join(texts)
            runs = [numbers(t) for t in texts]
            shown.append(Shown(path.stem, index, explorer, text, runs))
    return shown


@dataclass
class Answer:
    notebook: str
    name: str
    cell: int          # the check cell
    heading: int       # the exercise's heading: "above" is every cell before it
    kind: str
    given: tuple = ()   # the numbers its statement writes (the module docstring)
    expected: object = None
    atol: object = None
    text: str = ""

    @property
    def id(self):
        return f"{self.notebook[:2]}:{self.name}"


def _stored(x):
    """A stored number or nested list (static.stored: "-inf", "inf", "nan" as strings) as a float array."""
    if isinstance(x, list):
        return np.array([_stored(v) for v in x], dtype=float)
    return np.array({"-inf": -np.inf, "inf": np.inf, "nan": np.nan}.get(x, x), dtype=float)


def answers(path):
    """Every exercise of the notebook at ``path`` with a stored answer, in order."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {}).get(MIME)
            if not data:
                continue
            made = next((i for i, c in enumerate(nb.cells[:index + 1])
                         if c.cell_type == "code" and re.search(rf"^{re.escape(data['name'])}\s*=", c.source, re.M)), index)
            heading = max((i for i, c in enumerate(nb.cells[:made])
                           if c.cell_type == "markdown" and re.match(r"#{2,4} ", c.source)), default=made)
            given = tuple(v for c in nb.cells[heading:index + 1] for v, _ in numbers(c.source))
            if data["kind"] == "numeric":
                found.append(Answer(path.stem, data["name"], index, heading, "numeric", given,
                                    _stored(data["expected"]), _stored(data["atol"])))
            elif data["kind"] == "choice":
                found.append(Answer(path.stem, data["name"], index, heading, "choice",
                                    text=dict(map(tuple, data["options"]))[data["answer"]]))
    return found


def occurs(answer, shown, later=False):
    """Whether ``answer`` can be read in the output ``shown`` (the module docstring's rule); later: ``shown``
    is in a later notebook."""
    if answer.kind == "choice":
        return len(answer.text) >= SHORTEST_CHOICE and " ".join(answer.text.split()) in " ".join(shown.text.split())
    want = answer.expected.ravel()
    tol = np.broadcast_to(answer.atol, answer.expected.shape).ravel()
    if not np.all(np.isfinite(want)):
        return False
    k = want.size
    for run in shown.runs:
        if k == 1:
            if any(abs(value - want[0]) <= tol[0] for value in answer.given):
                return False
            if any(digits >= (5 if later else 2) and abs(value - want[0]) <= tol[0] for value, digits in run):
                return True
            continue
        values = np.array([value for value, _ in run])
        for start in range(0, len(values) - k + 1):
            if np.all(np.abs(values[start:start + k] - want) <= tol):
                return True
    return False


@lru_cache(maxsize=None)
def course():
    return {path.stem: (answers(path), shown_outputs(path)) for path in NOTEBOOKS}


def read_offs(answer):
    """The places (as text) where ``answer`` shows: above it, in an explorer of its notebook, in a later notebook."""
    places = []
    stems = list(course())
    for stem in stems[stems.index(answer.notebook):]:
        for shown in course()[stem][1]:
            mine = stem == answer.notebook
            if mine and not (shown.cell < answer.heading or shown.explorer):
                continue
            if occurs(answer, shown, later=not mine):
                places.append(shown.where())
    return places


ALL = [a for path in NOTEBOOKS if path.stem[:2] != "00" for a in answers(path)]


def test_every_notebook_with_exercises_is_read():
    """The test reads the exercises of 01-11 from their stored check cells: a notebook whose exercises stored
    no answer (a failed run, a renamed MIME type) would pass it unread."""
    with_answers = {a.notebook[:2] for a in ALL}
    assert with_answers == {p.stem[:2] for p in NOTEBOOKS if p.stem[:2] != "00"}, with_answers
    assert sum(a.kind == "numeric" for a in ALL) >= 15 and sum(a.kind == "choice" for a in ALL) >= 10
    assert all(0 < a.heading < a.cell for a in ALL), [a.id for a in ALL if not 0 < a.heading < a.cell]


def test_the_rule_finds_a_read_off_and_not_a_coincidence():
    """The matcher against texts whose answer a hand check says is, or is not, on the page."""
    row = Answer("x", "row", 1, 1, "numeric", expected=np.array([0.3023, 0.566, 1.0]), atol=np.array(5e-4))
    printed = Shown("x", 0, False, "", [numbers("sums: the 0.302 bank 0.566 flooded 1.0")])
    assert occurs(row, printed)                                    # the whole row, labels between its numbers
    assert not occurs(row, Shown("x", 0, False, "", [numbers("0.302 0.567 1.0")])), "0.567 is 1e-3 away"
    assert not occurs(row, Shown("x", 0, False, "", [numbers("0.302 and 1.0, then 0.566")]))   # not in order
    one = Answer("x", "one", 1, 1, "numeric", expected=np.array(1.0), atol=np.array(5e-4))
    assert not occurs(one, Shown("x", 0, False, "", [numbers("weights 1 1.0 and 1.")]))        # one digit: everywhere
    count = Answer("x", "count", 1, 1, "numeric", expected=np.array(33554432.0), atol=np.array(0.5))
    assert occurs(count, Shown("x", 0, False, "", [numbers("var COMMAS = /33,554,432: one number/")]))
    entry = Answer("x", "entry", 1, 1, "numeric", expected=np.array(-0.8186), atol=np.array(5e-4))
    assert occurs(entry, Shown("x", 0, False, "", [numbers("score \u22120.819 here")]))
    assert not occurs(entry, Shown("x", 0, False, "", [numbers("score 0.819 here")]))          # the sign counts
    assert not occurs(entry, Shown("x", 0, False, "", [numbers("score \u22120.819 here")]), later=True)
    assert occurs(count, Shown("x", 0, False, "", [numbers("33554432 multiply-adds")]), later=True)
    given = Answer("x", "variance", 1, 1, "numeric", given=(256.0,), expected=np.array(256.0), atol=np.array(0.5))
    assert not occurs(given, Shown("x", 0, False, "", [numbers("d_k = 256")]))                # an input, not a read-off
    assert numbers("[[0.302 0.343]\n [0.196 0.37 ]] 1e-3 -inf") == [(0.302, 3), (0.343, 3), (0.196, 3), (0.37, 2), (1e-3, 1)]


@pytest.mark.parametrize("answer", ALL, ids=[a.id for a in ALL])
def test_no_answer_can_be_read_off_the_page(answer):
    places = read_offs(answer)
    assert not places, (f"{answer.id}'s answer "
                        f"({answer.text if answer.kind == 'choice' else np.round(answer.expected, 4).tolist()}) "
                        f"shows in " + "; ".join(places))


def test_the_pages_scripts_name_no_answer():
    """The scripts every static page inlines (the exercises' and the explorers') carry no answer in a comment
    or a string: an example of a typed answer there is one a reader of the page's source could take."""
    scripts = [ROOT / "helpers" / "exercises" / "exercise.js", *sorted((ROOT / "helpers" / "explorers").glob("*.js"))]
    found = []
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        text = text + "\n" + re.sub(r"(\d),(\d)", r"\1.\2", text)   # a decimal comma, as "-0,819", read as a point
        shown = Shown(script.name, 0, False, text, [numbers(text)])
        found += [f"{a.id} in {script.name}" for a in ALL if a.kind == "numeric" and occurs(a, shown)]
    assert not found, found


def test_no_prose_comment_or_string_of_the_notebooks_names_an_answer():
    """The text of the cells as the page shows it (the prose, and each code cell's comments and strings) names no
    numeric answer above its exercise nor in a later notebook, by the rule of the outputs."""
    stems = [path.stem for path in NOTEBOOKS]
    found = []
    for path in NOTEBOOKS:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            text = cell.source if cell.cell_type == "markdown" else "\n".join(
                m.group(0) for m in re.finditer(r"#.*$|\"[^\"\n]*\"|'[^'\n]*'", cell.source, re.M))
            shown = Shown(path.stem, index, False, text, [numbers(text)])
            for answer in ALL:
                here = stems.index(path.stem) - stems.index(answer.notebook)
                if answer.kind == "numeric" and (here > 0 or (here == 0 and index < answer.heading)) \
                        and occurs(answer, shown, later=here > 0):
                    found.append(f"{answer.id} in {shown.where()}")
    assert not found, found
