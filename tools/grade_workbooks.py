"""Grade a class's workbooks: run diagnose on every piece of every student's workbook.py and tally the keys.

Usage: .venv/bin/python tools/grade_workbooks.py [--block] hand-ins/*/workbook.py

Prints one line per workbook (each piece's verdict key: "correct", a
misconception key, or "not_attempted"), then how many students each key
concerns, a key joined with "+" counting once for each of its parts.
With --block, each workbook's encoder_block is graded too, by
check_your_block against the real model's layers (a few seconds a student).
Importing a workbook runs its code: run this only on hand-ins you would
run in your own notebook.
"""

import argparse
import collections
import importlib.util
import sys
from pathlib import Path

from helpers.exercises import PIECES, diagnose
from helpers.checkers.solutions import function_name


def grade(path, block=False):
    """{piece: key} for one workbook file; {"workbook": "import_error"} when it cannot be imported.

    block: also grade encoder_block with check_your_block (it loads the real model), under "encoder_block".
    """
    spec = importlib.util.spec_from_file_location(f"workbook_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException:              # a syntax error, an import that fails, even sys.exit(): report it
        return {"workbook": "import_error"}
    found = {}
    for piece in PIECES:
        fn = getattr(module, function_name(piece), None)
        found[piece] = "missing" if fn is None else (diagnose(fn, piece=piece).mistake or "correct")
    if block:
        from helpers.exercises import check_your_block
        fn = getattr(module, "encoder_block", None)
        found["encoder_block"] = "missing" if fn is None else (check_your_block(fn).mistake or "correct")
    return found


def tally(grades):
    """collections.Counter of (piece, key) over every workbook; "a+b" counts for a and for b."""
    counts = collections.Counter()
    for found in grades.values():
        for piece, key in found.items():
            counts.update((piece, part) for part in key.split("+"))
    return counts


def main(paths, block=False):
    """Grade and print the workbooks ``paths``; returns {path: grade(path)}."""
    grades = {str(path): grade(Path(path), block) for path in paths}
    for path, found in grades.items():
        print(path + ": " + ", ".join(f"{piece} {key}" for piece, key in found.items()))
    print()
    counts = tally(grades)
    width = max([len(piece) for piece, _ in counts] + [14])
    for (piece, key), count in sorted(counts.items()):
        print(f"{count:4d}  {piece:<{width}} {key}")
    return grades


def cli(argv=None):
    """The command line: usage with --help or without a workbook; "no such file" for a path that is not one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Importing a workbook runs its code: run this only on hand-ins you "
                                            "would run in your own notebook.")
    parser.add_argument("workbooks", nargs="*", metavar="WORKBOOK", help="students' workbook.py files")
    parser.add_argument("--block", action="store_true",
                        help="also grade encoder_block with check_your_block (loads the real model)")
    args = parser.parse_args(argv)
    if not args.workbooks:
        parser.print_usage(sys.stderr)
        parser.exit(2, f"{parser.prog}: give at least one workbook.py to grade\n")
    missing = [path for path in args.workbooks if not Path(path).is_file()]
    if missing:
        parser.error("no such file: " + ", ".join(missing))
    return main(args.workbooks, block=args.block)


if __name__ == "__main__":
    cli()
