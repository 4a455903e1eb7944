"""Notebook 07's exercises of understanding (what attention alone cannot do): LayerNorm, and which stacks keep their rank.

:class:`LayerNormCountExercise` asks how many different vectors LayerNorm
makes of tokens of a width the notebook did not normalise (d_model = 2: a
transfer). :class:`RandomStackExercise` asks the learner to predict where
random post-LN stacks of the real model's shape end, beside the trained
model's residual, before the notebook runs them.
:class:`LayoutExercise` asks which of the four layouts of ``helpers.depth``
keeps a random stack's tokens apart, for settings the notebook has not shown.
Its right option is measured with ``stack_residuals`` from the inputs (so an
instructor who edits them edits nothing else), and each wrong option is named
after the misconception that leads to it (ChoiceExercise's ``named``): the feedback key is that
name, not ``chose_<option>``. (Notebook 07's other exercise, the convex hull, is
``HullExercise`` in order.py.)
"""

from __future__ import annotations

import numbers
import textwrap

import numpy as np

from helpers.depth import LAYOUTS, layer_norm, stack_residuals
from helpers.exercises.base import ChoiceExercise, _matrix
from helpers.exercises.feedback import _comment

__all__ = ["LayoutExercise", "LayerNormCountExercise", "RandomStackExercise"]

#: option letter -> layout of helpers.depth, in the order the notebook lists them
LETTERS = dict(zip("abcd", LAYOUTS))

#: layout -> (the misconception's key, what is said when a learner picks that layout and it is wrong)
MISCONCEPTIONS = {
    "attention": (
        "fresh_weights_separate",
        "Each layer draws fresh weights, but each output is still an average of that layer's values, inside "
        "their hull. Nothing in pure attention pushes the tokens apart again: it collapses fastest of all."),
    "attention + skip": (
        "skip_guarantees",
        "Dong et al. (2021) show that with a skip connection their bound no longer forces a collapse. That is "
        "not a promise that the tokens stay apart. With weights this large the attention branch is several "
        "times the stream it is added to, so each layer's averaging still dominates."),
    "post-LN": (
        "layer_norm_keeps_apart",
        "LayerNorm resets each token's size, not the differences between tokens, and here the feed-forward "
        "network does not undo the averaging either. With weights this large each attention branch is several "
        "times the stream it is added to; post-LN held in the table only with small weights (scale 0.5)."),
    "pre-LN": (
        "pre_ln_always_holds",
        "In pre-LN the stream grows and each branch becomes a smaller part of it, but for these settings "
        "that was not enough: measure it."),
}


FLOOR = 1e-12
"""Below this a residual is rounding noise, whose digits differ from machine to machine: shown as a bound."""


def _show(r):
    return f"{r:.1e}" if r >= FLOOR else "below 1e-12"


def _number(value, name, low, high, whole=False):
    """An instructor's number in [low, high] (or ValueError naming it)."""
    kind = numbers.Integral if whole else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not np.isfinite(float(value)) \
            or not low <= value <= high:
        what = "a whole number" if whole else "a number"
        raise ValueError(f"{name} must be {what} from {low} to {high}; got {value!r}")
    return int(value) if whole else float(value)


