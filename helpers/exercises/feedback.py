"""What a checker says, and how it reads a learner's answer without ever raising.

``Feedback`` (correct, mistake, text) is what every checker and ``diagnose``
return; ``Reveal`` is a hint or solution folded until clicked. ``_read``
turns any answer (text, ragged lists, NaN, objects that refuse to become an
array; a generator, map, zip, range or iterator, read as the list it yields
by ``_given``, at most READ_LIMIT items) into an array or a problem to report, and ``_fmt`` prints numbers the
way the notebooks do. The tolerances every numeric checker uses are here too.
Used by helpers/exercises/base.py, the topic modules beside it and
helpers/checkers/diagnose.py; it imports none of them.
"""

from __future__ import annotations

import collections.abc
import html
import types
from dataclasses import dataclass

import numpy as np

from helpers.inputs import refuse_masked_array

__all__ = [
    "Feedback", "Reveal",
]


NOT_ATTEMPTED = "Not attempted yet: replace the ... after `answer =` with your answer, then run this cell again."
WEIGHTS_ATOL = 2e-3
"""Slack for attention weights: two units in the third decimal. That accepts
weights rounded to 3 decimals, even through rounded intermediate steps (as
source 000 rounds its scaled scores before exponentiating, which moves one
of its weights by 0.0005). Every named mistake differs by far more."""
EXACT_ATOL = 5e-4
"""Slack for scores and projections: half a unit in the third decimal, for
an answer worked by hand and rounded to 3 decimals."""
MASKED_FILL = -1e4
"""A score at or below this stands for -inf where a mistake has -inf (a masked
score): learners often fill masked scores with -1e9 instead of -inf."""


@dataclass(frozen=True)
class Feedback:
    """What a checker says about an answer.

    correct: whether the answer is accepted.
    mistake: None when correct; otherwise a short key naming what went wrong
        (e.g. "not_attempted", "wrong_axis", "no_scaling", "shape").
    text: the sentence(s) printed to the learner.
    """

    correct: bool
    mistake: str | None
    text: str

    def __str__(self):
        return self.text


class Reveal:
    """A hint or a solution: folded until clicked in JupyterLab, plain text elsewhere."""

    def __init__(self, label, text):
        self.label = label
        self.text = text

    def _repr_html_(self):
        return (f"<details><summary><b>{html.escape(self.label)}</b> (click to open)</summary>"
                f"<pre>{html.escape(self.text)}</pre></details>")

    def __repr__(self):
        return f"{self.label}:\n{self.text}"

    __str__ = __repr__


# --------------------------------------------------------------------------
# Reading a learner's answer without ever raising
# --------------------------------------------------------------------------

