"""Exercises that check themselves: ``ex.check(answer)``, ``ex.hint()``, ``ex.solution()``.

A notebook builds an exercise from the inputs it shows the learner, for
example ``AttentionWeightsExercise(X, W_Q, W_K, labels)``. The exercise
computes the right answer from those inputs with helpers.attention, and also
each *wrong* answer a common mistake would give (softmax over the wrong axis,
scaling forgotten, K Q^T instead of Q K^T, ...). A learner's answer that
matches one of those gets feedback naming the mistake. So an instructor who
changes the inputs in the notebook changes nothing else.

Mistakes are only named when they are told apart by the inputs: a wrong
variant that gives the right answer for these inputs is dropped (dividing by
sqrt(d_model) is no mistake when d_model equals d_k), and two variants that
give the same numbers are reported together (``ex.mistakes`` lists what can
be told apart). Besides the exercise's own mistakes, every numeric checker
recognises an answer rounded too far, an answer of right numbers in the
wrong shape (and says how to reshape *what the learner gave*), and the
answer of another exercise built in the same session.

``check`` never raises on a learner's answer, whatever it is: text, a ragged
list, NaN, an object that refuses to become an array. It prints the feedback
and returns nothing; ``feedback(answer)`` returns it as a :class:`Feedback`.
``hint()`` and ``solution()`` return a :class:`Reveal`, which JupyterLab
shows folded (click to open), so a stored notebook does not give the
solution away at a glance.

A solution is Python that can be pasted over the ``answer = ...`` line of
the exercise cell: it reads the notebook's own variables, named by the
``names`` argument of each exercise (e.g. ``names={"X": "X_m", "bank":
"bank_m"}``: the notebook's name for X, and for the position of 'bank'), ends
with ``answer = ...``, and names its own steps ``my_...`` so that pasting it
never changes a variable of the notebook. Worked numbers are in comments.

Where each part lives, one concept per module (arrows run down; nothing
below imports this package):

    feedback.py     Feedback, Reveal, and reading a learner's answer (_read, _fmt)
    base.py         the exercise base classes, ChoiceExercise, exercise()
    static.py       the static page: the data a check stores in a kernel, the form the export adds (exercise.js)
    weights.py      notebooks 01-03: scores, softmax rows, weights, projections, outputs, a query's question, d_k
    masks_heads.py  notebooks 04-05: the combined mask, row sums masked after the softmax, a -1e9 fill, split_heads,
                    counting weights, what num_heads changes, the rank of a head's scores
    order.py        notebooks 06-07: permuted outputs, a reversed source, the mean with positions (06), the hull (07)
    cost.py         notebook 08: dot products, one online-softmax step, the KV cache's size, the running maximum
    learning.py     notebook 09: the softmax's gradient, which weights get no gradient (one word; W_out = 0)
    predictions.py  notebooks 02-03: predict or explain what attention does (choices with named wrong answers)
    key_design.py   notebook 01: design W_K so that a query prefers a word (many right answers);
                    which claim a heatmap supports, what a new word does to the old weights
    limits.py       notebook 07: which layout keeps a random stack's tokens apart (rank collapse)
    current.py      notebook 10: one rotary pair, a grouped-query cache's bytes, stacked windows' reach, rotary layouts,
                    how a window's key blocks grow

The engine that judges a learner's own *function* (``diagnose``, its
batteries, checkers, worked solutions, the finale's judges) is the package
:mod:`helpers.checkers`, which uses this one (its Feedback) and is never
imported by it. Its public names are re-exported here all the same, on first
use (PEP 562's module ``__getattr__``), so ``from helpers.exercises import
diagnose`` keeps working without an import arrow back up.
"""

from __future__ import annotations

import importlib

from helpers.exercises.base import ChoiceExercise, _NumericExercise, exercise  # _NumericExercise: to subclass
from helpers.exercises.cost import AttentionCountExercise, KVCacheSizeExercise, OnlineSoftmaxStepExercise, RunningMaxExercise
from helpers.exercises.feedback import Feedback, Reveal, _fmt  # _fmt: numbers as the checkers print them
from helpers.exercises.learning import SoftmaxGradientExercise, ZeroGradientExercise, ZeroReadOutExercise
from helpers.exercises.limits import LayerNormCountExercise, LayoutExercise, RandomStackExercise
from helpers.exercises.masks_heads import (FillExercise, HeadsChangeExercise, MaskedRowSumsExercise, MaskExercise,
                                          ScoreRankExercise, SplitHeadsExercise, WeightsCountExercise)