def _seeds(seeds):
    """An instructor's seeds: a list of 1 to 10 whole numbers >= 0 (or ValueError naming seeds)."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds must be a list of 1 to 10 whole numbers >= 0; got {seeds!r}")
    seeds = [_number(s, "each of seeds", 0, 2 ** 32 - 1, whole=True) for s in seeds]
    if not 1 <= len(seeds) <= 10:
        raise ValueError(f"seeds must be a list of 1 to 10 whole numbers >= 0; got {len(seeds)} of them")
    return seeds


def the_one_that_keeps(lowest, keep):
    """The one layout whose lowest final residual is at least ``keep``, or ValueError saying how many do.

    lowest : dict layout -> the smallest, over the seeds, of collapse_residual after the last layer.
    """
    kept = [layout for layout, r in lowest.items() if r >= keep]
    if len(kept) != 1:
        table = ", ".join(f"{layout}: {_show(r)}" for layout, r in lowest.items())
        raise ValueError(f"exactly one layout must keep a residual of at least keep = {keep:g} for every seed, "
                         f"so that the question has one answer; with these settings {len(kept)} do ({table}). "
                         "Choose other num_layers, scale or keep.")
    return kept[0]


class LayoutExercise(ChoiceExercise):
    """Predict which layout keeps a random stack's tokens apart (rank collapse, Dong et al. 2021).

    X : array (n, d_model), the token vectors entering the stack.
    num_layers : whole number from 1 to 64; scale : the size of the random
    weights, from 0.1 to 10 (each entry drawn with standard deviation
    scale / sqrt(fan_in), as in ``helpers.depth.stack_residuals``);
    num_heads : whole number dividing d_model; seeds : the seeds of the
    runs (1 to 10 whole numbers >= 0); keep : the residual, from 0 to 1,
    that counts as "kept apart".

    The right option is measured: each layout of ``helpers.depth.LAYOUTS``
    runs once per seed, and the answer is the layout whose final
    ``collapse_residual`` is at least ``keep`` for every seed. Options are
    the letters a-d (pure attention, attention + skip, post-LN, pre-LN);
    a layout's own name ('pre-LN') is read as its letter.
    A wrong option's feedback key names its misconception:
    ``fresh_weights_separate`` (pure attention), ``skip_guarantees`` (a skip
    connection), ``layer_norm_keeps_apart`` (post-LN),
    ``pre_ln_always_holds`` (pre-LN, when it does not hold). ``lowest``
    holds the measured residuals: layout -> smallest over the seeds.

    Raises ValueError naming the argument for an X that is not a finite
    (n, d_model) matrix, numbers out of range, num_heads not dividing
    d_model, or settings under which not exactly one layout keeps its
    tokens apart (the question would have no single answer).
    """

    def __init__(self, X, num_layers=24, scale=4.0, num_heads=4, seeds=(0, 1, 2), keep=0.1):
        X = _matrix(X, "X")
        num_layers = _number(num_layers, "num_layers", 1, 64, whole=True)
        scale = _number(scale, "scale", 0.1, 10.0)
        keep = _number(keep, "keep", 0.0, 1.0)
        seeds = _seeds(seeds)
        self.lowest = {layout: min(float(stack_residuals(X, num_layers, layout, num_heads=num_heads, scale=scale,
                                                         seed=s).residual[-1]) for s in seeds)
                       for layout in LAYOUTS}
        right = the_one_that_keeps(self.lowest, keep)
        letter_of = {layout: letter for letter, layout in LETTERS.items()}
        self.named = {letter: MISCONCEPTIONS[layout][0] for letter, layout in LETTERS.items() if layout != right}
        why = {letter: MISCONCEPTIONS[layout][1] for letter, layout in LETTERS.items() if layout != right}
        because = ("Each layer adds its branch to a stream that is never normalised and keeps growing, so each "
                   "new averaging is a smaller part of the whole." if right == "pre-LN" else
                   "Compare the branch share ||attention|| / ||X|| layer by layer to see why.")
        why[letter_of[right]] = f"{right} keeps a residual of at least {_show(self.lowest[right])} for every seed. {because}"
        options = {
            "a": "attention: X <- attention(X)",
            "b": "attention + skip: X <- X + attention(X)",
            "c": "post-LN: LayerNorm after each addition (the real model)",
            "d": "pre-LN: LayerNorm on each branch's input only",
        }
        self.settings = dict(num_layers=num_layers, scale=scale, num_heads=int(num_heads), seeds=seeds, keep=keep)
        super().__init__(
            question=(f"Run the {X.shape[0]} tokens of X (d_model = {X.shape[1]}) through {num_layers} random "
                      f"layers with weights of scale {scale:g}, {int(num_heads)} heads, seeds {seeds}. Which layout "
                      f"ends with a residual of at least {keep:g} for every seed?"),
            options=options, answer=letter_of[right], why=why,
            hint=("Look back at the branch column: in which layout does each new averaging become a small part "
                  "of what it is added to?"))
        self._letter_of = {layout.lower(): letter for layout, letter in letter_of.items()}
        table = "\n".join(f"({letter_of[layout]}) {layout:17} lowest final residual {_show(r)}"
                          for layout, r in self.lowest.items())
        self.solution_text += "\n" + _comment("\nMeasured:\n" + table)

    def question(self):
        """Print the question, wrapped narrow enough for a projector, and the options."""
        print("\n".join(textwrap.wrap(self.question_text, 72)))
        for key, text in self.OPTIONS.items():
            print(f"  ({key}) {text}")

    def _key_of(self, answer):
        """A letter as any choice is read, or a layout's own name ('pre-LN', 'post-ln', 'attention + skip')."""
        if isinstance(answer, str):
            name = " ".join(answer.split()).strip().strip("'\"").strip().lower()
            if name in self._letter_of:
                return self._letter_of[name]
        return super()._key_of(answer)


