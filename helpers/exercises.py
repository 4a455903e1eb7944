"""Exercises that check themselves: ``ex.check(answer)``, ``ex.hint()``, ``ex.solution()``.

A notebook builds an exercise from the inputs it shows the learner, for
example ``AttentionWeightsExercise(X, W_Q, W_K, labels)``. The exercise
computes the right answer from those inputs with helpers.attention, and also
each *wrong* answer a common mistake would give (softmax over the wrong axis,
scaling forgotten, K Q^T instead of Q K^T, ...). A learner's answer that
matches one of those gets feedback naming the mistake. So an instructor who
changes the inputs in the notebook changes nothing else.

Mistakes are only named when they are told apart by the inputs: a wrong
variant that gives the right answer for these inputs is dropped (dividing by
sqrt(d_model) is no mistake when d_model equals d_k), and two variants that
give the same numbers are reported together (``ex.mistakes`` lists what can
be told apart). Besides the exercise's own mistakes, every numeric checker
recognises an answer rounded too far, an answer of right numbers in the
wrong shape (and says how to reshape *what the learner gave*), and the
answer of another exercise built in the same session.

``check`` never raises on a learner's answer, whatever it is: text, a ragged
list, NaN, an object that refuses to become an array. It prints the feedback
and returns nothing; ``feedback(answer)`` returns it as a :class:`Feedback`.
``hint()`` and ``solution()`` return a :class:`Reveal`, which JupyterLab
shows folded (click to open), so a stored notebook does not give the
solution away at a glance.

A solution is Python that can be pasted over the ``answer = ...`` line of
the exercise cell: it reads the notebook's own variables, named by the
``names`` argument of each exercise (e.g. ``names={"X": "X_m", "bank":
"bank_m"}``: the notebook's name for X, and for the position of 'bank'), ends
with ``answer = ...``, and names its own steps ``my_...`` so that pasting it
never changes a variable of the notebook. Worked numbers are in comments.
"""

from __future__ import annotations

import html
import textwrap
import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from helpers.attention import _refuse_masked_array, scaled_dot_product_attention, sinusoidal_positional_encoding, softmax
from helpers.hull import convex_weights, edge_beyond, hull_position

