"""Your workbook: the functions you build in this course, one per piece.

Open this file in JupyterLab (double-click workbook.py in the file browser).
Replace a function's raise line with your code, save it (Ctrl+S), and run the
notebook's check cell. Each check cell says how: diagnose(workbook.softmax,
piece="softmax"). Later notebooks import this file, so what you finish here
is there for them. To hand in your work, hand in this file.

Return numpy arrays, as each docstring says: later cells compute with them.
A list passes the check, with a note; a generator or a map(...) does not (it
gives its items only once): return np.array(...) of it.
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
    whose rows sum to 1. Check it in notebook 01: diagnose(workbook.attention,
    masks=False, batches=False); notebook 04 runs the rest: diagnose(workbook.attention).
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


def split_heads(x, num_heads):
    """Cut each token's features into num_heads contiguous slices, one per head.

    x: (..., n, d_model); num_heads divides d_model, d_k = d_model // num_heads.
    Returns (..., num_heads, n, d_k): head h holds features h*d_k .. (h+1)*d_k - 1
    of every token. A reshape alone mixes tokens: reshape to (..., n, num_heads, d_k),
    then swap the heads and tokens axes.
    Check it: diagnose(workbook.split_heads, piece="split_heads").
    """
    raise NotImplementedError("split_heads: not written yet")


def merge_heads(x):
    """Put the heads back side by side: the inverse of split_heads.

    x: (..., num_heads, n, d_k). Returns (..., n, num_heads * d_k), so that
    merge_heads(split_heads(x, h)) is x again. Swap the heads and tokens
    axes back before the reshape.
    Check it: diagnose(workbook.merge_heads, piece="merge_heads").
    """
    raise NotImplementedError("merge_heads: not written yet")


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Multi-head self-attention (Vaswani et al. 2017, section 3.2.2).

    X: (..., n, d_model); W_Q, W_K, W_V, W_O: (d_model, d_model).
    mask: None, or booleans (True = may attend): (n, n) for every sentence and
    head, or (B, 1, 1, n) per sentence with a head axis.
    Q = X W_Q (and K, V), split into num_heads heads; attention in each head,
    scaled by sqrt(d_k) with d_k = d_model // num_heads (not d_model); merge the
    heads, then multiply by W_O. Returns the output (..., n, d_model), or
    (output, weights). Your own attention and split_heads may do the work.
    Check it: diagnose(workbook.multi_head_attention, piece="multi_head_attention").
    """
    raise NotImplementedError("multi_head_attention: not written yet")


def positional_encoding(n, d_model):
    """The sinusoidal positional encoding (Vaswani et al. 2017, section 3.5).

    n: positions 0 .. n-1; d_model: an even width.
    Returns (n, d_model): PE[pos, 2i] = sin(pos / 10000^(2i / d_model)) and
    PE[pos, 2i + 1] = cos(the same angle), in radians; sines and cosines
    interleaved, so row 0 is 0, 1, 0, 1, ...
    Check it: diagnose(workbook.positional_encoding, piece="positional_encoding").
    """
    raise NotImplementedError("positional_encoding: not written yet")


def softmax_backward(weights, grad_weights):
    """From dL/dweights to dL/dscores, through a softmax over the last axis.

    weights: (..., n) rows of softmax weights (a row of zeros: a query with
    nothing to attend to); grad_weights: dL/dweights, the same shape.
    Returns dL/dscores, the same shape: J^T g with the Jacobian
    J = diag(w) - w w^T, row by row w * (g - sum_j w_j g_j). A zero row gives 0.
    Check it: diagnose(workbook.softmax_backward, piece="softmax_backward").
    """
    raise NotImplementedError("softmax_backward: not written yet")


def online_softmax_update(running_max, running_sum, acc, scores, V_block):
    """One step of the online softmax: fold a new block of keys into the running totals.

    running_max: (..., n_q), the largest score seen so far (-inf before the first block).
    running_sum: (..., n_q), the sum of exp(score - running_max) so far (0 at first).
    acc: (..., n_q, d_v), the sum of exp(score - running_max) * value so far (0 at first).
    scores: (..., n_q, b), this block's scaled scores (-inf for a hidden key);
    V_block: (..., b, d_v), its values.
    Returns (new_max, new_sum, new_acc), the same shapes. When the max rises
    from m to m', multiply the old sum and acc by exp(m - m'), and take this
    block's exp(s - m') against the new max. Keep acc unnormalised: the sum of
    exp(score - new_max) * value, not divided by the running sum (FlashAttention 1
    keeps it divided; here tiled_attention divides once, after the last block).
    A row that is -inf everywhere so far stays (-inf, 0, 0).
    You may update running_max, running_sum and acc in place and return them, as
    FlashAttention's kernels do; change neither scores nor V_block (V_block is
    often a slice of the caller's V).
    Check it: diagnose(workbook.online_softmax_update, piece="online_softmax_update").
    """
    raise NotImplementedError("online_softmax_update: not written yet")