from helpers.exercises.order import HullExercise, PermutedOutputExercise, SinusoidalEntryExercise
from helpers.exercises.predictions import (LeanOnExercise, LongKeyCauseExercise, SaturatedRowExercise,
                                          SpreadGrowthExercise)
from helpers.exercises.weights import (
    AttentionWeightsExercise,
    DkPredictionExercise,
    OutputExercise,
    ProjectionExercise,
    QuestionVectorExercise,
    ScoreExercise,
    ScoreVarianceExercise,
    SoftmaxRowExercise,
)
from helpers.exercises.key_design import AddedWordExercise, HeatmapClaimExercise, KeyDesignExercise
from helpers.exercises.cost import EncoderCacheExercise
from helpers.exercises.order import CausalOrderExercise, PositionsMeanExercise, ReversedSourceExercise
from helpers.exercises.current import (KVCacheBytesExercise, RopeLayoutExercise, RopePairExercise, WindowGrowthExercise,
                                      WindowReachExercise)

__all__ = [
    "Feedback", "Reveal", "ChoiceExercise", "exercise", "diagnose", "Diagnosis", "BATTERY", "FAULTS", "TIME_LIMIT", "PIECES",
    "solution",
    "ScoreExercise", "SoftmaxRowExercise", "AttentionWeightsExercise", "ProjectionExercise", "OutputExercise",
    "DkPredictionExercise", "ScoreVarianceExercise", "QuestionVectorExercise",
    "MaskExercise", "SplitHeadsExercise", "WeightsCountExercise", "HeadsChangeExercise",
    "PermutedOutputExercise", "SinusoidalEntryExercise", "HullExercise",
    "AttentionCountExercise", "OnlineSoftmaxStepExercise", "KVCacheSizeExercise",
    "SoftmaxGradientExercise", "ZeroGradientExercise",
    "MaskedRowSumsExercise", "FillExercise", "ScoreRankExercise",
    "run_with_your_attention", "ModelVerdict",
    "KeyDesignExercise", "HeatmapClaimExercise", "AddedWordExercise",
    "LeanOnExercise", "LongKeyCauseExercise", "SpreadGrowthExercise", "SaturatedRowExercise",
    "LayoutExercise", "LayerNormCountExercise", "RandomStackExercise",
    "EncoderCacheExercise",
    "check_your_block", "BlockVerdict", "heatmap_claims", "row_share_prediction",
    "CausalOrderExercise",
    "RopePairExercise", "KVCacheBytesExercise", "WindowReachExercise", "RopeLayoutExercise",
    "ReversedSourceExercise", "PositionsMeanExercise", "RunningMaxExercise", "ZeroReadOutExercise",
    "WindowGrowthExercise",
]

_CHECKERS = ("diagnose", "Diagnosis", "BATTERY", "FAULTS", "TIME_LIMIT", "PIECES", "solution",
             "run_with_your_attention", "ModelVerdict", "check_your_block", "BlockVerdict", "heatmap_claims",
             "row_share_prediction")
"""The names of helpers.checkers re-exported here (the finale's load the real model's libraries on first use)."""
_MOVED = ("runner", "battery", "fitted", "solutions", "finale", "checker_numeric", "checker_attention",
          "checker_softmax", "checker_masks", "checker_heads", "checker_positions", "checker_tiling",
          "checker_backward", "checker_rope")
"""The checkers' modules that lived here before issue 32: ``from helpers.exercises import solutions`` still
finds them (a hand-in's cell may say so). (``diagnose`` is the function, as it always was here.)"""


def __getattr__(name):
    """A name of :mod:`helpers.checkers`, imported on first use (by name, so this package never imports it)."""
    if name in _CHECKERS:
        return getattr(importlib.import_module("helpers.checkers"), name)
    if name in _MOVED:
        return importlib.import_module(f"helpers.checkers.{name}")
    raise AttributeError(f"module 'helpers.exercises' has no attribute {name!r}")