__all__ = [
    "Feedback",
    "Reveal",
    "ScoreExercise",
    "SoftmaxRowExercise",
    "AttentionWeightsExercise",
    "ProjectionExercise",
    "OutputExercise",
    "ChoiceExercise",
    "DkPredictionExercise",
    "PermutedOutputExercise",
    "SinusoidalEntryExercise",
    "HullExercise",
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


def _read(answer):
    """Return (float ndarray, None) or (None, Feedback) for an answer that is not numbers."""
    try:  # the course's one rule for numpy masked arrays, given here as feedback, not raised
        _refuse_masked_array(answer, "answer", how=(
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
    base = "answer" if type(answer) is np.ndarray else "np.asarray(answer)"
    return f"{base}.item()" if want == () else f"{base}.reshape{want}"


class _Names:
    """The notebook's names for an exercise's inputs, for hints and solutions that can be pasted.

    ``given`` maps a role ("X", "W_Q", "Q", ...) or a token (its position:
    "bank" -> "bank_m") to the notebook's name. A role not given is None
    (the solution then computes it); a token not given is found by name in
    the notebook's list of tokens, ``names["tokens"]`` ("tokens" by default).
    """

    def __init__(self, given, defaults):
        if isinstance(given, (tuple, list)):          # the older form: (X, W_Q, W_K)
            given = dict(zip(("X", "W_Q", "W_K"), given))
        self.given = {**defaults, **dict(given or {})}

    def __getitem__(self, role):
        return self.given.get(role)

    def row(self, token):
        return self.given.get(token) or f"{self.given.get('tokens', 'tokens')}.index({token!r})"


# Every numeric exercise built in this session, oldest first, so that an
# answer to one exercise given to another can be recognised (weak: a
# notebook that rebuilds an exercise lets the old one go).
_BUILT = []


def _other_exercises(this):
    alive = []
    for ref in list(_BUILT):
        other = ref()
        if other is None:
            _BUILT.remove(ref)
        elif other is not this:
            alive.append(other)
    return alive


# --------------------------------------------------------------------------
# The common machinery
# --------------------------------------------------------------------------

class _Exercise:
    """What every exercise does: check, feedback that never raises, hint and solution.

    Subclasses set ``hint_text`` and ``solution_text`` and define
    ``_feedback(answer)`` for an answer that is not the placeholder.
    """

    fallback = Feedback(False, "unreadable", "I could not read your answer. Give a number or a numpy array.")

    def check(self, answer):
        """Print feedback on ``answer``; never raises. Returns nothing."""
        print(self.feedback(answer).text)

    def feedback(self, answer):
        """The :class:`Feedback` for ``answer``. Never raises, whatever ``answer`` is."""
        if answer is Ellipsis or answer is None:
            return Feedback(False, "not_attempted", NOT_ATTEMPTED)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return self._feedback(answer)
        except Exception:
            return self.fallback

    def hint(self):
        return Reveal("Hint", self.hint_text)

    def solution(self):
        return Reveal("Solution (spoiler)", self.solution_text)


class _NumericExercise(_Exercise):
    """An exercise whose answer is a number or an array.

    Subclasses set, in their __init__: ``expected`` (ndarray), ``atol``
    (number or array broadcastable to it), ``shape_note`` (what the shape
    means), ``title`` (what the exercise asks for, in a few words),
    ``hint_text``, ``solution_text``, ``correct_note`` and call
    ``_set_variants`` with the wrong variants.
    """

    weights = False          # True: the answer is attention weights (rows sum to 1)
    labels_rows = None       # names for the rows (queries) of a matrix answer
    labels_cols = None       # names for the entries of a row (keys, or dimensions)
    #: names for the rows and columns of a *bigger* answer that holds the asked-for one
    #: (e.g. the whole score matrix given where one score is asked): (row labels, column labels)
    container_labels = (None, None)

    def _set_variants(self, variants):
        """Keep the (key, message, value) variants that these inputs tell apart; register the exercise."""
        kept, self.coinciding = [], []
        for key, message, value in variants:
            value = np.asarray(value, dtype=float)
            if self._close(value, self.expected):
                self.coinciding.append((key, "the right answer"))
                continue
            twin = next((k for k in kept if self._close(value, k[2])), None)
            if twin is not None:
                self.coinciding.append((key, twin[0]))
                kept[kept.index(twin)] = (twin[0], twin[1] + "\nOr: " + message, twin[2])
                continue
            kept.append((key, message, value))
        self._variants = kept
        _BUILT.append(weakref.ref(self))

    @property
    def mistakes(self):
        """The keys of the mistakes these inputs can tell apart, in the order they are checked."""
        return [key for key, _, _ in self._variants]

    def _close(self, a, b):
        """a matches b: within atol, or the same infinity, or a fill of MASKED_FILL or below where b is -inf."""
        if np.shape(a) != np.shape(b):
            return False
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        with np.errstate(all="ignore"):
            ok = (np.abs(a - b) <= self.atol) | (a == b) | (np.isneginf(b) & (a <= MASKED_FILL))
        return bool(np.all(ok))

    #: Feedback on a whole answer that may be improved by looking inside a tuple or list:
    #: the answer could not be read as one array, or was read and matched nothing.
    _LOOK_INSIDE = frozenset({"unreadable", "none_entry", "not_numbers", "shape", "different", "nan_inf",
                              "sum_not_one", "negative"})

    def _feedback(self, answer):
        whole = self._whole_feedback(answer)
        if whole.correct or not isinstance(answer, (tuple, list)):
            return whole
        # A pair (output, weights) with d_v = n_k reads whole as one (2, n_q, n_k) array holding the
        # answer; as a pair it is said better. A list of rows holding the answer stays "that row of yours".
        if whole.mistake in self._LOOK_INSIDE or (whole.mistake == "granularity" and _looks_like_pair(list(answer))):
            return self._inside_feedback(answer) or whole
        return whole

    def _inside_feedback(self, answer):
        """A tuple or list holding the right answer (or a named mistake) among other things.

        Read after the whole answer failed: a tuple of rows is a matrix and is
        read whole first. The pair (output, weights) returned by
        scaled_dot_product_attention is recognised and named.
        """
        items = list(answer)
        if not 2 <= len(items) <= 16 or not any(isinstance(item, (list, tuple, np.ndarray)) for item in items):
            return None  # a list of plain numbers has no inside to look at
        pair = _looks_like_pair(items)
        kind = "tuple" if isinstance(answer, tuple) else "list"
        names = ("output", "weights")
        found = []
        for i, item in enumerate(items):
            sub = self._whole_feedback(item)
            if sub.correct or sub.mistake in self.mistakes:
                found.append((0 if sub.correct else 1, i, sub))
        if not found and not pair:
            return None
        if found:
            _, i, sub = min(found, key=lambda f: f[:2])
        else:  # the pair, with neither item right nor a named mistake: judge the item the exercise asks for
            i = 1 if self.weights else 0
            sub = self._whole_feedback(items[i])
        if pair:
            opening = (f"Your answer is the pair (output, weights) that scaled_dot_product_attention returns, "
                       f"not one array. Unpack it first: output, weights = "
                       f"scaled_dot_product_attention(Q, K, V, ...), then answer = {names[i]}.")
        else:
            opening = (f"Your answer is a {kind} of {len(items)} things, not one array. Give the one that "
                       f"answers the exercise alone: answer = answer[{i}], or unpack the {kind}.")
        if sub.correct:
            return Feedback(False, "pair" if pair else "container",
                            opening + f" Its item {i}{' (the ' + names[i] + ')' if pair else ''} is the right answer.")
        return Feedback(False, sub.mistake,
                        opening + f" Looking at item {i}{' (the ' + names[i] + ')' if pair else ''}: {sub.text}")

    def _whole_feedback(self, answer):
        """The feedback on ``answer`` read as one number or array."""
        arr, problem = _read(answer)
        if problem is not None:
            return problem
        if not np.all(np.isfinite(arr)):
            for key, message, value in self._variants:
                if not np.all(np.isfinite(value)) and self._close(arr, value):
                    return Feedback(False, key, message)
            return self._nonfinite_feedback(arr)
        if self._close(arr, self.expected):
            text = "Correct! " + self.correct_note
            if isinstance(answer, (list, tuple)) and np.ndim(self.expected) > 0:
                kind = "tuple" if isinstance(answer, tuple) else "list"
                text += (f"\n(You gave a Python {kind}; the values are right, so it counts. In numpy code you will "
                         f"usually keep an array: np.array(your_{kind}) makes one, and arrays let you write Q @ K.T.)")
            return Feedback(True, None, text)
        for key, message, value in self._variants:
            if self._close(arr, value):
                return Feedback(False, key, message)
        rounded = self._rounded_to(arr)
        if rounded is not None:
            places = "whole numbers" if rounded == 0 else f"{rounded} decimal{'s' if rounded > 1 else ''}"
            return Feedback(False, "rounded",
                            f"Rounded too far: your answer is the right one rounded to {places}, and that moves it "
                            "further than the checker allows. Keep at least 3 decimals, or do not round at all.")
        other = self._other_exercise(arr)
        if other is not None:
            return Feedback(False, "other_exercise",
                            f"That is the answer to another exercise: {other.title}. This one asks for {self.title}.")
        if arr.shape != self.expected.shape:
            return self._shape_feedback(arr, answer)
        if self.weights:
            found = self._weights_feedback(arr)
            if found is not None:
                return found
        return Feedback(False, "different", self._where_different(arr) + " The hint cell below may help.")

    def _nonfinite_feedback(self, arr):
        if np.isnan(arr).any():
            text = ("Your answer contains NaN ('not a number'). NaN usually comes from 0/0, from inf - inf, "
                    "or from exp() of a very large number.")
            if self.weights:
                text += (" In a softmax, subtract each row's maximum before exp(); and check your mask: masked "
                         "scores must be -inf (not +inf), and every row must keep at least one key.")
        elif np.isposinf(arr).any():
            text = "Your answer contains inf (infinity), which usually comes from exp() of a very large number."
            if self.weights:
                text += (" In a softmax, subtract each row's maximum before exp(); and masked scores must be "
                         "-inf, not +inf.")
        else:
            text = "Your answer contains -inf (minus infinity)."
            if self.weights:
                text += (" A weight is never -inf: a masked score is -inf before the softmax, and exp(-inf) = 0 "
                         "makes its weight 0 after it. Did you stop before the softmax?")
            else:
                text += " It usually comes from log(0) or from a mask; this answer is ordinary numbers."
        return Feedback(False, "nan_inf", text)

    def _rounded_to(self, arr):
        """k if ``arr`` is the right answer rounded to k < 3 decimals (rounding too far), else None."""
        if arr.shape != self.expected.shape:
            return None
        for k in (2, 1, 0):
            if (np.all(np.abs(arr - np.round(arr, k)) <= 1e-9)
                    and np.all(np.abs(arr - self.expected) <= 0.5 * 10.0 ** -k + 1e-9)):
                return k
        return None

    def _other_exercise(self, arr):
        for other in _other_exercises(self):
            if (isinstance(other, _NumericExercise) and not self._close(other.expected, self.expected)
                    and other._close(arr, other.expected)):
                return other
        return None

    def _inside(self, arr, value):
        """Where ``value`` (an answer of the exercise's shape) sits inside the bigger ``arr``.

        Returns (index tuple, "row"/"entry"/"slice"/"column") or None. Looked for:
        an entry of an array when one number is asked, a row (or a column) of a
        matrix when one row is asked, and a slice along the leading axes in general.
        """
        want = np.shape(value)
        extra = arr.ndim - len(want)
        if extra < 1 or arr.size <= np.size(value) or arr.size > 10**6:  # the same size: a reshape, said elsewhere
            return None
        if arr.shape[extra:] == want:
            for idx in np.ndindex(*arr.shape[:extra]):
                if self._close(arr[idx], value):
                    what = "entry" if not want else ("row" if extra == 1 and arr.ndim == 2 else "slice")
                    return idx, what
        if len(want) == 1 and arr.ndim == 2 and arr.shape[0] == want[0]:
            for j in range(arr.shape[1]):
                if self._close(arr[:, j], value):
                    return (slice(None), j), "column"
        return None

    def _granularity_feedback(self, arr, answer):
        """The answer is a bigger array holding the asked-for one (or a named mistake): say where."""
        asked = _shape_words(self.expected.shape)
        gave = "a whole matrix" if arr.ndim == 2 else "an array"
        base = "answer" if type(answer) is np.ndarray else "np.asarray(answer)"
        for key, message, value in [(None, None, self.expected)] + list(self._variants):
            where = self._inside(arr, value)
            if where is None:
                continue
            idx, what = where
            fits = self._labels_fit(arr.shape)
            if key is not None and fits is False:
                continue  # e.g. a query vector of d_k numbers read as one per token: no guess about its entries
            index = ", ".join(":" if isinstance(i, slice) else str(int(i)) for i in idx)
            label = self._place_words(idx, what) if fits else ""
            start = (f"Your answer is {gave}, {_shape_words(arr.shape)}; the exercise asks for {asked} "
                     f"({self.shape_note}).")
            if key is None:
                return Feedback(False, "granularity",
                                f"{start} The right one is the {what} [{index}] of yours{label}: "
                                f"answer = {base}[{index}].")
            return Feedback(False, key, f"{start} Its {what} [{index}]{label} stands where the answer would, "
                                        f"and it is not right: {message}")
        return None

    def _labels_fit(self, shape):
        """Whether ``container_labels`` name the axes of an answer of this shape: True, False, or None (no labels)."""
        rows, cols = self.container_labels
        if rows is None and cols is None:
            return None
        if len(shape) == 1:
            return cols is not None and len(cols) == shape[0]
        if len(shape) == 2:
            return ((rows is None or len(rows) == shape[0]) and (cols is None or len(cols) == shape[1]))
        return False

    def _place_words(self, idx, what):
        """' (row 'bank', column 'river')' for an index into a bigger answer, from ``container_labels``."""
        rows, cols = self.container_labels
        try:
            if what == "entry" and len(idx) == 2 and rows is not None and cols is not None:
                return f" (row '{rows[idx[0]]}', column '{cols[idx[1]]}')"
            if what == "entry" and len(idx) == 1 and cols is not None:
                return f" (the entry of '{cols[idx[0]]}')"
            if what == "row" and rows is not None:
                return f" (the row of '{rows[idx[0]]}')"
        except (IndexError, TypeError):
            pass
        return " (your matrix may be transposed)" if what == "column" else ""

    def _shape_feedback(self, arr, answer):
        want = self.expected.shape
        inside = self._granularity_feedback(arr, answer)
        if inside is not None:
            return inside
        text = (f"Wrong shape: the answer is {_shape_words(want)} ({self.shape_note}); "
                f"yours is {_shape_words(arr.shape)}.")
        if arr.size == self.expected.size and self._close(arr.reshape(want), self.expected):
            text += f" The numbers are right; only the shape differs. Try {_reshape_fix(answer, want)}."
        elif self.expected.ndim == 2 and arr.size == want[1]:
            row = next((i for i, r in enumerate(self.expected) if self._close(arr.reshape(-1), r)), None)
            if row is not None:
                name = f"'{self.labels_rows[row]}'" if self.labels_rows is not None else str(row)
                text += f" Your numbers are the row of {name} alone; the exercise asks for every row."
        return Feedback(False, "shape", text)

    def _weights_feedback(self, arr):
        if self._close(arr / 100, self.expected):
            return Feedback(False, "percent",
                            "These look like percentages: the numbers are right, but out of 100. Give the weights "
                            "as fractions of 1 (0.25, not 25), so that each row sums to 1.")
        if (arr < 0).any():
            return Feedback(False, "negative",
                            "Attention weights are never negative: each is an exponential divided by a positive sum. "
                            "Did you skip the exp()?")
        sums = arr.sum(axis=-1)
        want = self.expected.sum(axis=-1)
        slack = self.expected.shape[-1] * EXACT_ATOL + 1e-9
        if np.any(np.abs(sums - want) > slack):
            return Feedback(False, "sum_not_one",
                            f"Your weights do not sum to 1 along each row (your sums: {_fmt(sums)}). "
                            "The softmax divides each exponential by the sum of its row, so every row sums to 1.")
        return None

    def _where_different(self, arr):
        diff = np.abs(arr - self.expected) > self.atol
        if self.expected.ndim == 0:
            return f"Not yet: {_fmt(arr)} is not what I get."
        idx = tuple(int(i) for i in np.argwhere(diff)[0])
        if self.expected.ndim == 2 and self.labels_rows is not None:
            place = f"row '{self.labels_rows[idx[0]]}', column '{self.labels_cols[idx[1]]}'"
        elif self.expected.ndim == 1 and self.labels_cols is not None:
            place = f"the entry for '{self.labels_cols[idx[0]]}'"
        else:
            place = f"entry {list(idx)}"
        return f"Not yet: the shape is right, but {int(diff.sum())} of {diff.size} entries differ, the first at {place}."


def _matrix(x, name):
    """Instructor input (not a learner's answer): a 2-D float array, or ValueError naming it."""
    _refuse_masked_array(x, name)
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a matrix (a list of rows); got shape {arr.shape}")
    return arr


def _index(tokens, token, name):
    tokens = list(tokens)
    if token not in tokens:
        raise ValueError(f"{name} must be one of the tokens {tokens}; got {token!r}")
    return tokens.index(token)


def _code(lines):
    """Solution lines (code, comment) with the comments lined up after the code."""
    width = max((len(code) for code, note in lines if note), default=0)
    return "\n".join(f"{code:<{width}}   # {note}" if note else code for code, note in lines)


# --------------------------------------------------------------------------
# The exercises
# --------------------------------------------------------------------------

class ScoreExercise(_NumericExercise):
    """The score of one word's query against another word's key: one dot product.

    X: (n, d_model) word vectors, one row per token; W_Q, W_K: (d_model, d_k).
    tokens: the n tokens. query, key: the asking word and the word it scores.
    names: the notebook's names for X, W_Q, W_K and the two words' positions
    (e.g. {"flooded": "flooded"}), for the solution.
    The answer is the single number (x_query W_Q) . (x_key W_K).
    """

    def __init__(self, X, W_Q, W_K, tokens, query, key, names=None):
        X, W_Q, W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        i, j = _index(tokens, query, "query"), _index(tokens, key, "key")
        q, k = X[i] @ W_Q, X[j] @ W_K
        self.expected = np.asarray(q @ k)
        self.container_labels = (list(tokens), list(tokens))  # a whole score matrix: queries x keys
        self.atol = EXACT_ATOL
        self.shape_note = "one dot product gives one number"
        self.title = f"the score of '{query}' against the key of '{key}'"
        d_model, d_k = X.shape[1], W_K.shape[1]
        variants = [
            ("terms_not_summed",
             f"You multiplied the matching entries ({_fmt(q * k)}) but did not add them up. "
             "A dot product is one number: the sum of those products.", q * k),
            ("roles_swapped",
             f"That is the score of '{key}' asking about '{query}': the roles are swapped. "
             f"The asking word gives the query (x_{query} W_Q); the word being scored gives the key (x_{key} W_K).",
             (X[j] @ W_Q) @ (X[i] @ W_K)),
            ("raw_vectors",
             "That is the dot product of the two word vectors themselves. Make the query with W_Q and the key "
             "with W_K first, then take their dot product.", X[i] @ X[j]),
            ("key_not_projected",
             f"You scored the query against the word vector of '{key}' itself. Make its key first: x_{key} W_K.",
             q @ X[j] if d_model == d_k else None),
            ("query_not_projected",
             f"You used the word vector of '{query}' itself as the query. Make the query first: x_{query} W_Q.",
             X[i] @ k if d_model == d_k else None),
            ("already_scaled",
             f"That is the score divided by sqrt(d_k) = {_fmt(np.sqrt(d_k))}: one step too far. The division "
             "comes next; the exercise asks for the raw score.", (q @ k) / np.sqrt(d_k)),
            ("divided_by_d_k",
             f"You divided by d_k = {d_k}. The exercise asks for the raw score, before any division; and the "
             f"scaling that comes next divides by the square root, sqrt(d_k) = {_fmt(np.sqrt(d_k))}, not by d_k.",
             (q @ k) / d_k),
        ]
        if d_model != d_k:
            variants += [
                ("sqrt_d_model",
                 f"That is the score divided by sqrt(d_model) = {_fmt(np.sqrt(d_model))}. The exercise asks for "
                 "the raw score, before any division; and the scaling that comes next uses d_k, the width of the "
                 "keys, not d_model, the width of the word vectors.", (q @ k) / np.sqrt(d_model)),
                ("divided_by_d_model",
                 f"You divided by d_model = {d_model}, the width of the word vectors. The exercise asks for the "
                 "raw score, before any division.", (q @ k) / d_model),
            ]
        self._set_variants([v for v in variants if v[2] is not None])   # None: impossible with these widths
        names = _Names(names, {"X": "X", "W_Q": "W_Q", "W_K": "W_K"})
        self.hint_text = (f"The query of '{query}' is its word vector times W_Q; the key of '{key}' is its word "
                          "vector times W_K. Then multiply matching entries and add them up.")
        terms = " + ".join(f"{_term(a)} × {_term(b)}" for a, b in zip(q, k))
        self.solution_text = _code([
            (f"my_q = {names['X']}[{names.row(query)}] @ {names['W_Q']}", f"the query of '{query}': {_fmt(q)}"),
            (f"my_k = {names['X']}[{names.row(key)}] @ {names['W_K']}", f"the key of '{key}': {_fmt(k)}"),
            ("answer = my_q @ my_k", f"{terms} = {_fmt(self.expected)}"),
        ])
        self.correct_note = (f"'{query}' scores '{key}' at {_fmt(self.expected)}: "
                             "the query and the key, entry by entry, multiplied and added.")


class SoftmaxRowExercise(_NumericExercise):
    """The attention weights of one query from its raw scores: softmax(scores / sqrt(d_k)).

    scores: (n_k,) the raw scores Q K^T of one query. d_k: the key width.
    labels: the n_k keys' names. d_model: optional embedding width; when it
    differs from d_k, dividing by sqrt(d_model) or d_model is named as a
    mistake. names: the notebook's names for "scores" (this row, e.g.
    "scores[flooded]") and "d_k", for the solution.
    """

    weights = True

    def __init__(self, scores, d_k, labels, d_model=None, names=None):
        _refuse_masked_array(scores, "scores", how="pass the plain scores, with -np.inf where a key is masked: "
                                                   "np.ma.filled(scores, -np.inf)")
        s = np.asarray(scores, dtype=float)
        if s.ndim != 1:
            raise ValueError(f"scores must be one row of raw scores, shape (n_k,); got shape {s.shape}")
        if len(labels) != s.size:
            raise ValueError(f"labels must name the {s.size} keys; got {len(labels)} labels")
        self.labels_cols = list(labels)
        self.container_labels = (None, list(labels))  # a whole weight matrix: its queries are not named here
        root = np.sqrt(d_k)
        self.expected = softmax(s / root)
        self.atol = WEIGHTS_ATOL
        self.shape_note = f"one weight per key, {s.size} keys"
        self.title = f"the weights of one query from its raw scores {_fmt(s)}"
        variants = [
            ("no_scaling",
             f"These are the weights of the raw scores: the scaling is forgotten. Divide the scores by "
             f"sqrt(d_k) = {_fmt(root)} before the softmax.", softmax(s)),
            ("divided_by_d_k",
             f"You divided by d_k = {d_k}; divide by its square root, sqrt(d_k) = {_fmt(root)}.", softmax(s / d_k)),
            ("multiplied_by_sqrt",
             f"You multiplied the scores by sqrt(d_k); divide them by sqrt(d_k) = {_fmt(root)} instead.",
             softmax(s * root)),
            ("scaled_after_softmax",
             "You divided by sqrt(d_k) after the softmax, so the weights no longer sum to 1. "
             "Scale the scores first, then take the softmax.", softmax(s) / root),
            ("exp_not_normalised",
             "These are the exponentials exp(score / sqrt(d_k)), and they do not sum to 1. Divide each by "
             "their sum to turn them into weights.", np.exp(s / root)),
            ("no_exp",
             "You divided the scaled scores by their sum without exponentiating them first. The softmax "
             "takes exp() of each score, then divides by the sum of those exponentials.",
             (s / root) / np.sum(s / root)),
            ("no_softmax",
             "These are the scaled scores, not weights: you still need the softmax (exp() of each, divided by "
             "the sum of those exponentials).", s / root),
            ("raw_scores",
             "These are the raw scores themselves. Divide them by sqrt(d_k), then take the softmax to turn "
             "them into weights.", s),
        ]
        if d_model is not None and d_model != d_k:
            variants[1:1] = [
                ("sqrt_d_model",
                 f"You divided by sqrt(d_model) = {_fmt(np.sqrt(d_model))}, the width of the word vectors; "
                 f"divide by sqrt(d_k) = {_fmt(root)}, the width of the keys.", softmax(s / np.sqrt(d_model))),
                ("divided_by_d_model",
                 f"You divided by d_model = {d_model}, the width of the word vectors. Divide by the square root "
                 f"of the key width, sqrt(d_k) = {_fmt(root)}.", softmax(s / d_model)),
            ]
        self._set_variants(variants)
        names = _Names(names, {"scores": "scores", "d_k": str(d_k)})
        self.hint_text = ("Two steps. First divide every score by sqrt(d_k). Then the softmax: exp() of each "
                          "scaled score, divided by the sum of those exponentials.")
        self.solution_text = _code([
            (f"my_scaled = {names['scores']} / np.sqrt({names['d_k']})", _fmt(s / root)),
            ("my_e = np.exp(my_scaled - my_scaled.max())", "subtracting the max changes nothing but avoids overflow"),
            ("answer = my_e / my_e.sum()", f"{_fmt(self.expected)}, which sums to 1"),
        ])
        self.correct_note = f"The weights sum to 1 and the largest goes to '{self.labels_cols[int(self.expected.argmax())]}'."


class AttentionWeightsExercise(_NumericExercise):
    """The full matrix of attention weights of a sentence, optionally masked.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k); labels: n tokens.
    mask: optional boolean (n, n), True = may attend (e.g. causal_mask(n)).
    names: the notebook's names for "X", "W_Q", "W_K" and "mask", and for
    "Q" and "K" when the notebook has already made them (then the solution
    reads them instead of making its own); a tuple (X, W_Q, W_K) also works.
    d_model: the width of the model's word vectors, named in the feedback on
    the sqrt(d_model) and d_model mistakes; default X.shape[1] (give it when
    X carries extra columns, such as a column of 1s standing for the biases).
    The answer is softmax(Q K^T / sqrt(d_k)) row by row, with masked scores
    set to -inf before the softmax: shape (n, n), queries on the rows.
    """

    weights = True

    def __init__(self, X, W_Q, W_K, labels, mask=None, names=("X", "W_Q", "W_K"), d_model=None):
        X, W_Q, W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        n = X.shape[0]
        if d_model is None:
            d_model = X.shape[1]
        elif isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)) or d_model < 1:
            raise ValueError(f"d_model must be a positive whole number (the word vectors' width); got {d_model!r}")
        if len(labels) != n:
            raise ValueError(f"labels must name the {n} tokens (rows of X); got {len(labels)} labels")
        self.labels_rows = self.labels_cols = list(labels)
        Q, K = X @ W_Q, X @ W_K
        d_k = K.shape[1]
        _refuse_masked_array(mask, "mask", how="pass a boolean array, True = may attend")
        keep = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask)
        if keep.shape != (n, n) or keep.dtype != bool:
            raise ValueError(f"mask must be a boolean ({n}, {n}) array, True = may attend; got {keep.dtype} {keep.shape}")
        _, self.expected = scaled_dot_product_attention(Q, K, np.zeros((n, 1)), mask=mask)
        self.atol = WEIGHTS_ATOL
        self.shape_note = f"({n}, {n}): one row per query, one column per key"
        self.title = f"the ({n}, {n}) matrix of {'masked ' if mask is not None else ''}attention weights of '{' '.join(labels)}'"
        S = Q @ K.T
        root = np.sqrt(d_k)

        def masked_softmax(scores, axis=-1):
            return softmax(np.where(keep, scores, -np.inf), axis=axis)

        variants = [
            ("no_scaling",
             f"These are the weights of the raw scores: the scaling is forgotten. Divide Q @ K.T by "
             f"sqrt(d_k) = {_fmt(root)} before the softmax.", masked_softmax(S)),
            ("sqrt_d_model",
             f"You divided by sqrt(d_model) = {_fmt(np.sqrt(d_model))}, the width of the word vectors. "
             f"Divide by sqrt(d_k) = {_fmt(root)}, the width of the keys: d_k = K.shape[-1].",
             masked_softmax(S / np.sqrt(d_model))),
            ("divided_by_d_k",
             f"You divided by d_k = {d_k}; divide by its square root, sqrt(d_k) = {_fmt(root)}.",
             masked_softmax(S / d_k)),
        ]
        if d_model != d_k:
            variants.append(
                ("divided_by_d_model",
                 f"You divided by d_model = {d_model}, the width of the word vectors. Divide by the square root "
                 f"of the key width, sqrt(d_k) = {_fmt(root)}: d_k = K.shape[-1].", masked_softmax(S / d_model)))
        variants += [
            ("wrong_axis",
             "The softmax ran over the wrong axis: your columns sum to 1, but each row (one query's weights "
             "over the keys) must. Use axis=-1 (or axis=1), with keepdims=True when you divide.",
             masked_softmax(S / root, axis=0)),
            ("transposed_scores",
             "You computed K @ Q.T, which is Q K^T transposed: row i then holds the scores of key i, not of "
             "query i. The scores are Q @ K.T, queries on the rows.", masked_softmax(S.T / root)),
            ("transposed",
             "Rows and columns are swapped: this is the right matrix transposed. Queries go on the rows, "
             "keys on the columns.", self.expected.T),
            ("exp_not_normalised",
             "These are the exponentials, and their rows do not sum to 1. Divide each row by its own sum: "
             "e / e.sum(axis=-1, keepdims=True).", np.where(keep, np.exp(S / root), 0.0)),
            ("keepdims_forgotten",
             "You divided by the row sums without keepdims=True: e.sum(axis=1) has shape (n,), so numpy divided "
             "column j by the sum of row j. Write e / e.sum(axis=1, keepdims=True).",
             np.where(keep, np.exp(S / root), 0.0) / np.where(keep, np.exp(S / root), 0.0).sum(axis=-1)),
            ("whole_matrix_normalised",
             "You divided by the sum of the whole matrix, so the weights do not sum to 1 along each row "
             "(only all together). Divide each row by its own sum: e.sum(axis=-1, keepdims=True).",
             np.where(keep, np.exp(S / root), 0.0) / np.where(keep, np.exp(S / root), 0.0).sum()),
            ("no_softmax",
             ("These look like masked scores: you still need the softmax. Take exp() of each (a masked -inf "
              "becomes 0) and divide each row by its sum." if mask is not None else
              "These are the scaled scores, not weights: you still need the softmax. Take exp() of each and "
              "divide each row by its sum."), np.where(keep, S / root, -np.inf)),
            ("raw_scores",
             f"These are the raw scores themselves{', masked' if mask is not None else ''}. Divide them by "
             "sqrt(d_k), then take the softmax of each row to turn them into weights.", np.where(keep, S, -np.inf)),
        ]
        if mask is not None:
            variants.append(
                ("no_softmax",
                 "These are the scaled scores, before the mask: you still need the softmax, with the masked scores "
                 "set to -inf first.", S / root))
        if mask is not None:
            masked_softmax_flipped = softmax(np.where(keep.T, S / root, -np.inf))
            variants += [
                ("mask_after_softmax",
                 "The mask was applied after the softmax: the masked weights are 0, but the rows no longer sum "
                 "to 1. Set the masked scores to -inf (np.where(mask, scores, -np.inf)) before the softmax.",
                 softmax(S / root) * keep),
                ("mask_times_zero",
                 "You multiplied the masked scores by 0 (scores * mask). A score of 0 still gets weight, since "
                 "exp(0) = 1, so later words still leak in. Set masked scores to -inf before the softmax.",
                 softmax(S / root * keep)),
                ("mask_flipped",
                 "Your mask is the wrong way round: each word sees itself and the words after it. The causal mask "
                 "is True on and below the diagonal (np.tril), so each word sees itself and the words before it.",
                 masked_softmax_flipped),
                ("no_mask",
                 "These are the weights without the mask: every word still sees the words after it. Set the "
                 "masked scores to -inf before the softmax.", softmax(S / root)),
                ("mask_inverted",
                 "You hid the keys where the mask is True. Here, as in scaled_dot_product_attention, True means "
                 "'may attend': keep the scores where the mask is True, np.where(mask, scores, -np.inf). (PyTorch's "
                 "nn.MultiheadAttention reads True the other way, as 'hidden'.)",
                 softmax(np.where(keep, -np.inf, S / root))),
            ]
        self._set_variants(variants)
        names = _Names(names, {"X": "X", "W_Q": "W_Q", "W_K": "W_K", "mask": "mask"})
        x, wq, wk = names["X"], names["W_Q"], names["W_K"]
        make = "" if names["Q"] and names["K"] else f"Make the queries and keys first, from {x} with {wq} and {wk}. "
        self.hint_text = (
            "Scores, scaling, softmax: the steps of scaled dot-product attention, done for every row at once. "
            + make +
            "One matrix product gives every query's scores against every key: which of Q @ K.T and K @ Q.T puts "
            "the queries on the rows? Divide the scores by sqrt(d_k), the square root of the keys' width. "
            + ("A masked key must end with weight exactly 0: what score has exp(score) = 0? " if mask is not None else "")
            + "Then a softmax along each row: which axis runs along a row, and what does keepdims=True change "
              "when you divide?")
        lines = []
        Qn, Kn = names["Q"], names["K"]
        if not (Qn and Kn):
            lines += [(f"my_Q = {x} @ {wq}", "queries, one row per word"), (f"my_K = {x} @ {wk}", "keys")]
            Qn, Kn = "my_Q", "my_K"
        lines.append((f"my_scores = {Qn} @ {Kn}.T / np.sqrt({Kn}.shape[-1])", f"d_k = {Kn}.shape[-1] = {d_k}"))
        if mask is not None:
            lines.append((f"my_scores = np.where({names['mask']}, my_scores, -np.inf)", "True = may attend"))
        lines += [("my_e = np.exp(my_scores - my_scores.max(axis=-1, keepdims=True))", ""),
                  ("my_weights = my_e / my_e.sum(axis=-1, keepdims=True)", "each row sums to 1"),
                  ("answer = my_weights", "")]
        self.solution_text = _code(lines) + "\n# gives\n" + _comment(_fmt(self.expected))
        self.correct_note = "Every row sums to 1" + (", and no word reads a masked one." if mask is not None else ".")


