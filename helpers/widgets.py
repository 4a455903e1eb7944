"""Explorers: widgets that recompute attention as you move a control.

Each explorer comes in two parts:

- a pure function of the control values (``dk_state``, ``mask_state``,
  ``heads_state``) that returns a small frozen record of every number the
  picture shows. Notebooks print from it; tests call it directly.
- a widget (``dk_explorer()``, ``mask_explorer()``, ``heads_explorer()``):
  one ``ipywidgets.VBox`` holding the controls and the picture. Its current
  record is ``.state`` (None after a failed update, whose message is then
  in ``.error``), its controls are ``.controls`` by name, and its picture
  is the HTML widget ``.picture``.

The picture is an HTML heatmap (``plots.weights_table_html``) rather than a
matplotlib figure: each change replaces the HTML of one widget of fixed
height, so the page neither flickers nor jumps, nothing piles up, and an
update costs about a millisecond instead of the 50-100 ms of drawing a PNG.
An exception inside an update is caught and shown in the picture's place.
"""

from __future__ import annotations

import functools
import html
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import traitlets

from helpers.attention import _refuse_masked_array
from helpers.attention import (
    attention_entropy,
    causal_mask,
    multi_head_attention,
    scaled_dot_product_attention,
)
from helpers.examples import load_example
from helpers.plots import html_grid, weights_table_html
from helpers.saturation import _positive_int as _whole  # one check of "a positive whole number"
from helpers.saturation import _seed, jacobian_size, random_queries_keys

__all__ = [
    "DkState", "dk_state", "dk_explorer", "DK_CHOICES",
    "MaskState", "mask_state", "mask_explorer",
    "HeadsState", "heads_state", "heads_explorer", "random_model", "HEADS_CHOICES",
    "Explorer", "KERNEL_LINE", "NO_KERNEL_LINE", "setup_check",
]


# --------------------------------------------------------------------------
# The widget shell shared by the three explorers
# --------------------------------------------------------------------------

class Explorer(widgets.VBox):
    """Controls above a picture, redrawn whenever a control's value changes.

    compute: function of the controls' values (as keyword arguments) that
        returns a state record with a ``messages`` attribute.
    draw: function of that state returning the picture's HTML.
    controls: {name: widget}; each name is a keyword of ``compute``.
    layout_rows: lists of control widgets, one list per row of controls
        (each row wraps onto a second line when the page is narrow).
    height: the picture's minimum CSS height: a string, or a function of the
        state returning one, so that the space kept free follows the current
        layout (e.g. the number of heads) rather than the largest one. The
        picture grows past it when its content needs more room.

    Every explorer also carries a static form for pages without a kernel
    (DESIGN.md, "Other contracts"): its output holds, besides the widget
    view, ``text/html`` with the picture of the state it was shown in and
    :data:`KERNEL_LINE`, and ``text/plain`` with that line and the state's
    messages. nbconvert's HTML exporter and GitHub pick the HTML when they
    cannot draw widgets (nbconvert draws the widget view while the notebook
    holds saved widget state: ``tools/export_html.py`` removes the view); a
    JupyterLab with a running kernel draws the live widget. Where a widget
    renderer shows the saved widget without a kernel, the explorer's own
    last line (:data:`NO_KERNEL_LINE`) tells the reader to start the kernel.
    """

    def __init__(self, compute, draw, controls, layout_rows, height):
        self.compute, self.draw, self.controls = compute, draw, dict(controls)
        self.state, self.error = None, None
        self._height = height
        self.picture = widgets.HTML(layout=widgets.Layout(overflow="auto", max_width="100%"))
        self.picture.add_class("explorer-picture")
        self.kernel_line = widgets.HTML(f"<style>{EXPLORER_CSS}</style>"
                                        f"<div class='explorer-kernel-line'>{_code(NO_KERNEL_LINE)}</div>")
        rows = [widgets.HBox(row, layout=widgets.Layout(flex_flow="row wrap", align_items="center", max_width="100%"))
                for row in layout_rows]
        super().__init__(rows + [self.picture, self.kernel_line], layout=widgets.Layout(max_width="100%"))
        self.add_class("course-explorer")
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    def _changed(self, change):
        self.update()

    #: Exceptions that mean "this input cannot be drawn" (expected, the learner's to change):
    #: shown as a plain note (class ``explorer-note``). Anything else is a fault: the red box.
    note_errors = ()
    note_title = "This input cannot be drawn."
    #: Put the state's messages above the picture rather than below it.
    messages_first = False

    def update(self):
        """Recompute from the current control values and redraw; show any error in the picture."""
        try:
            state = self.compute(**{name: c.value for name, c in self.controls.items()})
            drawn, messages = self.draw(state), _messages_html(state.messages)
            picture = messages + drawn if self.messages_first else drawn + messages
            height = self._height(state) if callable(self._height) else self._height
        except self.note_errors as exc:
            self.state, self.error = None, str(exc)
            self.picture.value = _note_html(self.note_title, str(exc))
            return
        except Exception as exc:  # shown to the learner, never lost in the log
            self.state, self.error = None, f"{type(exc).__name__}: {exc}"
            self.picture.value = _error_html(self.error)
            return
        self.state, self.error = state, None
        self.picture.layout.min_height = height
        self.picture.value = picture

    def static_html(self):
        """The static form: the current picture and :data:`KERNEL_LINE`, as one piece of HTML."""
        return (f"<div class='course-explorer-static'><style>{EXPLORER_CSS}</style>{self.picture.value}"
                f"<p class='explorer-kernel-line'>{_code(KERNEL_LINE)}</p></div>")

    def static_text(self):
        """The static form as plain text: :data:`KERNEL_LINE`, then the state's messages (or the error)."""
        said = self.state.messages if self.state is not None else (self.error or "",)
        return "\n".join((KERNEL_LINE,) + tuple(said))

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["text/html"] = self.static_html()
        data["text/plain"] = self.static_text()
        return data


#: The static form's line: what a page without a kernel shows under the explorer's saved picture.
KERNEL_LINE = ("This is a saved picture of the explorer, without its controls. Moving them needs a running kernel "
               "and JupyterLab's widget support: open the course with `make lab` and run the notebook's cells.")
