"""The two tiny tasks of notebook 09, made in code and seeded.

1. ``bank_task``: sentences holding "bank", one word that decides its sense
   (river, water, shore, stream against money, loan, rate, cash) and five
   distractors, in random order. The word vectors are fixed and given, built
   so that a plain average of a sentence's words says nothing useful about
   the sense: each distractor carries twice the deciding word's "sense"
   coordinate, with a sign that has nothing to do with the sentence.
2. ``pattern_task``: next-token prediction on sequences that repeat a random
   pattern of 4 symbols. The first pattern cannot be predicted; from then on
   each token is the one 4 places back. Each token's vector is its one-hot
   code beside the sinusoidal code of its position (Vaswani et al. 2017,
   section 3.5), so a model can find "the token 4 places back", or "the next
   token" when nothing hides it.

Both return plain arrays for ``helpers.training``: X (B, n, d_model) and
targets (B, n) with ``NO_TARGET`` where nothing is predicted.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from helpers.inputs import seed as _seed
from helpers.positions import sinusoidal_positional_encoding
from helpers.training import NO_TARGET, predict

__all__ = ["SENSES", "VOCABULARY", "BANK_SETUP", "TRAP_SETUP", "BankTask", "bank_task",
           "PatternTask", "pattern_task", "embed", "generate"]

BANK_SETUP = dict(n_train=200, n_held_out=500, train_seed=1, held_out_seed=2,
                  d_k=2, d_v=2, init_seed=1, steps=150, learning_rate=0.05)
"""Notebook 09's bank task: data sizes and seeds, widths, starting seed, steps and Adam's learning rate."""

TRAP_SETUP = dict(n_train=100, n_held_out=500, train_seed=3, held_out_seed=4,
                  d_k=8, init_seed=0, steps=400, learning_rate=0.05)
"""Notebook 09's production trap: the same, for the pattern task (d_v = d_k)."""

SENSES = ("river", "money")
"""The two senses of "bank", as class ids 0 and 1."""

_SENSE, _TOPIC, _BANK = 0, 1, 2     # the named coordinates of the word vectors


def _vocabulary():
    """word -> (vector of 6 numbers, role). Coordinates: sense, topic, bank, and 3 of the word's own.

    Words come in twins that share their own three coordinates and differ
    only in the sign of "sense": so the words of either sense, and the
    distractors of either sign, look alike in everything but that one sign.
    """
    own = np.random.default_rng(2017).normal(0.0, 0.5, size=(9, 3))   # one row per twin pair, and bank
    vocab = {"bank": (np.r_[0.0, 0.0, 1.0, own[0]], "bank")}
    deciders = [("river", "money"), ("water", "loan"), ("shore", "rate"), ("stream", "cash")]
    distractors = [("old", "new"), ("big", "small"), ("was", "is"), ("near", "far")]
    for k, (river_word, money_word) in enumerate(deciders):
        vocab[river_word] = (np.r_[+1.0, 1.0, 0.0, own[1 + k]], "river")
        vocab[money_word] = (np.r_[-1.0, 1.0, 0.0, own[1 + k]], "money")
    for k, (plus, minus) in enumerate(distractors):
        vocab[plus] = (np.r_[+2.0, 0.0, 0.0, own[5 + k]], "distractor")
        vocab[minus] = (np.r_[-2.0, 0.0, 0.0, own[5 + k]], "distractor")
    return vocab


VOCABULARY = _vocabulary()
"""word -> (its fixed vector (6,), its role: "bank", "river", "money" or "distractor")."""


