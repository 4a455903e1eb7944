"""The inputs every function checker runs a learner's function on: small, seeded, each showing one thing.

Each piece has its battery, in the order it is tried: small inputs a
learner can check by hand first, then random shapes and values of several
sizes (n = 1 included, batch dimensions where the piece has them, -inf where
masks put it, scores large enough to overflow an exp that does not subtract
the maximum). Every array is read-only, so no function can spoil the battery
for the next (each call gets fresh copies anyway). The seeds are fixed: the
same battery on every machine, so the verdicts are the same too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from helpers.attention import causal_mask

__all__ = ["ATTENTION", "SOFTMAX", "CAUSAL_MASK", "PADDING_MASK", "Case", "Input"]


def _frozen(*arrays):
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)


@dataclass(frozen=True)
class Case:
    """One input of the battery. needs: None, "masks" or "batches" (what it assumes has been taught)."""

    name: str
    words: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None = None
    needs: str | None = None


def _attention():
    rng = np.random.default_rng(2017)

    def draw(*shape, size=1.0):
        return np.round(rng.normal(0.0, size, shape), 1)

    n, d = 3, 4
    keep_real = np.array([True, True, True, False])            # a padded sentence: key 3 is a pad
    cases = [
        Case("plain", "plain inputs: Q, K and V of shape (3, 4)", draw(n, d), draw(n, d), draw(n, d)),
        Case("wide keys", "wider keys: Q and K of shape (3, 16), so d_k = 16", draw(n, 16), draw(n, 16), draw(n, d)),
        Case("n_q != n_k", "2 queries and 4 keys: Q (2, 4), K and V (4, 4)", draw(2, d), draw(4, d), draw(4, d)),
        Case("d_v != d_k", "values narrower than keys: Q and K (3, 4), V (3, 2)", draw(n, d), draw(n, d), draw(n, 2)),
        Case("large scores", "very large scores: Q and K of shape (3, 4), entries of size about 40",
             draw(n, d, size=40.0), draw(n, d, size=40.0), draw(n, d)),
        Case("causal mask", "a causal mask: Q, K and V of shape (4, 4), mask = causal_mask(4)",
             draw(4, d), draw(4, d), draw(4, d), causal_mask(4), "masks"),
        Case("padding mask", "a padding mask: Q, K and V of shape (4, 4), the last key a pad (its mask column False)",
             draw(4, d), draw(4, d), draw(4, d), np.broadcast_to(keep_real, (4, 4)).copy(), "masks"),
        Case("batch", "a batch of 2 sentences: Q, K and V of shape (2, 3, 4)", draw(2, n, d), draw(2, n, d),
             draw(2, n, d), None, "batches"),
    ]
    big = cases[4]
    largest = float(np.abs(big.Q @ big.K.T).max() / np.sqrt(d))
    cases[4] = Case(big.name, f"{big.words}, so scaled scores reach {largest:.0f} (exp overflows past 709)",
                    big.Q, big.K, big.V)
    for case in cases:
        _frozen(case.Q, case.K, case.V, case.mask)
    return tuple(cases)


ATTENTION = _attention()
"""Every input the attention checker tries, in the order it tries them."""


@dataclass(frozen=True)
class Input:
    """One input of a piece other than attention: the arguments, by the names of the piece's signature."""

    name: str
    words: str
    args: dict = field(default_factory=dict)

    def __post_init__(self):
        _frozen(*self.args.values())


def _softmax():
    rng = np.random.default_rng(2025)
    inf = np.inf
    cases = [
        Input("one row", "one row of scores, x = [1, 2, 3]", {"x": np.array([1.0, 2.0, 3.0])}),
        Input("one score", "a single score, x = [0.5] (n = 1)", {"x": np.array([0.5])}),
        Input("matrix", "a (3, 4) matrix of scores, one row per query", {"x": np.round(rng.normal(0, 1, (3, 4)), 1)}),
        Input("large scores", "large scores, x = [1000, 1001, 999] (exp(1000) overflows to inf)",
              {"x": np.array([1000.0, 1001.0, 999.0])}),
        Input("-inf entries", "a (2, 3) matrix with -inf where a mask hid a key",
              {"x": np.array([[0.5, -inf, 1.0], [2.0, 1.0, -inf]])}),
        Input("all -inf row", "a (2, 3) matrix whose second row is -inf everywhere (a query with nothing to "
              "attend to; its weights are all 0)", {"x": np.array([[1.0, 2.0, 3.0], [-inf, -inf, -inf]])}),
        Input("axis=0", "a (3, 4) matrix with axis=0 (each column sums to 1)",
              {"x": np.round(rng.normal(0, 1, (3, 4)), 1), "axis": 0}),
        Input("batch", "a batch of 2 sentences, x of shape (2, 3, 4)", {"x": np.round(rng.normal(0, 2, (2, 3, 4)), 1)}),
    ]
    for shape, size in (((1, 1), 1.0), ((5, 7), 30.0), ((2, 1, 6), 300.0)):
        x = rng.normal(0, size, shape)
        cases.append(Input(f"random {shape}", f"random scores of shape {shape} and size about {size:g}", {"x": x}))
    return tuple(cases)


def _causal():
    cases = [Input(f"n = {n}", f"n = {n}", {"n": n}) for n in (3, 1, 2, 4)]
    rng = np.random.default_rng(2026)
    return tuple(cases + [Input(f"n = {n}", f"n = {n} (random)", {"n": n}) for n in rng.integers(5, 12, 2).tolist()])


def _padding():
    def real(lengths, n_k):
        return np.arange(n_k)[None, :] < np.array(lengths)[:, None]

    cases = [
        Input("two sentences", "2 sentences of 4 tokens, the second with 2 real ones: is_real (2, 4)",
              {"is_real": real([4, 2], 4)}),
        Input("one sentence", "1 sentence of 3 tokens, the last a pad: is_real (1, 3)", {"is_real": real([2], 3)}),
        Input("B = n_k", "3 sentences of 3 tokens (as many sentences as tokens, where a wrong axis fails "
              "silently): is_real (3, 3)", {"is_real": real([3, 1, 2], 3)}),
        Input("one token", "2 sentences of 1 token each: is_real (2, 1)", {"is_real": real([1, 1], 1)}),
    ]
    rng = np.random.default_rng(2027)
    for B, n_k in ((4, 6), (2, 9)):
        lengths = rng.integers(1, n_k + 1, B)
        cases.append(Input(f"random ({B}, {n_k})", f"{B} random sentences of {n_k} tokens: is_real ({B}, {n_k})",
                           {"is_real": real(lengths, n_k)}))
    return tuple(cases)


SOFTMAX = _softmax()
"""The inputs of the softmax checker: ``x`` and, for one of them, ``axis``."""
CAUSAL_MASK = _causal()
"""The inputs of the causal_mask checker: ``n``."""
PADDING_MASK = _padding()
"""The inputs of the padding_mask checker: ``is_real`` of shape (B, n_k)."""
