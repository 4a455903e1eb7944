"""Exercises of understanding: design W_K so that a query prefers a word (notebook 01); what a heatmap supports (01).

Many matrices W_K are right, so :class:`KeyDesignExercise` checks the
property a right answer must have (the query's weight on one word above its
weight on another, or above every other word's), and names the wrong answers
learners give: the matrix unchanged, all of it multiplied by a number (which
changes no preference), a tie, the query word itself winning, another word
still winning, the keys themselves instead of the matrix that makes them.
Notebook 01 asks for *flooded* over *river*; ``over=None`` asks for one
word over every other (notebook 02 asked that until issue 33, which found it
repeated 01's exercise).
"""

from __future__ import annotations

import numpy as np

from helpers.attention import softmax
from helpers.exercises.base import ChoiceExercise, _Exercise, _index, _matrix
from helpers.exercises.feedback import Feedback, _fmt, _read

__all__ = ["KeyDesignExercise", "HeatmapClaimExercise"]


def _line(x):
    """_fmt on one line: an array's rows joined, for a comment or a sentence."""
    return " ".join(_fmt(x).split())

#: Two scores closer than this (relative to their size) are a tie, not a preference.
TIE_RTOL = 1e-9


def _widest(D, steps=2000):
    """The point of the convex hull of D's rows nearest to 0 (Gilbert's algorithm, 1966).

    D: (m, d). When some u has D u > 0 in every row, the returned point is
    such a u, the one with the widest margin min(D u) / |u|; otherwise it
    tends to 0.
    """
    u = D.mean(axis=0)
    for _ in range(steps):
        step = u - D[int(np.argmin(D @ u))]        # towards the row that u scores lowest
        size = float(step @ step)
        gamma = float(np.clip(u @ step / size, 0.0, 1.0)) if size else 0.0
        if gamma == 0.0:
            break
        u = u - gamma * step
    return u