def _count(value, name, least=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class BankTask:
    """Sentences of the bank task.

    tokens: B lists of n words. X: (B, n, 6) their fixed vectors.
    labels: (B,) the sense, 0 = river, 1 = money. targets: (B, n), the
    label at bank's position and NO_TARGET elsewhere. bank, decider: (B,)
    the positions of "bank" and of the deciding word in each sentence.
    """

    tokens: list
    X: np.ndarray
    labels: np.ndarray
    targets: np.ndarray
    bank: np.ndarray
    decider: np.ndarray


def bank_task(n_sentences, seed, n_distractors=5):
    """``n_sentences`` sentences: "bank", one deciding word, ``n_distractors`` distractors, shuffled.

    The sense (river or money) is drawn with equal chances, then one of its
    four deciding words, then each distractor from the eight distractors,
    then the order. Everything comes from numpy's generator seeded with ``seed``.
    Returns a ``BankTask``. Raises ValueError for a count that is not a
    whole number >= 1 (``n_distractors`` >= 0) or a seed that is not a
    non-negative whole number.
    """
    n_sentences = _count(n_sentences, "n_sentences")
    n_distractors = _count(n_distractors, "n_distractors", least=0)
    rng = np.random.default_rng(_seed(seed))
    by_role = {role: [w for w, (_, r) in VOCABULARY.items() if r == role] for role in ("river", "money", "distractor")}
    tokens, labels, bank, decider = [], [], [], []
    for _ in range(n_sentences):
        label = int(rng.integers(2))
        words = ["bank", str(rng.choice(by_role[SENSES[label]]))]
        words += [str(w) for w in rng.choice(by_role["distractor"], size=n_distractors)]
        order = rng.permutation(len(words))
        sentence = [words[i] for i in order]
        tokens.append(sentence)
        labels.append(label)
        bank.append(int(np.flatnonzero(order == 0)[0]))
        decider.append(int(np.flatnonzero(order == 1)[0]))
    X = np.array([[VOCABULARY[w][0] for w in s] for s in tokens])
    labels, bank = np.array(labels), np.array(bank)
    targets = np.full(X.shape[:2], NO_TARGET)
    targets[np.arange(n_sentences), bank] = labels
    return BankTask(tokens, X, labels, targets, bank, np.array(decider))


# --------------------------------------------------------------------------
# The next-token task of the production trap
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class PatternTask:
    """Sequences that repeat a random pattern.

    sequences: (B, length) symbol ids. X: (B, length, n_symbols + d_position),
    each token's one-hot code beside the positional code of its place.
    targets: (B, length), the next symbol, NO_TARGET at the last place.
    period, n_symbols, d_position: as given to ``pattern_task``.
    """

    sequences: np.ndarray
    X: np.ndarray
    targets: np.ndarray
    period: int
    n_symbols: int
    d_position: int


def embed(sequences, n_symbols, d_position):
    """Token vectors for symbol ids (B, n): one-hot (n_symbols) beside the sinusoidal position code (d_position).

    Returns (B, n, n_symbols + d_position). Raises ValueError for sequences
    that are not a (B, n) array of whole numbers from 0 to n_symbols - 1.
    """
    n_symbols, d_position = _count(n_symbols, "n_symbols"), _count(d_position, "d_position", least=2)
    seq = np.asarray(sequences)
    if seq.ndim != 2 or seq.size == 0 or seq.dtype.kind not in "iu" or seq.min() < 0 or seq.max() >= n_symbols:
        raise ValueError(f"sequences must be a non-empty (B, n) array of whole numbers from 0 to {n_symbols - 1}; "
                         f"got dtype {seq.dtype}, shape {seq.shape}")
    pe = sinusoidal_positional_encoding(seq.shape[1], d_position)
    return np.concatenate([np.eye(n_symbols)[seq], np.broadcast_to(pe, seq.shape + (d_position,))], axis=-1)


def pattern_task(n_sequences, seed, length=12, period=4, n_symbols=6, d_position=8):
    """``n_sequences`` sequences of ``length`` symbols repeating a random pattern of ``period`` symbols.

    Each pattern is drawn symbol by symbol from ``n_symbols`` symbols (with
    repeats), from numpy's generator seeded with ``seed``. Returns a
    ``PatternTask``. Raises ValueError for counts that are not whole numbers,
    a ``length`` not longer than ``period``, an odd ``d_position``, or a
    seed that is not a non-negative whole number.
    """
    n_sequences, length = _count(n_sequences, "n_sequences"), _count(length, "length", least=2)
    period, n_symbols = _count(period, "period"), _count(n_symbols, "n_symbols", least=2)
    d_position = _count(d_position, "d_position", least=2)
    if length <= period:
        raise ValueError(f"length must be longer than period = {period}, so the pattern repeats; got {length}")
    if d_position % 2:
        raise ValueError(f"d_position must be even (sin and cos come in pairs); got {d_position}")
    rng = np.random.default_rng(_seed(seed))
    patterns = rng.integers(n_symbols, size=(n_sequences, period))
    sequences = np.tile(patterns, (1, -(-length // period)))[:, :length]
    targets = np.full(sequences.shape, NO_TARGET)
    targets[:, :-1] = sequences[:, 1:]
    return PatternTask(sequences, embed(sequences, n_symbols, d_position), targets, period, n_symbols, d_position)


def generate(params, task, prompt_length, mask=None, mask_where="before"):
    """Continue each sequence of ``task`` from its first ``prompt_length`` symbols, one symbol at a time.

    At each step the model sees only the symbols so far (its own earlier
    guesses included), as in real generation: there is no future to see.
    ``mask`` is a function n -> (n, n) boolean mask (e.g. ``causal_mask``),
    or None for no mask. Returns (B, length - prompt_length) generated symbols.
    Raises ValueError for a prompt_length that is not shorter than the
    sequences, a mask that is not a function, or params that do not fit.
    """
    prompt_length = _count(prompt_length, "prompt_length")
    if mask is not None and not callable(mask):
        raise ValueError(f"mask must be a function n -> (n, n) boolean mask (e.g. causal_mask) or None; "
                         f"got {type(mask).__name__}")
    length = task.sequences.shape[1]
    if prompt_length >= length:
        raise ValueError(f"prompt_length must be shorter than the sequences ({length}); got {prompt_length}")
    seq = task.sequences[:, :prompt_length].copy()
    for n in range(prompt_length, length):
        X = embed(seq, task.n_symbols, task.d_position)
        guess = predict(params, X, mask=None if mask is None else mask(n), mask_where=mask_where)[:, -1]
        seq = np.concatenate([seq, guess[:, None]], axis=1)
    return seq[:, prompt_length:]
