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

``check_your_block(fn)`` judges the last build step, your own encoder block
``fn(x, params, num_heads, mask=None)`` loaded with one layer's weights
(``MiniLM.layer_parameters``): layer 0 against the model's own layer output,
six blocks against the sentence embedding, then a padded sentence with the
padding mask. A wrong layer is matched against :data:`BLOCK_FAULTS`, each
mistake a small model of the inputs (the block ``_block`` with one flag
switched), so the verdict names it: a missing residual, pre-LN (GPT-2's
order, Radford et al. 2019, sec. 2.3) instead of the post-LN of Vaswani et
al. (2017, sec. 3.1) that BERT keeps (Devlin et al. 2019, sec. 3), no GELU,
scores divided by sqrt(d_model), ... A block that changes its inputs in
place, or returns (output, weights), is told so.

Notebook 11's exercises of understanding live here too: ``heatmap_claims`` (which claim one row of weights
supports) and ``row_share_prediction`` (predict a weight when the same query and key meet in another sentence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.exercises.base import ChoiceExercise
from helpers.checkers.diagnose import diagnose
from helpers.exercises.feedback import Feedback
from helpers.exercises.static import BuildCell
from helpers.checkers.runner import (
    call, fn_name, matches, mutation_words, parameter, raised_words, safe_str, side_by_side, same_array,
)
from helpers.real_model import _layer_norm, gelu, load_minilm

__all__ = ["ModelVerdict", "run_with_your_attention", "SENTENCES", "BOUNDS", "BlockVerdict", "check_your_block",
           "BLOCK_FAULTS", "heatmap_claims", "row_share_prediction", "SHARE_MOVES"]

#: the two senses of "bank" of notebook 02 (source 003), as the real-model notebook runs them
SENTENCES = ("The bank by the river was steep.", "The bank raised its interest rate.")
#: the bounds a verdict may state for the largest difference of the embedding, smallest first
#: (none finer than 1e-9: the last digits of float64 rounding change with the BLAS kernel)
BOUNDS = (1e-9, 1e-6, 1e-4)
#: the layer and head whose weights the verdict shows (counted from 0), and the query token
LAYER, HEAD, QUERY = 0, 4, "bank"


@dataclass(frozen=True)
class ModelVerdict(BuildCell, Feedback):
    """What your attention did to the real model.

    correct, mistake, text: as every checker's (``mistake`` is diagnose's key,
    or "model_rejected" when the model could not run your function).
    bound: the smallest of :data:`BOUNDS` the largest difference of the
        embedding stays below (None when it is above them all, or nothing ran).
    cosine, cosine_course: the cosine between the two sentences' embeddings,
        with your attention and with the course's (None when nothing ran).
    on_model: what your attention did to the model, in words: the part of
        ``text`` before diagnose's verdict (None when nothing ran).
    """

    bound: float | None = None
    cosine: float | None = None
    cosine_course: float | None = None
    on_model: str | None = None

    build_piece = "real_model_attention"        # the build cells' page marker (static.BuildCell)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)


def _bound(gap):
    return next((b for b in BOUNDS if gap < b), None)


def _row(output, tokens):
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
    if verdict.mistake in ("not_attempted", "not_a_function", "too_slow", "interrupted", "exit", "syntax_error"):
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
        lines.append(f"'{QUERY}' in layer {LAYER}, head {HEAD}:\n  yours:    {_row(yours[0], tokens)}\n"
                     f"  course's: {_row(course[0], tokens)}")
    correct = agrees and verdict.correct
    on_model = "\n".join(lines)
    if not verdict.correct:
        lines.append(("On these sentences (no mask) the model cannot tell, but " if agrees else "")
                     + "diagnose finds this in your function:\n" + verdict.text)
    return ModelVerdict(correct, None if correct else verdict.mistake or "different", "\n".join(lines),
                        bound, cosine, cosine_course, on_model)


# --------------------------------------------------------------------------
# The last build step: your own encoder block, loaded with one layer's weights
# --------------------------------------------------------------------------

#: the river sentence padded to this many tokens for the mask check (it has 10)
PADDED_TO = 12


@dataclass(frozen=True)
class BlockVerdict(BuildCell, Feedback):
    """What your encoder block does with the real model's weights.

    correct, mistake, text: as every checker's; ``mistake`` is a key of
    :data:`BLOCK_FAULTS` (or a key every checker shares: not_attempted,
    piece_not_written, raised, too_slow, returned_none, not_numbers,
    wrong_shape, nan_inf, different, padding_mask_ignored, no_mask_argument, mutates_inputs,
    returned_pair).
    bound_layer: the smallest of :data:`BOUNDS` that layer 0's output stays within (None: above them all).
    bound_model: the same for the sentence embedding after six of your blocks (None: not reached or above).
    """

    bound_layer: float | None = None
    bound_model: float | None = None

    build_piece = "encoder_block"               # the build cells' page marker (static.BuildCell)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)

    def solution(self):
        """A worked encoder block (a :class:`~helpers.exercises.Reveal`, folded until clicked)."""
        from helpers.checkers.solutions import solution
        return solution("encoder_block")


def _block(x, p, num_heads, mask=None, *, residual=(True, True), post_ln=True, act="gelu", scale="d_k",
           biases=True, transpose=True, norm=True, second_norm="_2", eps=None):
    """One BERT encoder layer, with one or more of the mistakes a learner makes switched on.

    The right layer (every flag at its default) is the post-LN block of Vaswani et al. (2017, sec. 3.1),
    which BERT keeps (Devlin et al. 2019, sec. 3): x = LN(x + MultiHead(x)); x = LN(x + GELU(x W_1 + b_1) W_2
    + b_2) (Vaswani et al. 2017, sec. 3.1-3.3). The mistakes: residual (attention's, the FFN's): False leaves
    it out, "input" adds the block's input instead of the stream; biases: False drops every projection's
    bias, "qkv" those of W_Q, W_K, W_V only, "out" b_O only; transpose: False cuts and merges the heads with
    reshapes alone, "split" cuts them with a reshape alone (merged right), "merge" merges them with a reshape
    alone (cut right), "heads_as_queries" reshapes to (n, num_heads, d_k) and never swaps, so each token
    attends across its own heads; second_norm="_1": gamma_1, beta_1 in both LayerNorms; eps: LayerNorm's
    epsilon in place of p["eps"] (None: p["eps"], the model's 1e-12).
    """
    x_in = x
    n, d_model = x.shape[-2], x.shape[-1]
    d_k = d_model // num_heads
    eps = p["eps"] if eps is None else eps
    ln = (lambda t, g, b: _layer_norm(t, g, b, eps)) if norm else (lambda t, g, b: t)

    def split(t):
        if transpose in (True, "merge"):
            return np.swapaxes(t.reshape(t.shape[:-1] + (num_heads, d_k)), -2, -3)
        if transpose == "heads_as_queries":
            return t.reshape(t.shape[:-1] + (num_heads, d_k))             # (n, heads, d_k): never swapped
        return t.reshape(t.shape[:-2] + (num_heads, n, d_k))          # reshape alone: features mixed across heads

    def merge(t):
        if transpose in (True, "split"):
            return np.swapaxes(t, -2, -3).reshape(t.shape[:-3] + (n, d_model))
        return t.reshape(t.shape[:-3] + (n, d_model))

    def attend(h):
        b_qkv = (lambda name: p[name]) if biases in (True, "out") else (lambda name: 0.0)
        b_O = p["b_O"] if biases in (True, "qkv") else 0.0
        Q, K, V = (split(h @ p["W_" + r] + b_qkv("b_" + r)) for r in "QKV")
        s = Q @ np.swapaxes(K, -1, -2) * {"d_k": d_k ** -0.5, "d_model": d_model ** -0.5, "none": 1.0}[scale]
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return merge(w / w.sum(axis=-1, keepdims=True) @ V) @ p["W_O"] + b_O

    def ffn(h):
        inner = h @ p["W_1"] + p["b_1"]
        inner = {"gelu": gelu, "none": lambda t: t, "relu": lambda t: np.maximum(t, 0.0),
                 "tanh": lambda t: 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))}[act](inner)
        return inner @ p["W_2"] + p["b_2"]

    for sub, keep, g, b in ((attend, residual[0], "gamma_1", "beta_1"),
                            (ffn, residual[1], "gamma" + second_norm, "beta" + second_norm)):
        skip = x_in if keep == "input" else x if keep else 0.0          # "input": the block's input, not the stream
        if post_ln:
            x = ln(skip + sub(x), p[g], p[b])
        else:                                                          # pre-LN (GPT-2's order), not BERT's
            x = skip + sub(ln(x, p[g], p[b]))
    return x


