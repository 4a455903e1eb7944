"""Derive, build, use: the function a notebook cell runs for a piece, yours once it is right (issue 33, section 1).

After a notebook's **Build it** section, its cells run on the learner's own
workbook function for that piece once ``diagnose`` says it is right, and on
the course's function until then::

    softmax = piece("softmax")       # prints: your softmax
    weights = softmax(scores)        # or: the course's softmax (yours: not attempted yet)

Notebook 01 serves softmax and attention; notebook 04 adds causal_mask and
padding_mask (and attention with masks and batches).
Notebook 06 adds positional_encoding; notebook 07 layer_norm (its block at the end); notebook 08 adds
online_softmax_update, tiled_attention and kv_cache_step (TILING, below);
notebook 09 adds softmax_backward and notebook 10 rope (their blocks at the end).

Every call of :func:`piece` prints one short line saying whose version the
cell runs; nbval_sanitize.cfg folds exactly those
lines for nbval, since the stored outputs are made with the workbook's stubs.
The diagnosis is cached until workbook.py changes (its size, time or text)
or the function's code does, so a cell costs a file check after the first.

This module stands above the checkers (it imports helpers.checkers); nothing
in helpers.checkers, helpers.exercises or below imports it
(tests/test_layout.py checks that).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import re
import sys
import types

import numpy as np

from helpers import inputs
from helpers.attention import scaled_dot_product_attention, softmax as course_softmax
from helpers.attention import merge_heads as course_merge, multi_head_attention as course_multi_head
from helpers.attention import split_heads as course_split
from helpers.attention import causal_mask as course_causal_mask, padding_mask as course_padding_mask
from helpers.positions import sinusoidal_positional_encoding as course_positional_encoding
from helpers.checkers.checker_attention import MASK_NAMES
from helpers.checkers.checker_softmax import AXIS_NAMES
from helpers.checkers.diagnose import diagnose
from helpers.checkers.runner import parameter, read_numbers
from helpers.course import BUILT_IN
from helpers.checkers.checker_tiling import _read_first, _read_step
from helpers.tiling import KVCache as course_kv_cache, online_softmax_update as course_online_step
from helpers.tiling import tiled_attention as course_tiled
from helpers.training import softmax_backward as course_softmax_backward      # notebook 09
from helpers.positions import apply_rope as course_apply_rope                 # notebook 10
from helpers.depth import layer_norm as course_layer_norm                     # notebook 07
from helpers.checkers import checker_layer_norm

__all__ = ["piece", "clear_cache", "this_notebook", "CHOICES", "USES"]

CHOICES = ("softmax", "attention",
           "causal_mask", "padding_mask")              # notebook 04
"""The pieces :func:`piece` serves so far (issue 33): notebook 01's two, notebook 04's masks here, notebook 05's, 06's and 08's added below (HEADS, POSITIONS, TILING)."""
USES = ("auto", "course", "yours")
"""auto: yours when diagnose says it is right, else the course's; course: the course's; yours: yours, right or not."""
_OPTIONS = {"softmax": (), "attention": ("masks", "batches"),
            "causal_mask": (), "padding_mask": ()}    # notebook 04

_cache = {}      # (piece, options, fingerprint of the function) -> (Diagnosis, dtype of its output or None)
_files = {}      # path -> ((size, mtime_ns), sha256 of the text)


