"""Every notebook the course's prose names exists (issue 22: the map was renumbered).

A reference is "notebook NN", "Notebook NN's", "notebooks NN and MM", "notebooks NN-MM",
"notebooks NN, MM and PP" or a file name "NN_name.ipynb". The prose is everything a reader or
an instructor reads: each notebook's markdown, code (comments and strings) and stored outputs,
README.md, INSTRUCTORS.md, the Makefile, and every text file of helpers/, tools/, tests/,
binder/, jupyter/ and data/ (this file aside: its planted references are wrong on purpose).

"notebook NN" must name a notebook whose file exists in notebooks/; a file name must be that
file exactly. The one exception is a notebook the course map (helpers/course.py) lists as still
to come: helpers/course.py may name it, and so may a line that marks it as coming (the printed
map's "[coming]", the README's "(coming)", the guide's "not written yet"). Anywhere else, write
"a later notebook" until its file exists.
"""

import re
from pathlib import Path

import nbformat
import pytest

from helpers.course import COURSE, NOTEBOOKS_DIR

ROOT = Path(__file__).resolve().parent.parent
SEPARATOR = r"(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*[-–]\s*|\s+to\s+)"
NOTEBOOK_NUMBERS = re.compile(rf"\b[Nn]otebooks?\s+(\d\d)\b((?:{SEPARATOR}\d\d\b)*)")
FILE_NAME = re.compile(r"\b\d\d_[A-Za-z0-9_]+\.ipynb\b")
COMING_MARK = re.compile(r"coming|not written yet", re.I)
TEXT_FOLDERS = ("helpers", "tools", "tests", "binder", "jupyter", "data")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".json", ".css", ".html", ".js", ".cfg", ".toml", ""}


def existing():
    return sorted(p.name for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def coming():
    return {name for name, _, _ in COURSE if not (NOTEBOOKS_DIR / name).exists()}


def wrong_references(text, files=None, to_come=(), map_file=False):
    """The references in ``text`` that name no existing notebook: a list of (line, reference)."""
    files = existing() if files is None else files
    numbers = {name[:2] for name in files}
    to_come = set(to_come)
    wrong = []
    for line in text.splitlines():
        allowed = to_come if (map_file or COMING_MARK.search(line)) else set()
        for match in NOTEBOOK_NUMBERS.finditer(line):
            named = [match.group(1)] + re.findall(r"\d\d", match.group(2))
            if any(n not in numbers and not any(c.startswith(n + "_") for c in allowed) for n in named):
                wrong.append((line.strip()[:160], match.group()))
        for match in FILE_NAME.finditer(line):
            if match.group() not in files and match.group() not in allowed:
                wrong.append((line.strip()[:160], match.group()))
    return wrong


def notebook_texts(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        yield f"{path.name}:{cell.get('id')}", cell.source
        for out in cell.get("outputs", []):
            text = str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
            yield f"{path.name}:{cell.get('id')} (output)", text


def prose_files():
    files = [ROOT / "README.md", ROOT / "INSTRUCTORS.md", ROOT / "Makefile", NOTEBOOKS_DIR / "workbook.py"]
    for folder in TEXT_FOLDERS:
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                        and "__pycache__" not in p.parts)
    return files


def all_texts():
    for path in sorted(NOTEBOOKS_DIR.glob("*.ipynb")):
        yield from notebook_texts(path)
    for path in prose_files():
        if path == Path(__file__).resolve():
            continue  # this file's planted references below are wrong on purpose
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_every_notebook_the_prose_names_exists():
    files, to_come = existing(), coming()
    wrong = []
    for where, text in all_texts():
        map_file = where == "helpers/course.py"
        wrong += [f"{where}: {ref!r} in: {line}" for line, ref in wrong_references(text, files, to_come, map_file)]
    assert not wrong, "references to notebooks that do not exist:\n" + "\n".join(wrong)


def test_the_scan_reads_every_kind_of_prose():
    kinds = {where.split(":")[0] for where, _ in all_texts()}
    assert {"README.md", "INSTRUCTORS.md", "Makefile", "helpers/course.py", "tools/export_html.py"} <= kinds
    assert {p.name for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")} <= kinds


PLANTED = [
    ("as notebook 13 shows", True),
    ("Notebook 13's training", True),
    ("notebooks 01 and 13", True),
    ("notebooks 01-13", True),
    ("notebooks 01, 02, 13 and 05", True),
    ("open 13_nowhere.ipynb", True),
    ("open 01_river_bank_old.ipynb", True),
    ("notebook 10 will show it", True),                     # to come: not in prose
    ("as notebook 01 shows", False),
    ("Notebook 05's heads", False),
    ("notebooks 01, 02, 04 and 05", False),
    ("open 01_river_bank.ipynb", False),
    ("[coming] 10_current_models.ipynb: Attention in current models", False),
    ("a later notebook shows it", False),
]


@pytest.mark.parametrize("text, is_wrong", PLANTED, ids=[t for t, _ in PLANTED])
def test_a_planted_reference_is_caught(text, is_wrong):
    files = ["00_start_here.ipynb", "01_river_bank.ipynb", "02_two_senses.ipynb", "04_masking.ipynb",
             "05_multi_head.ipynb"]
    assert bool(wrong_references(f"Some prose; {text}.", files, {"10_current_models.ipynb"})) == is_wrong


def test_a_planted_wrong_reference_in_a_notebook_fails_the_scan(tmp_path):
    """A wrong reference in a copy of a real notebook's markdown is found, with the cell it is in."""
    path = NOTEBOOKS_DIR / "00_start_here.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\n\nAs notebook 1" + "3 shows."
    nbformat.write(nb, tmp_path / path.name)
    before = {where: wrong_references(text) for where, text in notebook_texts(path)}
    after = {where: wrong_references(text) for where, text in notebook_texts(tmp_path / path.name)}
    new = {where: refs for where, refs in after.items() if refs != before[where]}
    assert list(new) == [f"{path.name}:{nb.cells[0].id}"]
    assert [ref for _, ref in new[f"{path.name}:{nb.cells[0].id}"]] == ["notebook 13"]


@pytest.mark.parametrize("name", existing())
def test_a_notebook_title_carries_its_file_number(name):
    nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
    title = nb.cells[0].source.splitlines()[0]
    assert title.startswith(f"# {name[:2]} · "), f"{name} is titled {title!r}"
