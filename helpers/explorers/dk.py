"""Notebook 03's explorer: the key width d_k and the scaling (``dk_state``, ``dk_explorer``)."""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from helpers.attention import attention_entropy, scaled_dot_product_attention
from helpers.explorers.base import Explorer, _flag
from helpers.plots import weights_table_html
from helpers.inputs import positive_whole as _whole
from helpers.saturation import jacobian_size, random_queries_keys

__all__ = [
    "DkState", "dk_state", "dk_explorer", "DK_CHOICES",
]


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


def dk_state(d_k=64, scaled=True, n=6, seed=0, *, attention=None):
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

    attention: the function that computes the weights, with the course's
    signature (``attention(Q, K, V, mask=None, scale=None) -> (output,
    weights)``); None means ``scaled_dot_product_attention``. Notebook 03
    passes what ``helpers.pieces.piece("attention")`` gives: yours once it
    is right, and then a last message says so: "Computed by your attention."

    Returns a :class:`DkState`. Raises ValueError unless d_k and n are
    positive whole numbers, ``scaled`` is True or False and ``seed`` a
    non-negative whole number.
    """
    d_k, n = _whole(d_k, "d_k"), _whole(n, "n")
    scaled = _flag(scaled, "scaled")
    Q, K = random_queries_keys(d_k, n=n, seed=seed)
    scale = 1.0 / np.sqrt(d_k) if scaled else 1.0
    run = scaled_dot_product_attention if attention is None else attention
    yours = inspect.unwrap(run) is not scaled_dot_product_attention     # piece()'s course attention wraps it
    weights = np.asarray(run(Q, K, np.eye(n), scale=scale)[1])
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
    if yours:
        messages.append("Computed by your attention.")
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


def dk_explorer(d_k=64, scaled=True, *, attention=None):
    """Explore d_k and the 1/sqrt(d_k) scaling: six random queries against six random keys.

    Controls: ``d_k`` (a slider over DK_CHOICES, 1 to 1024) and ``scaled``
    (a checkbox: divide the scores by sqrt(d_k)). The picture shows the
    weights, each row's entropy, the largest weight and the spread of the
    scores. ``attention``: the function every state is computed by, as
    :func:`dk_state` takes it (None: the course's). Returns an
    :class:`Explorer`; its ``.state`` is a :class:`DkState`.
    Raises ValueError unless d_k is one of DK_CHOICES and ``scaled`` is True or False.
    """
    if isinstance(d_k, bool) or not isinstance(d_k, numbers.Integral) or d_k not in DK_CHOICES:
        raise ValueError(f"d_k must be one of the slider's values {list(DK_CHOICES)}; got {d_k!r}")
    slider = widgets.SelectionSlider(options=DK_CHOICES, value=int(d_k), description="d_k",
                                     layout=widgets.Layout(width="420px"))
    box = widgets.Checkbox(value=_flag(scaled, "scaled"), description="divide the scores by √d_k", indent=False)
    return Explorer(lambda d_k, scaled: dk_state(d_k, scaled, attention=attention), _draw_dk,
                    {"d_k": slider, "scaled": box}, [[slider, box]], height="300px", name="dk")
