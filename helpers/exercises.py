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

from helpers.attention import _refuse_masked_array, scaled_dot_product_attention, softmax

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
        return np.format_float_positional(float(arr), precision=3, trim="-")
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
        if not found:
            return None
        _, i, sub = min(found, key=lambda f: f[:2])
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
        gave = "a whole matrix" if arr.ndim == 2 else f"an array of shape {arr.shape}"
        base = "answer" if type(answer) is np.ndarray else "np.asarray(answer)"
        for key, message, value in [(None, None, self.expected)] + list(self._variants):
            where = self._inside(arr, value)
            if where is None:
                continue
            idx, what = where
            index = ", ".join(":" if isinstance(i, slice) else str(int(i)) for i in idx)
            label = self._place_words(idx, what)
            start = (f"Your answer is {gave}, {_shape_words(arr.shape)}; the exercise asks for {asked} "
                     f"({self.shape_note}).")
            if key is None:
                return Feedback(False, "granularity",
                                f"{start} The right one is the {what} [{index}] of yours{label}: "
                                f"answer = {base}[{index}].")
            return Feedback(False, key, f"{start} Its {what} [{index}]{label} stands where the answer would, "
                                        f"and it is not right: {message}")
        return None

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
            ]
        self._set_variants(variants)
        names = _Names(names, {"X": "X", "W_Q": "W_Q", "W_K": "W_K", "mask": "mask"})
        x, wq, wk = names["X"], names["W_Q"], names["W_K"]
        make = "" if names["Q"] and names["K"] else f"Make the queries and keys first, from {x} with {wq} and {wk}. "
        self.hint_text = (
            "The same steps as for one row, done for every row at once. " + make +
            "One matrix product gives every query's scores against every key: which of Q @ K.T and K @ Q.T puts "
            "the queries on the rows? Scale the scores as before. "
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
                  ("weights = my_e / my_e.sum(axis=-1, keepdims=True)", "each row sums to 1"),
                  ("answer = weights", "")]
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
        what = "the letters " if all(len(k) == 1 for k in keys) else ""
        return f"Answer with one of {what}{listed}, in quotes: answer = {keys[0]!r}."

    @property
    def fallback(self):
        return Feedback(False, "not_a_choice", self._how_to_answer())

    def _key_of(self, answer):
        if isinstance(answer, (bool, np.bool_)) and set(self.OPTIONS) == {"yes", "no"}:
            return "yes" if answer else "no"
        if not isinstance(answer, str):
            return None
        text = " ".join(answer.split()).strip("().").strip().lower()
        if text in self.OPTIONS:
            return text
        by_text = [k for k, v in self.OPTIONS.items() if text == " ".join(v.split()).lower()]
        return by_text[0] if by_text else None

    def _feedback(self, answer):
        key = self._key_of(answer)
        if key is None and isinstance(answer, (tuple, list)):  # a choice among other things: name it
            held = [item for item in answer if self._key_of(item) is not None]
            if len(held) == 1:
                kind = "tuple" if isinstance(answer, tuple) else "list"
                return Feedback(False, "container", f"Your answer is a {kind} holding {held[0]!r} among other "
                                                    f"things. Give one choice alone, in quotes: answer = {held[0]!r}.")
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
                  "how far apart do sums of d_k of them typically land? What does a softmax do with scores "
                  "that are far apart?"))
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
            return ("A dot product of d_k random terms spreads out as d_k grows (its spread is about sqrt(d_k)); "
                    "the weights would even out only if the scores bunched together.")
        return ("That is what the division by sqrt(d_k) buys: it keeps the spread of the scores the same."
                if letter == answer else
                "That is what happens WITH the division by sqrt(d_k). Without it the scores spread out like "
                "sqrt(d_k), and the softmax piles onto the largest one.")
