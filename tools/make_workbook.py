"""Write the pristine workbook, notebooks/workbook.py: every piece's stub (helpers/exercises/solutions.py).

Run it after changing a stub: .venv/bin/python tools/make_workbook.py
tests/test_checkers.py checks the stored file is exactly what this writes.
"""

from pathlib import Path

from helpers.exercises.solutions import workbook_source

if __name__ == "__main__":
    path = Path(__file__).resolve().parent.parent / "notebooks" / "workbook.py"
    path.write_text(workbook_source(), encoding="utf-8")
    print(f"wrote {path}")