def piece(name, use="auto", *, workbook=None, masks=False, batches=False, float64=False, quiet=False):
    """The function a cell should run for the piece ``name``: yours once it is right, else the course's.

    name: "softmax", "attention", notebook 04's "causal_mask", "padding_mask", notebook
        05's "split_heads", "merge_heads", "multi_head_attention", notebook 06's
        "positional_encoding", or notebook 08's "online_softmax_update", "tiled_attention",
        "kv_cache_step" (:data:`CHOICES`).
        Notebook 09's "softmax_backward": ``softmax_backward(weights, d_weights)`` -> d_scores, as
        helpers.training's (the course's input checks first).
        Notebook 10's "rope" (workbook.apply_rope): ``apply_rope(x, positions=None, base=10000.0)`` as
        helpers.positions'; yours takes no base, so another base raises ValueError (use="course" for it).
        Notebook 07's "layer_norm": ``layer_norm(x, gamma=None, beta=None, eps=1e-12)`` as helpers.depth's,
        gamma and beta None meaning no gain and no bias (yours is given ones and zeros).
    use: "auto" (the default): your workbook function when ``diagnose`` says
        Correct for it with this stage's options, else the course's; "course":
        the course's, to compare with yours side by side; "yours": yours even
        when diagnose finds a mistake (the line names it).
    workbook: the module that holds your functions; None means the notebook's
        ``workbook`` (notebooks/workbook.py, imported with %autoreload 2).
    masks, batches (attention only): the stage of the course. Notebook 01
        checks attention without a mask or a batch (the defaults); a cell that
        passes a mask asks ``masks=True`` (notebook 04 asks both), and yours
        runs only when diagnose says it is right with them too. The function returned refuses
        (ValueError) a mask or a batch it was not asked for, whoever wrote it.
    float64: True for a cell whose printed digits need float64 (a comparison
        with a source's number): a right function of yours that computes in
        another dtype (float32) gives way to the course's there, and the line
        says why. Otherwise a right float32 or loop version runs as it is.
    quiet: True prints no line.

    Returns a function with the course's signature:
    ``softmax(x, axis=-1)`` -> weights the shape of x, an array (a list yours
    returns is read as one); ``attention(Q, K, V, mask=None,
    scale=None)`` -> (output (..., n_q, d_v), weights (..., n_q, n_k)), as
    ``scaled_dot_product_attention``; ``causal_mask(n)`` -> (n, n) bool;
    ``padding_mask(is_real, num_heads=None)`` -> (B, 1, n_k) bool, or
    (B, 1, 1, n_k) with num_heads, as helpers.attention's. Yours is adapted:
    ``scale`` multiplies Q by scale * sqrt(d_k) (your function divides by
    sqrt(d_k)); when yours returns the output only, the weights are your
    attention with V the identity (weights @ I = weights); your padding_mask
    takes (B, n_k), so one sentence (n_k,) goes in as a batch of one, and
    num_heads adds the head axis of length 1 to what yours returns; the inputs
    are checked as the course's are (ValueError naming the argument).
    Notebook 08's: ``online_softmax_update(running_max, running_sum, acc,
    scores, V_block)`` -> (running_max, running_sum, acc), new arrays;
    ``tiled_attention(Q, K, V, block_size, mask=None, scale=None)`` -> output,
    yours taking no mask (a mask is refused: that cell keeps the course's);
    for kv_cache_step, a class with helpers.tiling.KVCache's interface
    (``append(k, v)``, ``attend(q, scale=None)`` -> (output, weights)) whose
    attend runs your step (see ``_adapt_kv_cache``).
    ``split_heads(x, num_heads)``, ``merge_heads(x)`` and
    ``multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None,
    num_kv_heads=None)`` -> (output, weights (..., num_heads, n, n)) as
    helpers.attention's; an output-only multi-head function of yours has its
    weights read back from it (see ``_adapt_multi_head``), and yours takes no
    grouped-query num_kv_heads.
    ``positional_encoding(n, d_model)`` -> (n, d_model), as
    helpers.positions.sinusoidal_positional_encoding, with its checks of n and d_model.

    Prints one line (unless quiet): "your softmax", "your softmax (in
    float32)", "the course's softmax (yours: not attempted yet)", "the
    course's softmax (yours: no_max_subtraction; see Build it in notebook 01)" (in notebook 01 itself:
    "see the Build it above", :func:`this_notebook`),
    "the course's softmax (as asked)", "the course's attention (yours with
    masks and batches: mask_after_softmax; see Build it in notebook 04)", ...

    Raises ValueError for a name not in :data:`CHOICES` (naming it and the
    choices), a ``use`` not in :data:`USES`, or masks/batches for a piece
    other than attention.
    """
    if not isinstance(name, str) or name not in CHOICES:
        raise ValueError(f"piece must be one of {', '.join(map(repr, CHOICES))}; got {name!r}")
    if not isinstance(use, str) or use not in USES:
        raise ValueError(f"use must be one of {', '.join(map(repr, USES))}; got {use!r}")
    for key, value in {"masks": masks, "batches": batches, "float64": float64, "quiet": quiet}.items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{key} must be True or False; got {value!r}")
        if value and key in ("masks", "batches") and key not in _OPTIONS[name]:
            raise ValueError(f"piece({name!r}) takes no {key}= option")
    options = {k: bool(v) for k, v in {"masks": masks, "batches": batches}.items() if k in _OPTIONS[name]}
    if use == "course":
        fn, mine, line = None, False, f"the course's {_COURSE_NAMES.get(name, name)} (as asked)"
    else:
        fn, missing = _workbook_function(name, workbook)
        verdict, dtype = (None, None) if fn is None else _diagnosis(fn, name, options)
        narrow = float64 and dtype not in (None, np.float64)      # right, but in float32 where the cell needs float64
        mine = fn is not None and (use == "yours" or verdict.correct and not narrow)
        line = _line(name, fn, missing, verdict, dtype, mine, options)
    if not quiet:
        print(line)
    return _adapt(name, fn, options) if mine else _course(name, options)