class ProjectionExercise(_NumericExercise):
    """One word's query, key or value: its row vector times W_Q, W_K or W_V.

    X: (n, d_model); W_Q, W_K, W_V: (d_model, d); tokens: n names; token: the
    word; role: "query", "key" or "value". names: the notebook's names for
    "X", "W_Q", "W_K", "W_V" and the word's position. The answer is
    x_token @ W_role.
    """

    def __init__(self, X, W_Q, W_K, W_V, tokens, token, role="key", names=None):
        X = _matrix(X, "X")
        mats = {"query": _matrix(W_Q, "W_Q"), "key": _matrix(W_K, "W_K"), "value": _matrix(W_V, "W_V")}
        mat_names = {"query": "W_Q", "key": "W_K", "value": "W_V"}
        if role not in mats:
            raise ValueError(f"role must be 'query', 'key' or 'value'; got {role!r}")
        x = X[_index(tokens, token, "token")]
        self.container_labels = (list(tokens), None)  # X @ W for every word: one row per word
        W, Wn = mats[role], mat_names[role]
        self.expected = x @ W
        self.atol = EXACT_ATOL
        self.shape_note = f"one vector of {W.shape[1]} numbers"
        self.title = f"the {role} of '{token}'"
        variants = [
            ("matrix_order",
             f"You multiplied {Wn} by x as a column ({Wn} x). The course writes word vectors as "
             f"rows, as Vaswani et al. (2017) do: x {Wn}, in numpy x @ {Wn}.", W @ x if W.shape[0] == W.shape[1] else None),
            ("elementwise",
             "You multiplied entry by entry (*), which gives a matrix. A projection is a matrix product: "
             f"x @ {Wn}.", x * W if W.shape[1] == x.size else None),
            ("not_projected",
             f"That is the word's vector before {Wn}: x_{token} itself. Its {role} is x_{token} {Wn}, "
             f"in numpy x @ {Wn}.", x if W.shape[1] == x.size else None),
        ]
        for other in ("query", "key", "value"):
            if other != role:
                variants.append((f"used_{mat_names[other]}",
                                 f"That is the {other} of '{token}' (x {mat_names[other]}); the {role} uses {Wn}.",
                                 x @ mats[other]))
        self._set_variants([v for v in variants if v[2] is not None])
        names = _Names(names, {"X": "X", **{m: m for m in mat_names.values()}})
        self.hint_text = (f"Take the row vector of '{token}' and multiply it by {Wn} on its right: "
                          f"entry j of the {role} is x[0] * {Wn}[0, j] + x[1] * {Wn}[1, j] + ...")
        by_hand = [f"{role}[{j}] = " + " + ".join(f"{_term(a)} × {_term(b)}" for a, b in zip(x, W[:, j]))
                   + f" = {_fmt(self.expected[j])}" for j in range(W.shape[1])]
        self.solution_text = (_comment("\n".join([f"x_{token} = {_fmt(x)}", *by_hand])) + "\n"
                              + _code([(f"answer = {names['X']}[{names.row(token)}] @ {names[Wn]}",
                                        _fmt(self.expected))]))
        self.correct_note = f"The {role} of '{token}' is {_fmt(self.expected)}."


