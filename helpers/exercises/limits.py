"""An exercise of understanding for notebook 07 (what attention alone cannot do): which layout keeps its rank.

:class:`LayoutExercise` asks which of the four layouts of ``helpers.depth``
keeps a random stack's tokens apart, for settings the notebook has not shown.
Its right option is measured with ``stack_residuals`` from the inputs (so an
instructor who edits them edits nothing else), and each wrong option is named
after the misconception that leads to it: the feedback key is that name, not
``chose_<option>``. (Notebook 07's other exercise, the convex hull, is
``HullExercise`` in order.py.)
"""

from __future__ import annotations

import numbers
import textwrap

import numpy as np

from helpers.depth import LAYOUTS, stack_residuals
from helpers.exercises.base import ChoiceExercise, _matrix
from helpers.exercises.feedback import Feedback, _comment

__all__ = ["LayoutExercise"]

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
        "network does not undo the averaging either. The real model keeps its tokens apart because it was "
        "trained; these weights are random."),
    "pre-LN": (
        "pre_ln_always_holds",
        "In pre-LN the stream grows and each branch becomes a smaller part of it, but for these settings "
        "that was not enough: measure it."),
}


class _NamedChoice(ChoiceExercise):
    """A ChoiceExercise whose wrong options carry the name of their misconception as the feedback key.

    ``self.named`` maps an option key to a mistake key; options without a
    name keep ``chose_<option>``. (The same rule as the exercises of
    understanding of notebooks 02 and 03.)
    """

    named = {}

    def _feedback(self, answer):
        feedback = super()._feedback(answer)
        if feedback.mistake and feedback.mistake.startswith("chose_"):
            key = self.named.get(feedback.mistake[len("chose_"):])
            if key:
                return Feedback(False, key, feedback.text)
        return feedback


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


class LayoutExercise(_NamedChoice):
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
        if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
            raise ValueError(f"seeds must be a list of 1 to 10 whole numbers >= 0; got {seeds!r}")
        seeds = [_number(s, "each of seeds", 0, 2 ** 32 - 1, whole=True) for s in seeds]
        if not 1 <= len(seeds) <= 10:
            raise ValueError(f"seeds must be a list of 1 to 10 whole numbers >= 0; got {len(seeds)} of them")
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
            hint=("Look back at the size of the attention branch over the stream it reads, layer by layer. "
                  "In which layout does each new averaging become a small part of what it is added to?"))
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