_here = {"notebook": None}     # the running notebook, "notebook 06", as this_notebook() was told


def this_notebook(number):
    """Tell :func:`piece` which notebook runs it (its setup cell: ``this_notebook("06")``), so that a wrong piece
    built in this notebook is sent to "the Build it above" rather than to "Build it in notebook 06".

    number: the notebook's two digits ("06"), its number (6) or its file name ("06_order_and_position.ipynb");
    None forgets it. Without it, the notebook is read from the Jupyter session (JupyterLab's JPY_SESSION_NAME,
    VS Code's __vsc_ipynb_file__) when there is one. ValueError for anything else.
    """
    if number is None:
        _here["notebook"] = None
        return
    found = _notebook_of(number)
    if found is None:
        raise ValueError(f"number must be a notebook's number such as '06' or its file name; got {number!r}")
    _here["notebook"] = found


def _notebook_of(value):
    """'notebook NN' for 6, '06' or a path whose file name starts with two digits and '_'; else None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= 99:
        return f"notebook {int(value):02d}"
    if isinstance(value, str):
        match = re.fullmatch(r"(\d\d)", value) or re.match(r"(\d\d)_", os.path.basename(value))
        if match:
            return f"notebook {match.group(1)}"
    return None


def _current_notebook():
    """The running notebook as 'notebook NN': as this_notebook() said, else as the Jupyter session names it."""
    if _here["notebook"] is not None:
        return _here["notebook"]
    names = [os.environ.get("JPY_SESSION_NAME")]
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    names += [getattr(shell, "user_ns", {}).get(key) for key in ("__session__", "__vsc_ipynb_file__")]
    return next((found for found in map(_notebook_of, names) if found), None)


def _see(where):
    """Where to look for a piece's Build it: 'the Build it above' in the notebook that builds it."""
    return "see the Build it above" if where == _current_notebook() else f"see Build it in {where}"


def clear_cache():
    """Forget every diagnosis (the next :func:`piece` call diagnoses again)."""
    _cache.clear()
    _files.clear()


# --------------------------------------------------------------------------
# Whose function, and its diagnosis (cached)
# --------------------------------------------------------------------------

def _workbook_function(name, workbook):
    """(your function for ``name`` or None, why it is missing)."""
    if workbook is None:
        workbook = sys.modules.get("workbook")
        if workbook is None:
            try:
                workbook = importlib.import_module("workbook")
            except Exception:          # no workbook.py beside the notebook, or one that does not import
                return None, "no workbook found"
    fn = getattr(workbook, _WORKBOOK_NAMES.get(name, name), None)        # notebook 10's rope is apply_rope there
    return (fn, None) if callable(fn) else (None, f"no {_WORKBOOK_NAMES.get(name, name)} in the workbook")


