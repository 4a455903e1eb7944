"""Notebook 00's set-up check: a tiny explorer that shows the widgets work (``setup_check``)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import ipywidgets as widgets

from helpers.explorers.base import Explorer

__all__ = [
    "setup_check",
]


# --------------------------------------------------------------------------
# The set-up check of notebook 00: the smallest explorer
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class CostState:
    """What the set-up check shows: n tokens and the n * n dot products that score them."""

    n: int
    dot_products: int
    messages: tuple


def setup_check(n=4):
    """The set-up check of notebook 00: a slider for the number of tokens n and the cost n * n.

    An :class:`Explorer` like every other, so it shows the same static form
    and kernel line; moving the slider to n redraws "n tokens: n * n dot
    products". Raises ValueError unless n is a whole number from 1 to 8.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= 8:
        raise ValueError(f"n must be a whole number from 1 to 8 (the slider's range); got {n!r}")
    slider = widgets.IntSlider(value=int(n), min=1, max=8, description="tokens n",
                               layout=widgets.Layout(width="360px"))

    def compute(n):
        return CostState(n=n, dot_products=n * n, messages=())

    def draw(state):
        if state.n == 1:
            return ("<p class='explorer-text'>1 token: 1 dot product "
                    "(the token scores itself)</p>")
        return (f"<p class='explorer-text'>{state.n} tokens: {state.dot_products} dot products "
                "(every token scores every token)</p>")

    check = Explorer(compute, draw, {"n": slider}, [[slider]], height="2em", name="setup")
    check.static_line = SETUP_STATIC_LINE
    return check


#: What the set-up check says on the course's web page, where its slider moves without Python: that it
#: then checks nothing of the learner's set-up.
SETUP_STATIC_LINE = ("This is the course's web page: here the slider moves without Python, so it does not check "
                     "your set-up. To run the course, open it with make lab and run this notebook.")
