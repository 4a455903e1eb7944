"""An exercise of understanding for notebook 01: design W_K so that a query prefers one key over another.

Many matrices are right, so the checker checks the property a right answer
must have (the query's weight on one word above its weight on another),
and names the wrong answers learners give: the matrix unchanged, all of it
multiplied by a number (which changes no preference), a tie, the keys
themselves instead of the matrix that makes them.
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


class KeyDesignExercise(_Exercise):
    """Design a key matrix W_K under which ``query``'s weight on ``prefer`` is above its weight on ``over``.

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k), W_K the matrix the
    notebook uses, under which ``query`` prefers ``over`` (ValueError
    otherwise: the exercise would ask for nothing). tokens: the n tokens.
    The answer is a (d_model, d_k) matrix W_K'; it is right when, with
    Q = X W_Q and K = X W_K', the row of ``query`` in softmax(Q K^T / sqrt(d_k))
    puts more weight on ``prefer`` than on ``over`` (the scaled dot product of
    Vaswani et al., 2017, sec. 3.2.1; the order of the weights is the order of
    the scores, so the scaling changes nothing here). Feedback keys: None
    (right), ``unchanged``, ``scaled_all``, ``tie``, ``keys_given``,
    ``still_prefers`` (any other matrix under which ``over`` still wins),
    ``saturated`` (entries so large that both weights underflow to 0),
    ``shape``, ``nan_inf`` and the reading keys every checker shares
    (``not_attempted``, ``not_numbers``, ``function``, ...). Never raises on an answer.
    """

    def __init__(self, X, W_Q, W_K, tokens, query, prefer, over):
        self.X, self.W_Q, self.W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        n, d_model = self.X.shape
        if self.W_Q.shape[0] != d_model or self.W_K.shape != self.W_Q.shape:
            raise ValueError(f"W_Q and W_K must both have shape (d_model, d_k) with d_model = {d_model}; "
                             f"got {self.W_Q.shape} and {self.W_K.shape}")
        if len(tokens) != n:
            raise ValueError(f"tokens must name the {n} rows of X; got {len(tokens)} tokens")
        self.tokens = list(tokens)
        self.i, self.j, self.k = (_index(tokens, query, "query"), _index(tokens, prefer, "prefer"),
                                  _index(tokens, over, "over"))
        self.query, self.prefer, self.over = query, prefer, over
        if self.j == self.k or np.allclose(self.X[self.j], self.X[self.k]):
            raise ValueError(f"prefer and over must be two words with different vectors; got {prefer!r} and {over!r}")
        self.q = self.X[self.i] @ self.W_Q
        if not np.any(self.q):
            raise ValueError(f"the query of {query!r} is all zeros: no W_K can make it prefer any key")
        given = self._scores(self.W_K)
        if given[self.j] > given[self.k]:
            raise ValueError(f"W_K must be a matrix under which {query!r} prefers {over!r} (the exercise asks the "
                             f"learner to change that); got one under which it already prefers {prefer!r}")
        self.shape = self.W_K.shape
        self.title = f"a W_K under which '{query}' prefers '{prefer}' over '{over}'"
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

    def _pair(self, W_K):
        w = self._weights(W_K)
        return f"'{self.prefer}' {_fmt(w[self.j])}, '{self.over}' {_fmt(w[self.k])}"

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
        s_j, s_k = scores[self.j], scores[self.k]
        if np.array_equal(arr, self.W_K):
            return Feedback(False, "unchanged",
                            f"That is the notebook's own W_K, under which '{self.query}' prefers '{self.over}' "
                            f"(weights {self._pair(arr)}). Change it.")
        c = self._multiple(arr)
        if c is not None and c > 0:
            return Feedback(False, "scaled_all",
                            f"Your W_K is the notebook's multiplied by {_fmt(c)}. That multiplies every score by "
                            f"{_fmt(c)}, so the order of the keys stays: '{self.query}' still prefers '{self.over}' "
                            f"(weights {self._pair(arr)}). A larger factor only sharpens the softmax. Change how the "
                            "entries compare, not how big they all are.")
        if not np.any(self._direction(arr)):
            return Feedback(False, "tie",
                            f"Under your W_K every word scores 0 against the query of '{self.query}' (W_K q is all "
                            f"zeros), so '{self.prefer}' and '{self.over}' tie. Give W_K q a direction.")
        if abs(s_j - s_k) <= TIE_RTOL * max(abs(s_j), abs(s_k), 1e-300) or s_j == s_k:
            return Feedback(False, "tie",
                            f"Under your W_K, '{self.prefer}' and '{self.over}' tie: both score {_fmt(s_j)}. "
                            f"The query {_line(self.q)} scores a word x by x . u with u = W_K q = "
                            f"{_line(self._direction(arr))}; the two words' vectors differ by "
                            f"{_line(self.X[self.j] - self.X[self.k])}, and u is at right angles to that. "
                            f"Tilt u towards '{self.prefer}'.")
        if s_j < s_k:
            return Feedback(False, "still_prefers",
                            f"Not yet: under your W_K '{self.query}' still prefers '{self.over}' (scores "
                            f"{_fmt(s_k)} against {_fmt(s_j)} for '{self.prefer}'; weights {self._pair(arr)}). "
                            f"The query scores a word x by x . u, with u = W_K q = {_line(self._direction(arr))}. "
                            f"'{self.prefer}' minus '{self.over}' is {_line(self.X[self.j] - self.X[self.k])}: make "
                            "u point more that way. The hint cell below may help.")
        w = self._weights(arr)
        if not w[self.j] > w[self.k] and np.max(np.abs(scores)) <= 50:   # a gap below the weights' precision
            return Feedback(False, "tie",
                            f"Under your W_K, '{self.prefer}' and '{self.over}' get the same weight "
                            f"({_fmt(w[self.j])}): their scores differ by less than the softmax can show. Give "
                            f"'{self.prefer}' a clearly larger score.")
        if not w[self.j] > w[self.k]:   # the scores are in order, but the softmax gave both weight 0 (underflow)
            return Feedback(False, "saturated",
                            f"Your W_K scores '{self.prefer}' above '{self.over}', but its entries are so large that "
                            f"the softmax gives all the weight to '{self.tokens[int(np.argmax(scores))]}' and both of "
                            f"them 0. Use smaller entries: only how they compare matters.")
        text = (f"Correct! Under your W_K, '{self.query}' puts more weight on '{self.prefer}' than on "
                f"'{self.over}': {self._pair(arr)}.")
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
        return (f"The query q = {_line(self.q)} scores a word x by q . (x W_K) = x . u, with u = W_K q: only u "
                f"decides the order. '{self.prefer}' is {_line(self.X[self.j])}, '{self.over}' "
                f"{_line(self.X[self.k])}: which entry does '{self.prefer}' have more of? Make W_K weigh it more.")

    def _solution(self):
        swapped = self.W_K[::-1, ::-1]   # the two dimensions trade places: what counted double now counts once
        if self._scores(swapped)[self.j] > self._scores(swapped)[self.k]:
            W, how = swapped, "the notebook's W_K with its two dimensions traded: the other entry now counts more"
        else:   # u = W_K q points straight from `over` to `prefer`: the smallest change of direction that works
            d = self.X[self.j] - self.X[self.k]
            W, how = np.outer(d, self.q) / (self.q @ self.q), f"W_K q = {_fmt(d)}, from '{self.over}' to '{self.prefer}'"
        rows = ", ".join("[" + ", ".join(repr(round(float(v), 4)) for v in row) + "]" for row in W)
        return "\n".join([
            f"answer = np.array([{rows}])",
            f"# {how}.",
            f"# Keys: {_line(self.X @ W)}; weights of '{self.query}': {_fmt(self._weights(W))}",
            f"# ({self._pair(W)}). Many other matrices are right too.",
        ])


class HeatmapClaimExercise(ChoiceExercise):
    """Which of four claims does a heatmap of attention weights support? (Weights are evidence, not explanation.)

    weights: (n_q, n_k) attention weights, one row per query; one key must
    take the largest weight in every row (ValueError otherwise: the claims
    are about that key). keys: the n_k keys' names. The supported claim is
    the one about what the weights measure, how much of each value goes into
    each output; the three others read intent, importance or a counterfactual
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
            "c": f"In every row, the value of '{word}' makes up a larger share of the output than any other value.",
            "d": f"Hiding '{word}' with a mask would leave every output much the same.",
        }
        why = {
            "a": ("The weights say where each word reads, not what it looks for. A long key draws weight from any "
                  "query that points even partly its way, whatever that query is looking for."),
            "b": ("Importance for the meaning is a claim about why the model does what it does. A weight is evidence "
                  "about the computation, not an explanation; only changing the input and watching the output "
                  "could test such a claim."),
            "c": (f"An output is the weighted sum of the values, and every row's largest weight is on '{word}' "
                  f"(at least {_fmt(float(np.min(np.max(W, axis=1))))})."),
            "d": ("The heatmap cannot tell you that: it shows the weights as they are, not the outputs without a "
                  "key. A mask hands the hidden key's share to the others, so each output moves by that share "
                  "times the gap between the hidden value and the mix of the others."),
        }
        super().__init__("Which claim does the heatmap of the weights support?", options, "c", why=why,
                         hint="Ask of each claim: is it about the numbers in the cells, or about intent, importance "
                              "or a change the heatmap never made?")