# --------------------------------------------------------------------------
# LayerNorm in another width: how many different vectors come out?
# --------------------------------------------------------------------------

def distinct_rows(Y, atol=1e-6):
    """How many different rows Y (n, d) holds, two rows being the same when every entry is within ``atol``."""
    kept = []
    for row in np.asarray(Y, dtype=float):
        if not any(np.allclose(row, k, rtol=0, atol=atol) for k in kept):
            kept.append(row)
    return len(kept)


class LayerNormCountExercise(ChoiceExercise):
    """Transfer LayerNorm to tokens of another width: how many different vectors does it make of them?

    X : array (n, d_model) of 2 to 8 tokens (the notebook gives the river-bank
    vectors, d_model = 2); labels : their n names. LayerNorm runs without gain
    or bias (gamma ones, beta zeros), eps = 1e-12, helpers.depth.layer_norm.

    The options are the counts 1 to n (letters a, b, ...); the right one is
    counted from ``layer_norm(X)``. Named wrong options: n,
    ``norm_keeps_tokens_apart`` (LayerNorm read as a rescaling that keeps
    every token its own), and 1, ``norm_makes_tokens_equal`` (mean 0 and
    variance 1 read as one and the same vector). ``normalised`` holds the
    rows it computed. Raises ValueError naming the argument for an X that is
    not a finite (n, d_model) matrix with 2 <= n <= 8, or labels not n names.
    """

    def __init__(self, X, labels):
        X = _matrix(X, "X")
        n, d = X.shape
        if not 2 <= n <= 8:
            raise ValueError(f"X must hold 2 to 8 tokens, one per row; got {n}")
        if isinstance(labels, (str, bytes)) or len(list(labels)) != n:
            raise ValueError(f"labels must be {n} names, one per row of X; got {labels!r}")
        self.labels, self.X = [str(t) for t in labels], X
        self.normalised = layer_norm(X)
        count = distinct_rows(self.normalised)
        letters = "abcdefgh"[:n]
        options = {letters[k]: f"{k + 1} different vector{'s' if k else ''}" for k in range(n)}
        answer = letters[count - 1]
        self.named = {letter: key for letter, key in ((letters[n - 1], "norm_keeps_tokens_apart"),
                                                       (letters[0], "norm_makes_tokens_equal")) if letter != answer}
        groups = {}
        for label, row in zip(self.labels, self.normalised):
            shown = "(" + ", ".join(f"{v:.3g}" for v in np.where(np.abs(row) < 1e-9, 0.0, row)) + ")"   # no -0
            groups.setdefault(shown, []).append(label)
        made = "; ".join(f"{', '.join(names)} -> {shown}" for shown, names in groups.items())
        why = {letters[n - 1]: "LayerNorm is not a rescaling of the whole sentence: each token subtracts its own mean "
                               "and divides by its own spread, and what is left of it can be the same for two tokens "
                               f"that differed. With d_model = {d} work one token by hand.",
               letters[0]: "Mean 0 and variance 1 is a condition on each token, not one vector: tokens whose features "
                           "are ordered differently stay different.",
               answer: (f"{count} different vector{'s' if count > 1 else ''}: {made}."
                        + (" With two features x - mean is (h, -h) or (-h, h), so dividing by the spread h leaves only "
                           "which one is larger; equal features give (0, 0)." if d == 2 else ""))}
        for letter in letters:
            why.setdefault(letter, "Work each token by hand: its mean, its spread, then (x - mean) / spread.")
        names = ", ".join(f"{t} ({', '.join(f'{v:g}' for v in row)})" for t, row in zip(self.labels, X))
        super().__init__(
            question=(f"Apply LayerNorm (gamma ones, beta zeros) to each of these tokens of d_model = {d}: {names}. "
                      "How many different vectors come out?"),
            options=options, answer=answer, why=why,
            hint=["LayerNorm works on each token alone, over its own features.",
                  f"Take one token with d_model = {d}: subtract its mean, then divide by its standard deviation. "
                  "What can be left? And what of a token whose features are all equal?"])


