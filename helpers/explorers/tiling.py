"""Notebook 08's explorer: the online softmax of tiled attention, one block of keys at a time.

``tiling_state`` computes what it shows; ``tiling_explorer`` is the widget.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.explorers.base import Explorer, _example, _flag, _listed
from helpers.plots import html_grid, values_table_html, weights_table_html
from helpers.tiling import online_softmax_update as course_online_softmax_update

__all__ = [
    "TilingState", "tiling_state", "tiling_explorer",
]


# --------------------------------------------------------------------------
# Tiling: the online softmax, one block of keys at a time (notebook 08)
# --------------------------------------------------------------------------




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


def tiling_state(block_size=2, step=1, causal=False, example="river_bank", *, online_softmax_update=None):
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
    run = course_online_softmax_update if online_softmax_update is None else online_softmax_update
    m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, V.shape[1]))
    for k in range(step):
        m_before, l_before = m, l
        m, l, acc = run(m, l, acc, scores[:, k * b:(k + 1) * b], V[k * b:(k + 1) * b])
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
    if run is not course_online_softmax_update:
        messages += ("Computed by your online_softmax_update.",)
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
    """The weights read so far (a heatmap), and under it (beside it on a wide page) each row's running
    values: the scores of the block just read, m and l before and after it. Two narrow pieces instead of
    one wide table, so that a projector's page (683 CSS px at 150 %) holds them without scrolling."""
    start, stop = state.block
    keys = [("▾\u00a0" if start <= j < stop else "") + t for j, t in enumerate(state.tokens)]
    title = (f"Blocks of {state.block_size} key{'s' if state.block_size > 1 else ''}, step {state.step} of "
             f"{state.n_steps}" + (", causal mask" if state.causal else "") + ": ▾ marks the block just read")
    weights = weights_table_html(
        state.weights, state.tokens, keys, title=title, masked=~state.read,
        masked_label="not read yet" + (", or hidden by the causal mask" if state.causal else ""))
    scores = [(state.tokens[j], [_num(s) for s in state.scores[:, j]]) for j in range(start, stop)]
    running = values_table_html(state.tokens, [
        ("scores of this block", scores),
        ("m, running maximum", [("before", [_num(a) for a in state.max_before]),
                                ("after", [_num(a) for a in state.max_after])]),
        ("l, running sum", [("before", [_num(a) for a in state.sum_before]),
                            ("after", [_num(a) for a in state.sum_after])])],
        title="Each row's running values, before and after this block")
    return html_grid([weights, running])


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


def tiling_explorer(block_size=2, causal=False, example="river_bank", *, online_softmax_update=None):
    """Explore the online softmax: read the keys of a worked example block by block.

    Controls: ``block_size`` (slider, 1 to n keys), ``step`` (slider, which
    block has just been read, 1 to ceil(n / block_size); its range follows
    the block size) and ``causal`` (checkbox). The picture shows each row's
    weights over the keys read so far, the scores of the block just read,
    and each row's running maximum m and running sum l before and after it.
    Returns an :class:`Explorer`; ``.state`` is a :class:`TilingState`.
    ``online_softmax_update``: the step it runs, as :func:`tiling_state`
    takes it (None: the course's). Raises ValueError for bad starting
    values (as :func:`tiling_state`).
    """
    first = tiling_state(block_size, 1, causal, example, online_softmax_update=online_softmax_update)
    n = len(first.tokens)
    # 360 px, as the other explorers' sliders: the track keeps over 150 CSS px on a projector.
    size = widgets.IntSlider(value=first.block_size, min=1, max=n, description="block_size",
                             style={"description_width": "initial"}, layout=widgets.Layout(width="360px"))
    step = widgets.IntSlider(value=1, min=1, max=first.n_steps, description="step",
                             layout=widgets.Layout(width="360px"))
    box = widgets.Checkbox(value=first.causal, description="causal mask", indent=False,
                           layout=widgets.Layout(width="130px"))
    step.static_follows = "block_size"        # on the static page too, the step's range follows the block size

    def state(block_size, step, causal):
        return tiling_state(block_size, step, causal, example, online_softmax_update=online_softmax_update)
    explorer = _TilingExplorer(state, _draw_tiling, {"block_size": size, "step": step, "causal": box}, [[size, step, box]],
                               height="330px", name="tiling")
    explorer.grid_options = {"step": range(1, n + 1)}
    return explorer