def _fingerprint(fn):
    """What the diagnosis depends on: the function's code and the text of the file that defines it."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if not isinstance(code, types.CodeType):       # a callable object: itself
        return f"id {id(fn)}", None, None
    own = hashlib.sha256(repr(_code_key(code)).encode()).hexdigest()
    return own, code.co_filename, _file_hash(code.co_filename)


def _code_key(code):
    """The parts of a code object that say what it computes (marshal's bytes depend on reference counts)."""
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, consts


def _file_hash(path):
    """The sha256 of the file at ``path``, read again only when its size or modification time changed."""
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    seen = _files.get(path)
    if seen is not None and seen[0] == (stat.st_size, stat.st_mtime_ns):
        return seen[1]
    try:
        with open(path, "rb") as file:
            digest = hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return None
    _files[path] = ((stat.st_size, stat.st_mtime_ns), digest)
    return digest


def _diagnosis(fn, name, options):
    """(diagnose's verdict on ``fn`` with ``options``, the dtype of its output on a small input, or None)."""
    key = (name, tuple(sorted(options.items())), _fingerprint(fn))
    if key not in _cache:
        verdict = diagnose(fn, piece=name, **options)
        _cache[key] = (verdict, _probe_dtype(fn, name) if verdict.correct else None)
    return _cache[key]


def _probe_dtype(fn, name):
    """The dtype of a right function's output on a small float64 input (float32 shows in the line); None for a mask."""
    if name in _MASKS:
        return None
    returned, yours = [], fn

    def recorded(*args, **kwargs):               # what yours returns, before an adapter reads it as float64
        value = yours(*args, **kwargs)
        returned.append(value)
        return value
    fn = functools.update_wrapper(recorded, yours)   # keeps its signature (__wrapped__) for the adapters
    try:
        if name in TILING:
            out = _probe_tiling(name, fn)
        elif name in _FURTHER:                     # notebooks 09 and 10
            out = _FURTHER[name][0](fn)(*_FURTHER[name][2]())
        elif name in HEADS:
            out = _probe_heads(name, fn)
        elif name in POSITIONS:
            out = _POSITIONS[name][0](fn)(4, 4)
        elif name == "softmax":
            out = _adapt_softmax(fn)(np.array([[0.0, 1.0, 2.0]]))
        else:
            x = np.array([[1.0, 0.0], [0.5, 0.5]])
            out = _adapt_attention(fn, {"masks": False, "batches": False})(x, x, x)[0]
    except Exception:
        return None
    first = returned[0] if returned else None
    first = first[0] if isinstance(first, tuple) and first else first   # (output, weights): the output's
    if isinstance(first, np.ndarray) and np.issubdtype(first.dtype, np.floating):
        return first.dtype.type
    return np.asarray(out).dtype.type


def _line(name, fn, missing, verdict, dtype, mine, options):
    """The line that says whose function runs, and why not yours."""
    course = _COURSE_NAMES.get(name, name)          # what runs when yours does not: the course's KVCache for 08's step
    if fn is None:
        return f"the course's {course} (yours: {missing})"
    odd = dtype not in (None, np.float64)
    if mine:
        if not verdict.correct:
            return f"your {name} (diagnose: {verdict.mistake})"
        return f"your {name}" + (f" (in {np.dtype(dtype).name})" if odd else "")
    if verdict.correct:      # right, but in float32 where the cell needs float64's digits
        return f"the course's {course} (yours is {np.dtype(dtype).name}; this cell needs float64)"
    if verdict.mistake == "not_attempted":
        return f"the course's {course} (yours: not attempted yet)"
    built = re.findall(r"notebook \d\d", BUILT_IN.get(_WORKBOOK_NAMES.get(name, name), ""))   # where it is built, and where masks come
    stage = {(True, False): "with a mask", (False, True): "with a batch", (True, True): "with masks and batches"}.get(
        (options.get("masks", False), options.get("batches", False)))
    if stage and _diagnosis(fn, name, {"masks": False, "batches": False})[0].correct:   # right in notebook 01's stage
        return f"the course's {course} (yours {stage}: {verdict.mistake}; {_see(built[-1])})"
    return f"the course's {course} (yours: {verdict.mistake}; {_see(built[0])})"


# --------------------------------------------------------------------------
# Yours with the course's signature, and the course's within the same stage
# --------------------------------------------------------------------------

def _adapt(name, fn, options):
    if name in _SERVED:
        return _SERVED[name][0](fn)
    return _adapt_softmax(fn) if name == "softmax" else _adapt_attention(fn, options)


def _numbers(name, value, pair=False):
    """(output, weights or None) of what your function returned, read as diagnose reads it (a list of numbers
    becomes an array; a tuple of three or more is read as its output first); ValueError for what is no array."""
    out, weights, problem = read_numbers(value, pair=pair)
    if problem is not None:
        raise ValueError(f"your {name} {problem}")
    return out, weights


def _adapt_softmax(fn):
    place = parameter(fn, AXIS_NAMES, 1)

    def softmax(x, axis=-1):
        if place is None:
            value = fn(x)
        elif place[0] == "position":
            value = fn(x, axis)
        else:
            value = fn(x, **{place[1]: axis})
        return value if isinstance(value, np.ndarray) else _numbers("softmax", value)[0]
    return functools.update_wrapper(softmax, fn)


def _adapt_attention(fn, options):
    mask_place = parameter(fn, MASK_NAMES, 3, default_none=True) or ("keyword", "mask")

    def run(Q, K, V, mask):
        if mask is None:
            return fn(Q, K, V)
        return fn(Q, K, V, mask) if mask_place[0] == "position" else fn(Q, K, V, **{mask_place[1]: mask})

    def attention(Q, K, V, mask=None, scale=None):
        Q, K, V, batch = inputs.checked_qkv(Q, K, V, queries_needed=False)
        _within_stage(Q, K, mask, options)
        if mask is not None:
            mask = inputs.checked_mask(mask, batch + (Q.shape[-2], K.shape[-2]))
        if scale is not None:    # yours divides by sqrt(d_k): scale Q so the scores come out times scale
            Q = Q * (inputs.checked_scale(scale, K.shape[-1]) * np.sqrt(K.shape[-1]))
        output, weights = _numbers("attention", run(Q, K, V, mask), pair=True)
        if weights is not None:
            return output, weights
        n_k = K.shape[-2]       # output only: the weights are your attention on V = I, since weights @ I = weights
        identity = np.broadcast_to(np.eye(n_k), K.shape[:-2] + (n_k, n_k)).copy()
        return output, _numbers("attention", run(Q, K, identity, mask), pair=True)[0]
    return functools.update_wrapper(attention, fn)


def _course(name, options):
    if name in _SERVED:
        return _SERVED[name][1]
    if name == "softmax":
        return course_softmax

    def attention(Q, K, V, mask=None, scale=None):
        _within_stage(Q, K, mask, options)
        return scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    return functools.update_wrapper(attention, scaled_dot_product_attention)


def _within_stage(Q, K, mask, options):
    """ValueError for a mask or a batch the cell did not ask for (the diagnosis did not cover it)."""
    if mask is not None and not options["masks"]:
        raise ValueError("this attention was chosen without masks: ask for it with piece('attention', masks=True) "
                         "to pass a mask")
    if max(_ndim(Q), _ndim(K)) > 2 and not options["batches"]:
        raise ValueError(f"this attention was chosen without batches (Q {np.shape(Q)}, K {np.shape(K)}): ask for "
                         "it with piece('attention', batches=True) to pass a batch")


def _ndim(x):
    try:
        return np.ndim(x)
    except Exception:          # not an array at all: the input checks that follow say what is wrong
        return 0


# --------------------------------------------------------------------------
# Notebook 04's masks: causal_mask(n) and padding_mask(is_real, num_heads=None)
# --------------------------------------------------------------------------

def _adapt_causal_mask(fn):
    def causal_mask(n):
        return np.asarray(fn(inputs.positive_whole(n, "n", "a positive whole number of tokens")))
    return functools.update_wrapper(causal_mask, fn)


def _adapt_padding_mask(fn):
    def padding_mask(is_real, num_heads=None):
        flags = inputs.checked_flags(is_real)
        if num_heads is not None:
            inputs.positive_whole(num_heads, "num_heads", "None or a positive whole number")
        one = flags.ndim == 1                    # yours takes (B, n_k): one sentence is a batch of one
        mask = np.asarray(fn(flags[None].copy() if one else flags.copy()))
        mask = mask[0] if one else mask
        return mask if num_heads is None else mask[..., None, :, :]    # (B, 1, 1, n_k): a head axis of length 1
    return functools.update_wrapper(padding_mask, fn)


_MASKS = {"causal_mask": (_adapt_causal_mask, course_causal_mask),
          "padding_mask": (_adapt_padding_mask, course_padding_mask)}
"""name -> (the adapter of yours, the course's function)."""


# --------------------------------------------------------------------------
# Notebook 05's pieces: split_heads, merge_heads, multi_head_attention
# --------------------------------------------------------------------------

HEADS = ("split_heads", "merge_heads", "multi_head_attention")
"""Notebook 05's pieces, built there; diagnose takes no stage options for them."""
CHOICES += HEADS
_OPTIONS.update({name: () for name in HEADS})


def _adapt_split(fn):
    def split_heads(x, num_heads):
        x = inputs.real_array(x, "x")                 # the course's checks, ValueError naming the argument
        inputs.at_least(x, "x", 2, "(..., n, d_model)")
        return np.asarray(fn(x, inputs.checked_num_heads(num_heads, x.shape[-1])))
    return functools.update_wrapper(split_heads, fn)


def _adapt_merge(fn):
    def merge_heads(x):
        x = inputs.real_array(x, "x")
        inputs.at_least(x, "x", 3, "(..., num_heads, n, d_k)")
        return np.asarray(fn(x))
    return functools.update_wrapper(merge_heads, fn)


def _adapt_multi_head(fn):
    """Yours with the course's signature and its (output, weights). When yours returns the output only, the
    weights are read back from yours: they do not depend on W_V or W_O, so yours runs again, sentence by
    sentence, with W_O = I and a W_V that makes each head's values one-hot over the tokens (X W_V solved for
    them), and the columns of its output are then the columns of each head's weights (ceil(n / d_k) runs)."""
    mask_place = parameter(fn, MASK_NAMES, 6, default_none=True) or ("keyword", "mask")

    def run(X, W_Q, W_K, W_V, W_O, num_heads, mask):
        args = (X, W_Q, W_K, W_V, W_O, num_heads)
        if mask is None:
            return fn(*args)
        return fn(*args, mask) if mask_place[0] == "position" else fn(*args, **{mask_place[1]: mask})

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None, num_kv_heads=None):
        X = inputs.real_array(X, "X")
        inputs.at_least(X, "X", 2, "(..., n, d_model)")
        inputs.not_empty(X, "X", -2, "token (n >= 1)")
        inputs.not_empty(X, "X", -1, "feature (d_model >= 1)")
        num_heads = inputs.checked_num_heads(num_heads, X.shape[-1])
        if num_kv_heads is not None and num_kv_heads != num_heads:
            raise ValueError("your multi_head_attention has no num_kv_heads (grouped-query attention): "
                             "use piece('multi_head_attention', use='course') for it")
        W_Q, W_K, W_V, W_O = (inputs.checked_projection(W, name, X)
                              for W, name in zip((W_Q, W_K, W_V, W_O), ("W_Q", "W_K", "W_V", "W_O")))
        if mask is not None:
            mask = inputs.checked_heads_mask(mask, X, num_heads)
        result = run(X, W_Q, W_K, W_V, W_O, num_heads, mask)
        shape = X.shape[:-2] + (num_heads,) + X.shape[-2:-1] * 2          # (..., num_heads, n, n)
        if isinstance(result, (tuple, list)) and len(result) == 2 and np.shape(result[1]) == shape:
            return np.asarray(result[0]), np.asarray(result[1])
        output = np.asarray(result[0] if isinstance(result, (tuple, list)) else result)
        return output, _weights_read_back(run, X, W_Q, W_K, num_heads, mask, shape)
    return functools.update_wrapper(multi_head_attention, fn)


