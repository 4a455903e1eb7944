"""Your workbook: the functions you build in this course, one per piece.

Open this file in JupyterLab (double-click workbook.py in the file browser).
Replace a function's raise line with your code, save it (Ctrl+S), and run the
notebook's check cell. Each check cell says how: diagnose(workbook.softmax,
piece="softmax"). Later notebooks import this file, so what you finish here
is there for them. To hand in your work, hand in this file.
"""

import numpy as np


def softmax(x, axis=-1):
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    x: an array of scores, any shape; entries may be -inf (a hidden key: weight 0).
    axis: the axis that sums to 1 (default the last).
    Returns an array the shape of x. Subtract the maximum before np.exp, so
    scores of 1000 do not overflow; a slice that is -inf everywhere gives all zeros.
    Check it: diagnose(workbook.softmax, piece="softmax").
    """
    raise NotImplementedError("softmax: not written yet")


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V.

    Q: (..., n_q, d_k) queries; K: (..., n_k, d_k) keys; V: (..., n_k, d_v) values.
    mask: None, or booleans broadcastable to (..., n_q, n_k), True = may attend;
    a hidden score becomes -inf before the softmax.
    Returns (output, weights): output (..., n_q, d_v), weights (..., n_q, n_k)
    whose rows sum to 1. Check it: diagnose(workbook.attention).
    """
    raise NotImplementedError("attention: not written yet")


def causal_mask(n):
    """The causal mask of n tokens: each token may attend to itself and the tokens before it.

    n: the number of tokens, a positive whole number.
    Returns booleans of shape (n, n): entry [i, j] is True when j <= i.
    Check it: diagnose(workbook.causal_mask, piece="causal_mask").
    """
    raise NotImplementedError("causal_mask: not written yet")


def padding_mask(is_real):
    """The padding mask of a batch: no query may attend to a [PAD] key.

    is_real: booleans of shape (B, n_k), True at the real tokens of each sentence.
    Returns booleans of shape (B, 1, n_k), True = may attend: one row per
    sentence, shared by every query (the axis of length 1 broadcasts).
    Check it: diagnose(workbook.padding_mask, piece="padding_mask").
    """
    raise NotImplementedError("padding_mask: not written yet")