class OutputExercise(_NumericExercise):
    """One word's output: the weighted mix of the values, weights from scaled dot-product attention.

    X: (n, d_model); W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v);
    tokens: n names; token: the word whose output is asked. names: the
    notebook's names for "Q", "K", "V" (or, where it has not made them, "X",
    "W_Q", "W_K", "W_V") and the word's position. The answer has shape
    (d_v,). Tolerance: with every weight rounded to 3 decimals (off by up to
    0.0005), output entry c is off by at most 0.0005 times the sum of
    |V[:, c]|; another 0.0005 allows for rounding the output itself.
    """

    def __init__(self, X, W_Q, W_K, W_V, tokens, token, names=None):
        X, W_Q, W_K, W_V = (_matrix(m, name) for m, name in ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V")))
        i = _index(tokens, token, "token")
        self.container_labels = (list(tokens), None)  # every word's output: one row per word
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        out, W = scaled_dot_product_attention(Q, K, V)
        self.expected = out[i]
        self.atol = EXACT_ATOL * np.abs(V).sum(axis=0) + EXACT_ATOL
        self.shape_note = f"the output of '{token}' is one vector of d_v = {V.shape[1]} numbers"
        self.title = f"the output of '{token}'"
        names = _Names(names, {"X": "X", "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V"})
        values = names["V"] or f"{names['X']} @ {names['W_V']}"
        root = np.sqrt(K.shape[1])
        scaled = (Q @ K.T)[i] / root
        variants = [
            ("mixed_embeddings",
             f"You mixed the word vectors {names['X']}, not the values. The output mixes the values, {values}.",
             W[i] @ X),
            ("mixed_keys", f"You mixed the keys; the output mixes the values, {values}.", W[i] @ K),
            ("mixed_scores",
             "You weighted the values by the scaled scores, not by the weights. Take the softmax of the scores "
             "first, so the weights are positive and sum to 1.", scaled @ V),
            ("no_scaling",
             "You used the weights of the raw scores: the scaling is forgotten. Divide the scores by sqrt(d_k) "
             "before the softmax.", softmax((Q @ K.T)[i]) @ V),
            ("transposed_scores",
             f"You computed K @ Q.T (or took a column of the scores): that scores the key of '{token}' against "
             f"every query. The scores of '{token}' are its query against every key: q_{token} @ K.T.",
             softmax((Q @ K.T)[:, i] / root) @ V),
            ("column_not_row",
             f"You used the column of '{token}' in the weights (how much each word attends to '{token}') instead "
             f"of its row (how much '{token}' attends to each word): rows vs columns. Queries are the rows.",
             W[:, i] @ V),
            ("plain_average",
             "That is the plain average of the values: every word counted equally. Weight each value by "
             f"the attention weight of '{token}' on that word.", V.mean(axis=0)),
            ("plain_sum", "That is the plain sum of the values. Weight each value by its attention weight first.",
             V.sum(axis=0)),
            ("all_outputs",
             f"That is every word's output, one row per word. The exercise asks for the row of '{token}' only.", out),
        ]
        self._set_variants(variants)
        lines = []
        if names["Q"]:
            q_row = f"{names['Q']}[{names.row(token)}]"
        else:
            lines.append((f"my_q = {names['X']}[{names.row(token)}] @ {names['W_Q']}", f"the query of '{token}'"))
            q_row = "my_q"
        Kn, Vn = names["K"], names["V"]
        if not Kn:
            lines.append((f"my_K = {names['X']} @ {names['W_K']}", "the keys"))
            Kn = "my_K"
        if not Vn:
            lines.append((f"my_V = {names['X']} @ {names['W_V']}", "the values"))
            Vn = "my_V"
        lines += [(f"my_scores = {q_row} @ {Kn}.T / np.sqrt({Kn}.shape[-1])", _fmt(scaled)),
                  ("my_e = np.exp(my_scores - my_scores.max())", ""),
                  ("my_weights = my_e / my_e.sum()", _fmt(W[i])),
                  (f"answer = my_weights @ {Vn}", "one term per word, weight × value:")]
        terms = "\n".join(f"  {'+' if j else ' '} {_fmt(w)} × {_fmt(v):<12} ({tokens[j]})" for j, (w, v) in enumerate(zip(W[i], V)))
        self.solution_text = _code(lines) + "\n" + _comment(f"{terms}\n  = {_fmt(self.expected)}")
        self.hint_text = (f"Four steps, each one you have seen: the scores of the query of '{token}' against every "
                          f"key (one product with {Kn if names['K'] else 'the keys'}.T gives them all), the division "
                          "by sqrt(d_k), the softmax, then each word's value times its weight, all added up.")
        self.correct_note = f"'{token}' leaves as {_fmt(self.expected)}, a mix of the values weighted by attention."


class ChoiceExercise(_Exercise):
    """A question answered by choosing one option: multiple choice, or yes / no.

    Parameters
    ----------
    question : str, printed by ``question()`` with the options under it.
    options : dict mapping a short key (a letter such as "a", or "yes" and
        "no") to the option's text, in the order they are shown.
    answer : the key of the right option. An instructor computes it from
        the exercise's inputs (as ``DkPredictionExercise`` does), so that
        editing the inputs keeps the checker right.
    why : dict mapping each key to one or two sentences said when the
        learner chooses it: for the right key why it is right, for a wrong
        one the mistake behind it. A key without one gets "Not quite.".
    hint, solution : str. The solution is Python (``answer = ...``) with the
        reasoning in comments.

    A learner may answer with the key in quotes ('a', '(a)', ' A '), with
    the text of an option, and, when the keys are "yes" and "no", with True
    or False. Feedback keys: None when right, ``chose_<key>`` for a wrong
    option, ``not_a_choice`` for anything else. Raises ValueError (naming
    the argument) only for an instructor's bad ``options`` or ``answer``.
    """

    def __init__(self, question, options, answer, why=None, hint="", solution=None):
        self.OPTIONS = {str(k).lower(): str(v) for k, v in dict(options).items()}
        if len(self.OPTIONS) < 2:
            raise ValueError(f"options must offer at least 2 choices; got {options!r}")
        self.question_text = str(question)
        self._set_answer(answer, why)
        self.hint_text = hint
        if solution is not None:
            self.solution_text = solution

    def _set_answer(self, answer, why):
        answer = str(answer).lower()
        if answer not in self.OPTIONS:
            raise ValueError(f"answer must be one of the option keys {list(self.OPTIONS)}; got {answer!r}")
        self.answer = answer
        self.why = {str(k).lower(): str(v) for k, v in dict(why or {}).items()}
        self.solution_text = f"answer = {answer!r}   # {self.OPTIONS[answer]}\n" + _comment(
            "\n".join(textwrap.wrap(self._why(answer), 88)))

    def question(self):
        """Print the question and its options."""
        print("\n".join(textwrap.wrap(self.question_text, 100)))
        for key, text in self.OPTIONS.items():
            print(f"  ({key}) {text}" if len(key) == 1 else f"  {key}: {text}")

    def _how_to_answer(self):
        keys = list(self.OPTIONS)
        listed = ", ".join(repr(k) for k in keys[:-1]) + f" or {keys[-1]!r}"
        # No example with a real key: it could be the right answer, given away.
        if all(len(k) == 1 for k in keys):
            return f"Answer with one of the letters {listed}, in quotes: answer = 'x' with your letter in place of x."
        return f"Answer with one of {listed}, in quotes (a string)."

    @property
    def fallback(self):
        return Feedback(False, "not_a_choice", self._how_to_answer())

    def _key_of(self, answer):
        if isinstance(answer, (bool, np.bool_)) and set(self.OPTIONS) == {"yes", "no"}:
            return "yes" if answer else "no"
        if not isinstance(answer, str):
            return None
        text = " ".join(answer.split()).strip().strip("'\"").strip().lower()
        if text.strip("().").strip() in self.OPTIONS:  # 'a', '(a)', 'a.', "'a'"
            return text.strip("().").strip()
        by_text = [k for k, v in self.OPTIONS.items()  # an option's whole text, its closing ")" included
                   if text.rstrip(".") == " ".join(v.split()).lower().rstrip(".")]
        return by_text[0] if by_text else None

    def _feedback(self, answer):
        key = self._key_of(answer)
        if key is None and isinstance(answer, (tuple, list)):  # a choice among other things: name it
            held = [item for item in answer if self._key_of(item) is not None]
            if len(held) == 1:
                kind = "tuple" if isinstance(answer, tuple) else "list"
                holding = (f"holding only {held[0]!r}" if len(answer) == 1
                           else f"holding {held[0]!r} among other things")
                return Feedback(False, "container", f"Your answer is a {kind} {holding}. "
                                                    f"Give the choice alone, in quotes: answer = {held[0]!r}.")
        if key is None:
            return self.fallback
        if key == self.answer:
            return Feedback(True, None, "Correct! " + self._why(key))
        return Feedback(False, f"chose_{key}", "Not quite. " + self._why(key))

    def _why(self, key):
        return self.why.get(key, "")


class DkPredictionExercise(ChoiceExercise):
    """Predict what happens to the weights when the key width d_k grows.

    The answer is one letter. The right letter is not stored: it is measured
    from the inputs. For each d_k in ``d_k_values``, ``trials`` random
    queries and keys with standard normal entries (seeded with ``seed``) are
    scored against ``n_keys`` keys, without scaling unless ``scaled`` is
    True, and the average largest weight is tracked from the smallest d_k to
    the largest: up by more than 0.1 is (a), down by more than 0.1 is (b),
    otherwise (c).
    """

    OPTIONS = {
        "a": "the largest weight climbs towards 1 (one key takes almost everything)",
        "b": "the weights even out towards 1/n",
        "c": "the weights stay about the same",
    }

    def __init__(self, d_k_values=(2, 8, 32, 128, 512), n_keys=3, trials=400, seed=0, scaled=False):
        rng = np.random.default_rng(seed)
        self.d_k_values = tuple(int(d) for d in d_k_values)
        self.scaled = bool(scaled)
        table = []
        for d_k in self.d_k_values:
            q = rng.standard_normal((trials, 1, d_k))
            k = rng.standard_normal((trials, n_keys, d_k))
            raw = (q @ np.swapaxes(k, -1, -2))[:, 0, :]
            unscaled = softmax(raw).max(axis=-1).mean()
            with_scale = softmax(raw / np.sqrt(d_k)).max(axis=-1).mean()
            table.append((d_k, float(unscaled), float(with_scale)))
        self.table = table
        column = 2 if self.scaled else 1
        change = table[-1][column] - table[0][column]
        answer = "a" if change > 0.1 else ("b" if change < -0.1 else "c")
        self.n_keys = n_keys
        how = "and you DO divide the scores by sqrt(d_k)" if self.scaled else "and you do NOT divide the scores by sqrt(d_k)"
        super().__init__(
            question=(f"Queries and keys have random entries of about size 1. As d_k grows from {self.d_k_values[0]} "
                      f"to {self.d_k_values[-1]}, {how}, what happens to one query's weights over {self.n_keys} keys?"),
            options=self.OPTIONS, answer=answer, why={letter: self._dk_why(letter, answer) for letter in self.OPTIONS},
            hint=("A score is a sum of d_k products. If each product is a random number of about size 1, "
                  "how far apart do sums of d_k of them typically land? "
                  + ("And after every score is divided by sqrt(d_k), how far apart are they then? What does a "
                     "softmax do with scores whose spread stays the same?" if self.scaled else
                     "What does a softmax do with scores that are far apart?")))
        self.solution_text += "\n" + _comment(f"\nMeasured with {self.d_k_values[0]} <= d_k <= {self.d_k_values[-1]}:\n"
                                               f"{self._table_text()}")

    def question(self):
        """Print the question and its options (the question is not wrapped: it is one printed line)."""
        print(self.question_text)
        for letter, text in self.OPTIONS.items():
            print(f"  ({letter}) {text}")

    def _table_text(self):
        lines = [f"average largest weight over {self.n_keys} keys (1/n = {1 / self.n_keys:.3f})",
                 f"{'d_k':>6} {'unscaled':>10} {'scaled':>8}"]
        lines += [f"{d:>6} {u:>10.3f} {s:>8.3f}" for d, u, s in self.table]
        return "\n".join(lines)

    @staticmethod
    def _dk_why(letter, answer):
        if letter == "a":
            return ("Without the division, a dot product of d_k random terms spreads out like sqrt(d_k), and a "
                    "softmax of widely spread scores piles nearly all the weight onto the largest."
                    if letter == answer else
                    "With the division by sqrt(d_k) the spread of the scores stays about the same as d_k grows, "
                    "so the softmax does not sharpen.")
        if letter == "b":
            if answer == "c":  # the question with the division: the scores keep their spread
                return ("With the division the scores keep the same spread as d_k grows, so nothing pushes them "
                        "together; the weights would even out only if the scores bunched together.")
            return ("A dot product of d_k random terms spreads out as d_k grows (its spread is about sqrt(d_k)); "
                    "the weights would even out only if the scores bunched together.")
        return ("That is what the division by sqrt(d_k) buys: it keeps the spread of the scores the same."
                if letter == answer else
                "That is what happens WITH the division by sqrt(d_k). Without it the scores spread out like "
                "sqrt(d_k), and the softmax piles onto the largest one.")


# --------------------------------------------------------------------------
# Notebook 06: order and position
# --------------------------------------------------------------------------

class PermutedOutputExercise(_NumericExercise):
    """Predict self-attention's outputs for the same words in another order.

    X: (n, d_model); W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v); tokens:
    the n tokens in their first order; order: the same tokens in the new
    order (each once). names: the notebook's names for "out" (the outputs
    of the first order) and "perm" (the new order as positions of the old,
    perm[i] = old position of the word now at i), for the solution.

    The answer is the (n, d_v) matrix of outputs of the reordered sentence,
    row i for the word now at position i: the old outputs, moved with their
    words (out[perm]), because self-attention without positions is
    permutation equivariant. Tolerance as in OutputExercise.
    """

    def __init__(self, X, W_Q, W_K, W_V, tokens, order, names=None):
        X, W_Q, W_K, W_V = (_matrix(m, name) for m, name in ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V")))
        for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            if W.shape[0] != X.shape[1]:
                raise ValueError(f"{name} must have d_model = {X.shape[1]} rows to match X of shape {X.shape}; got {W.shape}")
        if W_Q.shape[1] != W_K.shape[1]:
            raise ValueError(f"W_Q and W_K must give the same d_k; got shapes {W_Q.shape} and {W_K.shape}")
        if isinstance(order, str) or not hasattr(order, "__iter__"):
            raise ValueError(f"order must be a list of the tokens in their new order; got {order!r}")
        tokens, order = list(tokens), list(order)
        if len(tokens) != X.shape[0]:
            raise ValueError(f"tokens must name the {X.shape[0]} rows of X; got {len(tokens)}")
        if sorted(map(str, order)) != sorted(map(str, tokens)) or len(set(tokens)) != len(tokens):
            raise ValueError(f"order must hold each of the tokens {tokens} exactly once; got {order!r}")
        perm = np.array([_index(tokens, t, "order") for t in order])
        V = X @ W_V
        out, W = scaled_dot_product_attention(X @ W_Q, X @ W_K, V)
        self.perm = perm
        self.expected = out[perm]
        self.atol = np.broadcast_to(EXACT_ATOL * np.abs(V).sum(axis=0) + EXACT_ATOL, self.expected.shape)
        self.labels_rows, self.labels_cols = [str(t) for t in order], [str(c) for c in range(V.shape[1])]
        self.shape_note = f"one output row of d_v = {V.shape[1]} numbers for each of the {len(tokens)} words"
        self.title = f"the outputs of '{' '.join(map(str, order))}'"
        names = _Names(names, {"out": "out", "perm": "perm"})
        new = " ".join(map(str, order))
        self._set_variants([
            ("unpermuted",
             "Those are the outputs of the first order, row for row, as if nothing had moved. Each word keeps "
             "its own output, but the rows move with the words: row i belongs to the word now at position i. "
             "Self-attention is permutation equivariant, not invariant.", out),
            ("inverse_order",
             f"You moved the rows the opposite way (the inverse permutation). Row i of the answer is the word "
             f"now at position i of '{new}', and its output is the old row of that word: {names['out']}[{names['perm']}].",
             out[np.argsort(perm)]),
            ("values_only",
             "You reordered the values but kept the old weights. The weights move with their keys, and each "
             "output with its word: nothing inside a row changes, only which row is where.", W @ V[perm]),
            ("columns_not_values",
             "You reordered the columns of the weights (the keys) but not the values they are paired with, "
             "so each weight now multiplies another word's value. A weight stays with its key's value.",
             W[perm][:, perm] @ V),
        ])
        self.hint_text = ("Nothing about a word's query, key or value depends on where it stands. So does any "
                          "word's output change when the words move? Then only the order of the rows changes.")
        rows = "\n".join(f"row {i}: '{t}' was at position {int(p)}, output {_fmt(self.expected[i])}"
                         for i, (t, p) in enumerate(zip(order, perm)))
        self.solution_text = (_code([(f"answer = {names['out']}[{names['perm']}]",
                                      "each word's old output, in the new order")])
                              + "\n" + _comment(rows))
        self.correct_note = "The outputs moved with their words and did not change: permutation equivariance."


class SinusoidalEntryExercise(_NumericExercise):
    """One entry of the sinusoidal positional encoding, by hand (Vaswani et al. 2017, section 3.5).

    pos: the position (whole number >= 0); column: the column of the
    encoding (0 .. d_model - 1); d_model: even whole number >= 2. The answer
    is PE[pos, column] = sin(pos / 10000^(2i / d_model)) for column = 2i,
    cos(same) for column = 2i + 1. Tolerance: half a unit in the third decimal.
    """

    def __init__(self, pos, column, d_model):
        if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)) or pos < 0:
            raise ValueError(f"pos must be a whole number >= 0; got {pos!r}")
        pe = sinusoidal_positional_encoding(int(pos) + 1, d_model)   # checks d_model
        if isinstance(column, bool) or not isinstance(column, (int, np.integer)) or not 0 <= column < d_model:
            raise ValueError(f"column must be a whole number from 0 to d_model - 1 = {d_model - 1}; got {column!r}")
        pos, column, d_model = int(pos), int(column), int(d_model)
        i = column // 2
        trig, other = (np.sin, np.cos) if column % 2 == 0 else (np.cos, np.sin)
        name, other_name = ("sin", "cos") if column % 2 == 0 else ("cos", "sin")
        angle = pos / 10000.0 ** (2 * i / d_model)
        self.expected = np.asarray(pe[pos, column])
        self.atol = EXACT_ATOL
        self.shape_note = "one entry of the encoding is one number"
        self.title = f"PE[{pos}, {column}] for d_model = {d_model}"
        self._set_variants([
            ("sin_cos_swapped",
             f"You took the {other_name}; column {column} is {'even' if name == 'sin' else 'odd'}, so it takes the "
             f"{name}. Even columns (2i) hold sines, odd columns (2i + 1) cosines.", other(angle)),
            ("degrees",
             f"That is the {name} of {_fmt(angle)} degrees. The angle is in radians: a calculator in degree mode "
             "gives this. In numpy, np.sin and np.cos take radians.", trig(np.deg2rad(angle))),
            ("column_as_i",
             f"You put the column number {column} in place of i. The i of the formula counts pairs of columns: "
             f"columns 2i and 2i + 1 share it, so column {column} has i = {column} // 2 = {i}.",
             trig(pos / 10000.0 ** (2 * column / d_model))),
            ("dropped_2",
             f"Your exponent is i / d_model = {i}/{d_model}; the formula's is 2i / d_model = {2 * i}/{d_model}.",
             trig(pos / 10000.0 ** (i / d_model))),
            ("two_i_plus_one",
             f"Your exponent is {column}/{d_model}, the column number over d_model. The exponent is 2i / d_model "
             f"with i = {i}: {2 * i}/{d_model}; the + 1 only says that it is the cosine of the pair.",
             trig(pos / 10000.0 ** (column / d_model))),
            ("multiplied",
             f"You multiplied the position by 10000^(2i/d_model). The formula divides: pos / 10000^({2 * i}/{d_model}), "
             "so that later pairs turn more slowly.", trig(pos * 10000.0 ** (2 * i / d_model))),
            ("angle_only",
             f"That is the angle itself, {_fmt(angle)} radians. The entry is its {name}.", np.asarray(angle)),
        ])
        self.hint_text = (f"Column {column} is {'even' if name == 'sin' else 'odd'}, so it is a {name}. Its pair "
                          f"number is i = {column} // 2 = {i}. The angle is pos / 10000^(2i / d_model), in radians.")
        self.solution_text = _code([
            (f"my_i = {column} // 2", f"column {column} belongs to pair i = {i}"),
            (f"my_angle = {pos} / 10000 ** (2 * my_i / {d_model})",
             f"{pos} / 10000^({2 * i}/{d_model}) = {_fmt(angle)} radians"),
            (f"answer = np.{name}(my_angle)", f"{name}({_fmt(angle)}) = {float(self.expected):.4f}"),
        ])
        self.correct_note = f"PE[{pos}, {column}] = {name}({_fmt(angle)}) = {float(self.expected):.4f}."