#: How the explorers look beyond their inline styles: the kernel line, and a pressed toggle button that
#: differs from a released one in more than a shade of grey (a blue fill with white bold text, 5.7:1,
#: an inner outline, the label underlined). Text on the page uses JupyterLab's theme colours, so the dark theme works.
PRESSED_BACKGROUND, PRESSED_TEXT = "#1565c0", "#ffffff"
EXPLORER_CSS = (
    ".explorer-kernel-line{font-family:sans-serif;font-size:12px;line-height:1.4;font-style:italic;margin:6px 0 2px 0;"
    "color:var(--jp-content-font-color1,#222)}"
    ".course-explorer .explorer-picture .widget-html-content{width:100%;max-width:100%;min-width:0}"
    ".explorer-text{font-family:sans-serif;font-size:14px;line-height:1.4;margin:6px 0;color:var(--jp-content-font-color1,#222)}"
    ".course-explorer .jupyter-button.mod-active{"
    f"background:{PRESSED_BACKGROUND};color:{PRESSED_TEXT};font-weight:bold;"
    "box-shadow:inset 0 0 0 2px var(--jp-content-font-color0,#000);text-decoration:underline}"
)
#: The live explorer's last line, for a widget renderer that shows saved controls without a kernel.
NO_KERNEL_LINE = ("Controls change nothing? Then no kernel is running: open the course with `make lab` "
                  "and run the notebook's cells.")


def _code(text):
    """``text`` as HTML, with each `command` in backticks set as code."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if k % 2 else p for k, p in enumerate(parts))


def _note_html(title, text):
    """An input the explorer cannot take, as a plain note (class ``explorer-note``)."""
    return ("<div class='explorer-note' style='font-family:sans-serif;font-size:13px;"
            f"border:1px solid #888;padding:8px'><b>{html.escape(title)}</b><br>"
            f"{html.escape(text[0].upper() + text[1:])}.</div>")


def _error_html(error):
    """An unexpected failure, in a red box (class ``explorer-error``, which the browser tests look for)."""
    return ("<div class='explorer-error' style='font-family:sans-serif;border:2px solid #b00020;padding:8px;"
            f"color:#b00020'><b>This setting could not be drawn.</b><br>{html.escape(error)}</div>")


def _messages_html(messages):
    return "".join(f"<p style='font-family:sans-serif;font-size:13px;line-height:1.4;margin:6px 0'>{html.escape(m)}</p>"
                   for m in messages)


def _flag(value, name):
    """``value`` as a bool; a ValueError unless it is True or False (a string such as "no" is not)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _listed(items):
    """'a'; 'a' and 'b'; 'a', 'b' and 'c': names quoted and joined as in a sentence."""
    quoted = [repr(str(t)) for t in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


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

    return Explorer(compute, draw, {"n": slider}, [[slider]], height="2em")


# --------------------------------------------------------------------------
# d_k and scaling
# --------------------------------------------------------------------------

#: The key widths the d_k slider offers: 1 to 1024, roughly evenly on a log scale.
DK_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


@dataclass(frozen=True)
class DkState:
    """What the d_k explorer shows for one setting.

    scores: (n, n) raw dot products q . k; weights: (n, n) attention weights;
    entropy: (n,) entropy of each row in nats (at most log n);
    largest_weight: the largest weight in the matrix;
    score_std: standard deviation of the n * n scores the softmax receives
        (after scaling, if on); they come from only n queries and n keys,
        so it is a rough estimate of
    expected_std: the spread over all random vectors, sqrt(d_k) unscaled
        and 1 scaled (Vaswani et al. 2017, section 3.2.1, footnote 4);
    gradient: mean size of the softmax Jacobian over the rows (0 when the
        softmax is one-hot); row_gradient: (n,) that size for each row;
    saturated_rows: the rows (0-based) whose largest weight is over 0.99.
    """

    d_k: int
    scaled: bool
    scale: float
    scores: np.ndarray
    weights: np.ndarray
    entropy: np.ndarray | None
    largest_weight: float
    score_std: float
    gradient: float
    max_entropy: float
    messages: tuple
    expected_std: float
    row_gradient: np.ndarray
    saturated_rows: tuple


#: A row counts as saturated when one key takes more than this share of its weight.
SATURATED = 0.99


def dk_state(d_k=64, scaled=True, n=6, seed=0):
    """Attention weights of ``n`` random queries against ``n`` random keys of width ``d_k``.

    Queries and keys have independent N(0, 1) entries (``random_queries_keys``),
    so a raw score q . k has variance d_k; with ``scaled`` the scores are
    divided by sqrt(d_k) (Vaswani et al. 2017, section 3.2.1), which brings
    their variance back to 1 whatever d_k is. The draw is nested: the vectors
    for a larger d_k extend those for a smaller one, so growing d_k adds new
    terms to the same dot products. Each score is then a random walk: its
    typical size grows like sqrt(d_k), but a row's gap between its two best
    keys can shrink again, so a row that saturated at one d_k may share its
    weight at a larger one.

    Returns a :class:`DkState`. Raises ValueError unless d_k and n are
    positive whole numbers, ``scaled`` is True or False and ``seed`` a
    non-negative whole number.
    """
    d_k, n = _whole(d_k, "d_k"), _whole(n, "n")
    scaled = _flag(scaled, "scaled")
    Q, K = random_queries_keys(d_k, n=n, seed=seed)
    scale = 1.0 / np.sqrt(d_k) if scaled else 1.0
    _, weights = scaled_dot_product_attention(Q, K, np.eye(n), scale=scale)
    scores = Q @ K.T
    entropy = attention_entropy(weights)
    largest = float(weights.max())
    row_gradient = jacobian_size(weights)
    gradient = float(row_gradient.mean())
    score_std = float(np.std(scores * scale))
    expected_std = 1.0 if scaled else float(np.sqrt(d_k))
    how = f"divided by sqrt({d_k}) = {np.sqrt(d_k):.3g}" if scaled else "not divided"
    expected = f"sqrt({d_k}) / sqrt({d_k}) = 1" if scaled else f"sqrt({d_k}) = {expected_std:.3g}"
    messages = [
        f"d_k = {d_k}, scores {how}. The {n * n} scores in the table spread with standard deviation "
        f"{score_std:.2f}; they come from only {n} queries and {n} keys, a small sample: over many random "
        f"vectors the spread is {expected}. Largest weight {largest:.3f}; mean entropy "
        f"{float(entropy.mean()):.3f} of at most log {n} = {np.log(n):.3f} nats; mean size of J, the softmax's "
        f"Jacobian (one factor of the gradient), {gradient:.3f}."
    ]
    saturated = tuple(int(i) for i in np.flatnonzero(weights.max(axis=1) > SATURATED))
    if saturated:
        one = len(saturated) == 1
        messages.append(
            f"{len(saturated)} of the {n} rows {'has' if one else 'have'} saturated "
            f"({', '.join(f'q{i + 1}' for i in saturated)}): one key takes over {SATURATED:.0%} of "
            f"{'that row' if one else 'each of them'}, and the size of J, the softmax's Jacobian, there "
            + ("is " if one else "is, row by row, ")
            + ", ".join(f"{row_gradient[i]:.3f}" for i in saturated)
            + f" (an even row of {n} gives {np.sqrt(n - 1) / n:.3f}), so training could hardly move "
            + ("its" if one else "their") + " weights.")
    return DkState(d_k=d_k, scaled=scaled, scale=float(scale), scores=scores, weights=weights,
                   entropy=entropy, largest_weight=largest, score_std=score_std,
                   gradient=gradient, max_entropy=float(np.log(n)), messages=tuple(messages),
                   expected_std=expected_std, row_gradient=row_gradient, saturated_rows=saturated)


def _draw_dk(state):
    n = state.weights.shape[0]
    title = (f"{n} random queries x {n} random keys, d_k = {state.d_k}, "
             + ("scaled by 1/sqrt(d_k)" if state.scaled else "unscaled"))
    return weights_table_html(state.weights, [f"q{i + 1}" for i in range(n)], [f"k{j + 1}" for j in range(n)],
                              title=title, row_notes={"entropy (nats)": state.entropy})


def dk_explorer(d_k=64, scaled=True):
    """Explore d_k and the 1/sqrt(d_k) scaling: six random queries against six random keys.

    Controls: ``d_k`` (a slider over DK_CHOICES, 1 to 1024) and ``scaled``
    (a checkbox: divide the scores by sqrt(d_k)). The picture shows the
    weights, each row's entropy, the largest weight and the spread of the
    scores. Returns an :class:`Explorer`; its ``.state`` is a :class:`DkState`.
    Raises ValueError unless d_k is one of DK_CHOICES and ``scaled`` is True or False.
    """
    if isinstance(d_k, bool) or not isinstance(d_k, numbers.Integral) or d_k not in DK_CHOICES:
        raise ValueError(f"d_k must be one of the slider's values {list(DK_CHOICES)}; got {d_k!r}")
    slider = widgets.SelectionSlider(options=DK_CHOICES, value=int(d_k), description="d_k",
                                     layout=widgets.Layout(width="420px"))
    box = widgets.Checkbox(value=_flag(scaled, "scaled"), description="divide the scores by √d_k", indent=False)
    return Explorer(lambda d_k, scaled: dk_state(d_k, scaled), _draw_dk,
                    {"d_k": slider, "scaled": box}, [[slider, box]], height="300px")


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


def _example(example):
    """The worked example named ``example``, with the argument named in any error."""
    try:
        return load_example(example)  # read afresh (60 microseconds), so an edited data file shows at once
    except ValueError as exc:
        raise ValueError(f"example: {exc}") from None


def _positions(hidden, tokens):
    """``hidden`` as a sorted tuple of distinct key positions of ``tokens``; ValueError otherwise."""
    n = len(tokens)
    _refuse_masked_array(hidden, "hidden", how="pass a tuple of the key positions to hide, e.g. (0, 2)")
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Iterable):
        raise ValueError(f"hidden must be a tuple or list of key positions 0 to {n - 1} of {list(tokens)} "
                         f"(empty to hide nothing); got {hidden!r}")
    hidden = tuple(hidden)
    for j in hidden:
        if isinstance(j, bool) or not isinstance(j, numbers.Integral) or not 0 <= j < n:
            raise ValueError(f"hidden must hold key positions 0 to {n - 1} of {list(tokens)}; got {j!r}")
    return tuple(sorted(set(int(j) for j in hidden)))