#: key -> (the flags of _block that model the mistake (a dict, or a tuple of dicts: the ways of making it), what
#: to say). One misconception has one key course-wide: no_biases, reshape_without_transpose, no_scaling and
#: scale_by_d_model are the keys the other checkers give the same mistakes.
BLOCK_FAULTS = {
    "no_residual": ({"residual": (False, False)},
                    "it leaves out both residual additions: LayerNorm(x + sublayer(x)), not LayerNorm(sublayer(x))."),
    "no_residual_attention": ({"residual": (False, True)},
                              "it leaves out the residual addition around the attention: "
                              "x = LayerNorm(x + attention(x)), the x + included."),
    "no_residual_ffn": ({"residual": (True, False)},
                        "it leaves out the residual addition around the feed-forward pair: "
                        "x = LayerNorm(x + FFN(x)), the x + included."),
    "pre_ln": ({"post_ln": False},
               "it normalises before each sublayer (pre-LN, x + sublayer(LayerNorm(x)), as GPT-2 does). "
               "BERT, and so this model, is post-LN: the LayerNorm comes after the residual addition."),
    "no_gelu": ({"act": "none"}, "it has no activation between W_1 and W_2: apply GELU to x W_1 + b_1."),
    "relu": ({"act": "relu"}, "it uses ReLU between W_1 and W_2; this model was trained with GELU, "
                              "0.5 t (1 + erf(t / sqrt(2)))."),
    "gelu_tanh": ({"act": "tanh"}, "it uses the tanh approximation of GELU; this model uses the exact one, "
                                   "0.5 t (1 + erf(t / sqrt(2))), erf from scipy.special."),
    "scale_by_d_model": ({"scale": "d_model"}, "it divides the scores by sqrt(d_model) = sqrt(384); each head "
                                               "divides by sqrt(d_k) = sqrt(384 / 12) = sqrt(32)."),
    "no_scaling": ({"scale": "none"}, "it does not divide the scores by sqrt(d_k) = sqrt(32)."),
    "no_biases": (({"biases": False}, {"biases": "qkv"}, {"biases": "out"}),
                  "it leaves out biases of the projections: q = x W_Q + b_Q, and the same for k (b_K), "
                  "v (b_V) and the output (W_O, b_O)."),
    "reshape_without_transpose": (({"transpose": False}, {"transpose": "split"}, {"transpose": "merge"},
                                   {"transpose": "heads_as_queries"}),
                                  "it cuts the heads with a reshape alone, which mixes features across heads "
                                  "(or, without the swap, attends across one token's heads instead of across "
                                  "tokens): reshape to (n, num_heads, d_k), then swap the first two axes to "
                                  "(num_heads, n, d_k), and swap back before merging."),
    "no_layer_norm": ({"norm": False}, "it leaves out LayerNorm: (t - mean) / sqrt(var + eps) * gamma + beta "
                                       "over each token's features."),
    "residual_from_block_input": ({"residual": (True, "input")},
                                  "its second residual adds the block's input x; it must add the stream after the "
                                  "attention's LayerNorm, the same vector the feed-forward pair reads: "
                                  "h = LayerNorm(x + attention(x)), then LayerNorm(h + FFN(h))."),
    "layer_norm_1_reused": ({"second_norm": "_1"},
                            "its second LayerNorm uses gamma_1 and beta_1 again; each LayerNorm has its own: "
                            "the one after the feed-forward pair takes gamma_2 and beta_2."),
    "wrong_eps": ({"eps": 1e-5}, "its LayerNorm adds eps = 1e-5 to the variance (PyTorch's default); this model's "
                                 "is params['eps'] = 1e-12: read it from params."),
}