def _fmt(x):
    """A number or array as the course prints it (3 decimals, no np.float64 repr)."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        value = float(arr)
        if np.isfinite(value) and (abs(value) >= 1e16 or 0 < abs(value) < 5e-4):  # not 301 digits, not "0"
            return np.format_float_scientific(value, precision=3, trim="-")
        return np.format_float_positional(value, precision=3, trim="-")
    return np.array2string(arr, precision=3, suppress_small=True, separator=" ")


def _term(x):
    """A number as a factor in written arithmetic: negatives in parentheses, 3 × (-1)."""
    text = _fmt(x)
    return f"({text})" if text.startswith("-") else text


def _comment(text):
    """Text as Python comment lines, so a solution stays code that can be pasted."""
    return "\n".join(("# " + line).rstrip() for line in text.splitlines())


def _not_numbers(what):
    return Feedback(False, "not_numbers", f"Your answer is {what}, not numbers. Give numbers: a number, or a numpy array.")


READ_LIMIT = 100_000
"""The most items read from an answer given as a generator, map, zip, range or other iterator: one that never ends
is told so, not waited for."""

_LAZY = {map: "a map(...)", zip: "a zip(...)", filter: "a filter(...)", enumerate: "an enumerate(...)",
         reversed: "a reversed(...)", range: "a range(...)"}


def _lazy_kind(x):
    """How to name an answer that yields its items one by one ("a generator", "a map(...)", ...), or None."""
    try:
        if isinstance(x, (np.ndarray, str, bytes)):
            return None
        if isinstance(x, types.GeneratorType):
            return "a generator"
        if type(x) in _LAZY:
            return _LAZY[type(x)]
        if isinstance(x, collections.abc.MappingView):
            return f"a dict's {type(x).__name__.replace('dict_', '.')}()"
        if isinstance(x, collections.abc.Iterator):
            return "an iterator"
    except Exception:
        return None
    return None


class _Yielded(list):
    """The list a generator, map, zip, range or iterator answer yielded (how it was given: ``given_as``)."""

    given_as = "a generator"


class _NotRead(Exception):
    """An answer given item by item that could not be read: it did not stop, or raised while it was read."""


def _unroll(x, budget, depth=0):
    """x with every generator, map, zip, range or iterator in it (at any depth, in lists and tuples) read into a
    list; budget: [items left to read, then the kinds read], shared."""
    kind = _lazy_kind(x)
    if kind is not None:
        budget.append(kind)
        if isinstance(x, range) and len(x) > budget[0]:
            raise _NotRead(kind, None)
        items = []
        iterator = iter(x)
        while True:
            if budget[0] <= 0:
                raise _NotRead(kind, None)
            try:
                item = next(iterator)
            except StopIteration:
                return items
            except (Exception, SystemExit) as exc:      # the learner's generator raised while it was read
                raise _NotRead(kind, exc) from None
            budget[0] -= 1
            items.append(_unroll(item, budget, depth + 1))
    if type(x) in (list, tuple) and depth < 32:
        items = [item if type(item) in (int, float) else _unroll(item, budget, depth + 1) for item in x]
        if any(a is not b for a, b in zip(items, x)):
            return items if type(x) is list else tuple(items)
    return x


def _given(answer):
    """(the answer with what it yields read into lists, the sentence that says so, None) for an answer given as a
    generator, map, zip, range or iterator (or holding some, as a list of generators for rows); (None, None,
    Feedback) when one did not stop within :data:`READ_LIMIT` items or raised while it was read. Any other answer
    comes back as it is, with no sentence: (answer, None, None)."""
    kind = _lazy_kind(answer)
    if kind is None and type(answer) not in (list, tuple):
        return answer, None, None
    budget = [READ_LIMIT]
    try:
        value = _unroll(answer, budget)
    except _NotRead as exc:
        what, error = exc.args
        if error is None:
            text = (f"Your answer is {what} of more than {READ_LIMIT:,} items (it may never end), so it was not "
                    "read to its end. Give a list or an array of the numbers: np.array(list(...)) of one that ends.")
        else:
            text = (f"Your answer is {what}, and reading it raised {type(error).__name__}: {_safe(error)}. "
                    "Give a list or an array of the numbers.")
        return None, None, Feedback(False, "iterator", text)
    except RecursionError:
        return answer, None, None
    if value is answer:
        return answer, None, None
    if kind is not None:
        value = _Yielded(value)
        value.given_as = kind
    if kind is not None:
        once = "" if isinstance(answer, (range, collections.abc.MappingView)) else (
            " It gives its items only once: keep a list or an array, list(...) or np.array(...).")
        return value, f"\n(You gave {kind}; it was read as the list it yields.{once})", None
    inner = budget[1] if len(budget) > 1 else "an iterator"
    return value, f"\n(Some of its items were given one by one ({inner}): each was read as the list it yields.)", None


def _safe(x):
    try:
        text = str(x)
    except Exception:
        text = "(a message that could not be shown)"
    return text if len(text) <= 200 else text[:200] + " ..."


def _read(answer):
    """Return (float ndarray, None) or (None, Feedback) for an answer that is not numbers. An answer given as a
    generator, map, zip, range or iterator is read as the list it yields (at most READ_LIMIT items)."""
    answer, _, problem = _given(answer)
    if problem is not None:
        return None, problem
    try:  # the course's one rule for numpy masked arrays, given here as feedback, not raised
        refuse_masked_array(answer, "answer", how=(
            "give a plain array holding the value a hidden entry should have: np.ma.filled(answer, 0.0) "
            "for masked weights, np.ma.filled(answer, -np.inf) for masked scores"))
    except ValueError as exc:
        return None, Feedback(False, "masked_array", f"Your {exc}.")
    if isinstance(answer, (str, bytes)):
        return None, Feedback(False, "not_numbers",
                              "Your answer is text (a string in quotes), not numbers. Remove the quotes.")
    if isinstance(answer, (bool, np.bool_)):
        return None, _not_numbers("True or False")
    if isinstance(answer, (dict, set, frozenset)):
        return None, _not_numbers(f"a {type(answer).__name__}")
    if isinstance(answer, type):
        name = getattr(answer, "__name__", "a type")
        return None, Feedback(False, "type",
                              f"Your answer is `{name}` itself, a type (a kind of value), not a number. "
                              f"To turn a value into that type, call it on the value: {name}(x).")
    if callable(answer) and not isinstance(answer, np.ndarray):
        return None, Feedback(False, "function",
                              "Your answer is a function, not its result. Call it (with parentheses) and give what it returns.")
    try:
        arr = np.asarray(answer)
    except Exception:
        return None, Feedback(False, "unreadable",
                              "I could not read your answer as an array of numbers. "
                              "If it is a list of rows, every row needs the same length.")
    kind = arr.dtype.kind
    if kind == "O":
        if any(item is None for item in arr.ravel()):
            return None, Feedback(False, "none_entry",
                                  "Your answer has None in it where a number should be: that entry was never "
                                  "computed. (A function that returns nothing, such as print(), gives None.)")
        try:
            arr = arr.astype(float)
        except OverflowError:
            return None, Feedback(False, "nan_inf", "Your answer holds a number too large to compute with (beyond about 1.8e308).")
        except Exception:
            return None, Feedback(False, "unreadable",
                                  "I could not read your answer as an array of numbers: some entry is not a number "
                                  "(or the rows have different lengths).")
    elif kind == "b":
        return None, _not_numbers("True/False values")
    elif kind == "c":
        return None, Feedback(False, "not_numbers",
                              "Your answer holds complex numbers (with a j part), not real numbers. "
                              "Attention never needs them: check for a stray j or a square root of a negative number.")
    elif kind in "US":
        return None, Feedback(False, "not_numbers", "Your answer holds text (strings), not numbers. Remove the quotes.")
    elif kind not in "iuf":
        return None, _not_numbers(f"an array of {arr.dtype}")
    arr = np.array(arr, dtype=float, subok=False)
    if arr.size == 0:
        return None, Feedback(False, "shape", "Your answer is empty.")
    return arr, None


def _looks_like_pair(items):
    """Whether two items look like the (output, weights) pair of scaled_dot_product_attention:
    arrays of at least 2 dimensions agreeing on all but the last axis, the second made of
    non-negative rows that sum to 1 (or 0, for a query with nothing to attend to)."""
    if len(items) != 2:
        return False
    try:
        out, w = np.asarray(items[0], dtype=float), np.asarray(items[1], dtype=float)
    except Exception:
        return False
    if out.ndim < 2 or w.ndim < 2 or out.shape[:-1] != w.shape[:-1] or not np.all(np.isfinite(w)) or (w < 0).any():
        return False
    sums = w.sum(axis=-1)
    return bool(np.all((np.abs(sums - 1.0) <= 1e-3) | (sums == 0.0)))


def _shape_words(shape):
    return "a single number" if shape == () else f"shape {shape}"


def _reshape_fix(answer, want):
    """Python that turns ``answer`` (whatever the learner gave) into shape ``want``."""
    base = ("answer" if type(answer) is np.ndarray else "np.array(list(answer))" if isinstance(answer, _Yielded)
            else "np.asarray(answer)")
    return f"{base}.item()" if want == () else f"{base}.reshape{want}"