def _pair(v):
    """A 2-D point as the course writes it: (0.9, 0.4)."""
    return "(" + ", ".join(_fmt(c) for c in v) + ")"


class HullExercise(ChoiceExercise):
    """Can this point be an attention output? Yes or no, decided from the values.

    point: (x, y); values: array (n, 2), the values V of one attention layer;
    labels: the n words. The right answer is measured, not stored: "yes"
    when the point lies strictly inside the convex hull of the values (it is
    a weighted average with weights above 0, which a softmax can give), "no"
    when it lies outside (no weights >= 0 summing to 1 reach it). A query is
    assumed to see at least one key (a fully masked row returns the zero
    vector instead). Raises ValueError when the point lies on the hull's
    edge: reaching it needs a weight of exactly 0, which only a mask gives,
    so the question would have no clean answer.
    """

    OPTIONS = {"yes": "some scores make this point the output",
               "no": "no scores can make this point the output"}

    def __init__(self, point, values, labels):
        V = _matrix(values, "values")
        labels = [str(t) for t in labels]
        if len(labels) != len(V):
            raise ValueError(f"labels must give one word per row of values ({len(V)}); got {len(labels)}")
        where = hull_position(point, V)
        if where == "edge":
            raise ValueError(f"point {tuple(map(float, point))} lies on the edge of the hull of the values: choose a "
                             "point clearly inside or outside it")
        self.point = np.asarray(point, dtype=float)
        answer = "yes" if where == "inside" else "no"
        lo, hi = V.min(axis=0), V.max(axis=0)
        in_box = bool(np.all((lo <= self.point) & (self.point <= hi)))
        p = _pair(self.point)

        def name(corner):
            return labels[int(np.flatnonzero(np.all(V == corner, axis=1))[0])]

        if answer == "yes":
            w = convex_weights(self.point, V)
            mix = " + ".join(f"{_fmt(x)} × v_{labels[j]}" for j, x in enumerate(w) if x > 0)
            yes = (f"{p} lies inside the hull of the values: it is a weighted average of them, for example {mix}. "
                   "A softmax never gives a weight of exactly 0, but every point strictly inside the hull is also "
                   "an average with all weights above 0, and scores s_j = log(w_j) give exactly those weights.")
            no = (f"{p} lies inside the hull of the values (the polygon with the values at its corners), so it is a "
                  f"weighted average of them, for example {mix}, and scores s_j = log(w_j) give such weights.")
        else:
            a, b = edge_beyond(self.point, V)
            no = (f"{p} lies outside the hull of the values, beyond the edge from '{name(a)}' to '{name(b)}'. Every "
                  "output is a weighted average with weights >= 0 that sum to 1, so it stays inside the hull, "
                  "whatever the scores.")
            yes = (f"An output is a weighted average of the values, so it cannot leave their hull, and {p} lies "
                   f"outside it, beyond the edge from '{name(a)}' to '{name(b)}'.")
            if in_box:
                yes += (" Each of its coordinates lies between the smallest and largest of the values' coordinates, "
                        "but that box is larger than the hull: it is a common mistake to check the coordinates "
                        "one at a time.")
        listed = ", ".join(f"'{t}' {_pair(v)}" for t, v in zip(labels, V))
        super().__init__(
            question=(f"The values are {listed}. Can some query, "
                      f"seeing all of them, get the output {p}?"),
            options=self.OPTIONS, answer=answer, why={"yes": yes, "no": no},
            hint=("An output is w_1 v_1 + ... + w_n v_n with every w_j >= 0 and their sum 1. Draw the values, "
                  "stretch a rubber band around them: which side of the band is the point on?"))

