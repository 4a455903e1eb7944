"""The learner's path stays light: each notebook's main path within its word budget.

The main path is every markdown cell before the first heading that starts with
"Appendix" or "References" (the recap comes before them and counts). Code is
not prose: fenced code, display maths and `code spans` are left out. Prose
moved into printed output still counts: an output line of eight words or more
(an exercise's question, a printed explanation) is prose, a table row is not,
nor a figure's description (an output that starts "Figure") for a reader who
cannot see it, nor the line saying whose piece a cell ran ("the course's split_heads (yours: not attempted
yet)", helpers/pieces.py), which is counted as nbval_sanitize.cfg folds it.

Budgets (issue 22): 2,500 words a notebook, 3,000 for the real-model notebook
that ends the course; the median sentence at most 20 words, with the splitter
below (a sentence ends at . ! or ? followed by a space; numbers, code spans and
the abbreviations listed are kept whole).
"""

import re

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns

from helpers.course import NOTEBOOKS_DIR
from helpers.paths import COURSE_ROOT

NOTEBOOKS = sorted(p.name for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
END_OF_MAIN_PATH = re.compile(r"^#+\s*(Appendix|References)", re.M | re.I)
NOT_PROSE = re.compile(r"```.*?```|\$\$.*?\$\$|`[^`]*`", re.S)
WORD = re.compile(r"[A-Za-z0-9][\w'’-]*")
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "sec.", "Sec.", "eq.", "Eq.",
                 "Fig.", "fig.", "cf.", "approx.", "No.", "p.", "pp.", "Dr.", "ch.")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
WHOSE_LINES = get_sanitize_patterns((COURSE_ROOT / "nbval_sanitize.cfg").read_text())   # "your softmax", ...



def budget(name):
    return 3000 if "real_model" in name else 2500


def main_path_markdown(nb):
    """The markdown of the main path, code and maths removed."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        head = END_OF_MAIN_PATH.split(cell.source)
        texts.append(NOT_PROSE.sub(" ", head[0]))
        if len(head) > 1:
            break
    return texts


def printed_prose(nb):
    """Output lines of the main path that read as sentences (eight words or more)."""
    lines = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and END_OF_MAIN_PATH.search(cell.source):
            break
        for out in cell.get("outputs", []):
            text = str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
            if text.lstrip().startswith("Figure"):
                continue  # a figure's description for a reader who cannot see it, not the lesson's prose
            for regex, replace in WHOSE_LINES:
                text = re.sub(regex, replace, text)   # whose piece ran: one short fixed line, as nbval sees it
            lines += [l for l in text.splitlines() if len(re.findall(r"[A-Za-z][a-z'’-]+", l)) >= 8]
    return lines


def words(texts):
    return sum(len(WORD.findall(t)) for t in texts)


def sentences(text):
    """Split prose into sentences: at . ! ? and a space, keeping numbers and abbreviations whole."""
    text = re.sub(r"^#+.*$", " ", text, flags=re.M)            # headings are not sentences
    text = re.sub(r"^\s*[-*]\s+|^\s*\d+\.\s+", " ", text, flags=re.M)  # list markers
    protected = text
    for i, abbreviation in enumerate(ABBREVIATIONS):
        protected = protected.replace(abbreviation, abbreviation.replace(".", "\x00"))
    protected = re.sub(r"(?<=\d)\.(?=\d)", "\x00", protected)
    parts = SENTENCE_END.split(protected)
    return [p.replace("\x00", ".") for p in parts if WORD.search(p)]


def median_sentence_length(texts):
    lengths = sorted(len(WORD.findall(s)) for t in texts for s in sentences(t))
    if not lengths:
        return 0
    middle = len(lengths) // 2
    return lengths[middle] if len(lengths) % 2 else (lengths[middle - 1] + lengths[middle]) / 2


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_main_path_is_within_its_budget(name):
    nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
    prose = main_path_markdown(nb)
    total = words(prose) + words(printed_prose(nb))
    assert total <= budget(name), (
        f"{name}: {total} words of prose on the main path ({words(prose)} in markdown, "
        f"{total - words(prose)} printed), budget {budget(name)}")
    median = median_sentence_length(prose)
    assert median <= 20, f"{name}: the median sentence has {median} words (at most 20)"


def test_the_splitter_keeps_numbers_abbreviations_and_code_whole():
    text = "Scores of 1.5 and 2.25 differ, e.g. by 0.75. Vaswani et al. scale them! Do `x.sum()` now? Yes."
    got = sentences(NOT_PROSE.sub(" ", text))
    assert len(got) == 4, got
    assert median_sentence_length(["one two three. four five."]) == 2.5


def test_the_count_stops_at_the_appendix_and_counts_printed_prose():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("one two three"),
                nbformat.v4.new_code_cell("print()", outputs=[nbformat.v4.new_output(
                    "stream", name="stdout", text="this printed line has more than eight words in it\n0.1 0.2\n")]),
                nbformat.v4.new_markdown_cell("## Appendix: the audit\nfour five six"),
                nbformat.v4.new_markdown_cell("seven")]
    assert words(main_path_markdown(nb)) == 3
    assert words(printed_prose(nb)) == 10


def test_a_whose_line_is_not_prose():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("split_heads = piece('split_heads')", outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="the course's multi_head_attention (yours: not attempted yet)\n"
                                      "this printed line has more than eight words in it\n")])]
    assert printed_prose(nb) == ["this printed line has more than eight words in it"]