def mask_state(causal=True, hidden=(), where="before", example="river_bank"):
    """Attention weights of a worked example under a causal mask and hidden keys.

    causal: apply the causal mask (query i sees keys 0..i), True or False.
    hidden: positions of keys hidden from every query (a padding mask), a
        tuple or list (empty for none).
    where: "before" applies the combined mask before the softmax, as
        ``scaled_dot_product_attention`` does; "after" shows the bug of
        zeroing masked weights after a softmax over every key.
    example: the name of a worked example in data/ (default the river bank).

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
    mask = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    mask[:, list(hidden)] = False
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    if where == "before":
        output, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
    else:  # the bug: softmax over every key, then zero the masked weights
        _, full = scaled_dot_product_attention(Q, K, V)
        weights = np.where(mask, full, 0.0)
        output = weights @ V
    sums = weights.sum(axis=1)
    empty = tuple(int(i) for i in np.flatnonzero(~mask.any(axis=1)))
    return MaskState(tokens=tuple(ex.tokens), causal=causal, hidden=hidden, where=where, mask=mask,
                     weights=weights, output=output, row_sums=sums,
                     entropy=attention_entropy(weights) if where == "before" else None,
                     empty_rows=empty, messages=_mask_messages(ex.tokens, causal, hidden, where, mask, sums, empty))


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


def mask_explorer(example="river_bank", causal=True):
    """Explore masks on a worked example (default: "the river bank flooded").

    Controls: ``causal`` (checkbox), ``hidden`` (one toggle button per key:
    hide that key from every query, as a padding mask would; its ``.value``
    is the tuple of hidden positions, and setting it moves the buttons) and
    ``where`` (apply the mask before the softmax, or after it, the bug). The
    picture shows the weights with masked cells striped, each row's sum and
    each query's output. Returns an :class:`Explorer`; ``.state`` is a
    :class:`MaskState`. Raises ValueError for an unknown example or a
    ``causal`` that is not True or False.
    """
    tokens = _example(example).tokens
    causal_box = widgets.Checkbox(value=_flag(causal, "causal"), description="causal mask", indent=False,
                                  layout=widgets.Layout(width="130px"))
    where = widgets.ToggleButtons(options=[("before the softmax", "before"), ("after the softmax (bug)", "after")],
                                  value="before", description="mask applied", style={"button_width": "210px"})
    buttons = [widgets.ToggleButton(value=False, description=f"hide '{t}'", tooltip=f"hide key {i}: {t}",
                                    layout=widgets.Layout(width="auto")) for i, t in enumerate(tokens)]
    hidden = _HiddenKeys(buttons, tokens)
    return Explorer(lambda causal, hidden, where: mask_state(causal, hidden, where, example), _draw_mask,
                    {"causal": causal_box, "hidden": hidden, "where": where},
                    [[causal_box, where], [widgets.Label("keys to hide:")] + buttons], height="200px")


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


def heads_state(num_heads=8, d_model=HEADS_D_MODEL, tokens=HEADS_TOKENS, seed=0):
    """Multi-head attention of a seeded random layer, split into ``num_heads`` heads.

    The layer (``random_model``) stays the same whatever num_heads is: only
    the split of its d_model projected features into heads of d_k =
    d_model / num_heads changes. Returns a :class:`HeadsState`. Raises the
    ValueError of ``multi_head_attention`` (listing the values that work)
    when num_heads does not divide d_model, and a ValueError naming the
    argument for a d_model that is not a positive whole number, a seed that
    is not a non-negative whole number, or tokens that are not a non-empty
    tuple or list of words (strings).
    """
    _refuse_masked_array(tokens, "tokens", how="pass a tuple or list of words (strings)")
    if (isinstance(tokens, str) or not isinstance(tokens, (tuple, list)) or not tokens
            or not all(isinstance(t, str) for t in tokens)):
        raise ValueError(f"tokens must be a non-empty tuple or list of words (strings), one per position; "
                         f"got {tokens!r}")
    tokens = tuple(tokens)
    X, W_Q, W_K, W_V, W_O = random_model(d_model, len(tokens), seed)
    output, weights = multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads=num_heads)
    entropy = attention_entropy(weights)
    d_k = d_model // num_heads
    head_entropy = entropy.mean(axis=1)
    messages = (
        f"{num_heads} head{'s' if num_heads > 1 else ''} of d_k = {d_model} / {num_heads} = {d_k} features each, "
        f"scores scaled by 1/sqrt({d_k}). Mean entropy per head (at most log {len(tokens)} = "
        f"{np.log(len(tokens)):.3f} nats): " + ", ".join(f"{h:.2f}" for h in head_entropy) + ".",
    )
    return HeadsState(num_heads=int(num_heads), d_model=d_model, d_k=d_k, tokens=tokens, weights=weights,
                      entropy=entropy, head_entropy=head_entropy, output=output, messages=messages)


def _draw_heads(state):
    tables = [weights_table_html(w, state.tokens, state.tokens, decimals=2, cell_width=34, font_size=11,
                                 title=f"head {h + 1} · entropy {state.head_entropy[h]:.2f}", colour_bar=(h == 0))
              for h, w in enumerate(state.weights)]
    return html_grid(tables)


def _heads_height(state):
    """Room for one row of the heads' heatmaps and the message line; more rows, when the grid
    wraps on a narrow page, make the picture grow past it."""
    return f"{(len(state.tokens) + 1) * 21 + 90}px"


def heads_explorer(num_heads=8):
    """Explore the number of heads at a fixed d_model = 24: one small heatmap per head.

    Control: ``num_heads`` (toggle buttons, every divisor of 24 up to 12).
    The grid of heatmaps is rebuilt when the number of heads changes.
    Returns an :class:`Explorer`; ``.state`` is a :class:`HeadsState`.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, numbers.Integral) or num_heads not in HEADS_CHOICES:
        raise ValueError(f"num_heads must be one of {list(HEADS_CHOICES)} (divisors of d_model = {HEADS_D_MODEL}); "
                         f"got {num_heads!r}")
    buttons = widgets.ToggleButtons(options=[(str(h), h) for h in HEADS_CHOICES], value=num_heads,
                                    description="num_heads", style={"button_width": "42px"})
    return Explorer(lambda num_heads: heads_state(num_heads), _draw_heads, {"num_heads": buttons},
                    [[buttons, widgets.Label(f"d_model = {HEADS_D_MODEL}, d_k = d_model / num_heads")]],
                    height=_heads_height)


