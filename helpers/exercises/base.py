"""The exercise machinery: the base classes, ChoiceExercise and the instructors' ``exercise()``.

``_Exercise`` gives every exercise ``check``, ``feedback`` (which never
raises), ``hint`` and ``solution``. ``_NumericExercise`` adds what every
numeric checker recognises: named mistakes computed from the inputs (dropped
when these inputs cannot tell them apart, merged when they give the same
numbers), answers rounded too far, right numbers in the wrong shape, and the
answer of another exercise built in the same session. ``ChoiceExercise`` is
multiple choice or yes / no. ``exercise(question, inputs, answer, ...)`` makes
a new exercise without writing a class (INSTRUCTORS.md). The exercises of each
notebook are in the topic modules beside this one (weights, masks_heads,
order, cost, learning).
"""

from __future__ import annotations

import textwrap
import warnings
import weakref

import numpy as np

from helpers.exercises.feedback import (
    EXACT_ATOL,
    Feedback,
    MASKED_FILL,
    NOT_ATTEMPTED,
    Reveal,
    _comment,
    _fmt,
    _looks_like_pair,
    _given,
    _read,
    _reshape_fix,
    _shape_words,
)
from helpers.edition import solutions_withheld, withheld_text
from helpers.exercises.static import show
from helpers.inputs import refuse_masked_array

__all__ = [
    "ChoiceExercise", "exercise",
]


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


_NEXT_HINT = "(Run this cell again for a stronger hint.)"
_LAST_HINT = "(That is the strongest hint. The exercise's solution() shows the worked answer.)"
_LAST_HINT_WITHHELD = "(That is the strongest hint: in this edition the worked solution is withheld.)"