class KeyDesignExercise(_Exercise):
    """Design a key matrix W_K under which ``query`` puts more weight on ``prefer`` than on ``over``.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k), W_K the matrix the
    notebook uses; tokens: the n words; query, prefer: two of them (they may
    be one word); over: another word, or None for "over every other word"
    (an instructor's case). The answer is a (d_model, d_k) matrix W_K'; it is
    right when, with Q = X W_Q and K = X W_K', the row of ``query`` in
    softmax(Q K^T / sqrt(d_k)) puts more weight on ``prefer`` than on
    ``over`` (with over=None, than on any other word): the scaled dot product
    of Vaswani et al. (2017, sec. 3.2.1); the weights keep the order of the
    scores, so the scaling changes nothing here. Feedback keys: None (right),
    ``unchanged`` (the notebook's W_K), ``scaled_all`` (a positive multiple of
    it: every score scales alike, the order stays), ``tie``, ``itself`` (the
    query word's own key beats ``prefer``'s), ``still_prefers`` (another word
    still beats ``prefer``, named), ``keys_given`` (the keys X W_K instead of
    the matrix), ``saturated`` (entries so large that both weights underflow
    to 0), ``shape``, ``nan_inf`` and the reading keys every checker shares
    (``not_attempted``, ``not_numbers``, ``function``, ...). Never raises on
    an answer. Raises ValueError naming the argument for an instructor's bad
    inputs: mismatched shapes, a word not among the tokens, prefer and over
    with the same vector, a query of zeros, a W_K that already meets the
    property (nothing to design), or a prefer that no W_K makes win.
    """

    #: why the static page cannot check it (helpers/exercises/static.py)
    static_needs_kernel = "it has many right answers (any W_K under which the query prefers the word), which only the kernel can judge."

    def __init__(self, X, W_Q, W_K, tokens, query, prefer, over=None):
        self.X, self.W_Q, self.W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        n, d_model = self.X.shape
        if self.W_Q.shape[0] != d_model or self.W_K.shape != self.W_Q.shape:
            raise ValueError(f"W_Q and W_K must both have shape (d_model, d_k) with d_model = {d_model}; "
                             f"got {self.W_Q.shape} and {self.W_K.shape}")
        self.tokens = [str(t) for t in tokens]
        if len(self.tokens) != n:
            raise ValueError(f"tokens must name the {n} rows of X; got {len(self.tokens)} tokens")
        self.i, self.j = _index(self.tokens, query, "query"), _index(self.tokens, prefer, "prefer")
        self.k = None if over is None else _index(self.tokens, over, "over")
        self.query, self.prefer, self.over = query, prefer, over
        if self.k is not None and (self.j == self.k or np.allclose(self.X[self.j], self.X[self.k])):
            raise ValueError(f"prefer and over must be two words with different vectors; got {prefer!r} and {over!r}")
        self.q = self.X[self.i] @ self.W_Q
        if not np.any(self.q):
            raise ValueError(f"the query of {query!r} is all zeros: no W_K can make it prefer any key")
        self.shape = self.W_K.shape
        #: the words prefer must beat, and how the feedback names them
        self.others = [self.k] if self.k is not None else [m for m in range(n) if m != self.j]
        self.beyond = f"'{over}'" if over is not None else "every other word"
        self.than = f"'{over}'" if over is not None else "any other word"
        given = self._scores(self.W_K)
        self.rival_given = self._rival(given)
        if given[self.j] > given[self.rival_given]:
            raise ValueError(f"W_K must be a matrix under which {query!r} does not yet prefer {prefer!r} over "
                             f"{self.beyond} (the exercise asks the learner to change that); got one under which "
                             f"it already prefers {prefer!r} over {self.beyond}")
        self.title = f"a W_K under which '{query}' prefers '{prefer}' over {self.beyond}"
        self.hint_text = self._hint()
        self.solution_text = self._solution()

    # ------------------------------------------------------------ the property

    def _scores(self, W_K):
        return (self.X @ W_K) @ self.q

    def _weights(self, W_K):
        return softmax(self._scores(W_K) / np.sqrt(W_K.shape[1]))

    def _direction(self, W_K):
        """u = W_K q: the query scores every word x by x . u, so u is all a W_K shows this query."""
        return W_K @ self.q

    def _rival(self, scores):
        """The word prefer must beat: over, or (over=None) the highest-scoring other word."""
        return self.others[int(np.argmax(scores[self.others]))]

    def _shown(self, W_K):
        """The weights the feedback shows: prefer's and over's, or (over=None) every word's."""
        w = self._weights(W_K)
        listed = [self.j, self.k] if self.k is not None else range(len(self.tokens))
        return ", ".join(f"'{self.tokens[m]}' {_fmt(w[m])}" for m in listed)

    def _towards(self, W_K, r):
        """What to change when word r still beats prefer: u, and the direction from r to prefer."""
        return (f"The query scores a word x by x . u, with u = W_K q = {_line(self._direction(W_K))}. "
                f"'{self.prefer}' minus '{self.tokens[r]}' is {_line(self.X[self.j] - self.X[r])}: make u point "
                "more that way. The hint cell below may help.")

    # ------------------------------------------------------------ feedback

    def _feedback(self, answer):
        arr, problem = _read(answer)
        if problem is not None:
            return problem
        n, d_model = self.X.shape
        if arr.shape != self.shape:
            if arr.shape == (n, self.shape[1]):
                return Feedback(False, "keys_given",
                                f"Your answer has one row per word, {arr.shape}: it looks like the keys themselves. "
                                f"The exercise asks for W_K, the {self.shape} matrix that makes every key from its "
                                f"word (k = x W_K).")
            return Feedback(False, "shape",
                            f"Wrong shape: W_K has shape {self.shape}, one row per entry of a word vector "
                            f"(d_model = {d_model}) and one column per entry of a key (d_k = {self.shape[1]}, as "
                            f"wide as the query); yours has shape {arr.shape}. Write it as a list of "
                            f"{self.shape[0]} rows, e.g. np.array([[a, b], [c, d]]).")
        if not np.all(np.isfinite(arr)):
            return Feedback(False, "nan_inf",
                            "Your W_K contains NaN or infinity. Every entry must be an ordinary number.")
        scores = self._scores(arr)
        if not np.all(np.isfinite(scores)):
            return Feedback(False, "nan_inf",
                            "Your W_K gives scores that overflow: the result contains infinity or NaN. "
                            "Use ordinary sizes: only how the entries compare matters here.")
        old = self.tokens[self.rival_given]
        if np.array_equal(arr, self.W_K):
            return Feedback(False, "unchanged",
                            f"That is the notebook's own W_K, under which '{self.query}' prefers '{old}' "
                            f"(weights {self._shown(arr)}). Change it.")
        c = self._multiple(arr)
        if c is not None and c > 0:
            return Feedback(False, "scaled_all",
                            f"Your W_K is the notebook's multiplied by {_fmt(c)}. That multiplies every score by "
                            f"{_fmt(c)}, so the order of the keys stays: '{self.query}' still prefers '{old}' "
                            f"(weights {self._shown(arr)}). A larger factor only sharpens the softmax. Change how "
                            "the entries compare, not how big they all are.")
        if not np.any(self._direction(arr)):
            return Feedback(False, "tie",
                            f"Under your W_K every word scores 0 against the query of '{self.query}' (W_K q is all "
                            f"zeros), so '{self.prefer}' and {self.beyond} tie. Give W_K q a direction.")
        r = self._rival(scores)
        rival = self.tokens[r]
        s_j, s_r = scores[self.j], scores[r]
        if abs(s_j - s_r) <= TIE_RTOL * max(abs(s_j), abs(s_r), 1e-300) or s_j == s_r:
            return Feedback(False, "tie",
                            f"Under your W_K, '{self.prefer}' and '{rival}' tie: both score {_fmt(s_j)}. "
                            f"The query {_line(self.q)} scores a word x by x . u with u = W_K q = "
                            f"{_line(self._direction(arr))}; the two words' vectors differ by "
                            f"{_line(self.X[self.j] - self.X[r])}, and u is at right angles to that. "
                            f"Tilt u towards '{self.prefer}'.")
        if s_j < s_r and r == self.i:
            return Feedback(False, "itself",
                            f"Not yet: under your W_K '{self.query}' scores its own key above '{self.prefer}' "
                            f"(scores {_fmt(s_r)} against {_fmt(s_j)}; weights {self._shown(arr)}). "
                            + self._towards(arr, r))
        if s_j < s_r:
            return Feedback(False, "still_prefers",
                            f"Not yet: under your W_K '{self.query}' still prefers '{rival}' to '{self.prefer}' "
                            f"(scores {_fmt(s_r)} against {_fmt(s_j)}; weights {self._shown(arr)}). "
                            + self._towards(arr, r))
        w = self._weights(arr)
        if not w[self.j] > w[r] and np.max(np.abs(scores)) <= 50:   # a gap below the weights' precision
            return Feedback(False, "tie",
                            f"Under your W_K, '{self.prefer}' and '{rival}' get the same weight "
                            f"({_fmt(w[self.j])}): their scores differ by less than the softmax can show. Give "
                            f"'{self.prefer}' a clearly larger score.")
        if not w[self.j] > w[r]:   # the scores are in order, but the softmax gave both weight 0 (underflow)
            return Feedback(False, "saturated",
                            f"Your W_K scores '{self.prefer}' above '{rival}', but its entries are so large that "
                            f"the softmax gives all the weight to '{self.tokens[int(np.argmax(scores))]}' and both of "
                            f"them 0. Use smaller entries: only how they compare matters.")
        text = (f"Correct! Under your W_K, '{self.query}' puts more weight on '{self.prefer}' than on "
                f"{self.than}: {self._shown(arr)}.")
        if c is not None and c < 0:
            text += (f" You got there by multiplying the whole matrix by {_fmt(c)}, which reverses every "
                     f"preference: '{self.tokens[int(np.argmax(scores))]}' now takes the most weight. The "
                     "property holds; a gentler W_K changes only what it must.")
        return Feedback(True, None, text)

    def _multiple(self, arr):
        """c when arr = c W_K (to rounding), else None."""
        flat, base = arr.ravel(), self.W_K.ravel()
        c = float(flat @ base / (base @ base))
        return c if np.allclose(flat, c * base, rtol=1e-9, atol=1e-12) else None

    # ------------------------------------------------------------ hint and solution

    def _hint(self):
        listed = [self.j, *self.others]
        words = ", ".join(f"'{self.tokens[m]}' {_line(self.X[m])}" for m in listed)
        return (f"The query q = {_line(self.q)} scores a word x by q . (x W_K) = x . u, with u = W_K q: only u "
                f"decides the order. The words: {words}. Choose u so that '{self.prefer}' scores highest of these "
                "(an entry of u may be negative), then a W_K with W_K q = u.")

    def _candidates(self):
        """W_K matrices to try, simplest first, each with how it was made (seeded: always the same list)."""
        if self.shape[0] == self.shape[1]:
            yield self.W_K[::-1, ::-1], ("the notebook's W_K with its two dimensions traded: the other entry now "
                                         "counts more" if self.shape == (2, 2) else
                                         "the notebook's W_K with its rows and columns reversed")
        away = f"'{self.over}'" if self.k is not None else "the mean of the other words"
        base = self.X[self.j] - self.X[self.others].mean(axis=0)   # u along this scores prefer above the mean
        widest = _widest(self.X[self.j] - self.X[self.others])
        margin = float(np.min((self.X[self.j] - self.X[self.others]) @ widest))
        widest = [(widest / margin, f"the direction that scores '{self.prefer}' furthest above {self.than}")] \
            if margin > 0 and len(self.others) > 1 else []
        tried = np.random.default_rng(0).standard_normal((64, self.X.shape[1]))
        for direction, what in [(base, f"'{self.prefer}' minus {away}"), *widest,
                                *((d, "a direction found by trying") for d in tried)]:
            for scale in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
                u = scale * direction
                times = "" if scale == 1 else f"{scale:g} x "
                yield (np.outer(u, self.q) / (self.q @ self.q),   # W_K q = u: one such W_K
                       f"W_K q = u = {_line(u)}, {times}{what}:\nW_K = np.outer(u, q) / (q @ q) gives it")

    def _solution(self):
        for W, how in self._candidates():
            W = np.round(W, 4)                      # the matrix exactly as the solution prints it
            if self._feedback(W).correct:
                break
        else:
            raise ValueError(f"prefer {self.prefer!r}: no W_K was found under which {self.query!r} prefers it over "
                             f"{self.beyond} (its vector may lie among the others'); choose another prefer")
        rows = ", ".join("[" + ", ".join(repr(float(v) + 0.0) for v in row) + "]" for row in W)
        return "\n".join([
            f"answer = np.array([{rows}])",
            *(f"# {line}" for line in f"{how}.".splitlines()),
            f"# Keys: {_line(self.X @ W)}; weights of '{self.query}': {_fmt(self._weights(W))}",
            f"# ({self._shown(W)}). Many other matrices are right too.",
        ])


