"""The course map: every notebook in reading order, in one place.

The start-here notebook prints this map, marking which notebooks are ready
(their file exists in notebooks/) and which are still to come; a test checks
that the README lists the same notebooks.
"""

from __future__ import annotations

from pathlib import Path

from helpers.paths import COURSE_ROOT

NOTEBOOKS_DIR = COURSE_ROOT / "notebooks"

#: (file name, title, what you learn), in reading order.
COURSE = (
    ("00_start_here.ipynb", "Start here", "what the course is, how it works, and a check of your set-up"),
    ("01_river_bank.ipynb", "The river bank, number by number", "queries, keys, values, scores, the 1/sqrt(d_k) scaling, softmax and the causal mask, by hand on 'the river bank flooded'"),
    ("02_two_senses.ipynb", "Two senses of bank", "the same W_Q, W_K, W_V resolving 'bank' by a river and 'bank' with an interest rate"),
    ("03_scaling.ipynb", "Why divide by sqrt(d_k)", "dot products grow with d_k and saturate the softmax, and dividing by sqrt(d_k) keeps it in check"),
    ("04_masking.ipynb", "Masks", "causal and padding masks, and the trap of masking after the softmax"),
    ("05_multi_head.ipynb", "Many heads", "several heads asking different questions, with the multiply-adds of one wide head"),
    ("06_order_and_position.ipynb", "Order and position", "why attention cannot see word order on its own, how positions put it back, and cross-attention between two sentences"),
    ("07_limits.ipynb", "What attention alone cannot do", "every output inside the hull of the values, linear in V but not in X, rank collapse in deep stacks, your own layer_norm, and the block around attention"),
    ("08_cost_and_tiling.ipynb", "Cost and tiling", "the n^2 cost and the online softmax behind FlashAttention"),
    ("09_learning.ipynb", "Learning W_Q, W_K, W_V", "W_Q, W_K, W_V learned by gradient descent in numpy, the backward pass checked by finite differences, and the missing causal mask trained for real"),
    ("10_current_models.ipynb", "Attention in current models", "rotary positions, grouped-query attention and sliding windows, as current open models use them"),
    ("11_real_model.ipynb", "The real thing", "the same sentences through a real trained model run on your attention once it is right, then your own encoder block"),
)

__all__ = ["COURSE", "BUILT_IN", "ready_notebooks", "show_course_map"]


def ready_notebooks(folder=NOTEBOOKS_DIR):
    """The file names of the course's notebooks that exist in ``folder``."""
    return [name for name, _, _ in COURSE if (Path(folder) / name).exists()]


def show_course_map(folder=NOTEBOOKS_DIR):
    """Print the course map, one notebook a line, marking those still to come."""
    ready = set(ready_notebooks(folder))
    for name, title, what in COURSE:
        status = "ready " if name in ready else "coming"
        print(f"[{status}] {name}: {title}")
        print(f"         {what}")


#: Where the learner builds each function of the workbook (by its name in workbook.py): its notebook's Build it section (and where
#: a later notebook finishes it). tests/test_build_sections.py checks it against the notebooks' build cells.
BUILT_IN = {
    "softmax": "notebook 01",
    "attention": "notebook 01 (with masks in notebook 04)",
    "causal_mask": "notebook 04",
    "padding_mask": "notebook 04",
    "split_heads": "notebook 05",
    "merge_heads": "notebook 05",
    "multi_head_attention": "notebook 05",
    "positional_encoding": "notebook 06",
    "online_softmax_update": "notebook 08",
    "tiled_attention": "notebook 08",
    "kv_cache_step": "notebook 08",
    "softmax_backward": "notebook 09",
    "apply_rope": "notebook 10",
    "layer_norm": "notebook 07",
    "encoder_block": "notebook 11",
}
