"""Exercises of notebooks 06 and 07: order and position (permuted outputs, order under a causal mask, a
padded source reordered under its mask in cross-attention, the mean with positions; a sinusoidal entry, no
longer asked by 06 since its Build it computes every entry, stays for instructors), and the convex hull of the
values (what attention alone cannot do)."""

from __future__ import annotations

import numpy as np

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.exercises.base import ChoiceExercise, _Names, _NumericExercise, _code, _index, _matrix
from helpers.exercises.feedback import EXACT_ATOL, Feedback, _comment, _fmt, _read
from helpers.hull import convex_weights, edge_beyond, hull_position
from helpers.positions import sinusoidal_positional_encoding

__all__ = [
    "PermutedOutputExercise", "SinusoidalEntryExercise", "HullExercise",
    "CausalOrderExercise", "ReversedSourceExercise", "PositionsMeanExercise",
]


# --------------------------------------------------------------------------
# Notebooks 06 (order and position) and 07 (the hull)
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
    Besides the formula's mistakes, the checker names a dropped sign
    (``sign_flipped``) and the value cut off after 3 decimals instead of
    rounded (``truncated``, exactly that value), where these differ from the
    right answer.
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
            ("exponent_i_over_d",
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
            ("sign_flipped",
             f"The sign is flipped: {name}({_fmt(angle)} rad) = {float(self.expected):.4f}. Check the sign your "
             f"calculator shows, and keep it.", -self.expected),
        ])
        self.truncated = np.trunc(self.expected * 1000) / 1000           # cut off after 3 decimals, not rounded
        self.truncated_text = (f"You cut the number off after 3 decimals; round it: {float(self.expected):.4f} -> "
                               f"{float(self.expected):.3f}.")
        self.hint_text = (f"Column {column} is {'even' if name == 'sin' else 'odd'}, so it is a {name}. Its pair "
                          f"number is i = {column} // 2 = {i}. The angle is pos / 10000^(2i / d_model), in radians.")
        self.solution_text = _code([
            (f"my_i = {column} // 2", f"column {column} belongs to pair i = {i}"),
            (f"my_angle = {pos} / 10000 ** (2 * my_i / {d_model})",
             f"{pos} / 10000^({2 * i}/{d_model}) = {_fmt(angle)} radians"),
            (f"answer = np.{name}(my_angle)", f"{name}({_fmt(angle)}) = {float(self.expected):.4f}"),
        ])
        self.correct_note = (f"PE[{pos}, {column}] = {name}({pos} / 10000^({2 * i}/{d_model})) = {name}({_fmt(angle)} rad) "
                             f"= {float(self.expected):.4f}.")

    def _whole_feedback(self, answer):
        """As for any number, but the value cut off after 3 decimals (exactly) is ``truncated``, not "Not yet":
        it lies just beyond the tolerance, too near the right answer to be a variant told apart by far."""
        found = super()._whole_feedback(answer)
        if found.mistake == "different":
            arr, problem = _read(answer)
            if problem is None and arr.shape == () and abs(float(arr) - float(self.truncated)) <= 1e-9:
                return Feedback(False, "truncated", self.truncated_text)
        return found