def _fault_flags(key):
    """The flag sets of :data:`BLOCK_FAULTS` [key], always as a tuple of dicts."""
    flags = BLOCK_FAULTS[key][0]
    return (flags,) if isinstance(flags, dict) else flags


def _fresh(params):
    return {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in params.items()}


def _gap(a, b):
    return float(np.max(np.abs(a - b)))


def _bound_words(bound, dtype):
    """'within <bound> (<why>)': float64 rounding, the precision of a block that returns less than float64, or
    (a float64 block above float64 rounding) a formula or a float32 step that differs slightly from the model's."""
    if bound <= BOUNDS[0]:
        why = "float64 rounding"
    elif np.dtype(dtype) != np.float64:
        why = "the precision your block computes in"
    else:
        why = ("more than float64 rounding, though your block returns float64: a step computed in float32, "
               "or a formula slightly off the model's")
    return f"within {bound:g} ({why})"


def _raised_in_piece(error, fn):
    """(name, function) of the piece of ``fn``'s own module (workbook.py) whose code raised ``error``, when
    it is another function than ``fn`` and one that :func:`diagnose` checks (attention, split_heads, ...); else None.
    The deepest frame of that module in the traceback is the one that raised."""
    from helpers.checkers.diagnose import PIECES
    code = getattr(fn, "__code__", None)
    if error is None or code is None:
        return None
    frame, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == code.co_filename:
            frame = tb.tb_frame
        tb = tb.tb_next
    if frame is None or frame.f_code.co_name == code.co_name or frame.f_code.co_name not in PIECES:
        return None
    piece = frame.f_globals.get(frame.f_code.co_name)
    return (frame.f_code.co_name, piece) if callable(piece) else None


