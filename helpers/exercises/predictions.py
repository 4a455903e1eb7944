"""Exercises of understanding for notebooks 02 and 03: predict, from the inputs, what attention will do.

Each is a :class:`ChoiceExercise` whose right option is computed from the
inputs the notebook shows (so an instructor who edits them edits nothing
else), and whose wrong options are named after the misconception that leads
to them (ChoiceExercise's ``named``): the feedback key is that name, not
``chose_<option>``.

- :class:`LeanOnExercise` (notebook 02): which word a query leans on most in
  a sentence it has not seen. Wrong answers: the longest key, the key that
  points best along the query, the word whose vector is most like the
  asking word's own.
- :class:`LongKeyCauseExercise` (notebook 02): why some rows put nearly all
  their weight on one word, chosen among stated causes. Wrong answers: where
  the word stands, its value, its word vector being like theirs.
- :class:`SpreadGrowthExercise` (notebook 03): how the typical gap between
  two unscaled scores grows when d_k is multiplied (by the square root of
  the factor; the factor itself is the variance's growth).
- :class:`SaturatedRowExercise` (notebook 03): which of two rows of raw
  scores, each with its own d_k, puts nearly all its weight on one key once
  scaled; judging the raw scores (``no_scaling``) is the named mistake.
"""

from __future__ import annotations

import numpy as np

from helpers.attention import softmax
from helpers.exercises.base import ChoiceExercise, _index, _matrix

__all__ = ["LeanOnExercise", "LongKeyCauseExercise", "SpreadGrowthExercise", "SaturatedRowExercise"]


class LeanOnExercise(ChoiceExercise):
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
                              + f"\nanswer = {tokens[right]!r}   # the largest score")

    def _how_to_answer(self):
        # The words as the sentence writes them ('The', not 'the'); any case is accepted.
        words = list(self.OPTIONS.values())
        listed = ", ".join(repr(w) for w in words[:-1]) + f" or {words[-1]!r}"
        return f"Answer with one of the words {listed}, in quotes (a string; any case)."

    def question(self):
        """Print the question; the options are the sentence's words."""
        print(self.question_text)
        print("  words:", ", ".join(self.OPTIONS.values()))


def _vec(x):
    """A short vector as the notebook prints it in prose: [4, 0], [4.5, -1.5]."""
    return "[" + ", ".join(f"{float(v):g}" for v in np.asarray(x, dtype=float)) + "]"