class CausalOrderExercise(ChoiceExercise):
    """Which words keep their output when a causally masked sentence is reordered? Three claims, one right.

    X: (n, d_model); W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v); tokens:
    the n distinct tokens in their first order; order: the same tokens in a
    new order. The right claim is measured, not stored: one layer of
    self-attention with the causal mask (no positions) runs on both orders,
    and a word keeps its output when its two output rows agree. With the
    mask, a word's output depends on the set of words up to it, not on their
    order; the wrong claims are two named misconceptions (``chose_a``: the
    layer is still equivariant; ``chose_b``: the words that moved keep
    theirs, as if a word read the whole sentence's set). Raises ValueError
    when the new order cannot tell the claims apart (no word kept, every
    word kept, or the kept words are those that moved).
    """

    def __init__(self, X, W_Q, W_K, W_V, tokens, order):
        X, W_Q, W_K, W_V = (_matrix(m, name) for m, name in ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V")))
        tokens, order = [str(t) for t in tokens], [str(t) for t in order]
        if len(tokens) != X.shape[0] or len(set(tokens)) != len(tokens):
            raise ValueError(f"tokens must name the {X.shape[0]} rows of X, each once; got {tokens}")
        if sorted(order) != sorted(tokens):
            raise ValueError(f"order must hold each of the tokens {tokens} exactly once; got {order}")
        perm = [tokens.index(t) for t in order]
        mask = causal_mask(len(tokens))

        def outputs(rows):
            return scaled_dot_product_attention(rows @ W_Q, rows @ W_K, rows @ W_V, mask=mask)[0]

        before, after = outputs(X), outputs(X[perm])
        kept = [t for i, t in enumerate(order) if np.allclose(after[i], before[tokens.index(t)])]
        moved = [t for i, t in enumerate(order) if tokens.index(t) != i]
        changed = [t for t in order if t not in kept]
        if not kept or not changed or sorted(kept) == sorted(moved):
            raise ValueError(f"order {order} cannot tell the claims apart: the words that keep their outputs "
                             f"are {kept}; choose an order where some, not all, keep them, and not those that moved")

        def words(ts):
            return " and ".join(f"'{t}'" for t in ts)

        def reads(t):   # the words up to t, in the new order
            return ", ".join(order[:order.index(t) + 1])

        c = changed[0]
        super().__init__(
            question=(f"Causal mask, no positions: '{' '.join(tokens)}' becomes '{' '.join(order)}'. "
                      "Which claim holds for one layer's outputs?"),
            options={"a": "every word keeps its output",
                     "b": f"{words(moved)}, which moved, keep theirs",
                     "c": f"{words(kept)} keep theirs, the others change"},
            answer="c",
            why={"a": (f"That is equivariance, which holds without a mask. With it, a word reads only the words "
                       f"up to it: '{c}' now reads {reads(c)}."),
                 "b": ("A word does not read the whole sentence: it reads the words up to it. The words that "
                       f"moved read another set now ('{c}': {reads(c)})."),
                 "c": (f"{words(kept)} read the same words as before, so their outputs stay; {words(changed)} "
                       "read another set. One layer sees the set of words up to a word, not their order.")},
            hint="List, for each word, the words it may read in each order. Same set, same output.")


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
    so the question would have no clean answer. True and False are not read
    as yes and no: the question asks for the word in quotes, so they get the
    how-to-answer line (mistake ``not_a_choice``), as 3 does.
    """

    OPTIONS = {"yes": "some scores make this point the output",
               "no": "no scores can make this point the output"}

    def _key_of(self, answer):
        # The question asks for 'yes' or 'no' in quotes: True and False get the how-to-answer line, as 3 does.
        if isinstance(answer, (bool, np.bool_)):
            return None
        return super()._key_of(answer)

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


class ReversedSourceExercise(ChoiceExercise):
    """Cross-attention with the source's key-value pairs reordered: what happens to the target queries' outputs
    (understanding: a transfer to a padded source whose mask stays in place).

    Q: (n_q, d_k) the target's queries; K: (n_k, d_k), V: (n_k, d_v) the source's keys and values, without
    positions; targets: the n_q query words; order: the source's old key positions in the new order (a
    permutation of 0 .. n_k - 1); mask: None or n_k booleans (True = may attend) that stay where they are
    while the pairs move; sources: the n_k source words, for the question. The checker runs attention on both
    orders. The answer is measured: "a" (each keeps its output) when the allowed pairs are the same set, "c"
    (they change) when the move brings a masked pair under a True or a real one under a False. Named wrong
    options: ``rows_follow_keys`` (b, the rows moved as in self-attention), and ``pairs_are_a_set`` (a) or
    ``keys_order_matters`` (c), whichever is wrong. Raises ValueError, naming the argument, for shapes that do
    not fit, an order that is no permutation, or inputs that cannot tell the options apart.
    """

    def __init__(self, Q, K, V, targets, order, mask=None, sources=None):
        Q, K, V = (_matrix(m, name) for m, name in ((Q, "Q"), (K, "K"), (V, "V")))
        if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
            raise ValueError(f"Q (n_q, d_k), K (n_k, d_k) and V (n_k, d_v) must fit; got {Q.shape}, {K.shape}, {V.shape}")
        n_k = K.shape[0]
        targets = [str(t) for t in targets]
        if len(targets) != Q.shape[0]:
            raise ValueError(f"targets must name the {Q.shape[0]} queries; got {targets}")
        sources = [f"key {j}" for j in range(n_k)] if sources is None else [str(t) for t in sources]
        if len(sources) != n_k:
            raise ValueError(f"sources must name the {n_k} keys; got {sources}")
        order = np.asarray(order)
        if order.shape != (n_k,) or sorted(order.tolist()) != list(range(n_k)):
            raise ValueError(f"order must hold each key position 0 to {n_k - 1} once; got {order.tolist()}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (n_k,) or mask.dtype != bool or not mask.any():
                raise ValueError(f"mask must be None or {n_k} booleans, some True; got {mask.tolist()}")
        keep = None if mask is None else mask[None, :]
        before = scaled_dot_product_attention(Q, K, V, mask=keep)[0]
        after = scaled_dot_product_attention(Q, K[order], V[order], mask=keep)[0]
        kept = bool(np.allclose(after, before, rtol=1e-12, atol=1e-12))
        gap = float(np.abs(after - before).max())
        if np.allclose(before[::-1], before, rtol=1e-9, atol=1e-9) or (not kept and gap < 1e-3) \
                or np.allclose(after, before[::-1], rtol=1e-9, atol=1e-9):
            raise ValueError("Q, K, V, order and mask must be inputs where each option can be told apart (the "
                             "outputs differ from their reverse, and stay or move clearly)")
        words = " and ".join(f"'{t}'" for t in targets)
        moved = " ".join(sources[j] for j in order)
        if mask is None:
            setting = "no positions, no mask"
        else:
            setting = f"no positions; the mask, hiding {np.flatnonzero(~mask).tolist()}, stays in place"
        answer = "a" if kept else "c"
        self.named = {"b": "rows_follow_keys", "c": "keys_order_matters"} if kept else \
            {"b": "rows_follow_keys", "a": "pairs_are_a_set"}
        allowed = "every pair" if mask is None else "the pairs under a True"
        if kept:
            a = (f"A query's output is a weighted sum over {allowed}: the move kept the same set of them, and "
                 f"the order of the terms does not matter (kept: {kept}). The rows are the queries, which did "
                 "not move.")
            c = ("A weighted sum does not depend on the order of its terms, and the move kept the same pairs "
                 "readable. Without positions, a query cannot tell in which order the source's words came.")
        else:
            a = (f"The pairs form a set only together with the mask that picks them. The mask stayed at its "
                 f"positions while the pairs moved, so other pairs are now readable: the outputs move by up to "
                 f"{gap:.3f}.")
            hidden = ", ".join(f"'{sources[j]}'" for j in order[~mask] if mask[j]) or "no real word"
            shown = ", ".join(f"'{sources[j]}'" for j in order[mask] if not mask[j]) or "no masked pair"
            c = (f"The mask stayed put while the pairs moved: now {hidden} is hidden and {shown} is read, so "
                 f"the outputs move (by up to {gap:.3f}).")
        b = ("In self-attention the queries are the moved words, so the rows move. Here the rows are the "
             f"target's queries ({words}), and they stayed where they were.")
        super().__init__(
            question=f"Cross-attention ({setting}). The source's key-value pairs become '{moved}'. What "
                     f"happens to the outputs of {words}?",
            options={"a": "each keeps its output",
                     "b": "they come out in reverse order",
                     "c": "they change"},
            answer=answer,
            why={"a": a, "b": b, "c": c},
            hint="Which pairs does the mask pass now?")


class PositionsMeanExercise(ChoiceExercise):
    """With positions added, does reordering a sentence keep the mean of its outputs? (understanding)

    X: (n, d_model) word vectors; W_Q, W_K: (d_model, d_k); W_V: (d_model, d_v); PE: (n, d_model) the
    position vectors of places 0 .. n - 1; order: the words' old positions in the new order. The checker runs
    one layer on X + PE and on X[order] + PE and compares the means of the outputs: the words now enter with
    another place's vector, so the inputs are other vectors and the mean moves (option "b"). Named wrong
    options: ``mean_ignores_order`` (a) and ``same_positions`` (c). Raises ValueError, naming the argument,
    for shapes that do not fit or inputs whose means stay (they cannot tell the options apart).
    """

    named = {"a": "mean_ignores_order", "c": "same_positions"}

    def __init__(self, X, W_Q, W_K, W_V, PE, order):
        X, W_Q, W_K, W_V, PE = (_matrix(m, name) for m, name in
                                ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"), (PE, "PE")))
        if PE.shape != X.shape:
            raise ValueError(f"PE must have the shape of X {X.shape}; got {PE.shape}")
        for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
            if W.shape[0] != X.shape[1]:
                raise ValueError(f"{name} must have d_model = {X.shape[1]} rows; got {W.shape}")
        order = np.asarray(order)
        if order.shape != (X.shape[0],) or sorted(order.tolist()) != list(range(X.shape[0])):
            raise ValueError(f"order must hold each position 0 to {X.shape[0] - 1} once; got {order.tolist()}")

        def mean_output(rows):
            return scaled_dot_product_attention(rows @ W_Q, rows @ W_K, rows @ W_V)[0].mean(axis=0)

        plain = bool(np.allclose(mean_output(X[order]), mean_output(X), rtol=1e-12, atol=1e-12))
        first, moved = mean_output(X + PE), mean_output(X[order] + PE)
        gap = float(np.abs(moved - first).max())
        if gap < 1e-6:
            raise ValueError("X, PE and order must be inputs whose mean output moves when positions are added")
        super().__init__(
            question=f"Take X[{order.tolist()}] + PE. Is the mean of its outputs that of X + PE?",
            options={"a": "yes: a mean ignores order",
                     "b": "no: the inputs are other vectors",
                     "c": "yes: the same position vectors"},
            answer="b",
            why={"a": f"Without positions it does (measured: the same {plain}). With them, the inputs themselves "
                      f"change: the mean moves by up to {gap:.3f}.",
                 "b": f"Each word gets its new place's position vector: other sums, so the mean moves (by up to "
                      f"{gap:.3f}; without positions it stays: {plain}).",
                 "c": "The same position vectors, yes, but added to other words: the sums are other vectors, "
                      f"and the mean moves by up to {gap:.3f}."},
            hint=f"Is X[{order.tolist()}] + PE a reordering of X + PE?")