def _weights_read_back(run, X, W_Q, W_K, num_heads, mask, shape):
    n, d_model = X.shape[-2:]
    d_k = d_model // num_heads
    weights = np.zeros(shape)
    for index in np.ndindex(X.shape[:-2]):
        x, m = X[index], _sentence_mask(mask, X, index)
        for start in range(0, n, d_k):
            tokens = slice(start, min(start + d_k, n))
            width = tokens.stop - start
            values = np.zeros((n, d_model))                  # head h's value j: one-hot at token start + j
            for h in range(num_heads):
                values[np.arange(start, tokens.stop), h * d_k + np.arange(width)] = 1.0
            W_V = np.linalg.lstsq(x, values, rcond=None)[0]
            if not np.allclose(x @ W_V, values, rtol=0, atol=1e-9):
                raise ValueError(f"your multi_head_attention returns its output only, and its weights can be read "
                                 f"back only when the {n} rows of X are independent (here they are not): return "
                                 f"(output, weights) from it, or use piece('multi_head_attention', use='course')")
            out = np.asarray(run(x, W_Q, W_K, W_V, np.eye(d_model), num_heads, m))
            for h in range(num_heads):
                weights[index][h][:, tokens] = out[:, h * d_k:h * d_k + width]
    return np.where(np.abs(weights) < 1e-14, 0.0, weights)    # read-back noise about a hidden key's 0: 0