# --------------------------------------------------------------------------
# A real trained model: all-MiniLM-L6-v2 (notebook 09)
# --------------------------------------------------------------------------

from collections import OrderedDict

from helpers import real_model as _real_model
from helpers.plots import TABLE_MAX_TOKENS as _TABLE_MAX_TOKENS
from helpers.plots import weights_row_html

__all__ += ["RealModelState", "real_model_state", "real_model_run", "real_model_explorer",
            "REAL_SENTENCE", "REAL_MAX_DRAWN", "REAL_ROW_KEYS", "TextProblem"]

#: The explorer's starting sentence: source 003's river sentence.
REAL_SENTENCE = "The bank by the river was steep."
#: The heatmap draws at most this many tokens (a window around the chosen
#: token); the chosen token's whole row is always shown. It is the HTML
#: table's size limit, plots.TABLE_MAX_TOKENS = 2 * plots.ANNOTATE_MAX_TOKENS.
REAL_MAX_DRAWN = _TABLE_MAX_TOKENS
#: Forward passes kept, most recent first: at most this many sentences, and
#: at most this many token pairs (n * n) in all; the latest is always kept.
#: A 512-token sentence's weights take 6 * 12 * 512 * 512 * 8 bytes = 151 MB.
_RUNS_KEPT, _RUNS_PAIRS = 8, 512 * 512
_RUNS = OrderedDict()