# --------------------------------------------------------------------------
# Predict: random post-LN stacks of the real model's shape, beside the trained model
# --------------------------------------------------------------------------

class RandomStackExercise(ChoiceExercise):
    """Predict where random post-LN stacks of the real model's shape end, beside the trained model's residual.

    X : array (n, d_model), the token vectors entering the model (its embeddings' output);
    trained : the trained model's collapse_residual after its last layer, a number in (0, 1);
    num_layers, num_heads : the model's (6 and 12 for all-MiniLM-L6-v2); scale : the size of the random weights
    (0.1 to 10, as stack_residuals); seeds : 1 to 10 whole numbers; collapsed : the residual below which a
    stack counts as collapsed (0 < collapsed < trained).

    Options: (a) below ``collapsed``, (b) between it and ``trained``, (c) above ``trained``. The right one is
    measured, stack_residuals(X, num_layers, "post-LN", num_heads, scale, seed) for each seed; ``ends`` holds
    their final residuals. Named wrong options: (a) ``post_ln_collapses`` (the table's large-weight collapse
    taken for every post-LN stack), (b) ``training_keeps_apart`` (random weights must end below trained ones),
    (c) ``random_keeps_apart``. Raises ValueError naming the argument for bad input, or when the seeds do not
    all land in one option (the question would have no single answer).
    """

    OPTIONS_TEXT = {"a": "below {c:g}: collapsed",
                    "b": "between {c:g} and {t:.3f}: below the trained model",
                    "c": "above {t:.3f}: above the trained model"}
    KEYS = {"a": "post_ln_collapses", "b": "training_keeps_apart", "c": "random_keeps_apart"}

    def __init__(self, X, trained, num_layers=6, num_heads=12, scale=0.5, seeds=(0, 1, 2), collapsed=0.01):
        X = _matrix(X, "X")
        trained = _number(trained, "trained", 1e-9, 1.0 - 1e-9)
        collapsed = _number(collapsed, "collapsed", 1e-12, trained)
        num_layers = _number(num_layers, "num_layers", 1, 64, whole=True)
        scale = _number(scale, "scale", 0.1, 10.0)
        seeds = _seeds(seeds)
        self.ends = [float(stack_residuals(X, num_layers, "post-LN", num_heads=num_heads, scale=scale,
                                           seed=s).residual[-1]) for s in seeds]
        bins = {"a" if r < collapsed else "b" if r <= trained else "c" for r in self.ends}
        if len(bins) != 1:
            raise ValueError(f"the seeds' final residuals ({', '.join(_show(r) for r in self.ends)}) fall in "
                             f"{len(bins)} of the options, so the question has no single answer: choose other "
                             "scale, seeds or collapsed")
        answer = bins.pop()
        self.named = {k: v for k, v in self.KEYS.items() if k != answer}
        measured = f"They end at {_show(min(self.ends))} to {_show(max(self.ends))}"
        why = {"a": "Post-LN collapsed in the table only with large weights: look at its scale-0.5 column.",
               "b": "Random weights are not bound to end below trained ones: the size of the weights decides how far "
                    "a random post-LN stack keeps its tokens apart.",
               "c": "Random weights need not end above trained ones: with large weights the averaging wins, as in "
                    "the table's scale-2 column."}
        why[answer] = f"{measured}, beside the trained model's {trained:.3f}: the size of the weights decides it."
        self.settings = dict(num_layers=num_layers, num_heads=int(num_heads), scale=scale, seeds=seeds,
                             trained=trained, collapsed=collapsed)
        super().__init__(
            question=(f"Random post-LN stacks of the real model's shape ({num_layers} layers, {int(num_heads)} heads, "
                      f"d_model = {X.shape[1]}), weights of scale {scale:g}, seeds {seeds}, on the model's input "
                      f"vectors: where does their residual end?"),
            options={k: v.format(c=collapsed, t=trained) for k, v in self.OPTIONS_TEXT.items()},
            answer=answer, why=why,
            hint=["The table ran post-LN at three scales. Which column has weights of this size?",
                  "Depth matters too: these stacks have half the table's 12 layers."])

    def question(self):
        """Print the question, wrapped narrow enough for a projector, and the options."""
        print("\n".join(textwrap.wrap(self.question_text, 72)))
        for key, text in self.OPTIONS.items():
            print(f"  ({key}) {text}")
