"""The finale of the course: your own attention inside the real trained model (issue 21, section 3).

``run_with_your_attention(fn)`` first asks :func:`diagnose` what is wrong with
``fn``, if anything, then runs all-MiniLM-L6-v2 (helpers.real_model) on the
two sentences of notebook 02 with ``fn`` in place of the course's attention in
all 6 layers, and says what your function does to the model:

- right: the sentence embedding agrees with the course's own pass; the verdict
  states the bound the largest difference stays below (1e-9 for float64
  arithmetic, about 1e-6 when ``fn`` computes in float32), never its digits,
  which change with the machine's BLAS kernel;
- wrong: the mistake named by its key (as ``diagnose`` names it), and what it
  does to the real model: the cosine between the two sentences' embeddings,
  yours beside the course's, and the attention of "bank" in layer 0, head 4,
  yours beside the course's.

Never raises because of ``fn``: a stub gives "not attempted yet"; a function
that raises inside the model, or returns something else than attention's
output, gets that said in words. The model itself must be installed (``make
lab`` or ``make test`` installs it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.exercises.diagnose import diagnose
from helpers.exercises.feedback import Feedback
from helpers.exercises.runner import safe_str
from helpers.real_model import load_minilm

__all__ = ["ModelVerdict", "run_with_your_attention", "SENTENCES", "BOUNDS"]

#: the two senses of "bank" of notebook 02 (source 003), as the real-model notebook runs them
SENTENCES = ("The bank by the river was steep.", "The bank raised its interest rate.")
#: the bounds a verdict may state for the largest difference of the embedding, smallest first
#: (none finer than 1e-9: the last digits of float64 rounding change with the BLAS kernel)
BOUNDS = (1e-9, 1e-6, 1e-4)
#: the layer and head whose weights the verdict shows (counted from 0), and the query token
LAYER, HEAD, QUERY = 0, 4, "bank"


@dataclass(frozen=True)
class ModelVerdict(Feedback):
    """What your attention did to the real model.

    correct, mistake, text: as every checker's (``mistake`` is diagnose's key,
    or "model_rejected" when the model could not run your function).
    bound: the smallest of :data:`BOUNDS` the largest difference of the
        embedding stays below (None when it is above them all, or nothing ran).
    cosine, cosine_course: the cosine between the two sentences' embeddings,
        with your attention and with the course's (None when nothing ran).
    """

    bound: float | None = None
    cosine: float | None = None
    cosine_course: float | None = None

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)


def _bound(gap):
    return next((b for b in BOUNDS if gap < b), None)


def _row(model, output, tokens):
    """'bank''s weights in LAYER, HEAD as 'token 0.123' pairs."""
    i = tokens.index(QUERY)
    return "  ".join(f"{t} {w:.3f}" for t, w in zip(tokens, output.attention[LAYER, HEAD, i]))


def run_with_your_attention(fn, model=None):
    """Run all-MiniLM-L6-v2 with ``fn`` as its attention and say what it does.

    fn: your attention, ``fn(Q, K, V, mask=None)`` returning the output or
        (output, weights), as in notebook 01's build step (Vaswani et al.
        2017, eq. 1); the model calls it with Q, K, V of shape (12, n, 32).
    model: a loaded :class:`helpers.real_model.MiniLM`; None loads the installed one.

    Returns a :class:`ModelVerdict`. ``.correct`` is True when ``diagnose``
    finds ``fn`` right and the embeddings agree with the course's to below
    1e-4 (float32 arithmetic allowed).
    """
    verdict = diagnose(fn)
    if verdict.mistake in ("not_attempted", "not_a_function", "too_slow", "interrupted", "exit"):
        return ModelVerdict(False, verdict.mistake, verdict.text)
    model = load_minilm() if model is None else model
    course = [model.run(s) for s in SENTENCES]
    try:
        yours = [model.run(s, attention=fn) for s in SENTENCES]
    except BaseException as exc:   # whatever fn does inside the model, the verdict is words
        if isinstance(exc, KeyboardInterrupt):
            raise
        notes = " ".join(getattr(exc, "__notes__", ()))
        text = (f"The model could not run with your attention: {safe_str(type(exc).__name__)}: "
                f"{safe_str(exc)} {safe_str(notes)}".strip())
        return ModelVerdict(False, verdict.mistake or "model_rejected", text + "\n\n" + verdict.text)
    gap = max(float(np.max(np.abs(y.embedding - c.embedding))) for y, c in zip(yours, course))
    bound = _bound(gap)
    cosine = float(yours[0].embedding @ yours[1].embedding)
    cosine_course = float(course[0].embedding @ course[1].embedding)
    agrees = bound is not None
    lines = []
    if agrees:
        precision = "float64 rounding" if bound <= 1e-9 else "the precision your function computes in"
        lines.append(f"With your attention in all {model.num_layers} layers, the embeddings of both sentences "
                     f"agree with the course's own: every one of their {2 * model.d_model} numbers differs by "
                     f"less than {bound:g} ({precision}).")
    else:
        lines.append(f"With your attention in all {model.num_layers} layers, the embeddings differ from the "
                     f"course's own (by up to {gap:.2g}).")
    lines.append(f"Cosine between the two sentences' embeddings: yours {cosine:.3f}, the course's "
                 f"{cosine_course:.3f}.")
    tokens = course[0].tokens
    if yours[0].attention is not None and (not agrees or not verdict.correct):
        lines.append(f"'{QUERY}' in layer {LAYER}, head {HEAD}:\n  yours:    {_row(model, yours[0], tokens)}\n"
                     f"  course's: {_row(model, course[0], tokens)}")
    correct = agrees and verdict.correct
    if not verdict.correct:
        lines.append(("On these sentences (no mask) the model cannot tell, but " if agrees else "")
                     + "diagnose finds this in your function:\n" + verdict.text)
    return ModelVerdict(correct, None if correct else verdict.mistake or "different", "\n".join(lines),
                        bound, cosine, cosine_course)
