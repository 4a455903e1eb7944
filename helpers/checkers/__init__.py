"""The engine that judges a learner's own function: ``diagnose(fn, piece=...)`` and what it needs.

Where the exercises (:mod:`helpers.exercises`) judge an answer the learner
types, this package judges a function the learner writes: it runs it on a
battery of inputs, compares each output with the course's own function, and
names the simplest model of the computation with a named fault that gives
what the learner's function gave (see diagnose.py's docstring).

Where each part lives (arrows run down; this package uses the exercises'
Feedback and page marker, and nothing in helpers.exercises imports it):

    diagnose.py     diagnose(fn, piece=...): the dispatcher, and PIECES (each piece's checker)
    runner.py       what every function checker shares: the safe call, the signature, the verdicts
    battery.py      the inputs each piece is run on
    fitted.py       faults with a parameter, fitted to the learner's output and named with its value
    checker_*.py    one checker per group of pieces: attention, softmax, masks (causal and padding),
                    heads (split, merge, multi-head), positions, backward (softmax_backward), rope,
                    tiling (notebook 08: the online-softmax step, tiled attention, the KV-cache step);
                    checker_numeric.py: the engine the pieces after attention share
    solutions.py    the worked solution of each piece, and the workbook's stubs
    finale.py       notebook 11: run_with_your_attention (your attention inside the real model, judged),
                    check_your_block (your encoder block), heatmap_claims and row_share_prediction (its
                    exercises of understanding)

Every public name is re-exported here, and (on first use) from helpers.exercises
too, so ``from helpers.exercises import diagnose`` keeps working. The finale's
names are imported on first use, so that importing the checkers does not load
the real model's libraries.
"""

from __future__ import annotations

from helpers.checkers.diagnose import BATTERY, FAULTS, PIECES, TIME_LIMIT, Diagnosis, diagnose
from helpers.checkers.solutions import solution

__all__ = ["diagnose", "Diagnosis", "BATTERY", "FAULTS", "TIME_LIMIT", "PIECES", "solution",
           "run_with_your_attention", "ModelVerdict", "check_your_block", "BlockVerdict", "heatmap_claims",
           "row_share_prediction"]

_FINALE = ("run_with_your_attention", "ModelVerdict", "check_your_block", "BlockVerdict", "heatmap_claims",
           "row_share_prediction")


def __getattr__(name):
    """The finale's names, imported on first use: finale.py loads the real model's libraries."""
    if name in _FINALE:
        from helpers.checkers import finale
        return getattr(finale, name)
    raise AttributeError(f"module 'helpers.checkers' has no attribute {name!r}")