class LongKeyCauseExercise(ChoiceExercise):
    """Explain a printed result: why the rows of ``rows`` put nearly all their weight on ``key``.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v); tokens: the n words;
    rows: the asking words whose rows the notebook printed; key: the word they lean on. The causes
    offered: (a) where the word stands in the sentence (``position``: these vectors carry no position,
    so no score depends on the order), (b) its key, the longest of the sentence, pointing as nearly
    along each of their queries as any key does (the right one: score = |q| |k| cos, Vaswani et al.
    2017, sec. 3.2.1, and the softmax keeps the order), (c) its value (``value_given``: the weights
    come from queries and keys only), (d) its word vector being like theirs (``similar_vector``:
    attention compares queries with keys, not word vectors). Raises ValueError naming the argument
    unless ``key``'s key is the longest, takes the largest weight in every row of ``rows``, and no
    other key points more nearly along any of their queries (the cause (b) states): then another
    exercise fits those inputs better.
    """

    def __init__(self, X, W_Q, W_K, W_V, tokens, rows, key):
        X, W_Q, W_K, W_V = (_matrix(m, name) for m, name in ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V")))
        tokens = [str(t) for t in tokens]
        if len(tokens) != X.shape[0] or W_Q.shape[0] != X.shape[1] or W_K.shape != W_Q.shape or W_V.shape[0] != X.shape[1]:
            raise ValueError(f"X must have one row per token and W_Q, W_K, W_V one row per entry of a word vector; "
                             f"got X {X.shape}, {len(tokens)} tokens, W_Q {W_Q.shape}, W_K {W_K.shape}, W_V {W_V.shape}")
        if isinstance(rows, str) or not rows:
            raise ValueError(f"rows must be a list of the asking words; got {rows!r}")
        j = _index(tokens, key, "key")
        asking = [_index(tokens, r, "rows") for r in rows]
        Q, K = X @ W_Q, X @ W_K
        scores = Q @ K.T
        lengths = np.linalg.norm(K, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cosines = scores / (np.linalg.norm(Q, axis=1)[:, None] * lengths[None, :])
        if int(np.argmax(lengths)) != j:
            raise ValueError(f"key must be the word with the longest key; got {key!r}, whose key is "
                             f"{lengths[j]:.3g} long against {tokens[int(np.argmax(lengths))]!r}'s {lengths.max():.3g}")
        for i in asking:
            if int(np.argmax(scores[i])) != j or np.nanmax(cosines[i]) > cosines[i, j] + 1e-9:
                raise ValueError(f"rows: the row of {tokens[i]!r} must put its largest weight on {key!r}, "
                                 f"whose key no other key may point more nearly along {tokens[i]!r}'s query")
        names = [tokens[i] for i in asking]
        them = " and ".join(f"'{t}'" for t in names) if len(names) < 3 else \
            ", ".join(f"'{t}'" for t in names[:-1]) + f" and '{names[-1]}'"
        options = {
            "a": f"Where '{key}' stands in the sentence, relative to {them}.",
            "b": f"The key of '{key}', {_vec(K[j])}: the longest in the sentence, and no other key points more "
                 "nearly along their queries.",
            "c": f"The value of '{key}', {_vec(X[j] @ W_V)}: the weights go where there is the most to hand over.",
            "d": f"The word vector of '{key}', {_vec(X[j])}, is like theirs.",
        }
        self.named = {"a": "position", "c": "value_given", "d": "similar_vector"}
        each = "; ".join(f"'{tokens[i]}' asks {_vec(Q[i])} and scores '{key}' {scores[i, j]:g}, the next key "
                         f"{np.sort(scores[i])[-2]:g}" for i in asking)
        like = ", ".join(f"{float(X[i] @ X[j] / (np.linalg.norm(X[i]) * np.linalg.norm(X[j]))):.2f}" for i in asking)
        why = {
            "a": ("These vectors carry no position: shuffle the words and every score stays the same. "
                  "The cause must be in the queries and keys."),
            "b": (f"A score is |q| x |k| x cos. The key of '{key}' is the longest, and it points as nearly along "
                  f"their queries as any key does, so it wins on both factors: {each}."),
            "c": ("The values do not enter the weights: the weights are softmax(Q K^T / sqrt(d_k)), queries "
                  "against keys. The values decide only what the output mixes."),
            "d": (f"Even a word vector that is the most like theirs would not explain it: attention never compares "
                  f"word vectors, it scores each query against each key, x W_Q against x W_K. (Here the vectors "
                  f"are not even alike: the cosines of theirs with the vector of '{key}' are {like}.)"),
        }
        super().__init__(
            question=(f"The rows of {them} put nearly all their weight on '{key}'. Which cause explains it?"),
            options=options, answer="b", why=why,
            hint=("A weight follows its score, and a score is |q| x |k| x cos. Which of the causes changes a "
                  "query or a key? Their queries are their vectors times W_Q; compare each key's length and direction."))


class SpreadGrowthExercise(ChoiceExercise):
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


class SaturatedRowExercise(ChoiceExercise):
    """Predict which of two rows of raw scores saturates once divided by its own sqrt(d_k).

    rows: dict mapping a row's name (e.g. "A") to (raw scores, d_k).
    threshold: a row saturates when its largest scaled weight exceeds it.
    The options are each row, "both" and "neither"; the right one is computed
    from softmax(scores / sqrt(d_k)). The wrong option a learner reaches by
    leaving out the division (the rows whose softmax(scores) saturates) is
    named ``no_scaling``, the key of a forgotten division everywhere; the
    row of the widest keys, when it does not saturate once divided, is named
    ``width_saturates`` (wide keys saturate only undivided). A wrong answer
    is told what to compute, not the weights; the right one shows them.
    Raises ValueError naming the
    argument for fewer than two rows, a row of fewer than two finite scores,
    or a d_k that is not a positive whole number, or threshold outside (0, 1).
    """

    def __init__(self, rows, threshold=0.99):
        if not isinstance(rows, dict) or len(rows) != 2:
            raise ValueError(f"rows must map two row names to (scores, d_k); got {rows!r}")
        if not 0 < threshold < 1:
            raise ValueError(f"threshold must be between 0 and 1; got {threshold!r}")
        self.rows, self.largest, raw = {}, {}, {}
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
            raw[key] = float(softmax(scores).max())

        def pick(hot):
            return hot[0] if len(hot) == 1 else ("both" if hot else "neither")

        names = list(self.rows)
        right = pick([k for k in names if self.largest[k] > threshold])
        undivided = pick([k for k in names if raw[k] > threshold])     # the answer without the division
        widest = max(names, key=lambda k: self.rows[k][1])
        options = {k: f"row {k.upper()}" for k in names}
        options.update(both="both rows", neither="neither row")
        shown = ", ".join(f"row {k.upper()} {self.largest[k]:.3f}" for k in names)
        # A wrong answer gets the reason and what to compute, never the weights that decide it.
        compute = (f"Compute each row's largest weight after the division and the softmax, and compare it "
                   f"with {threshold:g}.")
        why = {k: compute for k in [*names, "both", "neither"]}
        why[right] = f"Each row divided by its own sqrt(d_k), the largest weights are {shown}."
        self.named = {}
        if undivided != right:
            which = {"both": "both rows would", "neither": "neither row would"}.get(undivided, f"only row {undivided.upper()} would")
            why[undivided] = (f"The scaling is forgotten: undivided, {which} put over {threshold:g} of the weight on one key; but the softmax "
                              f"sees each row divided by its own sqrt(d_k). " + compute)
            self.named[undivided] = "no_scaling"
        if widest != right and widest not in self.named and self.largest[widest] <= threshold:
            scores, d_k = self.rows[widest]
            top = np.sort(scores / np.sqrt(d_k))[::-1]
            why[widest] = (f"Wide keys saturate only when nobody divides: divided by sqrt({d_k}) = "
                           f"{np.sqrt(d_k):g}, row {widest.upper()}'s largest score leads the next by only "
                           f"{top[0] - top[1]:.3g}. " + compute)
            self.named[widest] = "width_saturates"
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