def real_model_run(text):
    """``MiniLM.run(text)`` of all-MiniLM-L6-v2, remembered for the last few sentences.

    Moving the explorer's layer, head or token therefore reruns nothing:
    only a new sentence costs a forward pass (about 13 ms for 10 tokens,
    1.5 s for 512). The arrays of the result are read-only, as they are
    shared. Raises what ``load_minilm`` and ``MiniLM.run`` raise: the
    install message when the model is missing, ValueError for a text that is
    not a str, cannot be tokenized, or gives more than 512 tokens.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    if text in _RUNS:
        _RUNS.move_to_end(text, last=False)
        return _RUNS[text]
    out = _real_model.load_minilm().run(text)
    for a in (out.ids, out.is_real, out.attention, out.hidden_states, out.embedding):
        a.setflags(write=False)
    _RUNS[text] = out
    _RUNS.move_to_end(text, last=False)
    while len(_RUNS) > 1 and (len(_RUNS) > _RUNS_KEPT or sum(len(o.tokens) ** 2 for o in _RUNS.values()) > _RUNS_PAIRS):
        _RUNS.popitem(last=True)
    return out


@dataclass(frozen=True)
class RealModelState:
    """What the real-model explorer shows for one setting. Layers, heads and positions count from 0.

    tokens: the n tokens the model sees, [CLS] first and [SEP] last.
    layer, head: which head (0-5, 0-11); token: the chosen query's position.
    weights: (n, n) that head's attention weights, queries on rows, keys on columns;
    row: (n,) the chosen token's row, weights[token]; row_entropy: its entropy
    in nats (at most log n); head_entropy: the mean entropy of the head's rows;
    top_keys: up to five (position, token, weight), largest weight first;
    shown: (start, stop), the positions drawn in the heatmap (all of them
    up to REAL_MAX_DRAWN tokens, otherwise a window around the chosen token).
    """

    text: str
    tokens: tuple
    layer: int
    head: int
    token: int
    weights: np.ndarray
    row: np.ndarray
    row_entropy: float
    head_entropy: float
    top_keys: tuple
    shown: tuple
    messages: tuple


#: At most this many keys of the chosen row are drawn as boxes (the largest weights) once the
#: text is longer than REAL_MAX_DRAWN tokens; a shorter row is drawn whole.
REAL_ROW_KEYS = 24


class TextProblem(ValueError):
    """A text the real model cannot take (too long, not valid Unicode text). The explorer shows
    its message as a plain note, not as an error: it is the learner's input, not a fault."""