def tiled_attention(Q, K, V, block_size):
    """Attention block by block of keys, never holding all the scores.

    Q: (..., n_q, d_k); K: (..., n_k, d_k); V: (..., n_k, d_v); block_size: keys per block.
    Returns the output (..., n_q, d_v), equal to softmax(Q K^T / sqrt(d_k)) V:
    fold each block of keys in with online_softmax_update, then divide acc by
    the running sum once. The last block is shorter when n_k is not a multiple.
    Check it: diagnose(workbook.tiled_attention, piece="tiled_attention").
    """
    raise NotImplementedError("tiled_attention: not written yet")


def kv_cache_step(cache_keys, cache_values, q, k, v):
    """One decoding step with a KV cache.

    cache_keys: (t, d_k) and cache_values: (t, d_v), the earlier tokens (t may be 0);
    q, k: (d_k,) and v: (d_v,), the new token's query, key and value.
    Append k and v to the cached ones first (a token sees itself), then attend
    q over all t + 1 keys, scores scaled by 1/sqrt(d_k). Returns the output (d_v,).
    Change nothing in place: the caller appends k and v to its own cache after.
    Check it: diagnose(workbook.kv_cache_step, piece="kv_cache_step").
    """
    raise NotImplementedError("kv_cache_step: not written yet")


def apply_rope(x, positions=None):
    """Rotary position embedding (Su et al. 2021, RoFormer, section 3.4.2).

    x: (..., n, d) queries or keys, d even; positions: (n,) numbers, None
    meaning 0, 1, ..., n - 1. Turn each pair of neighbouring features
    (2i, 2i + 1) of the token at position m by the angle m * theta_i,
    theta_i = 10000^(-2i/d):
        out[2i]     = x[2i] cos(m theta_i) - x[2i+1] sin(m theta_i)
        out[2i + 1] = x[2i] sin(m theta_i) + x[2i+1] cos(m theta_i)
    Returns a new array, the shape of x.
    Check it: diagnose(workbook.apply_rope, piece="rope").
    """
    raise NotImplementedError("rope: not written yet")


def layer_norm(x, gamma, beta, eps=1e-12):
    """LayerNorm over the last axis (Ba, Kiros & Hinton 2016, eq. 3-4; Vaswani et al. 2017, sec. 3.1).

    x: (..., d_model) token vectors; gamma, beta: (d_model,), the learned gain
    and bias; eps: added to the variance (1e-12, as BERT and MiniLM).
    For each token, over its d_model features:
        mu = mean(x),  var = mean((x - mu)^2)   (divided by d_model)
        out = (x - mu) / sqrt(var + eps) * gamma + beta
    Returns a new array, the shape of x.
    Check it: diagnose(workbook.layer_norm, piece="layer_norm").
    """
    raise NotImplementedError("layer_norm: not written yet")


def encoder_block(x, params, num_heads, mask=None):
    """One encoder layer of all-MiniLM-L6-v2 (BERT), from your own pieces.

    x: (..., n, d_model) token vectors entering the layer; params: the dict
    model.layer_parameters(layer) gives (W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O,
    gamma_1, beta_1, W_1, b_1, W_2, b_2, gamma_2, beta_2, eps); num_heads: 12.
    mask: None, or booleans (..., 1, 1, n), True = may attend (hides [PAD] keys).
    Post-LN, as BERT:  x = LayerNorm(x + MultiHead(x)),  then
                       x = LayerNorm(x + GELU(x W_1 + b_1) W_2 + b_2).
    MultiHead: q = x W_Q + b_Q (and k, v) cut into heads with your split_heads,
    your attention in each (scores / sqrt(d_k), d_k = d_model / num_heads), the
    heads joined with your merge_heads, then @ W_O + b_O (multi_head_attention
    has no biases: build it from the pieces).
    LayerNorm: your layer_norm of notebook 07, layer_norm(t, gamma, beta, params["eps"]).
    GELU(t) = 0.5 t (1 + erf(t / sqrt(2))), erf from scipy.special.
    Returns (..., n, d_model). Check it: check_your_block(workbook.encoder_block).
    """
    raise NotImplementedError("encoder_block: not written yet")