def _code_step(solution_text):
    """The code of a worked solution without its comments and without its last statement (the answer).

    When that last statement only names values the lines before it compute (``answer = my_weights``,
    ``answer = [my_m, my_l]``), leaving it out would give nothing away: then only the first half of the
    lines before it are kept, the rest left to the learner. Returns the text "The steps, ... answer = ...",
    or None when the solution is not Python, is one statement only (its last line is the whole answer),
    or keeps no line.
    """
    import ast
    import io
    import tokenize

    try:
        kept = []
        for tok in tokenize.generate_tokens(io.StringIO(solution_text).readline):
            if tok.type != tokenize.COMMENT:
                kept.append(tok)
        code = tokenize.untokenize(kept)
        body = ast.parse(code).body
    except (SyntaxError, tokenize.TokenError, ValueError):
        return None
    if len(body) < 2:
        return None
    steps, heading = body[:-1], "The steps, without the worked numbers; the last line is yours:\n"
    if _only_names(body[-1], steps):
        steps, heading = steps[:len(steps) // 2], "The first steps, without the worked numbers; the rest is yours:\n"
        if not steps:
            return None
    lines = [line.rstrip() for node in steps for line in ast.get_source_segment(code, node).splitlines()]
    return heading + "\n".join(lines) + "\nanswer = ..."


def _only_names(last, before):
    """Whether the statement ``last`` sets a value made only of names the statements ``before`` assign
    (``answer = my_weights``, ``answer = [my_m, my_l]``): nothing of the working is in it."""
    import ast

    value = getattr(last, "value", None)
    if not isinstance(last, ast.Assign) or value is None:
        return False
    parts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
    assigned = {node.id for statement in before for node in ast.walk(statement)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return bool(parts) and all(isinstance(part, ast.Name) and part.id in assigned for part in parts)


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
    ``_feedback(answer)`` for an answer that is not the placeholder. Hints
    come in steps: ``hint_text`` is the first nudge; a subclass may set
    ``step_text`` (the stronger second step: the step, without the answer),
    or call ``_set_hint([first, second, ...])``; without either the second
    step is derived from the solution (:meth:`hint_steps`).
    """

    fallback = Feedback(False, "unreadable", "I could not read your answer. Give a number or a numpy array.")

    def check(self, answer):
        """Print feedback on ``answer``; never raises. Returns nothing. In a Jupyter kernel the text is shown
        with the exercise's data beside it, for the static page (helpers/exercises/static.py)."""
        show(self, self.feedback(answer).text)

    def feedback(self, answer):
        """The :class:`Feedback` for ``answer``. Never raises, whatever ``answer`` is."""
        if answer is Ellipsis or answer is None:
            return Feedback(False, "not_attempted", NOT_ATTEMPTED)
        try:
            answer, reading, problem = _given(answer)   # a generator, map, zip or range: read once, here
            if problem is not None:
                return problem
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                found = self._feedback(answer)
            return found if reading is None else Feedback(found.correct, found.mistake, found.text + reading)
        except Exception:
            return self.fallback

    def hint(self):
        """The next hint, a :class:`Reveal`: the first call gives the first nudge (``hint_text``), each call
        after it a stronger step (:meth:`hint_steps`), and the last step again once they are all given."""
        steps = self.hint_steps()
        given = getattr(self, "_hints_given", 0)
        self._hints_given = given + 1
        i = min(given, len(steps) - 1)
        if given == 0:
            return Reveal("Hint", steps[0])          # exactly as before hints came in steps
        text = steps[i]
        if given >= len(steps) - 1:
            text += "\n\n" + (_LAST_HINT_WITHHELD if solutions_withheld() else _LAST_HINT)
        else:
            text += "\n\n" + _NEXT_HINT
        return Reveal(f"Hint {i + 1} of {len(steps)}" + (" (stronger)" if i else ""), text)

    def hint_steps(self):
        """The hints, weakest first: ``hint_steps`` when the exercise sets it (a tuple of texts), else
        ``hint_text`` followed by ``step_text`` when set, else by a step derived from the solution
        (:meth:`_derived_step`: its code without its worked numbers and without its last line, or for a
        choice one wrong option ruled out), when there is one."""
        given = getattr(self, "_steps", None)
        if given:
            return tuple(given)
        step = getattr(self, "step_text", None)
        if step is None:
            try:
                step = self._derived_step()
            except Exception:
                step = None
        return (self.hint_text,) if not step else (self.hint_text, step)

    def _set_hint(self, hint):
        """``hint``: one text (the first nudge; the stronger step is then ``step_text`` or derived), or a
        list of texts, weakest first, each call of :meth:`hint` giving the next. Raises ValueError otherwise."""
        if isinstance(hint, (list, tuple)):
            if not hint or not all(isinstance(step, str) and step.strip() for step in hint):
                raise ValueError(f"hint must be a text, or a list of texts (the steps, weakest first); got {hint!r}")
            self.hint_text, self._steps = hint[0], tuple(hint)
        elif isinstance(hint, str):
            self.hint_text, self._steps = hint, None
        else:
            raise ValueError(f"hint must be a text, or a list of texts (the steps, weakest first); got {hint!r}")

    def _derived_step(self):
        """A stronger step than the hint, from the worked solution: its code without comments (the worked
        numbers) and without its last statement, the one that sets ``answer``. None when nothing is left."""
        return _code_step(getattr(self, "solution_text", ""))

    def solution(self):
        """The worked solution, a :class:`Reveal`; in a student edition that withholds it (helpers/edition.py),
        a note that points to the hints instead."""
        if solutions_withheld():
            return Reveal("Solution (withheld)", withheld_text(
                "the worked solution", "Run the hint cell again: each run gives a stronger hint, the last "
                "one the steps without the answer."))
        return Reveal("Solution (spoiler)", self.solution_text)


#: The decimals ``_rounded_to`` tries, in its order (fewer than 3: rounded too far).
ROUNDED_PLACES = (2, 1, 0)


def rounded_text(k):
    """The feedback on the right answer rounded to ``k`` decimals (k in ROUNDED_PLACES): rounded too far."""
    places = "whole numbers" if k == 0 else f"{k} decimal{'s' if k > 1 else ''}"
    return (f"Rounded too far: your answer is the right one rounded to {places}, and that moves it "
            "further than the checker allows. Keep at least 3 decimals, or do not round at all.")


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

    #: True when the question itself asks for a Python list: a right list then gets no note about arrays.
    asks_for_a_list = False

    #: the decimals :meth:`_rounded_to` tries, in order, and its text for each (the static page stores both)
    rounded_places = ROUNDED_PLACES
    rounded_text = staticmethod(rounded_text)

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
        return list(dict.fromkeys(key for key, _, _ in self._variants))    # a mistake of two forms: once

    def _derived_step(self):
        """The solution's steps without its last line (see _Exercise); for a one-line solution, the
        mistakes these inputs tell apart, as traps to check a working against."""
        step = super()._derived_step()
        if step or not getattr(self, "_variants", None):
            return step
        traps = "\n".join("- " + " ".join(message.split("\nOr: ")[0].split()) for _, message, _ in self._variants)
        return "The traps this exercise knows; check your working against each:\n" + traps

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
            if type(answer) in (list, tuple) and np.ndim(self.expected) > 0 and not self.asks_for_a_list:
                kind = "tuple" if isinstance(answer, tuple) else "list"
                text += (f"\n(You gave a Python {kind}; the values are right, so it counts. In numpy code you will "
                         f"usually keep an array: np.array(your_{kind}) makes one, and arrays let you write Q @ K.T.)")
            return Feedback(True, None, text)
        for key, message, value in self._variants:
            if self._close(arr, value):
                return Feedback(False, key, message)
        rounded = self._rounded_to(arr)
        if rounded is not None:
            return Feedback(False, "rounded", self.rounded_text(rounded))
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
        for k in self.rounded_places:
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
    refuse_masked_array(x, name)
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
    option, ``not_a_choice`` for anything else. A subclass whose wrong
    options stand for named misconceptions sets ``named``, a dict mapping an
    option key to the mistake's key, which then replaces ``chose_<key>``
    (the exercises of understanding of notebooks 02, 03 and 07). Raises
    ValueError (naming the argument) only for an instructor's bad
    ``options`` or ``answer``.
    """

    #: option key -> the key of the misconception behind it (replaces chose_<key>)
    named = {}

    def __init__(self, question, options, answer, why=None, hint="", solution=None):
        self.OPTIONS = {str(k).lower(): str(v) for k, v in dict(options).items()}
        if len(self.OPTIONS) < 2:
            raise ValueError(f"options must offer at least 2 choices; got {options!r}")
        self.question_text = str(question)
        self._set_answer(answer, why)
        self._set_hint(hint)
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
        return Feedback(False, self.named.get(key) or f"chose_{key}", "Not quite. " + self._why(key))

    def _why(self, key):
        return self.why.get(key, "")

    def _derived_step(self):
        """One wrong option ruled out, with why (a named misconception first); None with two options,
        where ruling one out would give the answer."""
        wrong = [k for k in [*self.named, *self.OPTIONS] if k in self.OPTIONS and k != self.answer]
        if len(self.OPTIONS) < 3 or not wrong:
            return None
        key = next((k for k in wrong if self.why.get(k)), wrong[0])
        why = self._why(key) or "It is not the answer."
        name = f"({key})" if len(key) == 1 else repr(key)
        return f"You can rule out {name}: {self.OPTIONS[key]}\nWhy not: {why}"


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
    why_right : said after "Correct!". hint : str, or a list of str, the
        hints in steps, weakest first: each call of ``ex.hint()`` gives the
        next (with one text, the second call gives a step derived from the
        solution). solution : str. Without a solution, ``solution()`` shows
        the right answer for these inputs.
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
        self._set_hint(hint if hint or isinstance(hint, (list, tuple))
                       else "No hint for this one: reread the question and the inputs above it.")
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


def _whole(value, name, least=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}; got {value!r}")
    return int(value)
