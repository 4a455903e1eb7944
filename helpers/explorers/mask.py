"""Notebook 04's explorer: the causal mask, hidden keys, and masking before or after the softmax.

``mask_state`` computes what it shows; ``mask_explorer`` is the widget.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import traitlets

from helpers.attention import attention_entropy, causal_mask as course_causal_mask, scaled_dot_product_attention
from helpers.explorers.base import Explorer, _example, _flag, _listed
from helpers.inputs import refuse_masked_array
from helpers.plots import weights_table_html

__all__ = [
    "MaskState", "mask_state", "mask_explorer",
]


# --------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class MaskState:
    """What the mask explorer shows for one setting.

    mask: (n, n) boolean, True = may attend; weights: (n, n); output: (n, d_v);
    row_sums: (n,); entropy: (n,) in nats, or None when the mask is applied
    after the softmax (those rows do not sum to 1, so they are not weights
    and have no entropy); empty_rows: the positions of
    queries left with no key to attend to (their weights and output are 0).
    """

    tokens: tuple
    causal: bool
    hidden: tuple
    where: str
    mask: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    row_sums: np.ndarray
    entropy: np.ndarray | None
    empty_rows: tuple
    messages: tuple


def _positions(hidden, tokens):
    """``hidden`` as a sorted tuple of distinct key positions of ``tokens``; ValueError otherwise."""
    n = len(tokens)
    refuse_masked_array(hidden, "hidden", how="pass a tuple of the key positions to hide, e.g. (0, 2)")
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Iterable):
        raise ValueError(f"hidden must be a tuple or list of key positions 0 to {n - 1} of {list(tokens)} "
                         f"(empty to hide nothing); got {hidden!r}")
    hidden = tuple(hidden)
    for j in hidden:
        if isinstance(j, bool) or not isinstance(j, numbers.Integral) or not 0 <= j < n:
            raise ValueError(f"hidden must hold key positions 0 to {n - 1} of {list(tokens)}; got {j!r}")
    return tuple(sorted(set(int(j) for j in hidden)))


def mask_state(causal=True, hidden=(), where="before", example="river_bank", *, attention=None, causal_mask=None):
    """Attention weights of a worked example under a causal mask and hidden keys.

    causal: apply the causal mask (query i sees keys 0..i), True or False.
    hidden: positions of keys hidden from every query (a padding mask), a
        tuple or list (empty for none).
    where: "before" applies the combined mask before the softmax, as
        ``scaled_dot_product_attention`` does; "after" shows the bug of
        zeroing masked weights after a softmax over every key.
    example: the name of a worked example in data/ (default the river bank).
    attention, causal_mask: the functions that compute it, with the course's
        signatures (``attention(Q, K, V, mask=None) -> (output, weights)``,
        ``causal_mask(n) -> (n, n) bool``); None means the course's
        ``scaled_dot_product_attention`` and ``causal_mask``. The notebook
        passes what ``helpers.pieces.piece`` gives: yours once it is right.
        A function that is not the course's and ran at this setting is
        named in a last message: "Computed by your attention and
        causal_mask." (causal_mask runs only when ``causal`` is True).

    A query whose keys are all hidden gets all-zero weights and a zero
    output (in "before" mode the documented behaviour of
    ``scaled_dot_product_attention``; in "after" mode what zeroing every
    weight leaves), and a message says so. The messages describe only what
    this setting did. Returns a :class:`MaskState`. Raises ValueError for
    a ``causal`` that is not True or False, a ``hidden`` that is not a
    collection of positions inside the sentence, a ``where`` other than
    "before"/"after", or an unknown example.
    """
    ex = _example(example)
    n = len(ex.tokens)
    causal = _flag(causal, "causal")
    hidden = _positions(hidden, ex.tokens)
    if where not in ("before", "after"):
        raise ValueError(f"where must be 'before' or 'after' (the softmax); got {where!r}")
    yours = [name for name, fn, course, ran in [("attention", attention, scaled_dot_product_attention, True),
                                                ("causal_mask", causal_mask, course_causal_mask, causal)]
             if ran and fn is not None and inspect.unwrap(fn) is not course]   # piece()'s course attention wraps it
    attention = scaled_dot_product_attention if attention is None else attention
    causal_mask = course_causal_mask if causal_mask is None else causal_mask
    mask = np.array(causal_mask(n), dtype=bool) if causal else np.ones((n, n), dtype=bool)
    mask[:, list(hidden)] = False
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    if where == "before":
        output, weights = attention(Q, K, V, mask=mask)
    else:  # the bug: softmax over every key, then zero the masked weights
        _, full = attention(Q, K, V)
        weights = np.where(mask, full, 0.0)
        output = weights @ V
    sums = weights.sum(axis=1)
    empty = tuple(int(i) for i in np.flatnonzero(~mask.any(axis=1)))
    return MaskState(tokens=tuple(ex.tokens), causal=causal, hidden=hidden, where=where, mask=mask,
                     weights=weights, output=output, row_sums=sums,
                     entropy=attention_entropy(weights) if where == "before" else None,
                     empty_rows=empty, messages=_mask_messages(ex.tokens, causal, hidden, where, mask, sums, empty)
                     + ((f"Computed by your {' and '.join(yours)}.",) if yours else ()))


def _mask_messages(tokens, causal, hidden, where, mask, sums, empty):
    """What happened at one setting of the mask explorer, said in sentences that are all true of it."""
    n = len(tokens)
    if len(empty) == n:  # every row empty: only when every key is hidden, with or without the causal mask
        if where == "before":
            return ("Every key is hidden from every query, so no query has anything to attend to. "
                    "The helpers give such a row all-zero weights and a zero output: "
                    "not NaN (what -inf everywhere gives a plain softmax) and not an even spread "
                    "(what a large negative fill gives).",)
        return ("Every key is hidden from every query. Masked after the softmax, the softmax still ran over "
                "every key; zeroing every weight afterwards leaves every row summing to 0 and every output "
                "the zero vector.",)
    messages = []
    if empty:
        one = len(empty) == 1
        messages.append(f"Nothing is left for {_listed(tokens[i] for i in empty)} to attend to: "
                        + ("its weights are all 0 and its output is the zero vector." if one else
                           "their weights are all 0 and their outputs are zero vectors."))
    losing = [i for i in range(n) if i not in empty and not mask[i].all()]  # rows that lose keys but keep one
    if not losing:  # nothing is masked in any row that has a key
        messages.append("Nothing is masked: every query attends to every key, so every row sums to 1"
                        + (" wherever the mask is applied." if where == "after" else "."))
        return tuple(messages)
    what = []
    if causal:
        what.append("the later words (causal mask)")
    if hidden:
        what.append(f"the hidden key{'s' if len(hidden) > 1 else ''} {_listed(tokens[j] for j in hidden)}")
    masked = " and ".join(what)
    rows = f"row{'s' if len(losing) > 1 else ''} of {_listed(tokens[i] for i in losing)}"
    if where == "before":
        messages.append(f"Masked before the softmax: the masked keys are {masked}. Every row with a key left sums "
                        f"to 1: in the {rows}, the softmax runs over the remaining keys only, so the weight "
                        "the masked keys would have had is shared out among them in proportion.")
    else:
        messages.append(f"Mask applied after the softmax (the bug): the masked keys are {masked}. The {rows} "
                        f"{'sum' if len(losing) > 1 else 'sums'} to " + ", ".join(f"{sums[i]:.3f}" for i in losing)
                        + " instead of 1, because each weight left was divided by a total that includes the "
                        "masked keys, so those keys still shape it.")
    return tuple(messages)


def _draw_mask(state):
    title = ("causal mask" if state.causal else "no causal mask") + (
        f", hidden keys: {', '.join(state.tokens[j] for j in state.hidden)}" if state.hidden else "") + (
        ", masked AFTER the softmax (bug)" if state.where == "after" else "")
    outputs = ["(" + ", ".join(f"{v:.3f}" for v in row) + ")" for row in state.output]
    return weights_table_html(state.weights, state.tokens, state.tokens, title=title, masked=~state.mask,
                              row_notes={"row sum": state.row_sums, "output": outputs})


def mask_explorer(example="river_bank", causal=True, *, attention=None, causal_mask=None):
    """Explore masks on a worked example (default: "the river bank flooded").

    Controls: ``causal`` (checkbox), ``hidden`` (one toggle button per key:
    hide that key from every query, as a padding mask would; its ``.value``
    is the tuple of hidden positions, and setting it moves the buttons) and
    ``where`` (apply the mask before the softmax, or after it, the bug). The
    picture shows the weights with masked cells striped, each row's sum and
    each query's output. Returns an :class:`Explorer`; ``.state`` is a
    :class:`MaskState`. ``attention`` and ``causal_mask``: the functions it
    runs on, as :func:`mask_state` takes them (None: the course's). Raises
    ValueError for an unknown example or a ``causal`` that is not True or False.
    """
    tokens = _example(example).tokens
    causal_box = widgets.Checkbox(value=_flag(causal, "causal"), description="causal mask", indent=False,
                                  layout=widgets.Layout(width="130px"))
    where = widgets.ToggleButtons(options=[("before the softmax", "before"), ("after the softmax (bug)", "after")],
                                  value="before", description="mask applied", style={"button_width": "210px"})
    buttons = [widgets.ToggleButton(value=False, description=f"hide '{t}'", tooltip=f"hide key {i}: {t}",
                                    layout=widgets.Layout(width="auto")) for i, t in enumerate(tokens)]
    hidden = _HiddenKeys(buttons, tokens)
    explorer = Explorer(lambda causal, hidden, where: mask_state(causal, hidden, where, example, attention=attention,
                                                                 causal_mask=causal_mask), _draw_mask,
                        {"causal": causal_box, "hidden": hidden, "where": where},
                        [[causal_box, where], [widgets.Label("keys to hide:")] + buttons], height="200px",
                        name="mask")
    if len(tokens) > MASK_GRID_TOKENS:   # 2^n subsets of hidden keys: past this, each key hidden alone
        explorer.grid_options = {"hidden": [()] + [(j,) for j in range(len(tokens))]}
        explorer.missing_note = (f"With more than {MASK_GRID_TOKENS} tokens this page stores each key hidden alone, "
                                 "not every set of hidden keys: hiding two or more needs a kernel "
                                 "(open the course with make lab).")
    return explorer


#: Up to this many tokens the static page stores every set of hidden keys (2^n x 4 states); past it, each alone.
MASK_GRID_TOKENS = 6


class _Positions(traitlets.TraitType):
    """A trait holding key positions of its owner's ``tokens``: stored as a sorted tuple; ValueError otherwise."""

    default_value = ()

    def validate(self, obj, value):
        return _positions(value, obj.tokens)


class _HiddenKeys(traitlets.HasTraits):
    """The key toggle buttons seen as one control: ``value`` is the tuple of positions whose button is down.

    The two stay in step both ways: pressing a button sets ``value``, and
    setting ``value`` (any collection of positions; stored sorted) presses
    and releases the buttons to match, with one change of ``value`` only.
    A value that is not a collection of positions of the sentence is
    refused with a ValueError and changes nothing.
    """

    value = _Positions()

    def __init__(self, buttons, tokens):
        super().__init__()
        self.buttons, self.tokens = buttons, tuple(tokens)
        self._showing = False
        for b in buttons:
            b.observe(self._pressed, names="value")

    @traitlets.observe("value")
    def _show(self, change):
        self._showing = True  # the buttons follow the value; their own changes must not set it back
        try:
            for i, b in enumerate(self.buttons):
                b.value = i in change["new"]
        finally:
            self._showing = False

    def _pressed(self, change):
        if not self._showing:
            self.value = tuple(i for i, b in enumerate(self.buttons) if b.value)