# --------------------------------------------------------------------------
# Notebook 07: cost, the online softmax and the KV cache
# --------------------------------------------------------------------------

from helpers.saturation import _positive_int as _whole_number  # noqa: E402  (one check of "a positive whole number")

__all__ += ["AttentionCountExercise", "OnlineSoftmaxStepExercise", "KVCacheSizeExercise"]


class AttentionCountExercise(_NumericExercise):
    """How many query-key dot products one forward pass computes: num_layers * num_heads * n**2.

    n: tokens; num_heads: heads per layer; num_layers: layers. Every head of
    every layer scores each of the n queries against each of the n keys
    (no mask, as in an encoder). The answer is one whole number.
    """

    def __init__(self, n, num_heads=1, num_layers=1):
        n, H, L = (_whole_number(v, name) for v, name in ((n, "n"), (num_heads, "num_heads"), (num_layers, "num_layers")))
        self.expected = np.asarray(float(L * H * n * n))
        self.atol = 0.5
        self.shape_note = "one whole number"
        self.title = f"the number of dot products for {n} tokens, {H} heads and {L} layers"
        variants = [
            ("one_head_one_layer",
             f"That is n × n = {n * n:,}, the count for one head of one layer. Every head of every layer scores "
             f"all the pairs again: multiply by the {H} heads and the {L} layers.", n * n if H * L > 1 else None),
            ("heads_forgotten",
             f"You counted the layers but not the heads: each of the {H} heads of a layer computes its own n × n "
             "scores.", L * n * n if H > 1 and L > 1 else None),
            ("layers_forgotten",
             f"You counted the heads but not the layers: each of the {L} layers runs its heads again.",
             H * n * n if H > 1 and L > 1 else None),
            ("linear_count",
             "That grows like n, one dot product per token. Each query is scored against every key, so a head "
             "computes n × n of them.", L * H * n),
            ("causal_half",
             "That counts only the pairs a causal mask keeps, n(n + 1)/2 per head. The question counts every "
             "pair, as an encoder (no mask) computes them.", L * H * n * (n + 1) // 2),
        ]
        self._set_variants([(k, m, float(v)) for k, m, v in variants if v is not None])
        self.hint_text = ("Start with one head of one layer: how many queries, how many keys, and how many pairs "
                          "of one query and one key? Then every head of every layer does the same again.")
        self.solution_text = _code([("my_per_head = " + f"{n} * {n}", f"{n * n:,} pairs of a query and a key"),
                                    (f"answer = {L} * {H} * my_per_head", f"{L * H * n * n:,}")])
        self.correct_note = (f"{L} layers × {H} heads × {n}² = {L * H * n * n:,} dot products, and doubling n "
                             "would multiply it by 4.")


class OnlineSoftmaxStepExercise(_NumericExercise):
    """One update of the online softmax by hand: the new running maximum and running sum.

    running_max, running_sum: m and l of one row after the keys read so far
    (l is the sum of exp(score - m) over them). block_scores: the (scaled)
    scores of the next block of keys. The answer is [m', l'] with
    m' = max(m, max(block_scores)) and l' = exp(m - m') * l + sum(exp(s - m')).
    names: the notebook's names for "running_max", "running_sum" and
    "block_scores", for the solution.
    """

    def __init__(self, running_max, running_sum, block_scores, names=None):
        try:
            m, l = float(running_max), float(running_sum)
            s = np.atleast_1d(np.asarray(block_scores, dtype=float))
        except (TypeError, ValueError):
            m, l, s = np.nan, np.nan, np.array([np.nan])
        if s.ndim != 1 or not np.all(np.isfinite(s)) or not np.isfinite(m) or not np.isfinite(l) or l < 1:
            raise ValueError("running_max must be a finite number, running_sum a number >= 1 (the key with the "
                             "maximum adds exp(0) = 1) and block_scores a list of finite scores; "
                             f"got {running_max!r}, {running_sum!r}, {block_scores!r}")
        new = max(m, float(s.max()))
        factor = np.exp(m - new)
        self.expected = np.array([new, factor * l + np.exp(s - new).sum()])
        self.atol = EXACT_ATOL
        self.shape_note = "two numbers, [new running max, new running sum]"
        self.title = "the running max and sum after one more block"
        moved = new != m
        variants = [
            ("not_rescaled",
             f"Your sum keeps the old l = {_fmt(l)} as it was, but it was measured against the old maximum "
             f"{_fmt(m)}. Multiply it by exp(m - m') = {_fmt(factor)} before adding the new block.",
             [new, l + np.exp(s - new).sum()] if moved else None),
            ("factor_upside_down",
             f"You multiplied the old sum by exp(m' - m) = {_fmt(1 / factor)}. The factor is exp(m - m') = "
             f"{_fmt(factor)}, at most 1: the old terms shrink when the maximum grows.",
             [new, l / factor + np.exp(s - new).sum()] if moved else None),
            ("old_max_kept",
             f"You kept the old maximum {_fmt(m)}. The running maximum becomes the larger of it and the block's "
             f"largest score, and both parts of the sum are measured against that.",
             [m, l + np.exp(s - m).sum()] if moved else None),
            ("max_not_subtracted",
             "You added exp(score) for the new scores, without subtracting the new maximum: each new term is "
             "exp(score - m').", [new, factor * l + np.exp(s).sum()]),
            ("scores_not_exponentiated",
             "You added the scores themselves. The running sum adds exp(score - m') for each new score.",
             [new, factor * l + (s - new).sum()]),
        ]
        self._set_variants([v for v in variants if v[2] is not None])
        names = _Names(names, {"running_max": "running_max", "running_sum": "running_sum", "block_scores": "block_scores"})
        mn, ln, sn = names["running_max"], names["running_sum"], names["block_scores"]
        self.hint_text = ("First the new maximum m': the larger of the old m and the block's largest score. The old "
                          "sum was measured against m, so it gets the factor exp(m - m'). Then add exp(score - m') "
                          "for each score of the block.")
        self.solution_text = _code([
            (f"my_m = max({mn}, max({sn}))", _fmt(new)),
            (f"my_l = np.exp({mn} - my_m) * {ln} + np.exp(np.asarray({sn}) - my_m).sum()",
             f"{_fmt(factor)} × {_fmt(l)} + {_fmt(np.exp(s - new).sum())}"),
            ("answer = [my_m, my_l]", _fmt(self.expected)),
        ])
        self.correct_note = (f"m' = {_fmt(new)} and l' = {_fmt(self.expected[1])}: the old sum is re-expressed "
                             "against the new maximum, then the block's terms are added.")


class KVCacheSizeExercise(_NumericExercise):
    """How many numbers a KV cache holds: 2 * num_layers * num_heads * d_k * n.

    A decoder caches one key and one value (each d_k numbers, with d_v = d_k)
    per token, per head, per layer. The answer is a count of numbers, not
    bytes.
    """

    def __init__(self, num_layers, num_heads, d_k, n):
        L, H, d, n = (_whole_number(v, name) for v, name in
                      ((num_layers, "num_layers"), (num_heads, "num_heads"), (d_k, "d_k"), (n, "n")))
        total = 2 * L * H * d * n
        self.expected = np.asarray(float(total))
        self.atol = 0.5
        self.shape_note = "one whole number: how many numbers the cache holds"
        self.title = f"the size of the KV cache of {L} layers, {H} heads of d_k = {d}, at n = {n}"
        variants = [
            ("keys_only",
             f"That is half of it: the keys only (or the values only). The cache keeps a key and a value per token, "
             "per head, per layer: the factor 2.", total // 2),
            ("cache_heads_forgotten",
             f"You left out the heads: each of the {H} heads has its own keys and values.",
             total // H if H > 1 else None),
            ("cache_layers_forgotten",
             f"You left out the layers: each of the {L} layers keeps its own cache.", total // L if L > 1 else None),
            ("cache_n_squared",
             "That grows with n × n, like the scores. The cache grows with n: each new token adds one key and one "
             "value per head and layer.", total * n),
            ("bytes_float64",
             "That is the size in bytes at 8 bytes per number (float64). The question asks how many numbers.",
             total * 8),
            ("bytes_float32",
             "That is the size in bytes at 4 bytes per number (float32). The question asks how many numbers.",
             total * 4),
        ]
        self._set_variants([(k, m, float(v)) for k, m, v in variants if v is not None])
        self.hint_text = ("One token in one head of one layer adds a key of d_k numbers and a value of d_v = d_k "
                          "numbers. Multiply by the tokens, the heads and the layers.")
        self.solution_text = _code([(f"my_per_token = 2 * {d}", "a key and a value of d_k numbers each"),
                                    (f"answer = my_per_token * {H} * {L} * {n}", f"{total:,} numbers")])
        self.correct_note = (f"{total:,} numbers: {total * 8 / 2**20:.1f} MiB in float64, "
                             f"{total * 4 / 2**20:.1f} MiB in float32. It grows with n, not n².")


# --------------------------------------------------------------------------
# Notebook 08: learning W_Q, W_K, W_V by gradient descent
# --------------------------------------------------------------------------

__all__ += ["SoftmaxGradientExercise", "GradientStepExercise"]


def _number(value, name):
    """Instructor input: one finite real number, or ValueError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    return float(value)


def _vector(value, name):
    """Instructor input: a 1-D array of finite real numbers, or ValueError naming it."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of numbers; got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty row of finite numbers, shape (n,); got {value!r}")
    return arr


class SoftmaxGradientExercise(_NumericExercise):
    """The gradient of the loss with respect to one row of scores, from the gradient with respect to its weights.

    weights: (n,) one row of softmax weights (non-negative, summing to 1).
    d_weights: (n,) dL/dw, the gradient of the loss with respect to those weights.
    labels: the n keys' names. names: the notebook's names for "weights"
    and "d_weights", for the solution.
    The answer, shape (n,), is J^T dL/dw with the softmax Jacobian
    J = diag(w) - w w^T (symmetric): entry j is w_j (dL/dw_j - sum_i w_i dL/dw_i)
    (``helpers.training.softmax_backward``). Raises ValueError (naming the
    argument) for weights that are not one softmax row or d_weights of another shape.
    """

    def __init__(self, weights, d_weights, labels, names=None):
        w, g = _vector(weights, "weights"), _vector(d_weights, "d_weights")
        if (w < 0).any() or not np.isclose(w.sum(), 1.0, atol=1e-6):
            raise ValueError(f"weights must be one row of softmax weights (non-negative, sum 1); got {w!r}")
        if g.shape != w.shape:
            raise ValueError(f"d_weights must have the shape of weights {w.shape}; got {g.shape}")
        if isinstance(labels, str) or not hasattr(labels, "__len__") or len(labels) != w.size:
            raise ValueError(f"labels must be a list naming the {w.size} keys; got {labels!r}")
        self.labels_cols = list(labels)
        mean = float(w @ g)
        self.expected = w * (g - mean)
        self.atol = EXACT_ATOL
        self.shape_note = f"one number per score, {w.size} scores"
        self.title = "the gradient of the loss with respect to one row of scores"
        self._set_variants([
            ("diagonal_only",
             "You used only the diagonal of the Jacobian, w_j (1 - w_j), as if each weight depended on its own "
             "score alone. Every weight depends on every score (they share one sum): J = diag(w) - w w^T.",
             w * (1 - w) * g),
            ("no_mean",
             "You multiplied w by dL/dw entry by entry and stopped: the diag(w) part alone. Subtract the "
             "w w^T part too: w_j (dL/dw_j - sum_i w_i dL/dw_i).", w * g),
            ("passed_through",
             "That is dL/dw itself, as if the softmax were not there. The gradient goes through the softmax's "
             "Jacobian: multiply it by J = diag(w) - w w^T.", g),
            ("sign_flipped",
             "The sign is flipped: J = diag(w) - w w^T, so entry j is w_j (dL/dw_j - sum_i w_i dL/dw_i), "
             "not the other way round.", -self.expected),
        ])
        names = _Names(names, {"weights": "w", "d_weights": "d_w"})
        wn, gn = names["weights"], names["d_weights"]
        self.hint_text = ("Build the softmax Jacobian J = diag(w) - w w^T (np.diag and np.outer), then multiply it by "
                          "dL/dw. Or, row by row: w_j times (dL/dw_j minus the weighted mean sum_i w_i dL/dw_i).")
        self.solution_text = _code([
            (f"my_J = np.diag({wn}) - np.outer({wn}, {wn})", "the softmax Jacobian, symmetric"),
            (f"answer = my_J @ {gn}", f"{_fmt(self.expected)}"),
        ]) + "\n" + _comment(f"the same, row by row: {wn} * ({gn} - {wn} @ {gn}), with {wn} @ {gn} = {_fmt(mean)}")
        self.correct_note = ("The entries sum to 0: adding the same number to every score "
                             "leaves the softmax unchanged, so the gradient has no component along that direction.")


class GradientStepExercise(_NumericExercise):
    """One step of gradient descent on a single number w, for the loss L(w) = (w x - y)^2.

    w: the parameter now; x, y: one input and its target; learning_rate > 0.
    The answer is the new w: w - learning_rate * dL/dw, with dL/dw = 2 x (w x - y).
    names: the notebook's names for "w", "x", "y", "learning_rate".
    Raises ValueError (naming it) for a learning rate that is not a positive number.
    """

    def __init__(self, w, x, y, learning_rate, names=None):
        w, x, y = _number(w, "w"), _number(x, "x"), _number(y, "y")
        lr = _number(learning_rate, "learning_rate")
        if lr <= 0:
            raise ValueError(f"learning_rate must be a positive number; got {learning_rate!r}")
        grad = 2 * x * (w * x - y)
        self.expected = np.asarray(w - lr * grad)
        self.atol = EXACT_ATOL
        self.shape_note = "the new value of w, one number"
        self.title = "the new w after one step of gradient descent"
        self._set_variants([
            ("ascent",
             "You stepped up the gradient (w + learning_rate * dL/dw), which raises the loss. Gradient descent "
             "steps against it: w - learning_rate * dL/dw.", w + lr * grad),
            ("no_learning_rate",
             "You subtracted the whole gradient. Gradient descent subtracts the gradient times the learning "
             f"rate ({lr:g}).", w - grad),
            ("forgot_two",
             "The derivative of (w x - y)^2 is 2 x (w x - y): the 2 comes down from the square.",
             w - lr * x * (w * x - y)),
            ("gradient_only",
             "That is the gradient dL/dw, not the new w. Take the step: w - learning_rate * dL/dw.", grad),
            ("step_only",
             "That is the size of the step (learning_rate * dL/dw), not the new w. Subtract it from w.", lr * grad),
        ])
        names = _Names(names, {"w": "w", "x": "x", "y": "y", "learning_rate": "learning_rate"})
        wn, xn, yn, ln = names["w"], names["x"], names["y"], names["learning_rate"]
        self.hint_text = ("Differentiate (w x - y)^2 with respect to w (the chain rule: 2 (w x - y) times x), "
                          "then move w against that gradient by learning_rate times it.")
        self.solution_text = _code([
            (f"my_grad = 2 * {xn} * ({wn} * {xn} - {yn})", f"dL/dw = {_fmt(grad)}"),
            (f"answer = {wn} - {ln} * my_grad", f"{_fmt(w)} - {lr:g} × {_term(grad)} = {_fmt(self.expected)}"),
        ])
        new_loss = (float(self.expected) * x - y) ** 2
        self.correct_note = (f"The loss falls from {_fmt((w * x - y) ** 2)} to {_fmt(new_loss)}."
                             if new_loss < (w * x - y) ** 2 else
                             f"The loss goes from {_fmt((w * x - y) ** 2)} to {_fmt(new_loss)}: this learning rate "
                             "is too large for this x, and the step overshoots.")


# --------------------------------------------------------------------------
# Instructors: diagnose a learner's own attention function (the battery is in helpers/diagnose.py)
# --------------------------------------------------------------------------

def diagnose(fn, **options):
    """Run a learner's ``fn(Q, K, V, mask=None)`` on a battery of inputs and name what is wrong.

    Returns the same kind of :class:`Feedback` as the checkers; never raises
    because of ``fn``. Options (masks, batches, time_limit) and the faults it
    names: see :func:`helpers.diagnose.diagnose`.
    """
    from helpers.diagnose import diagnose as run_battery    # here: helpers.diagnose imports this module
    return run_battery(fn, **options)


# --------------------------------------------------------------------------
# Instructors: a new exercise in a few lines, without writing a class
# --------------------------------------------------------------------------

def exercise(question, inputs, answer, mistakes=None, options=None, why_right="", hint="", solution=None,
             atol=EXACT_ATOL, weights=False):
    """A new exercise from a question, its inputs, and functions of those inputs.

    question : str, what the learner is asked; ``ex.question()`` prints it
        with the inputs.
    inputs : dict mapping a name to a value. Every function below is called
        with them as keyword arguments, so editing an input re-derives the
        right answer and every named mistake.
    answer : function of the inputs giving the right answer: a number or an
        array (or, with ``options``, the key of the right option).
    mistakes : dict mapping a short key (e.g. "no_scaling") to
        ``(explanation, function of the inputs giving the answer that
        mistake leads to)``; with ``options``, to the explanation alone,
        said when the learner picks that option.
    options : for a multiple-choice question, a dict mapping each key ("a",
        or "yes" and "no") to the option's text: the exercise is then a
        :class:`ChoiceExercise`.
    why_right : said after "Correct!". hint, solution : str. Without a
        solution, ``solution()`` shows the right answer for these inputs.
    atol : how far a numeric answer may be from the right one (default
        half a unit in the third decimal). weights : True when the answer is
        attention weights, which adds the checks for percentages, negative
        weights and rows that do not sum to 1.

    A numeric exercise is a :class:`_NumericExercise`, so everything the
    course's checkers do applies: never raising on a learner's answer,
    answers rounded too far, right numbers in the wrong shape, NaN, the
    answer of another exercise, mistakes that these inputs cannot tell
    apart dropped or merged (``ex.mistakes``). Raises ValueError, naming the
    argument, when an instructor's function fails on the inputs or gives no
    numbers.
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be the text of the question; got {question!r}")
    if not isinstance(inputs, dict) or not all(isinstance(k, str) and k.isidentifier() for k in inputs):
        raise ValueError(f"inputs must be a dict of names (such as 'scores') to values; got {inputs!r}")
    if not callable(answer):
        raise ValueError(f"answer must be a function of the inputs ({', '.join(inputs)}); got {answer!r}")
    if options is not None:
        right = _run_instructor_function(answer, inputs, "answer")
        why = {**dict(mistakes or {}), str(right): why_right}
        return ChoiceExercise(question, options, right, why=why, hint=hint, solution=solution)
    return _QuickExercise(question, inputs, answer, dict(mistakes or {}), why_right, hint, solution, atol, weights)


def _run_instructor_function(fn, inputs, name):
    try:
        return fn(**inputs)
    except Exception as exc:
        raise ValueError(f"{name} must be a function of the inputs ({', '.join(inputs)}), called as "
                         f"{name}(**inputs); calling it raised {type(exc).__name__}: {exc}") from None


def _instructor_numbers(value, name):
    try:
        arr = np.asarray(value, dtype=float)
    except Exception:
        arr = None
    if arr is None or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must give finite numbers (a number or an array) for these inputs; got {value!r}")
    return arr


class _QuickExercise(_NumericExercise):
    """A numeric exercise made by :func:`exercise`."""

    def __init__(self, question, inputs, answer, mistakes, why_right, hint, solution, atol, weights):
        self.inputs = dict(inputs)
        self.question_text = question
        self.title = question.rstrip("?.: ")
        self.weights = bool(weights)
        self.atol = atol
        self.expected = _instructor_numbers(_run_instructor_function(answer, self.inputs, "answer"), "answer")
        size = self.expected.size
        self.shape_note = "one number" if self.expected.ndim == 0 else f"{size} number{'s' if size > 1 else ''} in all"
        variants = []
        for key, item in mistakes.items():
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and callable(item[1])):
                raise ValueError(f"mistakes[{key!r}] must be (explanation, function of the inputs); got {item!r}")
            explanation, fn = item
            name = f"mistakes[{key!r}]"
            variants.append((str(key), explanation, _instructor_numbers(_run_instructor_function(fn, self.inputs, name), name)))
        self._set_variants(variants)
        self.correct_note = why_right
        self.hint_text = hint or "No hint for this one: reread the question and the inputs above it."
        self.solution_text = solution if solution is not None else (
            "# The right answer for these inputs:\n" + _comment(_fmt(self.expected)))

    def question(self):
        """Print the question and the inputs it is about."""
        print("\n".join(textwrap.wrap(self.question_text, 100)))
        for name, value in self.inputs.items():
            try:
                shown = _fmt(value)
            except Exception:
                shown = repr(value)
            print(f"  {name} = {shown}")

# --------------------------------------------------------------------------
# Notebooks 03, 04 and 05: exercises of the teaching pass (issue 12)
# --------------------------------------------------------------------------

__all__ += ["ScoreVarianceExercise", "MaskExercise", "SplitHeadsExercise", "WeightsCountExercise"]


def _whole(value, name, least=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}; got {value!r}")
    return int(value)


class ScoreVarianceExercise(_NumericExercise):
    """Predict the variance of a score q . k for random queries and keys of width d_k.

    d_k: the key width. var_q, var_k: the variance of each entry of the query
    and of the key (independent, mean 0). The answer is d_k * var_q * var_k:
    each term q_i k_i has variance var_q * var_k, and the variances of
    independent terms add up (Vaswani et al. 2017, section 3.2.1, footnote 4).
    Tolerance 0.5: the prediction is exact, not a measurement.
    """

    def __init__(self, d_k, var_q=1.0, var_k=1.0):
        d_k = _whole(d_k, "d_k")
        for name, v in (("var_q", var_q), ("var_k", var_k)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not 0 < v < np.inf:
                raise ValueError(f"{name} must be a positive finite number (a variance); got {v!r}")
        term = float(var_q) * float(var_k)
        self.expected = np.asarray(d_k * term)
        self.atol = 0.5
        self.shape_note = "one variance is one number"
        self.title = f"the variance of q . k at d_k = {d_k}"
        self._set_variants([
            ("std_not_variance",
             f"That is the standard deviation, the typical size of a score: sqrt({_fmt(self.expected)}). "
             "The exercise asks for the variance, its square.", np.sqrt(self.expected)),
            ("after_scaling",
             f"That is the variance after dividing the score by sqrt(d_k), or of a single term q_i k_i. "
             f"Before the division the score adds up d_k = {d_k} such terms.", np.asarray(term)),
            ("squared_width",
             f"Variances of independent terms add up: d_k terms of variance {_fmt(term)} give d_k times "
             f"{_fmt(term)}, not d_k squared.", np.asarray(d_k ** 2 * term)),
        ])
        self.hint_text = ("q . k = q_1 k_1 + ... + q_dk k_dk. What is the variance of one term q_i k_i when q_i "
                          "and k_i are independent with mean 0? And of a sum of independent terms?")
        self.solution_text = _code([
            (f"my_term = {_fmt(var_q)} * {_fmt(var_k)}", "variance of one term q_i k_i (mean 0, independent)"),
            (f"answer = {d_k} * my_term", f"d_k terms, their variances add up: {_fmt(self.expected)}"),
        ])
        self.correct_note = ((f"Var(q . k) = d_k = {_fmt(self.expected)} here" if term == 1.0 else
                              f"Var(q . k) = d_k × var_q × var_k = {d_k} × {_fmt(var_q)} × {_fmt(var_k)} = "
                              f"{_fmt(self.expected)} here")
                             + f", so a typical score is about sqrt of it, {_fmt(np.sqrt(self.expected))}, away from 0.")

    #: How far (as a share of the prediction) a measured variance of a few thousand draws typically lands.
    MEASURED_SHARE = 0.1

    def _whole_feedback(self, answer):
        """As every numeric exercise, and one more named mistake: a measured variance, not the exact prediction."""
        feedback = super()._whole_feedback(answer)
        if feedback.correct or feedback.mistake in self.mistakes or feedback.mistake == "rounded":
            return feedback
        arr, problem = _read(answer)
        if (problem is None and arr.shape == () and np.isfinite(arr)
                and abs(float(arr) - float(self.expected)) <= self.MEASURED_SHARE * float(self.expected)):
            return Feedback(False, "measured",
                            f"Close, but {_fmt(arr)} looks like a measurement: a variance measured from random "
                            "draws, with its sampling noise. The prediction is exact: work it out from the variance "
                            "of one term q_i k_i and how many terms the sum has.")
        return feedback


class MaskExercise(_Exercise):
    """Build the combined causal and padding mask of a batch: True = may attend.

    lengths: the number of real tokens of each sentence (B of them); n: the
    padded length (default the longest). The answer is a boolean array of
    shape (B, n, n): entry [b, i, j] is True when key j is at or before query
    i (causal mask, diagonal kept) and key j is a real token of sentence b
    (padding mask, on the keys). ``names`` maps "lengths" and "n" to the
    notebook's names, for the solution.

    The checker reads booleans (and names 0/1 numbers as such), and names the
    flipped mask, the padding mask alone in shape (B, n_k), | for &, the
    dropped diagonal, padding on the queries, and either mask missing.
    """

    def __init__(self, lengths, n=None, names=None):
        try:
            lengths = [_whole(length, "each entry of lengths") for length in lengths]
        except TypeError:
            raise ValueError(f"lengths must be a list of whole numbers (real tokens per sentence); got {lengths!r}") from None
        if not lengths:
            raise ValueError("lengths must name at least one sentence; got an empty list")
        n = max(lengths) if n is None else _whole(n, "n")
        if max(lengths) > n:
            raise ValueError(f"n must be at least the longest sentence, {max(lengths)}; got {n}")
        B = len(lengths)
        causal = np.tril(np.ones((n, n), dtype=bool))
        real = np.arange(n)[None, :] < np.array(lengths)[:, None]           # (B, n_k)
        pad_keys = real[:, None, :]                                          # (B, 1, n_k)
        self.expected = causal[None] & pad_keys
        self.shape = (B, n, n)
        self._variants = [
            ("mask_flipped",
             "Your mask is the wrong way round: True where a query may NOT attend (the convention of "
             "torch.nn.MultiheadAttention). Here True = may attend: flip it with ~.", ~self.expected),
            ("or_for_and",
             "You combined the masks with | (or): a key is then visible when EITHER mask allows it, so later "
             "words and [pad] keys leak in. A key may be read only where both allow it: use &.",
             causal[None] | pad_keys),
            ("dropped_diagonal",
             "The diagonal is missing: no word may read itself, and the first word of each sentence has nothing "
             "left to attend to. The causal mask keeps the diagonal: np.tril with k=0.",
             np.tril(np.ones((n, n), dtype=bool), k=-1)[None] & pad_keys),
            ("padding_on_queries",
             "The padding mask is on the queries (rows) instead of the keys (columns): real[:, :, None] hides "
             "whole rows. Padding must hide the [pad] keys from every query: real[:, None, :].",
             causal[None] & real[:, :, None]),
            ("no_padding",
             f"That is the causal mask alone, shape ({n}, {n}): the same for both sentences, so the [pad] keys "
             f"stay visible. Combine it with the padding mask to get one mask per sentence, shape {self.shape}.",
             causal),
            ("no_causal",
             "That is the padding mask by itself, the same for every query: every word still reads the words "
             "after it. Combine it with the causal mask using &.", np.broadcast_to(pad_keys, self.shape)),
            ("padding_shape",
             f"That is the padding mask alone, in shape (B, n_k) = {real.shape}. It cannot broadcast against "
             f"(n_q, n_k): give it a query axis, real[:, None, :], shape (B, 1, n_k), and combine it with the "
             f"causal mask using &, to get shape {self.shape}.", real),
        ]
        names = _Names(names, {"lengths": "lengths", "n": "n"})
        self.hint_text = (f"Two masks, one answer of shape (B, n_q, n_k) = {self.shape}. The causal mask is "
                          "(n, n), True on and below the diagonal. The padding mask is True at the real tokens of "
                          "each sentence, (B, n); it hides keys, so which axis must it get for the queries? Then "
                          "a key may be read only where both masks allow it.")
        self.solution_text = _code([
            (f"my_causal = np.tril(np.ones(({names['n']}, {names['n']}), dtype=bool))",
             "(n_q, n_k): True on and below the diagonal"),
            (f"my_real = np.arange({names['n']}) < np.array({names['lengths']})[:, None]", "(B, n_k): True at real tokens"),
            ("answer = my_causal[None, :, :] & my_real[:, None, :]", f"(B, n_q, n_k) = {self.shape}"),
        ])
        self.correct_note = (f"Shape {self.shape}: each sentence gets its own (n_q, n_k) mask, the lower "
                             "triangle with the [pad] columns switched off.")

    @property
    def mistakes(self):
        """The keys of the mistakes this checker names."""
        return [key for key, _, _ in self._variants]

    def _feedback(self, answer):
        if isinstance(answer, (str, bytes)):
            return Feedback(False, "not_boolean", "Your answer is text (a string in quotes). A mask is an array of "
                                                  "True/False values: remove the quotes.")
        if callable(answer) and not isinstance(answer, np.ndarray):
            return Feedback(False, "function", "Your answer is a function, not its result. Call it and give what it returns.")
        try:  # refused as scaled_dot_product_attention refuses it: np.asarray would drop its mask
            _refuse_masked_array(answer, "answer", how=(
                "give a plain boolean array, True = may attend: from a masked array m whose True means hidden, "
                "that is ~np.ma.getmaskarray(m)"))
        except ValueError as exc:
            return Feedback(False, "masked_array", f"Your {exc}.")
        try:
            arr = np.asarray(answer)
        except ValueError:  # ragged lists
            return Feedback(False, "unreadable", "I could not read your answer as an array: if it is a list of "
                                                 "rows, every row needs the same length.")
        as_numbers = arr.dtype.kind in "iuf"
        if as_numbers and arr.size and np.all(np.isin(arr, (0, 1))):
            arr = arr.astype(bool)
        elif arr.dtype.kind != "b":
            return Feedback(False, "not_boolean",
                            "A mask is an array of True/False values (dtype bool), True = may attend. "
                            f"Yours has dtype {arr.dtype}{' and not only 0s and 1s' if as_numbers else ''}.")
        matched = None
        if arr.shape == self.shape and np.array_equal(arr, self.expected):
            matched = (None, None)
        else:
            for key, message, value in self._variants:
                if arr.shape == value.shape and np.array_equal(arr, value):
                    matched = (key, message)
                    break
        if matched is not None and as_numbers:
            return Feedback(False, "not_boolean",
                            "Your pattern of 1s and 0s " + ("is right" if matched[0] is None else "is not right yet")
                            + ", but a mask must be True/False values: scaled_dot_product_attention refuses numbers. "
                            "Make it boolean, for example with answer.astype(bool), or build it from comparisons "
                            "and np.tril(..., dtype=bool).")
        if matched == (None, None):
            return Feedback(True, None, "Correct! " + self.correct_note)
        if matched is not None:
            return Feedback(False, *matched)
        if arr.shape != self.shape:
            return Feedback(False, "shape",
                            f"Wrong shape: the mask is (B, n_q, n_k) = {self.shape}, one (n_q, n_k) mask per "
                            f"sentence; yours is {_shape_words(arr.shape)}.")
        wrong = np.argwhere(arr != self.expected)
        b, i, j = (int(v) for v in wrong[0])
        return Feedback(False, "different",
                        f"Not yet: {len(wrong)} of {arr.size} entries differ, the first at sentence {b}, query {i}, "
                        f"key {j} (it should be {bool(self.expected[b, i, j])}). The hint cell below may help.")


class SplitHeadsExercise(_NumericExercise):
    """Write split_heads yourself: (n, d_model) -> (num_heads, n, d_k), head h taking features h*d_k .. (h+1)*d_k - 1.

    x: (n, d_model); num_heads must divide d_model. names: the notebook's
    name for "x", for the solution. The checker names the reshape without
    a transpose (right shape, wrong numbers) apart from the reshape that
    leaves tokens first (wrong shape), and features dealt out in turn.
    """

    def __init__(self, x, num_heads, names=None):
        x = _matrix(x, "x")
        n, d_model = x.shape
        num_heads = _whole(num_heads, "num_heads")
        if d_model % num_heads:
            raise ValueError(f"num_heads must divide d_model = {d_model}; got {num_heads}")
        d_k = d_model // num_heads
        self.expected = x.reshape(n, num_heads, d_k).transpose(1, 0, 2)
        self.atol = EXACT_ATOL
        self.shape_note = f"(num_heads, n, d_k) = ({num_heads}, {n}, {d_k})"
        self.title = f"x split into {num_heads} heads"
        self.labels_rows = None
        variants = [
            ("reshape_no_transpose",
             f"Right shape, wrong numbers: you reshaped straight to ({num_heads}, {n}, {d_k}) without a transpose. "
             "A reshape reads the numbers row by row, so one head's block takes features of several tokens. "
             f"Reshape to (n, num_heads, d_k) = ({n}, {num_heads}, {d_k}) first, then swap the first two axes: "
             ".transpose(1, 0, 2).", x.reshape(num_heads, n, d_k)),
            ("heads_not_first",
             f"The features are cut right, but your axes are (n, num_heads, d_k) = ({n}, {num_heads}, {d_k}): "
             "tokens first. Bring the heads axis to the front with .transpose(1, 0, 2).",
             x.reshape(n, num_heads, d_k) if n != num_heads else None),
            ("interleaved",
             "Your heads take the features dealt out in turn (head 0 gets features 0, num_heads, 2 num_heads, ...). "
             f"Each head takes a contiguous slice: head h gets features h*d_k to (h+1)*d_k - 1, with d_k = {d_k}.",
             x.reshape(n, d_k, num_heads).transpose(2, 0, 1) if d_k > 1 else None),
        ]
        self._set_variants([v for v in variants if v[2] is not None])   # None: impossible with these sizes
        names = _Names(names, {"x": "x"})
        self.hint_text = (f"Head h owns features h*d_k to (h+1)*d_k - 1 of every token (d_k = {d_k}). A reshape "
                          f"to (n, num_heads, d_k) cuts each token's row into those slices; then which axis must "
                          "come first?")
        self.solution_text = _code([
            (f"my_cut = {names['x']}.reshape({n}, {num_heads}, {d_k})", "(n, num_heads, d_k): each row cut into slices"),
            ("answer = my_cut.transpose(1, 0, 2)", f"(num_heads, n, d_k) = ({num_heads}, {n}, {d_k})"),
        ]) + "\n# head 0:\n" + _comment(_fmt(self.expected[0]))
        self.correct_note = (f"Head 0 holds features 0 to {d_k - 1} of every token, head 1 the next {d_k}, and so on: "
                             "as helpers.attention.split_heads does.")


class WeightsCountExercise(_NumericExercise):
    """How many attention weights one multi-head layer holds for a sentence of n tokens.

    n: tokens; num_heads: heads. Each head has its own (n, n) matrix of
    weights, whatever d_k is, so the answer is num_heads * n * n (Vaswani et
    al. 2017, section 3.2.2: h attention functions in parallel).
    """

    def __init__(self, n, num_heads):
        n, num_heads = _whole(n, "n"), _whole(num_heads, "num_heads")
        self.expected = np.asarray(float(num_heads * n * n))
        self.atol = 0.5
        self.shape_note = "a count is one number"
        self.title = f"the number of attention weights of {num_heads} heads over {n} tokens"
        self._set_variants([
            ("one_head",
             f"That is n × n = {n * n}, the weights of one head. Every head has its own n × n matrix.",
             np.asarray(float(n * n))),
            ("split_like_features",
             "The features are split among the heads, but the weights are not: each head scores every query "
             f"against every key, so each has all n × n = {n * n} of them.", np.asarray(n * n / num_heads)),
            ("one_per_token",
             "That is one weight per head per token. A head has one weight for every (query, key) pair.",
             np.asarray(float(num_heads * n))),
        ])
        self.hint_text = "How many (query, key) pairs does one head score? And how many heads score them, each its own way?"
        self.solution_text = _code([("answer = " + f"{num_heads} * {n} * {n}",
                                     f"num_heads × n × n = {num_heads * n * n:,}")])
        self.correct_note = f"{num_heads * n * n:,} weights: {num_heads} separate {n} × {n} matrices."