def _sentence_mask(mask, X, index):
    """The mask of one sentence of X, as a mask for X[index] (n, d_model): (n or 1, n), or per head (h, n or 1, n)."""
    if mask is None or mask.ndim <= 2:
        return mask
    m = np.broadcast_to(mask, X.shape[:-2] + mask.shape[-3:])[index]
    return m[0] if m.shape[0] == 1 else m


def _probe_heads(name, fn):
    x = np.array([[1.0, 0.0, 0.5, 0.5], [0.0, 1.0, 0.25, -0.5]])
    if name == "split_heads":
        return _adapt_split(fn)(x, 2)
    if name == "merge_heads":
        return _adapt_merge(fn)(x.reshape(2, 2, 2))
    return _adapt_multi_head(fn)(x, *[np.eye(4)] * 4, 2)[0]


_HEADS_ADAPT = {"split_heads": _adapt_split, "merge_heads": _adapt_merge, "multi_head_attention": _adapt_multi_head}
_HEADS_COURSE = {"split_heads": course_split, "merge_heads": course_merge, "multi_head_attention": course_multi_head}


# --------------------------------------------------------------------------
# Notebook 06's piece: positional_encoding(n, d_model)
# --------------------------------------------------------------------------

POSITIONS = ("positional_encoding",)
"""Notebook 06's piece, built there; diagnose takes no stage options for it."""
CHOICES += POSITIONS
_OPTIONS.update({name: () for name in POSITIONS})


def _adapt_positional_encoding(fn):
    def positional_encoding(n, d_model):
        n = inputs.positive_whole(n, "n", "a positive whole number of positions")   # the course's checks
        value = fn(n, inputs.even_width(d_model))
        return value if isinstance(value, np.ndarray) else _numbers("positional_encoding", value)[0]
    return functools.update_wrapper(positional_encoding, fn)


_POSITIONS = {"positional_encoding": (_adapt_positional_encoding, course_positional_encoding)}
"""name -> (the adapter of yours, the course's function)."""


