"""Exercises of notebooks 04 and 05: the row sums of a mask applied after the softmax, a large negative fill in
place of -inf (04); counting weights, what changing num_heads changes, the rank of one head's scores (05);
split_heads by hand (kept for instructors: 05 builds split_heads);
and the combined causal and padding mask of a batch, which no notebook asks since notebook 04 builds the masks
(kept for instructors)."""

from __future__ import annotations

import re

import numpy as np

from helpers.exercises.base import ChoiceExercise, _Exercise, _Names, _NumericExercise, _code, _matrix, _whole
from helpers.exercises.feedback import EXACT_ATOL, Feedback, _comment, _fmt, _shape_words
from helpers.inputs import refuse_masked_array

__all__ = [
    "MaskExercise", "SplitHeadsExercise", "WeightsCountExercise", "MaskedRowSumsExercise", "HeadsChangeExercise",
    "FillExercise", "ScoreRankExercise",
]


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
    diagonal masked, padding on the queries, and either mask missing.
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
            ("diagonal_masked",
             "The diagonal is missing: no word may read itself, and the first word of each sentence has nothing "
             "left to attend to. The causal mask keeps the diagonal: np.tril with k=0.",
             np.tril(np.ones((n, n), dtype=bool), k=-1)[None] & pad_keys),
            ("query_axis",
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
            ("not_broadcast",
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
            refuse_masked_array(answer, "answer", how=(
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
            ("reshape_without_transpose",
             f"Right shape, wrong numbers: you reshaped straight to ({num_heads}, {n}, {d_k}) without a transpose. "
             "A reshape reads the numbers row by row, so one head's block takes features of several tokens. "
             f"Reshape to (n, num_heads, d_k) = ({n}, {num_heads}, {d_k}) first, then swap the first two axes: "
             ".transpose(1, 0, 2).", x.reshape(num_heads, n, d_k)),
            ("heads_last",
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

    n: tokens; num_heads: heads; d_model: the layer's width (optional; it
    must divide by num_heads, d_k = d_model / num_heads). Each head has its
    own (n, n) matrix of weights, whatever d_k is, so the answer is
    num_heads * n * n (Vaswani et al. 2017, section 3.2.2: h attention
    functions in parallel). The checker names one head's n * n, n * n split
    among the heads, one weight per head per token, the causal half
    (n (n + 1) / 2 or n * n / 2 per head) and, when d_model is given, the
    multiply-adds of the scores (num_heads * n * n * d_k) and the size of the
    output (n * d_model), each computed from these inputs.
    Raises ValueError, naming the argument, for a count that is not a whole
    number of at least 1, or a d_model that num_heads does not divide.
    """

    def __init__(self, n, num_heads, d_model=None):
        n, num_heads = _whole(n, "n"), _whole(num_heads, "num_heads")
        if d_model is not None:
            d_model = _whole(d_model, "d_model")
            if d_model % num_heads:
                raise ValueError(f"d_model must divide by num_heads = {num_heads}; got d_model = {d_model}")
        self.n, self.num_heads, self.d_model = n, num_heads, d_model    # the inputs, for the notebook to print
        self.expected = np.asarray(float(num_heads * n * n))
        self.atol = 0.5
        self.shape_note = "a count is one number"
        self.title = f"the number of attention weights of {num_heads} heads over {n} tokens"
        causal = ("Even a causal layer holds each head's full n × n matrix: the hidden weights are the zeros above "
                  "its diagonal.")
        variants = [
            ("one_head",
             f"That is n × n = {n * n:,}, the weights of one head. Every head has its own n × n matrix.",
             float(n * n)),
            ("split_like_features",
             "The features are split among the heads, but the weights are not: each head scores every query "
             f"against every key, so each has all n × n = {n * n:,} of them.", n * n / num_heads),
            ("one_per_token",
             "That is one weight per head per token. A head has one weight for every (query, key) pair.",
             float(num_heads * n)),
            ("causal_half", f"That counts only the pairs a causal mask keeps, n(n + 1)/2 = {n * (n + 1) // 2:,} per "
             f"head. {causal}", num_heads * n * (n + 1) / 2),
            ("causal_half", f"That counts only the pairs a causal mask keeps, about half: n²/2 = {n * n / 2:,.12g} per "
             f"head. {causal}", num_heads * n * n / 2),
        ]
        if d_model is not None:
            d_k = d_model // num_heads
            same = (f" (here also 4 × d_model² = {4 * d_model ** 2:,}, the layer's parameters, which are not "
                    "attention weights either)") if n * d_model == 4 * d_model ** 2 else ""
            variants += [
                ("multiply_adds",
                 f"That is num_heads × n × n × d_k = {num_heads * n * n * d_k:,}, the multiply-adds of the scores: "
                 f"a score is a dot product of d_k = {d_k} numbers, but it gives one weight.",
                 float(num_heads * n * n * d_k)),
                ("output_size",
                 f"That is n × d_model = {n * d_model:,}, the numbers in the layer's output{same}. The weights are "
                 "one per (query, key) pair, in every head.", float(n * d_model)),
            ]
        self._set_variants([(k, m, np.asarray(v)) for k, m, v in variants])
        self.hint_text = "How many (query, key) pairs does one head score? And how many heads score them, each its own way?"
        self.solution_text = _code([("answer = " + f"{num_heads} * {n} * {n}",
                                     f"num_heads × n × n = {num_heads * n * n:,}")])
        self.correct_note = f"{num_heads * n * n:,} weights: {num_heads} separate {n} × {n} matrices."


class MaskedRowSumsExercise(_NumericExercise):
    """Predict the row sums of attention weights whose mask was applied after the softmax.

    weights: (n_q, n_k) attention weights computed with no mask (each row sums
    to 1); mask: booleans broadcastable to (n_q, n_k), True = may attend.
    Zeroing the hidden weights after the softmax keeps, in each row, the
    weights its allowed keys had, and divides by nothing, so the answer is
    ``np.where(mask, weights, 0).sum(axis=-1)``, one number per query. The
    checker names the prediction that every row still sums to 1 (what
    masking *before* the softmax gives), a share by the count of allowed
    keys, the weight that was removed instead of what is left, and the
    zeroed (n_q, n_k) matrix itself, its rows not summed (``terms_not_summed``).
    labels: the queries' tokens, for the feedback. names: the notebook's
    names for "weights" and "mask", for the solution.
    Raises ValueError, naming the argument, for weights that are not a
    matrix of finite non-negative rows summing to 1, or a mask that is not
    boolean or does not broadcast.
    """

    def __init__(self, weights, mask, labels=None, names=None):
        weights = _matrix(weights, "weights")
        if not np.all(np.isfinite(weights)) or (weights < 0).any() or not np.allclose(weights.sum(axis=-1), 1.0):
            raise ValueError("weights must be attention weights computed with no mask: finite, non-negative, "
                             f"each row summing to 1; got rows summing to {np.round(weights.sum(axis=-1), 3).tolist()}")
        refuse_masked_array(mask, "mask")
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise ValueError(f"mask must be booleans (True = may attend); got dtype {mask.dtype}")
        try:
            mask = np.broadcast_to(mask, weights.shape)
        except ValueError:
            raise ValueError(f"mask of shape {mask.shape} must broadcast to the weights' shape {weights.shape}") from None
        n_q, n_k = weights.shape
        kept = np.where(mask, weights, 0.0).sum(axis=-1)
        self.expected = kept
        self.atol = EXACT_ATOL
        self.shape_note = f"one row sum per query, {n_q} in all"
        self.title = "the row sums of weights masked after the softmax"
        self.labels_cols = None if labels is None else [str(t) for t in labels]
        self._set_variants([
            ("rows_sum_to_one",
             "All 1 is what masking BEFORE the softmax gives. Zeroing the weights after it divides by nothing "
             "again, so a row keeps only the weight its allowed keys had: less than 1 wherever a key is hidden.",
             np.ones(n_q)),
            ("share_by_count",
             "That counts the allowed keys, as if every key had the same weight. The zeroed row keeps the weights "
             "its allowed keys had: add up those entries of the unmasked row.", mask.sum(axis=-1) / n_k),
            ("hidden_share",
             "That is the weight the zeroing removed. The row sum is what is left: the unmasked weights of the "
             "keys the row may read, added up.", 1.0 - kept),
            ("terms_not_summed",
             f"That is the matrix, the hidden weights zeroed after the softmax, and you did not add them up: now "
             f"sum each row, .sum(axis=-1), one number per query ({n_q} in all).", np.where(mask, weights, 0.0)),
        ])
        names = _Names(names, {"weights": "weights", "mask": "mask"})
        self.hint_text = ("Zeroing divides nothing again: each row sums to the unmasked weights of the keys it may "
                          "still read. Which keys are those, for each query?")
        self.solution_text = _code([
            (f"my_kept = np.where({names['mask']}, {names['weights']}, 0.0)", "the hidden weights zeroed, nothing divided"),
            ("answer = my_kept.sum(axis=-1)", _fmt(kept)),
        ])
        self.correct_note = ("Each row keeps the share of the exponentials its allowed keys hold, and only a row "
                             "that hides nothing still sums to 1.")


def layer_counts(n, d_model, num_heads):
    """(parameters, multiply-adds, attention weights) of one multi-head self-attention layer over n tokens.

    Parameters: W_Q, W_K, W_V, W_O, each (d_model, d_model). Multiply-adds: the three projections and the output
    product, n d_model^2 each, plus per head the scores (n d_k n) and the weighted values (n n d_v), with
    d_k = d_v = d_model / num_heads. Weights: num_heads * n * n (Vaswani et al. 2017, section 3.2.2).
    Raises ValueError unless num_heads divides d_model.
    """
    n, d_model, num_heads = _whole(n, "n"), _whole(d_model, "d_model"), _whole(num_heads, "num_heads")
    if d_model % num_heads:
        raise ValueError(f"num_heads must divide d_model = {d_model}; got {num_heads}")
    d_k = d_model // num_heads
    return 4 * d_model * d_model, 4 * n * d_model * d_model + num_heads * 2 * n * n * d_k, num_heads * n * n


class HeadsChangeExercise(ChoiceExercise):
    """What changes when one layer is split into more heads? A choice, its answer measured from the counts.

    n: tokens; d_model: width; num_heads, new_num_heads: the split before and after (both divide d_model,
    new_num_heads a multiple of num_heads). The right option is the one whose claim about the parameters,
    the multiply-adds and the attention weights matches :func:`layer_counts`. Feedback keys: None when
    right; ``everything_grows`` (more heads taken for more matrices), ``nothing_changes`` (the weights
    taken to be split like the features), ``parameters_shrink`` (narrower heads taken for fewer
    parameters); ``not_a_choice`` for anything else. Raises ValueError for sizes that do not divide.
    """

    NAMED = {"a": "everything_grows", "c": "nothing_changes", "d": "parameters_shrink"}

    def __init__(self, n, d_model, num_heads, new_num_heads):
        before, after = layer_counts(n, d_model, num_heads), layer_counts(n, d_model, new_num_heads)
        if new_num_heads % num_heads or new_num_heads == num_heads:
            raise ValueError(f"new_num_heads must be a larger multiple of num_heads = {num_heads}; got {new_num_heads}")
        r = new_num_heads // num_heads
        claims = {"a": (r, r, r), "b": (1, 1, r), "c": (1, 1, 1), "d": (1 / r, 1, r)}
        measured = tuple(a / b for a, b in zip(after, before))
        answer = next(k for k, c in claims.items() if np.allclose(c, measured))
        p, m, w = before
        d_k, new_d_k = d_model // num_heads, d_model // new_num_heads
        super().__init__(
            question=(f"A layer with d_model = {d_model} reads {n} tokens with {num_heads} heads of d_k = {d_k}. "
                      f"You split it into {new_num_heads} heads of d_k = {new_d_k} instead. What changes?"),
            options={"a": f"parameters, multiply-adds and attention weights all grow {r}-fold",
                     "b": f"the attention weights grow {r}-fold; parameters and multiply-adds stay the same",
                     "c": "nothing changes in size: the same four matrices and the same products",
                     "d": f"the parameters shrink {r}-fold, since each head's blocks are narrower"},
            answer=answer,
            why={"b": (f"The heads share W_Q, W_K, W_V as blocks of columns ({p:,} parameters either way), and each "
                       f"head's scores cost n · n · d_k, so num_heads × d_k = d_model keeps {m:,} multiply-adds. "
                       f"But every head has its own n × n weights: {w:,} become {after[2]:,}."),
                 "a": ("More heads are not more matrices: the heads are blocks of columns of the same W_Q, W_K, W_V, "
                       f"so the layer keeps {p:,} parameters, and narrower heads do the same {m:,} multiply-adds."),
                 "c": ("Parameters and multiply-adds stay, but the weights do not: each head has its own n × n "
                       f"matrix, so the weights grow from {w:,} to {after[2]:,}."),
                 "d": (f"Each head's blocks are narrower, but there are more of them: W_Q, W_K, W_V, W_O keep their "
                       f"{p:,} parameters.")},
            hint="Count the matrices of the layer, then the cost of one head's scores, then how many n × n matrices there are.")

    def _feedback(self, answer):
        fb = super()._feedback(answer)
        if fb.mistake and fb.mistake.startswith("chose_"):
            return Feedback(False, self.NAMED.get(fb.mistake[len("chose_"):], fb.mistake), fb.text)
        return fb


def _short(x):
    """A number as a person writes it: -1e9, not -1e+09."""
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{x:g}")


def _plain_softmax(row):
    """A softmax that subtracts the row's maximum and nothing else: no guard for a row of -inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(row - row.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


class FillExercise(ChoiceExercise):
    """Predict what a large negative fill in place of -inf does to a row that still has keys left (notebook 04).

    scores: one query's scaled scores (n_k,); allowed: booleans (n_k,), True = may attend, at least one True;
    fill: the number the hidden scores get instead of -inf (default -1e9); query: the query's name. The right
    option is measured: a plain softmax (the maximum subtracted) of the row filled with ``fill`` is set beside
    the same with -inf. For -1e9 and ordinary scores the two are equal to every digit (exp of -1e9 minus the
    maximum is exactly 0 in float64); the spread-out row and the NaN of a row with NO key left do not carry
    over. Feedback keys: None; ``uniform_like_empty_row``, ``nan_like_empty_row``, ``fill_leaks``;
    ``not_a_choice``. Raises ValueError, naming the argument, for a row with no key allowed or shapes that
    do not fit.
    """

    named = {"b": "uniform_like_empty_row", "c": "nan_like_empty_row", "d": "fill_leaks"}

    def __init__(self, scores, allowed, fill=-1e9, query="this query"):
        scores = np.asarray(scores, dtype=float)
        refuse_masked_array(allowed, "allowed")
        allowed = np.asarray(allowed)
        if scores.ndim != 1 or not np.all(np.isfinite(scores)):
            raise ValueError(f"scores must be one query's finite scores, shape (n_k,); got shape {scores.shape}")
        if allowed.dtype != bool or allowed.shape != scores.shape:
            raise ValueError(f"allowed must be booleans of the scores' shape {scores.shape}; "
                             f"got dtype {allowed.dtype}, shape {allowed.shape}")
        if not allowed.any():
            raise ValueError("allowed must leave the query at least one key (True); got none")
        fill = float(fill)
        shown = _short(fill)
        with_fill = _plain_softmax(np.where(allowed, scores, fill))
        with_inf = _plain_softmax(np.where(allowed, scores, -np.inf))
        n_k = len(scores)
        if np.array_equal(with_fill, with_inf):
            answer = "a"
        elif np.allclose(with_fill, 1.0 / n_k):
            answer = "b"
        elif np.isnan(with_fill).any():
            answer = "c"
        else:
            answer = "d"
        hidden = float(with_fill[~allowed].max()) if (~allowed).any() else 0.0
        self.with_fill, self.with_inf = with_fill, with_inf      # measured, for a test to read
        super().__init__(
            question=(f"The row of '{query}' keeps {int(allowed.sum())} of its {n_k} keys. Its hidden scores get "
                      f"{_short(fill)} instead of -inf, then a plain softmax (the maximum subtracted). Its weights?"),
            options={"a": "the same as with -inf, exactly",
                     "b": f"even, 1/{n_k} each, like the pad row",
                     "c": "NaN, like the -inf pad row",
                     "d": "nearly the same, hidden keys above 0"},
            answer=answer,
            why={"a": (f"The row's maximum is a real score, so a hidden key's exponential is exp({shown} minus about "
                       f"{_fmt(float(scores[allowed].max()))}): below the smallest float, exactly 0. Only a row with "
                       "no key left tells the fills apart."),
                 "b": ("The pad row spread evenly because every score in it was the fill: equal scores, equal "
                       "weights. Here the maximum is a real score, and the fill sits far below it."),
                 "c": ("NaN came from -inf minus -inf, the maximum of a row with nothing left. Here the maximum is "
                       "a real, finite score, so nothing is undefined."),
                 "d": (f"The largest hidden weight is {_fmt(hidden)}. " + (
                       "A fill that far below the real scores underflows: its exponential is not small but 0."
                       if answer != "d" else "This fill is close enough to the real scores to keep some weight."))},
            hint="Which entry of this row is its maximum? Then how large is exp(fill - maximum) in float64?")


class ScoreRankExercise(_NumericExercise):
    """The largest rank one head's (n, n) scores Q K^T can have in a layer of another model's sizes (notebook 05).

    n: tokens; d_model: width; num_heads: heads (it must divide d_model, d_k = d_model / num_heads);
    distinct: how many different token vectors the n tokens hold (default n; fewer when words repeat and no
    position is added, so rows of Q and K repeat). One head's scores are an (n, d_k) matrix times a (d_k, n)
    one, and equal tokens give equal rows, so the rank is at most min(distinct, d_k) (Bhojanapalli et al.
    2020, the low-rank bottleneck); random vectors reach it. The checker names d_k alone, n alone, d_model
    (the head read as the whole width) and n x n (the entries, not the rank), each dropped where these
    inputs do not tell it apart.
    """

    def __init__(self, n, d_model, num_heads, distinct=None):
        n, d_model, num_heads = _whole(n, "n"), _whole(d_model, "d_model"), _whole(num_heads, "num_heads")
        distinct = n if distinct is None else _whole(distinct, "distinct")
        if d_model % num_heads:
            raise ValueError(f"num_heads must divide d_model = {d_model}; got {num_heads}")
        if distinct > n:
            raise ValueError(f"distinct must be at most n = {n} (the tokens hold no more vectors than tokens); "
                             f"got {distinct}")
        d_k = d_model // num_heads
        self.n, self.d_model, self.num_heads, self.d_k, self.distinct = n, d_model, num_heads, d_k, distinct
        bound = min(distinct, d_k)
        self.expected = np.asarray(float(bound))
        self.atol = 1e-6                  # a rank is whole: 4.5 or 5.4 is not 5 (the fresh review)
        self.shape_note = "a rank is one whole number"
        self.title = f"the largest rank of one head's {n} x {n} scores"
        rows = (f"only {distinct} of the {n} rows of Q and K differ (a repeated token gives a repeated row), and a "
                "repeated row adds nothing to the rank" if distinct < n else
                f"the scores are {n} × {n}: a matrix has no more independent rows than it has rows")
        self._set_variants([(k, m, np.asarray(float(v))) for k, m, v in [
            ("rank_is_d_k", f"That is d_k = {d_k}, the bound of the queries' width. But {rows}.", d_k),
            ("rank_is_n",
             f"That is n = {n}, the size of the matrix. But "
             + (f"{rows}." if distinct < n else f"each score is a dot product of d_k = {d_k} numbers: every row "
                f"is a mix of the same {d_k} rows of K, so the rank is at most d_k."), n),
            ("rank_is_d_model",
             f"That is d_model = {d_model}, the layer's width. One head sees only its slice: "
             f"d_k = {d_model} / {num_heads} = {d_k} features.", d_model),
            ("entries_not_rank",
             f"That is n × n = {n * n:,}, the number of scores. The rank counts independent rows.", n * n),
        ]])
        self.hint_text = ("What is d_k here? One head's scores are (n × d_k) times (d_k × n). How many of Q's rows "
                          "are different, and which size limits the number of independent rows?")
        self.solution_text = _code([
            (f"my_d_k = {d_model} // {num_heads}", f"d_k = {d_k}"),
            (f"answer = min({distinct}, my_d_k)" if distinct < n else f"answer = min({n}, my_d_k)",
             f"rank at most {bound}"),
        ])
        self.correct_note = (f"At most {bound}: " + (
            f"only {distinct} different rows, so a head of d_k = {d_k} cannot use its width." if distinct < min(n, d_k)
            else f"each head's scores mix only {d_k} patterns." if d_k <= min(n, distinct)
            else "the sentence is shorter than a head is wide, so n is the limit, not d_k."))