class HeatmapClaimExercise(ChoiceExercise):
    """Which of four claims does a heatmap of attention weights support? (Weights are evidence, not explanation.)

    weights: (n_q, n_k) attention weights, one row per query; one key must
    take the largest weight in every row (ValueError otherwise: the claims
    are about that key). keys: the n_k keys' names. The supported claim is
    the one about what the weights measure, the weight each value gets in
    each output's mix (not its share of the output, which depends on the
    values' lengths too); the three others read intent, importance or a counterfactual
    into them (source 004 on weights and explanations; Jain and Wallace, 2019).
    Feedback keys: None, ``chose_<letter>`` for each wrong claim, ``not_a_choice``.
    """

    def __init__(self, weights, keys):
        W = _matrix(weights, "weights")
        if len(keys) != W.shape[1]:
            raise ValueError(f"keys must name the {W.shape[1]} columns of weights; got {len(keys)} names")
        top = np.argmax(W, axis=1)
        if not np.all(top == top[0]):
            raise ValueError("weights must have one key that takes the largest weight in every row; "
                             f"got the largest weights on {[keys[t] for t in top]}")
        word = keys[int(top[0])]
        options = {
            "a": f"Every word is asking about '{word}'.",
            "b": f"'{word}' is the most important word for what the sentence means.",
            "c": f"In every row, the value of '{word}' gets a larger weight in the mix than any other value.",
            "d": f"Hiding '{word}' with a mask would leave every output much the same.",
        }
        why = {
            "a": ("The weights say where each word reads, not what it looks for. A long key draws weight from any "
                  "query that points even partly its way, whatever that query is looking for."),
            "b": ("Importance for the meaning is a claim about why the model does what it does. A weight is evidence "
                  "about the computation, not an explanation; only changing the input and watching the output "
                  "could test such a claim."),
            "c": (f"An output mixes the values by the weights, and every row's largest weight is on '{word}' "
                  f"(at least {_fmt(float(np.min(np.max(W, axis=1))))})."),
            "d": ("The heatmap cannot tell you that: it shows the weights as they are, not the outputs without a "
                  "key. A mask hands the hidden key's share to the others, so each output moves by that share "
                  "times the gap between the hidden value and the mix of the others."),
        }
        super().__init__("Which claim does the heatmap of the weights support?", options, "c", why=why,
                         hint="Ask of each claim: is it about the numbers in the cells, or about intent, importance "
                              "or a change the heatmap never made?")