# --------------------------------------------------------------------------
# Notebook 08's pieces: online_softmax_update, tiled_attention, kv_cache_step
# --------------------------------------------------------------------------

TILING = ("online_softmax_update", "tiled_attention", "kv_cache_step")
"""Notebook 08's pieces, built there; diagnose takes no stage options for them."""
CHOICES += TILING
_OPTIONS.update({name: () for name in TILING})


def _adapt_online_step(fn):
    """Yours with the course's contract: new arrays back, the caller's untouched (yours may update in place)."""
    def online_softmax_update(running_max, running_sum, acc, scores, V_block):
        args = [np.array(a, dtype=float) for a in (running_max, running_sum, acc, scores, V_block)]
        course_online_step(*args)                       # the course's checks of the five shapes (ValueError)
        arrays, _, problem = _read_step(fn(*args))
        if problem is not None:
            raise ValueError(f"your online_softmax_update {problem}")
        return tuple(np.array(a) for a in arrays)
    return functools.update_wrapper(online_softmax_update, fn)


def _adapt_tiled(fn):
    """Yours with the course's signature: the batch broadcast, scale= multiplying Q by scale * sqrt(d_k) (yours
    divides by sqrt(d_k)); yours takes no mask, so a mask is refused (use the course's for it)."""
    def tiled_attention(Q, K, V, block_size, mask=None, scale=None):
        b = inputs.positive_whole(block_size, "block_size", "a positive whole number (keys per block)")
        if mask is not None:
            raise ValueError("your tiled_attention takes no mask (the workbook's has none): use "
                             "piece('tiled_attention', use='course') for a masked one")
        Q, K, V, batch = inputs.checked_qkv(Q, K, V)
        Q, K, V = (np.broadcast_to(x, batch + x.shape[-2:]).copy() for x in (Q, K, V))
        if scale is not None:
            Q = Q * (inputs.checked_scale(scale, K.shape[-1]) * np.sqrt(K.shape[-1]))
        return np.asarray(_numbers("tiled_attention", fn(Q, K, V, b))[0])
    return functools.update_wrapper(tiled_attention, fn)


def _adapt_kv_cache(fn):
    """helpers.tiling.KVCache with its attend run by your step: the output is your step on the cached keys
    and values (the newest token as its k, v); the weights are your step again with values one-hot over the
    tokens (the identity: weights @ I = weights); scale= multiplies q by scale * sqrt(d_k)."""
    class KVCache(course_kv_cache):
        __doc__ = course_kv_cache.__doc__

        def attend(self, q, scale=None):
            course_kv_cache.attend(self, q, scale)      # the course's checks (an empty cache, q's shape, scale)
            q = inputs.real_array(q, "q")
            if scale is not None:
                q = q * (inputs.checked_scale(scale, self.d_k) * np.sqrt(self.d_k))
            keys, values, n = np.array(self.keys), np.array(self.values), len(self)
            one_hot = np.eye(n)

            def step(vals):
                value = fn(keys[:-1].copy(), vals[:-1].copy(), q.copy(), keys[-1].copy(), vals[-1].copy())
                out, _, problem = _read_first(value)
                if problem is not None:
                    raise ValueError(f"your kv_cache_step {problem}")
                return np.asarray(out)
            return step(values), step(one_hot)
    KVCache.__qualname__ = KVCache.__name__ = "KVCache"
    KVCache.step = staticmethod(fn)
    return KVCache


def _probe_tiling(name, fn):
    x = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 2.0]])
    if name == "online_softmax_update":
        return _adapt_online_step(fn)(np.full(3, -np.inf), np.zeros(3), np.zeros((3, 2)), x @ x.T, x)[1]
    if name == "tiled_attention":
        return _adapt_tiled(fn)(x, x, x, 2)
    cache = _adapt_kv_cache(fn)()
    for row in x:
        cache.append(row, row)
    return cache.attend(x[0])[0]


_TILING = {"online_softmax_update": (_adapt_online_step, course_online_step),
           "tiled_attention": (_adapt_tiled, course_tiled), "kv_cache_step": (_adapt_kv_cache, course_kv_cache)}
"""name -> (the adapter of yours, the course's: for kv_cache_step the class helpers.tiling.KVCache)."""


# --------------------------------------------------------------------------
# Notebook 09's piece: softmax_backward(weights, d_weights), as helpers.training's
# --------------------------------------------------------------------------