def _count_from_zero(value, name, size, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < size:
        raise ValueError(f"{name} must be a whole number from 0 to {size - 1} ({what}, counted from 0); got {value!r}")
    return int(value)


def _token_list(tokens, head=6, tail=3):
    """The tokens as a list for a message; a long one cut to its first and last few."""
    tokens = list(tokens)
    if len(tokens) <= head + tail + 1:
        return str(tokens)
    return str(tokens[:head])[:-1] + f", ... ({len(tokens) - head - tail} more) ..., " + str(tokens[-tail:])[1:]


def _token_position(token, tokens, model):
    """The position of ``token`` (a position, or a token as text: its first occurrence) in ``tokens``."""
    n = len(tokens)
    if isinstance(token, str):
        if token not in tokens:
            hint = ""
            pieces = model.tokenizer.encode(token, add_special_tokens=False).tokens
            if len(pieces) == 1 and pieces[0] != token and pieces[0] in tokens:
                hint = f" (the model lower-cases text and drops accents: try {pieces[0]!r})"
            raise ValueError(f"token must be one of the sentence's tokens {_token_list(tokens)} or a position; "
                             f"got {token!r}{hint}")
        return tokens.index(token)
    return _count_from_zero(token, "token", n, f"a position in the {n} tokens {_token_list(tokens)}")


def _positions_text(positions):
    return ("position " if len(positions) == 1 else "positions ") + _listed(positions).replace("'", "")


def _unknown_message(model, text, tokens):
    """Why the text's [UNK] tokens are there: a word over the tokenizer's length limit, or a word
    (an emoji, a character of many scripts) the vocabulary cannot spell even in pieces."""
    enc = model.tokenizer.encode(text)
    limit = model.tokenizer.model.max_input_chars_per_word
    long, unspelt = [], []
    for i, (t, (a, b)) in enumerate(zip(enc.tokens, enc.offsets)):
        if t == "[UNK]":
            (long if b - a > limit else unspelt).append((i, text[a:b]))
    messages = []
    if long:
        messages.append(f"[UNK] at {_positions_text([i for i, _ in long])} stands for a word of more than {limit} "
                        f"characters: the tokenizer does not cut words that long into pieces and reads each as one "
                        "[UNK], whatever its letters.")
    if unspelt:
        distinct = list(dict.fromkeys(w if len(w) <= 12 else w[:12] + "…" for _, w in unspelt))  # each word once
        named = (_listed(distinct) if len(distinct) <= 6 else
                 ", ".join(repr(w) for w in distinct[:6]) + f" and {len(distinct) - 6} more")
        each = ("it is one word the model's vocabulary cannot spell, even in pieces, so it becomes one [UNK]"
                if len(unspelt) == 1 else
                f"these are {len(unspelt)} words the model's vocabulary cannot spell, even in pieces, each read "
                "as one [UNK]")
        messages.append(f"[UNK] at {_positions_text([i for i, _ in unspelt])} stands for {named}: "
                        f"{each} (an emoji, or a character of a script it barely covers; in Chinese and Japanese "
                        "each character counts as a word).")
    return messages


def real_model_state(text=REAL_SENTENCE, layer=0, head=4, token=2):
    """One head of all-MiniLM-L6-v2 on ``text``, and the row of one token.

    text: any str; the model sees its WordPiece tokens between [CLS] and
        [SEP] (an empty box gives just those two, and a message says so).
    layer: 0 to 5; head: 0 to 11 (counted from 0, as numpy indexes
        ``MiniLMOutput.attention[layer, head]``).
    token: the query's position, 0 to n - 1, or a token as text (its first
        occurrence, e.g. "bank"; tokens are lower-case).

    The arguments are checked first (the text only tokenized), then the
    forward pass runs: ``real_model_run``, remembered per sentence.
    Returns a :class:`RealModelState`. Raises :class:`TextProblem` (a
    ValueError) for a text the model cannot take (not a str, not valid
    Unicode text, more than 512 tokens: the message says which) and
    ValueError for a layer, head or token out of range.
    """
    if not isinstance(text, str):
        raise TextProblem(f"text must be a str; got {type(text).__name__}")
    model = _real_model.load_minilm()
    layer = _count_from_zero(layer, "layer", model.num_layers, f"the model has {model.num_layers} layers")
    head = _count_from_zero(head, "head", model.num_heads, f"each layer has {model.num_heads} heads")
    try:
        tokens = tuple(_RUNS[text].tokens) if text in _RUNS else tuple(model.tokenize(text)[0])
    except ValueError as exc:
        raise TextProblem(str(exc)) from None
    token = _token_position(token, tokens, model)
    out = real_model_run(text)
    n = len(tokens)
    weights = out.attention[layer, head]
    row = weights[token]
    entropy = attention_entropy(weights)
    order = np.argsort(-row, kind="stable")[:5]
    top = tuple((int(j), tokens[j], float(row[j])) for j in order)
    start = 0 if n <= REAL_MAX_DRAWN else min(max(token - REAL_MAX_DRAWN // 2, 0), n - REAL_MAX_DRAWN)
    shown = (start, min(n, start + REAL_MAX_DRAWN))

    name = f"'{tokens[token]}' (position {token})"
    messages = [f"Layer {layer}, head {head}. The row of {name} puts most weight on "
                + ", ".join(f"'{t}' ({j}) {w:.3f}" for j, t, w in top[:3])
                + f"; its entropy is {entropy[token]:.2f} nats of at most log {n} = {np.log(n):.2f}."]
    if n == 2:
        messages.append("The box holds no word the model can read (it is empty, or only spaces or invisible "
                        "characters), so the model sees just [CLS] and [SEP]. Type a sentence and press Enter.")
    if n > REAL_MAX_DRAWN:
        messages.append(f"The text has {n} tokens. The strip shows the {REAL_ROW_KEYS} largest weights of the row "
                        f"of {name}, in order of position; the heatmap shows positions {shown[0]} to "
                        f"{shown[1] - 1}, around it, so its rows sum to less than 1 where weight falls outside them.")
    if "[UNK]" in tokens:
        messages.extend(_unknown_message(model, text, tokens))
    if any(t.startswith("##") for t in tokens):
        messages.append("Words the vocabulary does not hold are cut into pieces; a piece that continues a word "
                        "starts with ##.")
    specials = sorted({t for t in tokens[1:-1] if t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]")})
    if specials:
        messages.append(f"The text itself contains {', '.join(specials)}: the tokenizer reads these as the model's own "
                        "markers, not as words.")
    if "[PAD]" in specials:
        messages.append("A [PAD] you type is read as the padding marker, but it is not masked (only the padding the "
                        "model adds itself is), so queries give it weight like any other token.")
    return RealModelState(text=text, tokens=tokens, layer=layer, head=head, token=token, weights=weights, row=row,
                          row_entropy=float(entropy[token]), head_entropy=float(entropy.mean()), top_keys=top,
                          shown=shown, messages=tuple(messages))


def _draw_real(state):
    """The explorer's picture: the messages first, then the chosen token's row, then the heatmap."""
    a, b = state.shown
    i, n = state.token, len(state.tokens)
    if n <= REAL_MAX_DRAWN:
        strip = weights_row_html(state.row, state.tokens, marked=i,
                                 title=f"The row of '{state.tokens[i]}' (position {i}): its weight on every key")
    else:  # a long row: its largest weights only, labelled with their positions
        keys = np.sort(np.argsort(-state.row, kind="stable")[:REAL_ROW_KEYS])
        rest = float(1.0 - state.row[keys].sum())
        strip = weights_row_html(state.row[keys], [f"{j}:\u00a0{state.tokens[j]}" for j in keys],
                                 marked=int(np.flatnonzero(keys == i)[0]) if i in keys else None,
                                 title=f"The row of '{state.tokens[i]}' (position {i}): its {REAL_ROW_KEYS} largest "
                                       f"weights of {n} (position: key); the other {n - REAL_ROW_KEYS} keys "
                                       f"share {rest:.3f}")
    queries = [("▸\u00a0" if q == i else "") + t for q, t in enumerate(state.tokens)]  # no break after ▸
    small = (b - a) > 12
    where = "" if (a, b) == (0, n) else f", positions {a} to {b - 1} of {n}"
    table = weights_table_html(state.weights[a:b, a:b], queries[a:b], state.tokens[a:b],
                               title=f"Layer {state.layer}, head {state.head}: every query's weights{where} "
                                     f"(mean entropy {state.head_entropy:.2f} nats)",
                               decimals=2 if small else 3, cell_width=34 if small else 46,
                               font_size=11 if small else 12)
    return strip + "<div style='height:10px'></div>" + table


class _RealModelExplorer(Explorer):
    """The Explorer with a sentence box: a new sentence rebuilds the token dropdown before one redraw.

    Its picture carries its own messages, first (so a long text's note is seen
    before the strip and the heatmap). A text the model cannot take is shown
    as a plain note (class ``explorer-note``); the red box stays for faults.
    """

    _rebuilding = False
    note_errors = (TextProblem,)
    note_title = "The model cannot take this text."
    messages_first = True

    def _changed(self, change):
        if self._rebuilding:
            return  # the dropdown is being rebuilt; one redraw follows
        if change["owner"] is self.controls["text"]:
            self._new_sentence(change["new"])
        self.update()

    def _new_sentence(self, text):
        dropdown = self.controls["token"]
        position, old_n = dropdown.value, len(dropdown.options)
        old = dict((v, label.split(": ", 1)[1]) for label, v in dropdown.options).get(dropdown.value)
        try:
            tokens, _ = _real_model.load_minilm().tokenize(text)
            if len(tokens) > 100 and text not in _RUNS:
                self.picture.value = (f"<p style='font-family:sans-serif'>Running the model on {len(tokens)} tokens "
                                      "(about a second for a few hundred)...</p>")
            tokens = real_model_run(text).tokens
        except Exception:
            dropdown.disabled = True  # the update that follows shows why
            return
        self._rebuilding = True
        try:
            with dropdown.hold_sync():
                dropdown.options = _token_options(tokens)
                dropdown.value = _same_token(old, position, old_n, tokens)
                dropdown.disabled = False
        finally:
            self._rebuilding = False


def _same_token(old, position, old_n, tokens):
    """The choice in a new sentence for the token ``old`` chosen at ``position`` of ``old_n`` tokens.

    The same position if it holds the same token; else the occurrence of that
    token whose place, as a fraction of the sentence, is nearest the old one
    (so the final [SEP] stays the final [SEP], an early 'the' an early 'the');
    else the first word (position 1), or [CLS] when there is no word.
    """
    if position < len(tokens) and tokens[position] == old:
        return position
    where = [j for j, t in enumerate(tokens) if t == old]
    if where:
        place = position / max(old_n - 1, 1)
        return min(where, key=lambda j: abs(j / max(len(tokens) - 1, 1) - place))
    return 1 if len(tokens) > 2 else 0


def _token_options(tokens):
    return [(f"{i}: {t}", i) for i, t in enumerate(tokens)]


def real_model_explorer(text=REAL_SENTENCE, layer=0, head=4, token="bank"):
    """Explore the heads of all-MiniLM-L6-v2 on a sentence you type.

    Controls: ``text`` (a box: type a sentence and press Enter; the model
    runs once per new sentence), ``layer`` (slider 0-5), ``head`` (slider
    0-11) and ``token`` (a dropdown of the sentence's tokens, rebuilt for
    each new sentence, keeping the same token where it can: see
    ``_same_token``). The picture shows the messages, then the chosen token's
    row (whole up to REAL_MAX_DRAWN tokens, else its REAL_ROW_KEYS largest
    weights), then the head's heatmap (at most REAL_MAX_DRAWN tokens, a
    window around the chosen one). A text the model cannot take (over 512
    tokens, not valid Unicode text) gives a plain note in the picture.

    Returns an :class:`Explorer`; ``.state`` is a :class:`RealModelState`.
    Raises the install message when the model is missing, and ValueError for
    bad starting values (as :func:`real_model_state`).
    """
    start = real_model_state(text, layer, head, token)
    model = _real_model.load_minilm()
    box = widgets.Text(value=text, description="sentence", continuous_update=False,
                       placeholder="type a sentence and press Enter", layout=widgets.Layout(width="560px", max_width="100%"))
    layer_slider = widgets.IntSlider(value=start.layer, min=0, max=model.num_layers - 1, description="layer",
                                     layout=widgets.Layout(width="360px"))
    head_slider = widgets.IntSlider(value=start.head, min=0, max=model.num_heads - 1, description="head",
                                    layout=widgets.Layout(width="360px"))
    dropdown = widgets.Dropdown(options=_token_options(start.tokens), value=start.token, description="token",
                                layout=widgets.Layout(width="220px"))
    return _RealModelExplorer(
        real_model_state, _draw_real,
        {"text": box, "layer": layer_slider, "head": head_slider, "token": dropdown},
        [[box, widgets.Label("press Enter to run the model")], [layer_slider, head_slider, dropdown],
         [widgets.Label("layers and heads are counted from 0")]],
        height="420px")


# --------------------------------------------------------------------------
# Tiling: the online softmax, one block of keys at a time (notebook 07)
# --------------------------------------------------------------------------

from helpers.attention import online_softmax_update  # noqa: E402  (kept with the explorer that uses it)

__all__ += ["TilingState", "tiling_state", "tiling_explorer"]


@dataclass(frozen=True)
class TilingState:
    """What the tiling explorer shows after ``step`` blocks of keys have been read.

    scores: (n, n) scaled scores Q K^T / sqrt(d_k), -inf where the causal
    mask hides a key; read: (n, n) True for the keys read so far that the
    query may attend to; block: (start, stop), the key positions of the
    block read at this step; max_before, max_after, sum_before, sum_after:
    (n,) each row's running maximum m and running sum l before and after
    this block (-inf and 0 before the first); weights: (n, n) each row's
    weights over the keys read so far, exp(score - m) / l (0 elsewhere);
    output: (n, d_v) acc / l, each query's output from the keys read so
    far; final: True at the last step, where weights and output are the
    plain ones; plain_weights, plain_output: scaled_dot_product_attention's.
    """

    tokens: tuple
    block_size: int
    step: int
    n_steps: int
    causal: bool
    scores: np.ndarray
    read: np.ndarray
    block: tuple
    max_before: np.ndarray
    max_after: np.ndarray
    sum_before: np.ndarray
    sum_after: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    final: bool
    plain_weights: np.ndarray
    plain_output: np.ndarray
    messages: tuple


def _num(x):
    """A running value as the explorer writes it: -inf as −∞, else 3 decimals."""
    return "−∞" if np.isneginf(x) else f"{float(x):.3f}"


def tiling_state(block_size=2, step=1, causal=False, example="river_bank"):
    """The online softmax of a worked example after ``step`` blocks of ``block_size`` keys.

    Every query reads the keys left to right, ``block_size`` at a time, and
    keeps its running maximum m and running sum l (``online_softmax_update``,
    the step of ``tiled_attention``; Dao et al. 2022, section 3.1). All the
    queries are shown at once; ``tiled_attention`` also cuts the queries
    into blocks, which changes nothing within a row.

    block_size: 1 to n keys per block. step: 1 to ceil(n / block_size).
    causal: hide later keys (their score is -inf). example: a worked
    example in data/ (default "the river bank flooded").

    Returns a :class:`TilingState`. Raises ValueError for a block size or
    step out of range, a ``causal`` that is not True or False, or an unknown example.
    """
    ex = _example(example)
    tokens, n = tuple(ex.tokens), len(ex.tokens)
    causal = _flag(causal, "causal")
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or not 1 <= block_size <= n:
        raise ValueError(f"block_size must be a whole number from 1 to {n} (the keys of {list(tokens)}); got {block_size!r}")
    b = int(block_size)
    n_steps = -(-n // b)
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 1 <= step <= n_steps:
        raise ValueError(f"step must be a whole number from 1 to {n_steps} ({n} keys in blocks of {b}); got {step!r}")
    step = int(step)
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    allowed = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    scores = np.where(allowed, (Q @ K.T) / np.sqrt(K.shape[1]), -np.inf)
    m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, V.shape[1]))
    for k in range(step):
        m_before, l_before = m, l
        m, l, acc = online_softmax_update(m, l, acc, scores[:, k * b:(k + 1) * b], V[k * b:(k + 1) * b])
    start, stop = (step - 1) * b, min(step * b, n)
    read = allowed & (np.arange(n) < stop)[None, :]
    safe_l = np.where(l == 0.0, 1.0, l)
    shift = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(under="ignore"):
        weights = np.where(read, np.exp(scores - shift[:, None]) / safe_l[:, None], 0.0)
    output = acc / safe_l[:, None]
    plain_output, plain_weights = scaled_dot_product_attention(Q, K, V, mask=allowed)
    final = step == n_steps
    messages = _tiling_messages(tokens, ex.index(ex.query_token), b, step, n_steps, causal, (start, stop),
                                m_before, m, l_before, l, scores, final, weights, plain_weights, output, plain_output)
    return TilingState(tokens=tokens, block_size=b, step=step, n_steps=n_steps, causal=causal, scores=scores,
                       read=read, block=(start, stop), max_before=m_before, max_after=m, sum_before=l_before,
                       sum_after=l, weights=weights, output=output, final=final, plain_weights=plain_weights,
                       plain_output=plain_output, messages=messages)


def _tiling_messages(tokens, i, b, step, n_steps, causal, block, m0, m1, l0, l1, scores, final,
                     weights, plain_weights, output, plain_output):
    start, stop = block
    keys = _listed(tokens[start:stop])
    where = f"position {start}" if stop - start == 1 else f"positions {start} to {stop - 1}"
    messages = [f"Step {step} of {n_steps}: block {step} holds the key{'s' if stop - start > 1 else ''} {keys} "
                f"({where}). Striped cells are keys not read yet"
                + (" or hidden by the causal mask" if causal else "")
                + "; the others show each row's weights over the keys read so far, exp(score − m) / l."]
    row = f"Row '{tokens[i]}'"
    block_scores, m0, m1, l0, l1 = scores[i, start:stop], m0[i], m1[i], l0[i], l1[i]
    if np.all(np.isneginf(block_scores)):
        messages.append(f"{row}: every key of this block comes after '{tokens[i]}', so the causal mask hides them "
                        f"all; m stays {_num(m1)} and l stays {_num(l1)}.")
    elif np.isneginf(m0):
        messages.append(f"{row}: the first block. m is the largest of its scores, {_num(m1)}, and l is the sum of "
                        f"exp(score − m) over them, {_num(l1)}.")
    else:
        factor = float(np.exp(m0 - m1))
        moved = ("the maximum did not move, so the old sum is kept as it is (factor exp(0) = 1)"
                 if m1 == m0 else
                 f"the maximum moves from {_num(m0)} to {_num(m1)}, so the old sum {_num(l0)} is multiplied by "
                 f"exp({_num(m0)} − {_num(m1)}) = {factor:.3f}")
        messages.append(f"{row}: {moved}; the block adds {_num(l1 - factor * l0)}, so l = {_num(l1)}.")
    if final:
        messages.append("Every key has been read. The weights and the outputs now equal those of the plain "
                        "softmax over whole rows (largest difference under 1e-12: "
                        f"{bool(np.max(np.abs(weights - plain_weights)) < 1e-12 and np.max(np.abs(output - plain_output)) < 1e-12)}).")
    elif np.all(np.isneginf(scores[i, stop:])):
        messages.append(f"The weights of '{tokens[i]}' are final already: the causal mask hides every key still to "
                        f"come from it. Other rows still change. {n_steps - step} "
                        f"block{'s' if n_steps - step > 1 else ''} to go.")
    else:
        messages.append(f"Not the final weights yet: every later key the row may read adds to its sum l, which "
                        f"scales all its weights so far down by one common factor. {n_steps - step} "
                        f"block{'s' if n_steps - step > 1 else ''} to go.")
    return tuple(messages)


def _draw_tiling(state):
    n = len(state.tokens)
    start, stop = state.block
    keys = [("▾\u00a0" if start <= j < stop else "") + t for j, t in enumerate(state.tokens)]
    title = (f"Blocks of {state.block_size} key{'s' if state.block_size > 1 else ''}, step {state.step} of "
             f"{state.n_steps}" + (", causal mask" if state.causal else "") + ": ▾ marks the block just read")
    block_scores = [", ".join(_num(s) for s in state.scores[q, start:stop]) for q in range(n)]
    return weights_table_html(
        state.weights, state.tokens, keys, title=title, masked=~state.read,
        row_notes={"scores of this block": block_scores,
                   "m before → after": [f"{_num(a)} → {_num(b)}" for a, b in zip(state.max_before, state.max_after)],
                   "l before → after": [f"{_num(a)} → {_num(b)}" for a, b in zip(state.sum_before, state.sum_after)]},
        masked_label="not read yet" + (", or hidden by the causal mask" if state.causal else ""))


class _TilingExplorer(Explorer):
    """The Explorer whose step slider's range follows the block size (ceil(n / block_size) steps)."""

    _rebuilding = False

    def _changed(self, change):
        if self._rebuilding:
            return
        if change["owner"] is self.controls["block_size"]:
            step = self.controls["step"]
            self._rebuilding = True
            try:
                n = self.controls["block_size"].max                   # the number of keys
                step.max = -(-n // change["new"])                     # the value is clamped to it
            finally:
                self._rebuilding = False
        self.update()


def tiling_explorer(block_size=2, causal=False, example="river_bank"):
    """Explore the online softmax: read the keys of a worked example block by block.

    Controls: ``block_size`` (slider, 1 to n keys), ``step`` (slider, which
    block has just been read, 1 to ceil(n / block_size); its range follows
    the block size) and ``causal`` (checkbox). The picture shows each row's
    weights over the keys read so far, the scores of the block just read,
    and each row's running maximum m and running sum l before and after it.
    Returns an :class:`Explorer`; ``.state`` is a :class:`TilingState`.
    Raises ValueError for bad starting values (as :func:`tiling_state`).
    """
    first = tiling_state(block_size, 1, causal, example)
    n = len(first.tokens)
    # 360 px, as the other explorers' sliders: the track keeps over 150 CSS px on a projector.
    size = widgets.IntSlider(value=first.block_size, min=1, max=n, description="block_size",
                             style={"description_width": "initial"}, layout=widgets.Layout(width="360px"))
    step = widgets.IntSlider(value=1, min=1, max=first.n_steps, description="step",
                             layout=widgets.Layout(width="360px"))
    box = widgets.Checkbox(value=first.causal, description="causal mask", indent=False,
                           layout=widgets.Layout(width="130px"))
    return _TilingExplorer(lambda block_size, step, causal: tiling_state(block_size, step, causal, example),
                           _draw_tiling, {"block_size": size, "step": step, "causal": box}, [[size, step, box]],
                           height="330px")
