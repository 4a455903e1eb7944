"""Measure what diagnose says of functions written the way public code writes them (issue 32).

Usage (from the repository's root):

    .venv/bin/python tools/measure_diagnose.py [--json PATH] [--piece PIECE ...]

Runs ``diagnose(fn, piece=..., time_limit=2)`` on every entry of
tests/wrong_functions.py's COLLECTION (wrong functions with the key diagnose
should give, and right ones, which must be Correct), then prints, per piece:
how many wrong functions, how many of them got a NAMED key (anything but the
symptom keys: different, raised, wrong_shape, nan_inf, not_numbers,
returned_none, exit, too_slow, not_diagnosed), how many got exactly their
intended key, and how many right functions were called Correct; then every
entry whose verdict is not its intended one (name, source, intended, got).
Keys joined with "+" count as the same key whatever their order.
``--json PATH`` writes the per-entry results. Nothing here is random: the
collection's functions are deterministic and diagnose's battery is seeded.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

from helpers.exercises import diagnose

ROOT = Path(__file__).resolve().parents[1]
COLLECTION_FILE = ROOT / "tests" / "wrong_functions.py"
TIME_LIMIT = 2.0

SYMPTOMS = frozenset({"different", "raised", "wrong_shape", "nan_inf", "not_numbers", "returned_none", "exit",
                      "too_slow", "not_diagnosed"})
"""The keys that name a symptom, not a misconception."""


def load_collection(path=COLLECTION_FILE):
    """The wrong_functions module, loaded from its file (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location("wrong_functions", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def same_key(got, intended):
    """Do two verdict keys agree? None is Correct; "a+b" equals "b+a"."""
    if got is None or intended is None:
        return got is None and intended is None
    return sorted(got.split("+")) == sorted(intended.split("+"))


def named(key):
    """Is ``key`` a named mistake (every part of it something other than a symptom, and not Correct)?"""
    return key is not None and not any(part in SYMPTOMS for part in key.split("+"))


def measure(entries, time_limit=TIME_LIMIT):
    """One result dict per entry: what diagnose said of it, beside what it should say."""
    results = []
    for entry in entries:
        start = time.perf_counter()
        verdict = diagnose(entry.fn, piece=entry.piece, time_limit=time_limit)
        got = None if verdict.correct else verdict.mistake
        results.append({
            "piece": entry.piece, "name": entry.name, "source": entry.source, "what": entry.what,
            "function": entry.fn.__name__, "right": entry.intended is None, "intended": entry.intended,
            "got": got, "correct": bool(verdict.correct), "as_intended": same_key(got, entry.intended),
            "named": named(got), "seconds": round(time.perf_counter() - start, 3),
            "text": verdict.text,
        })
    return results


def summary(results, pieces):
    """Rows (piece, wrong, named, intended, right, right_correct), one per piece and a total."""
    rows = []
    for piece in pieces:
        mine = [r for r in results if r["piece"] == piece]
        wrong = [r for r in mine if not r["right"]]
        right = [r for r in mine if r["right"]]
        rows.append((piece, len(wrong), sum(r["named"] for r in wrong), sum(r["as_intended"] for r in wrong),
                     len(right), sum(r["correct"] for r in right)))
    rows.append(("total",) + tuple(sum(row[i] for row in rows) for i in range(1, 6)))
    return rows


def report(results, pieces, seconds):
    """The printed measurement: the table, then every entry whose verdict is not its intended one."""
    lines = ["diagnose on tests/wrong_functions.py: what it says of functions written as public code writes them",
             "", f"{'piece':<24}{'wrong':>6}{'named':>7}{'intended':>10}{'right':>7}{'correct':>9}"]
    for piece, n_wrong, n_named, n_intended, n_right, n_correct in summary(results, pieces):
        if piece == "total":
            lines.append("-" * 63)
        lines.append(f"{piece:<24}{n_wrong:>6}{n_named:>7}{n_intended:>10}{n_right:>7}{n_correct:>9}")
    lines += ["", "named: a key other than " + ", ".join(sorted(SYMPTOMS)) + "; intended: exactly the key the entry "
              "should get (None = Correct for a right function).", ""]
    off = [r for r in results if not r["as_intended"]]
    lines.append(f"Not as intended: {len(off)} of {len(results)} entries")
    for r in off:
        lines.append(f"  {r['piece']}/{r['name']} ({r['source']}): intended {r['intended'] or 'Correct'}, "
                     f"got {r['got'] or 'Correct'}")
    lines += ["", f"{len(results)} entries in {seconds:.1f} s"]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="write the per-entry results to PATH")
    parser.add_argument("--piece", action="append", help="measure only this piece (may be given again)")
    args = parser.parse_args(argv)
    module = load_collection()
    pieces = [p for p in module.PIECES if not args.piece or p in args.piece]
    entries = [e for e in module.COLLECTION if e.piece in pieces]
    start = time.perf_counter()
    results = measure(entries)
    print(report(results, pieces, time.perf_counter() - start))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
