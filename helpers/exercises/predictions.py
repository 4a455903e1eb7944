"""Exercises of understanding for notebooks 02 and 03: predict, from the inputs, what attention will do.

Each is a :class:`ChoiceExercise` whose right option is computed from the
inputs the notebook shows (so an instructor who edits them edits nothing
else), and whose wrong options are named after the misconception that leads
to them: the feedback key is that name, not ``chose_<option>``.

- :class:`LeanOnExercise` (notebook 02): which word a query leans on most in
  a sentence it has not seen. Wrong answers: the longest key, the key that
  points best along the query, the word whose vector is most like the
  asking word's own.
- :class:`SpreadGrowthExercise` (notebook 03): how the typical gap between
  two unscaled scores grows when d_k is multiplied (by the square root of
  the factor; the factor itself is the variance's growth).
- :class:`KeyDesignExercise` (notebook 02): design a W_K that makes a query
  lean on another word; many answers are right, so the checker checks the
  property (that word gets the largest weight), and names the W_K that only
  rescales the old one (``order_kept``) or makes the word lean on itself.
- :class:`SaturatedRowExercise` (notebook 03): which of two rows of raw
  scores, each with its own d_k, puts nearly all its weight on one key once
  scaled; judging the raw scores (``no_scaling``) is the named mistake.
"""

from __future__ import annotations

import numpy as np

from helpers.attention import softmax
from helpers.exercises.base import ChoiceExercise, _Exercise, _index, _matrix
from helpers.exercises.feedback import Feedback, _fmt, _read

__all__ = ["LeanOnExercise", "SpreadGrowthExercise", "SaturatedRowExercise", "KeyDesignExercise"]


class _NamedChoice(ChoiceExercise):
    """A ChoiceExercise whose wrong options carry the name of their misconception as the feedback key.

    ``self.named`` maps an option key to a mistake key; options without a
    name keep ``chose_<option>``.
    """

    named = {}

    def _feedback(self, answer):
        feedback = super()._feedback(answer)
        if feedback.mistake and feedback.mistake.startswith("chose_"):
            key = self.named.get(feedback.mistake[len("chose_"):])
            if key:
                return Feedback(False, key, feedback.text)
        return feedback