def _wrong_piece_called(fn):
    """(piece, Diagnosis) of the first workbook piece ``fn`` calls by name (its layer_norm of notebook 07, its
    attention, split_heads ...) that diagnose finds wrong; None when each is right, not written, or not called."""
    from helpers.checkers.diagnose import PIECES
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for piece in (code.co_names if code is not None else ()):
        piece_fn = names.get(piece)
        if piece not in PIECES or piece == getattr(fn, "__name__", None) or not callable(piece_fn):
            continue
        verdict = diagnose(piece_fn, piece=piece)
        if not verdict.correct and verdict.mistake not in ("not_attempted", "too_slow", "interrupted", "exit"):
            return piece, verdict
    return None


def _piece_raised(run, name, layer, piece, piece_fn):
    """(key, text) for a block whose error came from another workbook piece: that piece's own diagnosis."""
    text = (f"On layer {layer}, the error came from your {piece}, which {name} calls: "
            + raised_words(run, piece) + f"\nCheck {piece} on its own with diagnose(workbook.{piece}, "
            f"piece=\"{piece}\"). Inside the block it gets a batch of heads, shape (12, n, 32).")
    found = diagnose(piece_fn, piece=piece)
    if found.correct or found.mistake in ("not_attempted", "too_slow", "interrupted", "exit"):
        return "raised", text + (f" diagnose finds {piece} right alone: check what {name} passes to it."
                                 if found.correct else "")
    return found.mistake, text + f" diagnose says:\n{found.text}"