_FURTHER = {}
"""Notebook 09's and 10's pieces: name -> (the adapter of yours, the course's function, a small input to read
the dtype of yours on)."""
_COURSE_NAMES = {"kv_cache_step": "KVCache"}
"""A piece whose course version has another name: notebook 08's step runs in helpers.tiling's KVCache class, so the
line says "the course's KVCache (yours: ...)" (nbval_sanitize.cfg's second regex folds it as kv_cache_step's)."""
_WORKBOOK_NAMES = {}
"""A piece whose function has another name in the workbook (notebook 10's rope: apply_rope)."""


def _adapt_softmax_backward(fn):
    def softmax_backward(weights, d_weights):
        w = inputs.checked_weights(weights)                  # the course's checks, ValueError naming the argument
        g = inputs.real_array(d_weights, "d_weights")
        if w.shape != g.shape:
            raise ValueError(f"weights and d_weights must have the same shape (..., n); got {w.shape} and {g.shape}")
        value = fn(w.copy(), g.copy())
        return value if isinstance(value, np.ndarray) else _numbers("softmax_backward", value)[0]
    return functools.update_wrapper(softmax_backward, fn)


_FURTHER["softmax_backward"] = (_adapt_softmax_backward, course_softmax_backward,
                                lambda: (np.array([[0.2, 0.3, 0.5]]), np.array([[1.0, -1.0, 0.5]])))
CHOICES += ("softmax_backward",)
_OPTIONS["softmax_backward"] = ()


# --------------------------------------------------------------------------
# Notebook 10's piece: rope, apply_rope(x, positions=None, base=10000.0) as helpers.positions'
# --------------------------------------------------------------------------

def _adapt_rope(fn):
    def apply_rope(x, positions=None, base=10000.0):
        x = inputs.real_array(x, "x")                         # the course's checks, ValueError naming the argument
        inputs.at_least(x, "x", 2, "(..., n, d)")
        inputs.even_width(x.shape[-1], "the last dimension d of x", "the features are turned in pairs")
        m = None if positions is None else inputs.checked_positions(positions, x.shape[-2])
        if inputs.checked_base(base) != 10000.0:
            raise ValueError(f"your apply_rope turns by 10000^(-2i/d) and takes no base (got {base!r}): "
                             "use piece('rope', use='course') for another base")
        value = fn(x.copy()) if m is None else fn(x.copy(), m)
        return value if isinstance(value, np.ndarray) else _numbers("apply_rope", value)[0]
    return functools.update_wrapper(apply_rope, fn)


_FURTHER["rope"] = (_adapt_rope, course_apply_rope, lambda: (np.array([[1.0, 0.5], [0.25, -1.0]]),))
_WORKBOOK_NAMES["rope"] = "apply_rope"
CHOICES += ("rope",)
_OPTIONS["rope"] = ()


# --------------------------------------------------------------------------
# Notebook 07's piece: layer_norm(x, gamma=None, beta=None, eps=1e-12) as helpers.depth's
# --------------------------------------------------------------------------

def _adapt_layer_norm(fn):
    """Yours with the course's signature: gamma and beta may be left out (None: ones and zeros, no gain or bias),
    as stack_residuals and notebook 11's block call it; the inputs are checked as the course's are."""
    eps_place = parameter(fn, checker_layer_norm.PIECE.optional["eps"][0], 3)

    def layer_norm(x, gamma=None, beta=None, eps=1e-12):
        course_layer_norm(x, gamma, beta, eps)          # the course's checks (ValueError naming the argument)
        x = inputs.real_array(x, "x")
        d = x.shape[-1]
        gamma = np.ones(d) if gamma is None else inputs.real_array(gamma, "gamma").copy()
        beta = np.zeros(d) if beta is None else inputs.real_array(beta, "beta").copy()
        args = (x.copy(), gamma, beta)
        if eps_place is None:
            value = fn(*args)
        elif eps_place[0] == "position":
            value = fn(*args, float(eps))
        else:
            value = fn(*args, **{eps_place[1]: float(eps)})
        return value if isinstance(value, np.ndarray) else _numbers("layer_norm", value)[0]
    return functools.update_wrapper(layer_norm, fn)


_FURTHER["layer_norm"] = (_adapt_layer_norm, course_layer_norm,
                          lambda: (np.array([[1.0, 2.0, 3.0, 4.0]]), np.ones(4), np.zeros(4)))
CHOICES += ("layer_norm",)
_OPTIONS["layer_norm"] = ()


_SERVED = {**_MASKS, **{name: (_HEADS_ADAPT[name], _HEADS_COURSE[name]) for name in HEADS}, **_POSITIONS, **_TILING,
           **{name: entry[:2] for name, entry in _FURTHER.items()}}
"""Every piece after notebook 01's two: name -> (the adapter of yours, the course's function), one table that
_adapt and _course read (each notebook's block above fills its own)."""
