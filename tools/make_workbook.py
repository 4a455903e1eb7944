"""Write the pristine workbook, notebooks/workbook.py: every piece's stub (helpers/checkers/solutions.py).

Run it after changing a stub: .venv/bin/python tools/make_workbook.py
tests/test_checkers.py checks the stored file is exactly what this writes.
A workbook that holds anything else (a learner's own functions) is not
overwritten unless --force is given: copy it somewhere safe first.
"""

import argparse
import sys
from pathlib import Path

from helpers.checkers.solutions import workbook_source

PATH = Path(__file__).resolve().parent.parent / "notebooks" / "workbook.py"


def main(args):
    """Write the stubs to PATH (``args``: the command line's arguments; --help prints the usage, writing nothing)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true",
                        help="overwrite a workbook that holds code that is not the stubs (copy it somewhere first)")
    force = parser.parse_args(args).force
    stubs = workbook_source()
    if PATH.exists() and PATH.read_text(encoding="utf-8") != stubs and not force:
        sys.exit(f"{PATH} holds code that is not the course's stubs (your own functions?). Nothing was written. "
                 "Copy it somewhere safe, then run this again with --force to write the stubs.")
    PATH.write_text(stubs, encoding="utf-8")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main(sys.argv[1:])