class LeanOnExercise(_NamedChoice):
    """Predict the word a query leans on most: the largest score, not the longest key.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k); tokens: the n
    words (the options, in order); query: the asking word. The right option
    is the word whose key scores highest against the query, x_query W_Q .
    x W_K (the softmax keeps the order: Vaswani et al. 2017, sec. 3.2.1).
    Named wrong options, each kept only when it differs from the right one:
    ``longest_key`` (the longest key), ``direction_only`` (the key whose
    cosine with the query is largest, its length ignored),
    ``similar_vector`` (the word whose vector is most like the query word's
    own, cosine; the query word excluded), ``itself`` (the query word).
    Raises ValueError naming the argument for mismatched shapes, a query
    not among the tokens, or tokens that are not distinct.
    """

    def __init__(self, X, W_Q, W_K, tokens, query="bank"):
        X, W_Q, W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        tokens = [str(t) for t in tokens]
        if len({t.lower() for t in tokens}) != len(tokens) or len(tokens) != X.shape[0]:
            raise ValueError(f"tokens must be {X.shape[0]} distinct words, one per row of X; got {tokens!r}")
        if W_Q.shape != W_K.shape or W_Q.shape[0] != X.shape[1]:
            raise ValueError(f"W_Q and W_K must both be (d_model, d_k) with d_model = {X.shape[1]}; "
                             f"got W_Q {W_Q.shape}, W_K {W_K.shape}")
        i = _index(tokens, query, "query")
        q, K = X[i] @ W_Q, X @ W_K
        scores = K @ q
        lengths = np.linalg.norm(K, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cosines = np.where(lengths > 0, scores / (np.linalg.norm(q) * lengths), -np.inf)
            like = X @ X[i] / (np.linalg.norm(X, axis=1) * np.linalg.norm(X[i]))
        like = np.where(np.arange(len(tokens)) == i, -np.inf, np.nan_to_num(like, nan=-np.inf))
        self.scores, self.lengths, self.cosines = scores, lengths, cosines
        keys = [t.lower() for t in tokens]
        right = int(np.argmax(scores))
        said = {
            "longest_key": (int(np.argmax(lengths)),
                            "{w} has the longest key, but length is only one factor of a score: "
                            "score = |q| x |k| x cos. Its key points too far from the query."),
            "direction_only": (int(np.argmax(cosines)),
                               "{w}'s key points most nearly along the query, but it is short: the score "
                               "multiplies the cosine by the key's length."),
            "similar_vector": (int(np.argmax(like)),
                               "{w}'s vector is the most like {q}'s own, but attention does not compare word "
                               "vectors: it compares {q}'s query with each key, x W_Q against x W_K."),
            "itself": (i, "{q} scores its own key like any other, and here it is not the highest."),
        }
        self.named, why = {}, {}
        for name, (j, text) in said.items():
            if j != right and keys[j] not in self.named:
                self.named[keys[j]] = name
                why[keys[j]] = text.format(w=tokens[j], q=query)
        why[keys[right]] = (f"{tokens[right]}'s key gives the highest score against {query}'s query, "
                            f"{scores[right]:g}; the softmax keeps the order of the scores.")
        super().__init__(
            question=(f"In this sentence, which word does {query}'s query give the largest attention weight? "
                      "Answer with the word, in quotes."),
            options={k: t for k, t in zip(keys, tokens)}, answer=keys[right], why=why,
            hint=(f"The softmax keeps the order of the scores: find the largest score of {query}'s query "
                  f"against each key x W_K. One product, x @ (W_K @ q), gives it for any word vector x."))
        self.solution_text = (f"# scores of {query}'s query against each key x W_K: "
                              + ", ".join(f"{t} {s:g}" for t, s in zip(tokens, scores))
                              + f"\nanswer = {keys[right]!r}   # {tokens[right]}: the largest score")

    def question(self):
        """Print the question; the options are the sentence's words."""
        print(self.question_text)
        print("  words:", ", ".join(self.OPTIONS.values()))


class SpreadGrowthExercise(_NamedChoice):
    """Predict how the typical gap between two unscaled scores grows when d_k is multiplied.

    With independent entries of mean 0 and variance 1, q . k has variance
    d_k (Vaswani et al. 2017, sec. 3.2.1, footnote 4), so its spread (the
    standard deviation) and the gap between two scores grow like sqrt(d_k):
    multiplying d_k by ``factor`` multiplies them by sqrt(factor).
    d_k: the starting width; factor: the multiple (a whole number, at least 2).
    Named wrong options: ``variance_for_spread`` (the factor itself: the
    variance's growth), ``no_growth`` (the same: true only with the division).
    Raises ValueError naming the argument unless d_k >= 1 and factor >= 2 are whole.
    """

    def __init__(self, d_k=64, factor=4):
        for name, value, least in (("d_k", d_k, 1), ("factor", factor, 2)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"{name} must be a whole number of at least {least}; got {value!r}")
        self.d_k, self.factor = int(d_k), int(factor)
        root = float(np.sqrt(self.factor))
        options = {"a": f"it grows about {root:g} times (the square root of {self.factor})",
                   "b": f"it grows about {self.factor} times",
                   "c": "it stays about the same"}
        self.named = {"b": "variance_for_spread", "c": "no_growth"}
        why = {"a": (f"The variance of q . k is d_k, so its spread is sqrt(d_k): from sqrt({self.d_k}) to "
                     f"sqrt({self.d_k * self.factor}), {root:g} times as large. Gaps between scores grow the same way."),
               "b": (f"{self.factor} times is how the variance grows. The spread, and the gap between two scores, "
                     "is its square root."),
               "c": "That is what happens with the division by sqrt(d_k). Without it the scores spread out."}
        super().__init__(
            question=(f"Queries and keys have independent entries of mean 0 and variance 1. Keys are {self.d_k} "
                      f"wide; you make them {self.factor} times as wide and do NOT divide by sqrt(d_k). "
                      "What happens to the typical gap between two scores of a row?"),
            options=options, answer="a", why=why,
            hint="Section 1 measured the variance of q . k. Is a gap between two scores measured in the units "
                 "of the variance, or of its square root?")


class SaturatedRowExercise(_NamedChoice):
    """Predict which of two rows of raw scores saturates once divided by its own sqrt(d_k).

    rows: dict mapping a row's name (e.g. "A") to (raw scores, d_k).
    threshold: a row saturates when its largest scaled weight exceeds it.
    The options are each row, "both" and "neither"; the right one is computed
    from softmax(scores / sqrt(d_k)). The wrong option a learner reaches by
    judging the raw scores (the row whose raw largest-minus-second gap is
    widest, when that row does not saturate once scaled) is named ``no_scaling``, the key of a forgotten division everywhere. Raises ValueError naming the
    argument for fewer than two rows, a row of fewer than two finite scores,
    or a d_k that is not a positive whole number, or threshold outside (0, 1).
    """

    def __init__(self, rows, threshold=0.99):
        if not isinstance(rows, dict) or len(rows) != 2:
            raise ValueError(f"rows must map two row names to (scores, d_k); got {rows!r}")
        if not 0 < threshold < 1:
            raise ValueError(f"threshold must be between 0 and 1; got {threshold!r}")
        self.rows, self.largest = {}, {}
        gaps = {}
        for name, item in rows.items():
            try:
                scores, d_k = item
            except (TypeError, ValueError):
                raise ValueError(f"rows[{name!r}] must be (scores, d_k); got {item!r}") from None
            scores = np.asarray(scores, dtype=float)
            if scores.ndim != 1 or scores.size < 2 or not np.all(np.isfinite(scores)):
                raise ValueError(f"rows[{name!r}] scores must be at least two finite numbers; got {scores!r}")
            if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
                raise ValueError(f"rows[{name!r}] d_k must be a positive whole number; got {d_k!r}")
            key = str(name).lower()
            self.rows[key] = (scores, int(d_k))
            self.largest[key] = float(softmax(scores / np.sqrt(d_k)).max())
            top = np.sort(scores)[::-1]
            gaps[key] = float(top[0] - top[1])
        names = list(self.rows)
        hot = [k for k in names if self.largest[k] > threshold]
        right = hot[0] if len(hot) == 1 else ("both" if hot else "neither")
        widest = max(names, key=gaps.get)
        options = {k: f"row {k.upper()}" for k in names}
        options.update(both="both rows", neither="neither row")
        shown = ", ".join(f"row {k.upper()} {self.largest[k]:.3f}" for k in names)
        why = {k: (f"Divide each row by its own sqrt(d_k) first: the largest weights are {shown}.")
               for k in [*names, "both", "neither"]}
        if widest not in hot:       # the widest raw gap, and yet this row does not saturate once scaled
            why[widest] = (f"The scaling is forgotten: row {widest.upper()} has the widest raw gap, but it is "
                           f"divided by a larger sqrt(d_k). " + why[widest])
        self.named = {widest: "no_scaling"} if widest not in hot else {}
        super().__init__(
            question=(f"Two rows of raw scores (not yet divided), each from keys of its own width. After the "
                      f"division by sqrt(d_k) and the softmax, which row puts more than {threshold:g} of its "
                      "weight on one key?"),
            options=options, answer=right, why=why,
            hint="The softmax sees the scaled scores. Divide each row by the square root of its own d_k, then "
                 "look at the gap between its largest score and the rest: a gap of 5 already gives e^5, about 150.")
        self.solution_text = ("my_largest = {my_name: softmax(np.asarray(my_s) / np.sqrt(my_d_k)).max()   "
                              "# each row's largest scaled weight\n"
                              "              for my_name, (my_s, my_d_k) in rows.items()}\n"
                              f"# {shown}\nanswer = {right!r}")

    def question(self):
        print(self.question_text)
        for key, (scores, d_k) in self.rows.items():
            print(f"  row {key.upper()}: d_k = {d_k:5d}, raw scores {np.array2string(scores, precision=1)}")
        print("  options: " + ", ".join(repr(k) for k in self.OPTIONS))


class KeyDesignExercise(_Exercise):
    """Design a W_K with which ``query`` gives ``target`` the largest attention weight.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k), W_K the one to
    replace; tokens: the n words. The answer is a new W_K of W_K's shape. It
    is right when, with the scaled weights softmax(q K^T / sqrt(d_k)) of
    Vaswani et al. (2017, sec. 3.2.1), ``target`` gets more weight than any
    other word (by more than 1e-9). Feedback keys: None, ``order_kept`` (a
    positive multiple of the old W_K: every score scales alike, the order
    stays), ``itself`` (the query word now wins), ``other_word_wins`` (another
    word still wins; the weights are shown), ``shape``, and the readers'
    ``not_numbers``, ``nan_inf``... Never raises on an answer; raises
    ValueError naming the argument for an instructor's bad inputs, or when the
    old W_K already gives ``target`` the largest weight.
    """

    def __init__(self, X, W_Q, W_K, tokens, query="bank", target="The"):
        self.X, self.W_Q, self.W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        if self.W_Q.shape != self.W_K.shape or self.W_Q.shape[0] != self.X.shape[1]:
            raise ValueError(f"W_Q and W_K must both be (d_model, d_k) with d_model = {self.X.shape[1]}; "
                             f"got W_Q {self.W_Q.shape}, W_K {self.W_K.shape}")
        self.tokens = [str(t) for t in tokens]
        if len(self.tokens) != self.X.shape[0]:
            raise ValueError(f"tokens must give one word per row of X ({self.X.shape[0]}); got {len(self.tokens)}")
        self.i, self.j = _index(self.tokens, query, "query"), _index(self.tokens, target, "target")
        if self.i == self.j:
            raise ValueError(f"target must be another word than the query; got {target!r} for both")
        if self._winner(self.W_K) == self.j:
            raise ValueError(f"target {target!r} already gets the largest weight with this W_K: nothing to design")
        self.query, self.target = query, target
        self.hint_text = (f"A word x scores x @ (W_K @ q) against {query}'s query q, so only the vector u = W_K @ q "
                          f"matters. Write each word's score with u = (u1, u2, ...), and choose u so that "
                          f"{target}'s score beats every other; then find a W_K with W_K @ q = u.")
        self.solution_text = self._solution()

    def _weights(self, W_K):
        q, K = self.X[self.i] @ self.W_Q, self.X @ W_K
        s = K @ q / np.sqrt(K.shape[-1])
        return softmax(s)

    def _winner(self, W_K):
        w = self._weights(W_K)
        top = int(np.argmax(w))
        return top if np.all(np.delete(w, top) < w[top] - 1e-9) else None

    def _solution(self):
        q = self.X[self.i] @ self.W_Q
        # One u that works: the target's own vector minus the mean of the others' (its score is then the
        # highest whenever the target's vector stands apart), lengthened until the target clearly wins.
        base = self.X[self.j] - np.delete(self.X, self.j, axis=0).mean(axis=0)
        directions = [base] + list(np.random.default_rng(0).standard_normal((64, self.X.shape[1])))
        found = None
        for direction in directions:              # the first that works; seeded, so always the same
            for scale in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
                u = scale * direction
                W = np.outer(u, q) / (q @ q)      # W_K @ q = u: one such W_K, (d_model, d_k)
                if self._winner(W) == self.j and self._weights(W)[self.j] >= 0.7:
                    found = (u, W)
                    break
            if found:
                break
        if found is None:
            raise ValueError(f"target {self.target!r}: no W_K was found that gives it the largest weight "
                             "(its vector may lie between the other words' vectors); choose another target")
        u, W = found
        return (f"# A word x scores x @ (W_K @ q) with q = {self.query}'s query = {_fmt(q)}: choose u = W_K @ q\n"
                f"# so that {self.target} scores highest, e.g. u = {_fmt(u)} (scores {_fmt(self.X @ u)}),\n"
                f"# then any W_K with W_K @ q = u, e.g. np.outer(u, q) / (q @ q).\n"
                f"answer = np.array({np.round(W, 6).tolist()})")

    def _feedback(self, answer):
        arr, problem = _read(answer)
        if problem is not None:
            return problem
        if arr.shape != self.W_K.shape:
            return Feedback(False, "shape", f"Wrong shape: a new W_K is {self.W_K.shape[0]} x {self.W_K.shape[1]}, "
                                            f"as the old one (d_model x d_k); yours has shape {arr.shape}.")
        if not np.all(np.isfinite(arr)):
            return Feedback(False, "nan_inf", "Your W_K contains NaN or inf: give ordinary numbers.")
        w = self._weights(arr)
        shown = ", ".join(f"{t} {x:.3f}" for t, x in zip(self.tokens, w))
        winner = self._winner(arr)
        if winner == self.j:
            return Feedback(True, None, f"Correct! With your W_K, {self.query}'s weights are {shown}: "
                                        f"{self.target} wins, with the same query and the same word vectors.")
        flat_old, flat_new = self.W_K.ravel(), arr.ravel()
        c = float(flat_new @ flat_old / (flat_old @ flat_old))
        if c > 0 and np.allclose(arr, c * self.W_K, atol=1e-9):
            return Feedback(False, "order_kept", f"Not yet: your W_K is {c:g} times the old one, so every score is "
                                                 f"{c:g} times as large and their order stays ({shown}). Change the "
                                                 "direction of the keys, not their size.")
        if winner == self.i:
            return Feedback(False, "itself", f"Not yet: now {self.query} scores its own key highest ({shown}).")
        return Feedback(False, "other_word_wins", f"Not yet: with your W_K, {self.query}'s weights are {shown}; "
                                                  f"{self.target} must get the most.")
