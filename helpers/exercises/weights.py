"""Exercises of notebooks 01-03: scores, softmax rows, weights, projections, outputs, a query's question, d_k and scaling."""

from __future__ import annotations

import numpy as np

from helpers.attention import scaled_dot_product_attention, softmax
from helpers.exercises.base import ChoiceExercise, _Names, _NumericExercise, _code, _index, _matrix, _whole
from helpers.exercises.feedback import EXACT_ATOL, Feedback, WEIGHTS_ATOL, _comment, _fmt, _read, _term
from helpers.inputs import refuse_masked_array

__all__ = [
    "ScoreExercise", "SoftmaxRowExercise", "AttentionWeightsExercise", "ProjectionExercise",
    "OutputExercise", "DkPredictionExercise", "ScoreVarianceExercise", "QuestionVectorExercise",
]


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
        refuse_masked_array(scores, "scores", how="pass the plain scores, with -np.inf where a key is masked: "
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
        refuse_masked_array(mask, "mask", how="pass a boolean array, True = may attend")
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
            causal = bool(np.array_equal(keep, np.tril(np.ones_like(keep))))   # the messages name what it hides
            hidden = "the words after it" if causal else "the keys the mask hides"
            variants += [
                ("mask_after_softmax",
                 "The mask was applied after the softmax: the masked weights are 0, but the rows no longer sum "
                 "to 1. Set the masked scores to -inf (np.where(mask, scores, -np.inf)) before the softmax.",
                 softmax(S / root) * keep),
                ("mask_times_zero",
                 "You multiplied the masked scores by 0 (scores * mask). A score of 0 still gets weight, since "
                 f"exp(0) = 1, so {'later words' if causal else 'the hidden keys'} still leak in. Set masked scores "
                 "to -inf before the softmax.",
                 softmax(S / root * keep)),
                ("mask_flipped",
                 ("Your mask is the wrong way round: each word sees itself and the words after it. The causal mask "
                  "is True on and below the diagonal (np.tril), so each word sees itself and the words before it."
                  if causal else
                  "Your mask is the wrong way round: you applied its transpose. Row i of the mask says which keys "
                  "query i may read, so use it as it is: np.where(mask, scores, -np.inf)."),
                 masked_softmax_flipped),
                ("no_mask",
                 f"These are the weights without the mask: every word still sees {hidden}. Set the "
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
    Named mistakes include ``nearest_value`` (the value of the word it leans
    on most, not the mix) and ``divided_by_d_k``.
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
        top = int(np.argmax(W[i]))          # the word it leans on most

        def _also_rounded(value):
            """The rounding note, when this value is also the right answer rounded too far."""
            for k, places in ((0, "whole numbers"), (1, "1 decimal"), (2, "2 decimals")):
                if np.allclose(value, np.round(out[i], k), rtol=0, atol=1e-9):
                    return f" If you rounded: that is the right answer rounded to {places}, too far; keep three decimals."
            return ""
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
            ("divided_by_d_k",
             f"You divided by d_k = {K.shape[1]}; divide by its square root, sqrt(d_k) = {_fmt(root)}.",
             softmax((Q @ K.T)[i] / K.shape[1]) @ V),
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
            ("nearest_value",
             f"That is the value of '{tokens[top]}'. The output leans on '{tokens[top]}' ({W[i, top]:.2f} of its "
             "weight) but also takes a little of every other value: compute the mix." + _also_rounded(V[top]), V[top]),
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


class QuestionVectorExercise(_NumericExercise):
    """The vector u = W_K q with which one word's query scores every word x as x . u (notebook 02).

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k); tokens: the n words; query: the asking word.
    The query q = x_query W_Q has d_k entries. For every word vector x, q . (x W_K) = x . (W_K q): the
    same products, added in another order. So u = W_K q has d_model entries, one per entry of a word
    vector: the query's question asked in the words' own space (notebook 02, section 4, where
    d_model = d_k = 2; the exercise transfers it to other widths). names: the notebook's names for "X",
    "W_Q", "W_K" and the query's position, for the solution. The answer has shape (d_model,).
    Named mistakes, each kept only where these inputs tell it apart: ``query_itself`` (q),
    ``key_of_query`` (x_query W_K, the asking word's own key), ``W_Q_twice`` (W_Q q), ``scores_given``
    (X u, every word's score), ``already_scaled`` (u / sqrt(d_k)), ``word_not_query`` (W_K x_query, the
    word vector in place of its query; only when d_model = d_k). Raises ValueError naming the argument
    for mismatched shapes, a query not among the tokens, or a query of zeros (it asks nothing).
    """

    def __init__(self, X, W_Q, W_K, tokens, query, names=None):
        X, W_Q, W_K = _matrix(X, "X"), _matrix(W_Q, "W_Q"), _matrix(W_K, "W_K")
        n, d_model = X.shape
        if W_Q.shape[0] != d_model or W_K.shape != W_Q.shape:
            raise ValueError(f"W_Q and W_K must both have shape (d_model, d_k) with d_model = {d_model}; "
                             f"got {W_Q.shape} and {W_K.shape}")
        if len(tokens) != n:
            raise ValueError(f"tokens must name the {n} rows of X; got {len(tokens)} tokens")
        i = _index(tokens, query, "query")
        d_k = W_K.shape[1]
        q = X[i] @ W_Q
        if not np.any(q):
            raise ValueError(f"the query of {query!r} is all zeros: it scores every word 0, so it asks nothing")
        u = W_K @ q
        self.expected = u
        self.atol = EXACT_ATOL
        self.container_labels = (None, None)
        self.shape_note = (f"u multiplies word vectors, so it has one entry per entry of a word vector: "
                           f"d_model = {d_model} numbers (the query has d_k = {d_k})")
        self.title = f"the vector with which the query of '{query}' scores every word"
        variants = [
            ("query_itself",
             f"That is the query of '{query}' itself, q = x_{query} W_Q: it scores keys, which are d_k = {d_k} "
             f"wide. The exercise asks for the vector that scores word vectors (d_model = {d_model} wide): "
             f"move W_K over to the query, u = W_K q.", q),
            ("key_of_query",
             f"That is the key of '{query}' (x_{query} W_K): how '{query}' answers, not what it asks. "
             f"Its query comes first, q = x_{query} W_Q; then u = W_K q.", X[i] @ W_K),
            ("W_Q_twice",
             f"You multiplied the query by W_Q again (W_Q q). The scores use the keys, x W_K, so W_K is the "
             f"matrix that moves over to the query: u = W_K q.", W_Q @ q),
            ("scores_given",
             f"Those are the scores of the {n} words, X u: one number per word. The exercise asks for u "
             f"itself, the vector that gives any word's score as x . u.", X @ u),
            ("already_scaled",
             f"That is u divided by sqrt(d_k) = {_fmt(np.sqrt(d_k))}: one step too far. The exercise asks "
             "for the raw score x . u; the division comes after it.", u / np.sqrt(d_k)),
            ("word_not_query",
             f"You multiplied W_K by the word vector of '{query}', not by its query. Its query comes first, "
             f"q = x_{query} W_Q; then u = W_K q.", W_K @ X[i] if d_model == d_k else None),
        ]
        self._set_variants([v for v in variants if v[2] is not None])
        names = _Names(names, {"X": "X", "W_Q": "W_Q", "W_K": "W_K"})
        self.hint_text = (f"A score is q . (x W_K) = x . (W_K q) for any word vector x: the same products, added "
                          f"in another order. Make the query of '{query}' first. Which of the two matrices "
                          "moves over to it, and how wide is the result?")
        scores = ", ".join(f"'{t}' {_fmt(s)}" for t, s in zip(tokens, X @ u))
        self.solution_text = _code([
            (f"my_q = {names['X']}[{names.row(query)}] @ {names['W_Q']}",
             f"the query of '{query}': {_fmt(q)}, d_k = {d_k} numbers"),
            (f"answer = {names['W_K']} @ my_q", f"u = W_K q = {_fmt(u)}, d_model = {d_model} numbers"),
        ]) + "\n" + _comment(f"check: {names['X']} @ answer gives the scores {_fmt(X @ u)}, as "
                             f"({names['X']} @ {names['W_K']}) @ my_q does")
        self.correct_note = (f"Every word x scores x . u against the query of '{query}': here {scores}. "
                             f"u has d_model = {d_model} entries, one per entry of a word vector; the query "
                             f"has d_k = {d_k}.")


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


class ScoreVarianceExercise(_NumericExercise):
    """Predict the variance of a score q . k for random queries and keys of width d_k.

    d_k: the key width. var_q, var_k: the variance of each entry of the query
    and of the key (independent, mean 0). The answer is d_k * var_q * var_k:
    each term q_i k_i has variance var_q * var_k, and the variances of
    independent terms add up (Vaswani et al. 2017, section 3.2.1, footnote 4).
    Tolerance 0.5: the prediction is exact, not a measurement. Named
    mistakes: ``std_not_variance``, ``after_scaling`` (one term's variance),
    ``squared_width`` (d_k squared), ``unit_variances`` (d_k alone, when the
    variances are not 1), ``measured`` (within 10 % of it, not exact).
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
            ("unit_variances",              # told apart only when var_q * var_k is not 1
             f"That is d_k alone, right only when every entry has variance 1. Here one term q_i k_i has "
             f"variance var_q × var_k = {_fmt(var_q)} × {_fmt(var_k)}.", np.asarray(float(d_k))),
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
                             + f", so a typical score is about its square root, {_fmt(np.sqrt(self.expected))}, away from 0.")

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