def check_your_block(fn, model=None, time_limit=10.0):
    """Judge your encoder block against the real model, layer by layer; never raises because of ``fn``.

    fn: your block, ``fn(x, params, num_heads, mask=None)`` with x (n, 384),
        params = ``model.layer_parameters(layer)``, num_heads = 12, returning
        (n, 384): BERT's post-LN layer (Devlin et al. 2019; Vaswani et al.
        2017, sec. 3.1-3.3): x = LayerNorm(x + MultiHead(x)), then
        x = LayerNorm(x + GELU(x W_1 + b_1) W_2 + b_2).
    model: a loaded :class:`helpers.real_model.MiniLM`; None loads the installed one.
    time_limit: seconds to wait for one call of ``fn``.

    Three stages, each only if the one before passed: (1) layer 0 of the
    river sentence of notebook 02, against the model's own output
    ``hidden_states[1]``; (2) six of your blocks, one per layer, on both
    sentences, from the vectors the embedding tables give to the sentence
    embedding (the mean over the tokens, length 1); (3) the river sentence
    padded to 12 tokens with the padding mask, whose embedding must not move.
    A wrong layer 0 is matched against :data:`BLOCK_FAULTS` (each a small
    model of one mistake). An error raised inside another function of your
    workbook that ``diagnose`` checks (your attention, say) is told as that
    function's, with diagnose's verdict on it and its key (batch_transpose, ...). Returns a :class:`BlockVerdict`; the bounds it
    states are :data:`BOUNDS`, never digits of rounding noise.
    """
    if not callable(fn):
        return BlockVerdict(False, "not_a_function", "check_your_block needs your function itself: write "
                            "check_your_block(workbook.encoder_block), with no parentheses after the name.")
    model = load_minilm() if model is None else model
    name = fn_name(fn, "encoder_block")
    where = parameter(fn, ("mask", "attn_mask"), 3)
    changed = []                               # the runs that changed x or params in place
    returned = []                              # the dtype each run returned (run.out is always float64)

    def run_block(x, layer, mask=None):
        kwargs = {}
        given = _fresh(model.layer_parameters(layer))
        args = [("x", x), ("params", given), ("num_heads", model.num_heads)]
        if mask is not None:
            if where is None:
                return None, ("no_mask_argument", f"{name} takes no mask, so it cannot hide the [PAD] keys of a "
                              "padded batch: give it a mask=None argument and pass the mask to your attention.")
            if where[0] == "keyword":
                kwargs[where[1]] = mask
            else:
                args.append(("mask", mask))
        run = call(fn, f"layer {layer}", args, kwargs, time_limit)
        if not run.finished:
            return None, ("too_slow", f"{name} did not finish within {time_limit:g} s on layer {layer}: look for a "
                          "loop that never ends (Python cannot stop it: restart the kernel if the notebook slows).")
        if isinstance(run.error, NotImplementedError):
            message = safe_str(run.error)
            if message.startswith(f"{name}:") or message.startswith("encoder_block:") or not message:
                return None, ("not_attempted", f"Not attempted yet: {name} still raises NotImplementedError. Write "
                              "its body in workbook.py (replace the raise line), save the file, and run this cell again.")
            return None, ("piece_not_written", f"{name} calls a piece that is not written yet ({message}). "
                          "Write that piece first (its notebook's Build it), or call the course's own "
                          "(helpers.attention.scaled_dot_product_attention) in its place for now.")
        if run.error is None and isinstance(run.value, (tuple, list)) and run.value and isinstance(
                run.value[0], np.ndarray) and run.value[0].shape == x.shape:
            return None, ("returned_pair", f"On layer {layer}, {name} returns a {type(run.value).__name__} of "
                          f"{len(run.value)} things, the first of x's shape (an (output, weights) pair, as "
                          f"attention returns?). Return only the output array, shape {x.shape}: "
                          "return x, not (x, weights).")
        inner = _raised_in_piece(run.error, fn)
        if inner is not None:
            return None, _piece_raised(run, name, layer, *inner)
        if run.error is not None or run.value is None or run.problem is not None:
            key = "raised" if run.error is not None else "returned_none" if run.value is None else "not_numbers"
            return None, (key, f"On layer {layer}, {name}: " + raised_words(run, name)
                          if run.value is not None or run.error is not None else
                          f"{name} returns nothing (None) on layer {layer}: end it with return x.")
        if run.out.shape != x.shape:
            return None, ("wrong_shape", f"On layer {layer}, {name} returned shape {run.out.shape}; it must return "
                          f"the shape of x, {x.shape} (one vector of d_model = {model.d_model} per token).")
        if not np.isfinite(run.out).all():
            return None, ("nan_inf", f"On layer {layer}, {name} returned NaN or infinite entries.")
        fresh = model.layer_parameters(layer)
        if set(given) != set(fresh) or not all(same_array(np.asarray(given[k]), np.asarray(v))
                                               for k, v in fresh.items()):
            run.mutated += ("params",)
        if run.mutated:
            changed.append(run)
        returned.append(np.asarray(run.value).dtype)
        return run.out, None

    def mutation():
        words, names = mutation_words(changed, ("x", "params"))
        return BlockVerdict(False, "mutates_inputs", f"{name} gives the model's layer output, but {words}" + (
            " Here params holds the model's weights, which every later call reads." if "params" in names else ""),
            bound_layer)

    # Stage 1: layer 0 against the model's own layer output.
    river = model.run(SENTENCES[0])
    x0, want = river.hidden_states[0], river.hidden_states[1]
    out, problem = run_block(x0, 0)
    if problem is not None:
        return BlockVerdict(False, *problem)
    gap = _gap(out, want)
    bound_layer = _bound(gap)
    p0 = model.layer_parameters(0)

    def is_fault(flags):   # out is the fault's model, and nearer to it than to the right layer (wrong_eps is near)
        modelled = _block(x0, p0, model.num_heads, **flags)
        return matches(out, modelled, rtol=1e-5, atol=1e-6) and _gap(out, modelled) < gap

    found = [] if bound_layer is not None and bound_layer <= BOUNDS[0] else [
        key for key in BLOCK_FAULTS if any(is_fault(flags) for flags in _fault_flags(key))]
    if bound_layer is None or found:
        bank = river.index(QUERY)
        shown = side_by_side(out[bank, :6], want[bank, :6], left="yours", right="the model's")
        key = found[0] if found else "different"
        why = BLOCK_FAULTS[key][1] if found else ("no single mistake the checker knows explains it. Check each "
                                                   "step against the docstring: residual, LayerNorm, GELU, sqrt(d_k).")
        wrong = None if found else _wrong_piece_called(fn)
        if wrong is not None:                 # e.g. your layer_norm of notebook 07, which the block calls
            piece, verdict = wrong
            key, why = verdict.mistake, (f"your {piece}, which {name} calls, is not right. diagnose(workbook.{piece}, "
                                         f"piece=\"{piece}\") says:\n{verdict.text}")
        return BlockVerdict(False, key, f"With layer 0's weights, {name} does not give the model's own layer output "
                            f"(hidden_states[1]; largest difference {gap:.2g}): {why}\nThe first 6 of bank's "
                            f"{model.d_model} features after layer 0:\n{shown}")
    if changed:
        return mutation()
    lines = [f"Layer 0: with layer 0's weights, {name} gives the model's own output (hidden_states[1]) for all "
             f"{len(river.tokens)} tokens, each of the {want.size} numbers {_bound_words(bound_layer, returned[-1])}."]

    # Stage 2: six blocks, from the embedding tables to the sentence embedding.
    gaps, embeddings = [], []
    for text in SENTENCES:
        ids = model.tokenize(text)[1]
        x = model.embedding_vectors(ids)
        for layer in range(model.num_layers):
            x, problem = run_block(x, layer)
            if problem is not None:
                return BlockVerdict(False, problem[0], "\n".join(lines + [problem[1]]), bound_layer)
        pooled = x.mean(axis=0)
        embeddings.append(pooled / np.linalg.norm(pooled))
        gaps.append(_gap(embeddings[-1], model.run(text).embedding))
    bound_model = _bound(max(gaps))
    if bound_model is None:
        return BlockVerdict(False, "different", "\n".join(lines + [
            f"Six of your blocks do not give the model's sentence embedding (largest difference {max(gaps):.2g}), "
            "though layer 0 is right: does your block read a number of layer 0 (a width, a head count) "
            "instead of its arguments?"]), bound_layer)
    cosine = float(embeddings[0] @ embeddings[1])
    lines.append(f"All {model.num_layers} layers: six of your blocks, one per layer, give the model's sentence "
                 f"embedding of both sentences, each of the {2 * model.d_model} numbers {_bound_words(bound_model, returned[-1])}; "
                 f"the two sentences' cosine is {cosine:.3f}.")

    # Stage 3: the padding mask.
    tokens, ids = model.tokenize(SENTENCES[0])
    n = len(ids)
    padded = np.concatenate([ids, np.full(PADDED_TO - n, model.pad_id, dtype=ids.dtype)])
    mask = (np.arange(PADDED_TO) < n)[None, None, :]
    x = model.embedding_vectors(padded)
    for layer in range(model.num_layers):
        x, problem = run_block(x, layer, mask)
        if problem is not None:
            return BlockVerdict(False, problem[0], "\n".join(lines + [problem[1]]), bound_layer, bound_model)
    pooled = x[:n].mean(axis=0)
    pad_gap = _gap(pooled / np.linalg.norm(pooled), embeddings[0])
    if _bound(pad_gap) is None:
        return BlockVerdict(False, "padding_mask_ignored", "\n".join(lines + [
            f"Padded with {PADDED_TO - n} [PAD] tokens and given the padding mask (shape {mask.shape}), the river "
            f"sentence's embedding moves (by up to {pad_gap:.2g}): pass mask on to your attention, which must give "
            "a hidden key weight 0."]), bound_layer, bound_model)
    if changed:
        return mutation()
    lines.append(f"Padded with {PADDED_TO - n} [PAD] tokens, with the padding mask: the same embedding, "
                 f"{_bound_words(_bound(pad_gap), returned[-1])}. Every layer of the model's forward pass is now yours.")
    return BlockVerdict(True, None, "\n".join(lines), bound_layer, bound_model)


