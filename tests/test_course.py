"""The course as a whole: the map is true, and stored notebooks are clean.

nbval compares each stored output with a fresh run; these tests check what it
does not: that the stored outputs come from one top-to-bottom run, and hold no
machine paths, memory addresses, errors or warnings.
"""

import re
from pathlib import Path

import nbformat
import pytest

from helpers.course import COURSE, NOTEBOOKS_DIR, ready_notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
MACHINE_DETAIL = re.compile(r"(/work/|/root/|/home/|/tmp/|/farm/|0x[0-9a-f]{8,})")


def test_every_notebook_is_on_the_course_map():
    on_map = [name for name, _, _ in COURSE]
    assert [p.name for p in NOTEBOOKS] == [n for n in on_map if (NOTEBOOKS_DIR / n).exists()]
    assert set(p.name for p in NOTEBOOKS) <= set(on_map)


def test_readme_map_marks_exactly_the_missing_notebooks_as_coming():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ready = set(ready_notebooks())
    for name, _, what in COURSE:
        lines = [line for line in readme.splitlines() if line.startswith(f"| `{name}`")]
        assert len(lines) == 1, f"README's course map needs one row for {name}"
        assert ("(coming)" in lines[0]) == (name not in ready), f"README marks {name} wrongly"
        assert lines[0].endswith(f"| {what} |"), f"README's row for {name} must say what helpers/course.py says"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_come_from_one_clean_run(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "re-run with `make execute`"
    for i, cell in enumerate(code):
        for out in cell.outputs:
            assert out.output_type != "error", f"cell {i} stored an error"
            assert out.get("name") != "stderr", f"cell {i} printed to stderr: {out.get('text', '')[:200]}"
            text = str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
            assert not MACHINE_DETAIL.search(text), f"cell {i} output holds a machine path or address"


def test_the_printed_map_marks_a_notebook_without_its_file_as_coming(capsys, tmp_path):
    from helpers.course import show_course_map

    (tmp_path / COURSE[0][0]).write_text("{}", encoding="utf-8")
    show_course_map(tmp_path)
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert lines == [f"[{'ready ' if i == 0 else 'coming'}] {name}: {title}" for i, (name, title, _) in enumerate(COURSE)]
    show_course_map()
    printed = capsys.readouterr().out
    for name, title, _ in COURSE:
        status = "ready " if (NOTEBOOKS_DIR / name).exists() else "coming"
        assert f"[{status}] {name}: {title}" in printed
