"""diagnose on the collection of functions written as public code writes them (tests/wrong_functions.py, issue 32).

Each wrong function gets the key of its misconception (the key is read off the function's own code, written
for the collection from the public report its entry cites), and each right one, written in another style
(loops, einsum, float32, other names and layouts), is called Correct. tools/measure_diagnose.py prints the
same comparison as a table.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

from helpers.exercises import diagnose

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("wrong_functions", ROOT / "tests" / "wrong_functions.py")
collection = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("wrong_functions", collection)      # its dataclass looks itself up there
_spec.loader.exec_module(collection)
COLLECTION = collection.COLLECTION
SYMPTOMS = {"different", "raised", "wrong_shape", "nan_inf", "not_numbers", "returned_none", "exit", "too_slow",
            "not_diagnosed"}


def _same_keys(got, intended):
    return got is not None and set(got.split("+")) == set(intended.split("+"))


@pytest.mark.parametrize("entry", COLLECTION, ids=lambda e: f"{e.piece}-{e.name}")
def test_each_function_of_the_collection_gets_its_verdict(entry):
    verdict = diagnose(entry.fn, piece=entry.piece)
    if entry.right:
        assert verdict.correct, f"{entry.source}: {verdict.mistake}\n{verdict.text}"
    else:
        assert not verdict.correct and _same_keys(verdict.mistake, entry.intended), \
            f"{entry.source}: {entry.what} -> {verdict.mistake}\n{verdict.text}"


def test_the_collection_is_what_the_issue_asks():
    """At least 60 wrong functions over every piece, each with where it came from; right ones in other styles."""
    wrong = [e for e in COLLECTION if not e.right]
    assert len(wrong) >= 60 and {e.piece for e in wrong} == set(collection.PIECES)
    assert all(e.source and e.what for e in COLLECTION)
    assert len({(e.piece, e.name) for e in COLLECTION}) == len(COLLECTION)
    assert sum(e.right for e in COLLECTION) >= 20
    named = [e for e in wrong if e.intended not in SYMPTOMS]
    assert len(named) >= 0.95 * len(wrong), [e.name for e in wrong if e not in named]