# --------------------------------------------------------------------------
# Notebook 11's exercise of understanding: what a row of weights supports
# --------------------------------------------------------------------------

def heatmap_claims(layer, head, weight, weight_in_mixed, key_rank, apart, off):
    """Which of four claims one row of attention weights supports (weights are evidence, not explanation).

    The notebook passes what its cells measured, so the feedback quotes them:
    layer, head: the head (counted from 0); weight: bank's weight on river there;
    weight_in_mixed: the same in "The bank by the river raised its interest rate.";
    key_rank: river's key's place by length among the keys; apart, off: the two
    banks' cosine with nothing switched off and with this head off.
    Returns a :class:`~helpers.exercises.ChoiceExercise` whose right answer is
    "c" (the softmax keeps the order of the scores: the largest weight is the
    largest score); the wrong ones are the claims the row alone cannot carry
    (Jain & Wallace 2019; Wiegreffe & Pinter 2019).
    """

    return ChoiceExercise(
        f"Layer {layer} head {head} gives {weight:.2f} of bank's weight to river. "
        "Which claim does this row alone support?",
        {"a": "The head has worked out that this bank is a river bank.",
         "b": "River's key is long, so every query leans on river.",
         "c": "In this head, bank's query scores river's key higher than any other key.",
         "d": "Switching the head off would make the two banks' vectors the same."},
        answer="c",
        why={"a": "A weight is evidence, not explanation: bank's query in layer 0 is the same in both sentences, "
                  "and in 'The bank by the river raised its interest rate.' the head still sends "
                  f"{weight_in_mixed:.2f} to river (section 6).",
             "b": "The row alone cannot say why: that needs the keys' lengths and the other queries' rows. Here "
                  f"river's key is number {key_rank} by length and wins on direction (section 6).",
             "c": "The softmax keeps the order of the scores: the largest weight is the largest score. That is "
                  "all the row itself says.",
             "d": "The row cannot tell you that: it needs the experiment. Switched off, the two banks' cosine "
                  f"rises from {apart:.4f} to {off:.4f}, far from 1 (section 6)."},
        hint="A row of weights is softmax(scores). What does the softmax keep of the scores?")


