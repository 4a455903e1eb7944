"""Notebook 05's explorer: the number of heads (``heads_state``, ``heads_explorer``, ``random_model``)."""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from helpers.attention import attention_entropy, multi_head_attention as course_multi_head_attention
from helpers.explorers.base import Explorer
from helpers.inputs import refuse_masked_array
from helpers.plots import html_grid, weights_table_html
from helpers.inputs import positive_whole as _whole
from helpers.inputs import seed as _seed

__all__ = [
    "HeadsState", "heads_state", "heads_explorer", "random_model", "HEADS_CHOICES",
]


# --------------------------------------------------------------------------
# Number of heads
# --------------------------------------------------------------------------

#: The explorer's model width and sentence. 24 divides into 1, 2, 3, 4, 6, 8,
#: 12 and 24 heads; 24 heads of width 1 do not fit on a screen, so the
#: explorer stops at 12.
HEADS_D_MODEL = 24
HEADS_TOKENS = ("the", "river", "bank", "flooded")
HEADS_CHOICES = tuple(h for h in range(1, 13) if HEADS_D_MODEL % h == 0)


def random_model(d_model=HEADS_D_MODEL, n=len(HEADS_TOKENS), seed=0):
    """A seeded random sentence and attention layer: X (n, d_model) and W_Q, W_K, W_V, W_O (d_model, d_model).

    Entries of X are N(0, 1) and of W_V and W_O N(0, 1/d_model), so their
    projected features have variance about 1. W_Q and W_K are drawn twice as
    wide, N(0, 4/d_model), so that each head's scaled scores spread with a
    standard deviation near 4 rather than 1: heads then range from sharp to
    nearly even, as in a trained layer, instead of all being nearly even as
    at initialisation. The arrays are read-only (they are cached).

    Raises ValueError unless d_model and n are positive whole numbers and
    seed a non-negative whole number.
    """
    return _random_model(_whole(d_model, "d_model"), _whole(n, "n"), _seed(seed))


@functools.lru_cache(maxsize=8)
def _random_model(d_model, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model))
    mats = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    mats[0], mats[1] = 2 * mats[0], 2 * mats[1]  # W_Q, W_K
    for a in [X] + mats:
        a.setflags(write=False)
    return (X, *mats)


@dataclass(frozen=True)
class HeadsState:
    """What the heads explorer shows for one setting.

    weights: (num_heads, n, n), one matrix per head; entropy: (num_heads, n)
    in nats; head_entropy: (num_heads,) the mean over each head's rows;
    output: (n, d_model) after the concatenation and W_O.
    """

    num_heads: int
    d_model: int
    d_k: int
    tokens: tuple
    weights: np.ndarray
    entropy: np.ndarray | None
    head_entropy: np.ndarray
    output: np.ndarray
    messages: tuple


def heads_state(num_heads=8, d_model=HEADS_D_MODEL, tokens=HEADS_TOKENS, seed=0, multi_head_attention=None):
    """Multi-head attention of a seeded random layer, split into ``num_heads`` heads.

    The layer (``random_model``) stays the same whatever num_heads is: only
    the split of its d_model projected features into heads of d_k =
    d_model / num_heads changes. multi_head_attention: the function that
    computes it, with helpers.attention's signature and (output, weights)
    (notebook 05 passes ``piece("multi_head_attention")``, yours once it is
    right); None means the course's. Any other is said in the message:
    "Computed by your multi_head_attention." Returns a :class:`HeadsState`.
    Raises the ValueError of ``multi_head_attention`` (listing the values that work)
    when num_heads does not divide d_model, and a ValueError naming the
    argument for a d_model that is not a positive whole number, a seed that
    is not a non-negative whole number, or tokens that are not a non-empty
    tuple or list of words (strings).
    """
    refuse_masked_array(tokens, "tokens", how="pass a tuple or list of words (strings)")
    if (isinstance(tokens, str) or not isinstance(tokens, (tuple, list)) or not tokens
            or not all(isinstance(t, str) for t in tokens)):
        raise ValueError(f"tokens must be a non-empty tuple or list of words (strings), one per position; "
                         f"got {tokens!r}")
    tokens = tuple(tokens)
    X, W_Q, W_K, W_V, W_O = random_model(d_model, len(tokens), seed)
    run = course_multi_head_attention if multi_head_attention is None else multi_head_attention
    output, weights = run(X, W_Q, W_K, W_V, W_O, num_heads=num_heads)
    output, weights = np.asarray(output), np.asarray(weights)
    entropy = attention_entropy(weights)
    d_k = d_model // num_heads
    head_entropy = entropy.mean(axis=1)
    messages = (
        f"{num_heads} head{'s' if num_heads > 1 else ''} of d_k = {d_model} / {num_heads} = {d_k} features each, "
        f"scores scaled by 1/sqrt({d_k}). Mean entropy per head (at most log {len(tokens)} = "
        f"{np.log(len(tokens)):.3f} nats): " + ", ".join(f"{h:.2f}" for h in head_entropy) + "."
        + ("" if run is course_multi_head_attention else " Computed by your multi_head_attention."),
    )
    return HeadsState(num_heads=int(num_heads), d_model=d_model, d_k=d_k, tokens=tokens, weights=weights,
                      entropy=entropy, head_entropy=head_entropy, output=output, messages=messages)


def _draw_heads(state):
    tables = [weights_table_html(w, state.tokens, state.tokens, decimals=2, cell_width=34, font_size=11,
                                 title=f"head {h} · entropy {state.head_entropy[h]:.2f}", colour_bar=(h == 0))
              for h, w in enumerate(state.weights)]
    return html_grid(tables)


def _heads_height(state):
    """Room for one row of the heads' heatmaps and the message line; more rows, when the grid
    wraps on a narrow page, make the picture grow past it."""
    return f"{(len(state.tokens) + 1) * 21 + 90}px"


def heads_explorer(num_heads=8, multi_head_attention=None):
    """Explore the number of heads at a fixed d_model = 24: one small heatmap per head.

    Control: ``num_heads`` (toggle buttons, every divisor of 24 up to 12).
    The grid of heatmaps is rebuilt when the number of heads changes.
    multi_head_attention: the function every state is computed by (see
    :func:`heads_state`); None means the course's.
    Returns an :class:`Explorer`; ``.state`` is a :class:`HeadsState`.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral) or num_heads not in HEADS_CHOICES:
        raise ValueError(f"num_heads must be one of {list(HEADS_CHOICES)} (divisors of d_model = {HEADS_D_MODEL}); "
                         f"got {num_heads!r}")
    buttons = widgets.ToggleButtons(options=[(str(h), h) for h in HEADS_CHOICES], value=num_heads,
                                    description="num_heads", style={"button_width": "42px"})

    def state(num_heads):
        return heads_state(num_heads, multi_head_attention=multi_head_attention)
    return Explorer(state, _draw_heads, {"num_heads": buttons},
                    [[buttons, widgets.Label(f"d_model = {HEADS_D_MODEL}, d_k = d_model / num_heads")]],
                    height=_heads_height, name="heads")