# --------------------------------------------------------------------------
# Notebook 11's prediction: the same query and key in another sentence
# --------------------------------------------------------------------------

#: the least change of the weight (absolute) the prediction needs between the two sentences: with a smaller
#: one, "a weight is a share of the row" could not be seen in the weights the notebook prints (3 decimals)
SHARE_MOVES = 0.01


class _RowSharePrediction(ChoiceExercise):
    """row_share_prediction's exercise: each wrong option is a misconception, named by its own key."""

    named = {"a": "same_weight", "b": "query_reads_context", "d": "weights_adapt"}


def row_share_prediction(sentence, other, layer=0, head=4, word="bank", key="river", model=None, called=None):
    """Predict before you run: the same query and the same key in another sentence; is the weight the same?

    sentence: the sentence whose weight the question quotes (the notebook's river sentence);
    other: a sentence the notebook has not run, with ``word`` and ``key`` at the same token positions, so
    that in layer 0 (which sees each token's word, position and segment vectors only) word's query and
    key's key are the same vectors in both, and so is their score. layer, head: the head (counted from 0).
    model: a loaded MiniLM (None: the installed one); the weights are the course's attention's.
    called: how the question names ``sentence`` ("the river sentence"); None quotes it.

    The answer, "c", is checked from the inputs: the query and the key are equal in the two sentences (to
    1e-12) and the weight moves by at least :data:`SHARE_MOVES`; ValueError (naming the argument) otherwise.
    The feedback quotes the weights, measured only when the learner checks.
    Returns a :class:`~helpers.exercises.ChoiceExercise`; its wrong options' keys: same_weight (a: the same
    score gives the same weight), query_reads_context (b: layer 0's query already reads the sentence),
    weights_adapt (d: W_Q and W_K change with the sentence).
    """
    model = load_minilm() if model is None else model
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or layer != 0:
        raise ValueError(f"layer must be 0 (only there do the query and the key depend on nothing but their own "
                         f"token and position); got {layer!r}")
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < model.num_heads:
        raise ValueError(f"head must be a whole number from 0 to {model.num_heads - 1}; got {head!r}")
    runs = [model.run(s) for s in (sentence, other)]
    for name, out in zip(("sentence", "other"), runs):
        if word not in out.tokens or key not in out.tokens:
            raise ValueError(f"{name} must hold the tokens {word!r} and {key!r}; its tokens are {out.tokens}")
    (i, j), (i2, j2) = [(out.index(word), out.index(key)) for out in runs]
    if (i, j) != (i2, j2) or runs[0].tokens == runs[1].tokens:
        raise ValueError(f"other must be another sentence with {word!r} and {key!r} at the same positions as in "
                         f"sentence ({i} and {j}); got {runs[1].tokens}")
    p, cols = model.layers[layer], slice(head * model.d_k, (head + 1) * model.d_k)
    q, k = ([out.hidden_states[layer][t] @ p[f"W_{r}"][:, cols] + p[f"b_{r}"][cols] for out in runs]
            for t, r in ((i, "Q"), (j, "K")))
    if not (np.allclose(q[0], q[1], rtol=0, atol=1e-12) and np.allclose(k[0], k[1], rtol=0, atol=1e-12)):
        raise ValueError("the query and the key must be the same vectors in both sentences (layer 0, the same "
                         "positions)")
    w0, w1 = (float(out.attention[layer, head, i, j]) for out in runs)
    if abs(w1 - w0) < SHARE_MOVES:
        raise ValueError(f"other must move {word}'s weight on {key} by at least {SHARE_MOVES} in layer {layer} "
                         f"head {head}; it moves it from {w0:.3f} to {w1:.3f}: choose another sentence")
    changed = [t for t, u in zip(runs[1].tokens, runs[0].tokens) if t != u] + runs[1].tokens[len(runs[0].tokens):]
    row = runs[1].attention[layer, head, i]
    new = max((t for t in range(len(row)) if runs[1].tokens[t] in changed), key=lambda t: row[t])
    score = float(q[0] @ k[0]) / np.sqrt(model.d_k)
    measured = (f"Here {word} gives {key} {w1:.3f}, not {w0:.3f}: the same scaled score, {score:.2f}, but "
                f"'{runs[1].tokens[new]}' takes {row[new]:.3f} of the row")
    return _RowSharePrediction(
        f"In {called or repr(sentence)}, layer {layer} head {head} gives {key} {w0:.3f} of {word}'s weight. In '{other}', both "
        f"words sit where they were, so {word}'s query and {key}'s key are unchanged. What weight does {word} "
        f"give {key} there?",
        {"a": f"{w0:.3f} again: same query, same key, same score.",
         "b": f"Different: in layer {layer} {word}'s query already carries the words around it.",
         "c": "Different, though the score is the same: other keys of the row changed.",
         "d": "Different: the head's W_Q and W_K adapt to each sentence."},
        answer="c",
        why={"a": f"The score is the same, but not the weight. {measured}: the softmax divides by the sum over "
                  "every key of the row.",
             "b": f"Layer {layer} has read nothing yet: {word}'s query is its word, position and segment vectors "
                  f"times W_Q, the same in both sentences. {measured}.",
             "c": f"{measured}.",
             "d": f"W_Q and W_K were fixed by training; nothing in them changes while the model runs. {measured}."},
        hint="Write the weight as exp(score / sqrt(d_k)) over a sum: which part changes?")
