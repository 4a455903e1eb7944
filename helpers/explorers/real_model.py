"""Notebook 11's explorer: a sentence you type through the real model all-MiniLM-L6-v2.

``real_model_state`` computes what it shows; ``real_model_explorer`` is the widget.
"""

from __future__ import annotations

import inspect
import numbers
from collections import OrderedDict
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from helpers import real_model as _real_model
from helpers.attention import attention_entropy, scaled_dot_product_attention
from helpers.explorers import real_model_static
from helpers.explorers.base import Explorer, _listed, _static_control
from helpers.plots import TABLE_MAX_TOKENS as _TABLE_MAX_TOKENS, weights_row_html, weights_table_html

__all__ = [
    "RealModelState", "real_model_state", "real_model_run", "real_model_explorer", "REAL_SENTENCE",
    "REAL_MAX_DRAWN", "REAL_ROW_KEYS", "TextProblem",
]


# --------------------------------------------------------------------------
# A real trained model: all-MiniLM-L6-v2 (notebook 11)
# --------------------------------------------------------------------------




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


def real_model_run(text, attention=None):
    """``MiniLM.run(text, attention=attention)`` of all-MiniLM-L6-v2, remembered for the last few sentences.

    attention: None (the course's attention) or the function the model runs in every layer instead
    (notebook 11 passes ``piece("attention", masks=True, batches=True)``: yours once it is right); a run
    is remembered per sentence and function.

    Moving the explorer's layer, head or token therefore reruns nothing:
    only a new sentence costs a forward pass (about 13 ms for 10 tokens,
    1.5 s for 512). The arrays of the result are read-only, as they are
    shared. Raises what ``load_minilm`` and ``MiniLM.run`` raise: the
    install message when the model is missing, ValueError for a text that is
    not a str, cannot be tokenized, or gives more than 512 tokens.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    key = (text, attention)
    if key in _RUNS:
        _RUNS.move_to_end(key, last=False)
        return _RUNS[key]
    out = _real_model.load_minilm().run(text, attention=attention)
    for a in (out.ids, out.is_real, out.attention, out.hidden_states, out.embedding):
        a.setflags(write=False)
    _RUNS[key] = out
    _RUNS.move_to_end(key, last=False)
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


# The pieces of the messages and titles, one function each, so that the static page's templates
# (real_model_static.py, which calls them with "{slot}" strings) are written by the same code.

def _weight(w):
    """A weight as the messages print it (3 decimals)."""
    return f"{w:.3f}"


def _nats(x):
    """An entropy (nats) as the messages and the heatmap's title print it (2 decimals)."""
    return f"{x:.2f}"


def _name(token, position):
    """The chosen query as the messages and the strip's title name it: 'bank' (position 2)."""
    return f"'{token}' (position {position})"


def _key_text(position, token, weight):
    """One of the top keys in the row's message: 'river' (5) 0.123 (``weight`` already printed)."""
    return f"'{token}' ({position}) {weight}"


#: Between the top keys of the row's message.
_KEYS_SEP = ", "


def _row_message(layer, head, name, keys, entropy, n):
    """The first message: the row's top keys (``keys``, joined) and its entropy (``entropy``, printed), of n tokens."""
    return (f"Layer {layer}, head {head}. The row of {name} puts most weight on {keys}; "
            f"its entropy is {entropy} nats of at most log {n} = {_nats(np.log(n))}.")


def real_model_state(text=REAL_SENTENCE, layer=0, head=4, token=2, attention=None):
    """One head of all-MiniLM-L6-v2 on ``text``, and the row of one token.

    text: any str; the model sees its WordPiece tokens between [CLS] and
        [SEP] (an empty box gives just those two, and a message says so).
    layer: 0 to 5; head: 0 to 11 (counted from 0, as numpy indexes
        ``MiniLMOutput.attention[layer, head]``).
    token: the query's position, 0 to n - 1, or a token as text (its first
        occurrence, e.g. "bank"; tokens are lower-case).

    attention: None (the course's) or the attention function the model runs
        in every layer (see ``real_model_run``); one that is not the course's
        is named in a last message: "Computed by your attention."

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
        tokens = tuple(_RUNS[text, attention].tokens) if (text, attention) in _RUNS else tuple(model.tokenize(text)[0])
    except ValueError as exc:
        raise TextProblem(str(exc)) from None
    token = _token_position(token, tokens, model)
    out = real_model_run(text, attention=attention)
    n = len(tokens)
    weights = out.attention[layer, head]
    row = weights[token]
    entropy = attention_entropy(weights)
    order = np.argsort(-row, kind="stable")[:5]
    top = tuple((int(j), tokens[j], float(row[j])) for j in order)
    start = 0 if n <= REAL_MAX_DRAWN else min(max(token - REAL_MAX_DRAWN // 2, 0), n - REAL_MAX_DRAWN)
    shown = (start, min(n, start + REAL_MAX_DRAWN))

    name = _name(tokens[token], token)
    messages = [_row_message(layer, head, name, _KEYS_SEP.join(_key_text(j, t, _weight(w)) for j, t, w in top[:3]),
                             _nats(entropy[token]), n)]
    if n == 2:
        messages.append("The box holds no word the model can read (it is empty, or only spaces or invisible "
                        "characters), so the model sees just [CLS] and [SEP]. Type a sentence and press Enter.")
    if n > REAL_MAX_DRAWN:
        messages.append(f"The text has {n} tokens. The strip shows the {REAL_ROW_KEYS} largest weights of the row "
                        f"of {name}, in order of position; the heatmap shows positions {shown[0]} to "
                        f"{shown[1] - 1}, around it, so its rows sum to less than 1 where weight falls outside them.")
    if n > model.max_seq_length:
        messages.append(f"The attention here uses all {n} tokens (the model has {model.max_positions} positions). "
                        f"The model's sentence embedding reads only the first {model.max_seq_length} "
                        f"(its max_seq_length, [CLS] and [SEP] included), as the published model does.")
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
    if attention is not None and inspect.unwrap(attention) is not scaled_dot_product_attention:
        messages.append("Computed by your attention.")     # piece()'s course attention wraps the course's
    return RealModelState(text=text, tokens=tokens, layer=layer, head=head, token=token, weights=weights, row=row,
                          row_entropy=float(entropy[token]), head_entropy=float(entropy.mean()), top_keys=top,
                          shown=shown, messages=tuple(messages))


#: The marker before the chosen query's label in the heatmap (no line break after it).
_QUERY_MARK = "▸\u00a0"
#: Between the strip and the heatmap.
_SPACER = "<div style='height:10px'></div>"


def _strip_title(name):
    """The strip's title for the chosen query ``name`` (see :func:`_name`), up to REAL_MAX_DRAWN tokens."""
    return f"The row of {name}: its weight on every key"


def _table_title(layer, head, where, entropy):
    """The heatmap's title; ``where`` names a window ("" for the whole sentence), ``entropy`` is printed."""
    return f"Layer {layer}, head {head}: every query's weights{where} (mean entropy {entropy} nats)"


def _table_look(shown):
    """The heatmap's decimals, cell width (px) and font size (px) for ``shown`` tokens: smaller past 12."""
    return (2, 34, 11) if shown > 12 else (3, 46, 12)


def _strip_html(state):
    """The chosen token's row as a strip of boxes (its largest weights only, past REAL_MAX_DRAWN tokens)."""
    i, n = state.token, len(state.tokens)
    if n <= REAL_MAX_DRAWN:
        return weights_row_html(state.row, state.tokens, marked=i, title=_strip_title(_name(state.tokens[i], i)))
    keys = np.sort(np.argsort(-state.row, kind="stable")[:REAL_ROW_KEYS])  # a long row: its largest weights
    rest = float(1.0 - state.row[keys].sum())
    return weights_row_html(state.row[keys], [f"{j}:\u00a0{state.tokens[j]}" for j in keys],
                            marked=int(np.flatnonzero(keys == i)[0]) if i in keys else None,
                            title=f"The row of {_name(state.tokens[i], i)}: its {REAL_ROW_KEYS} largest "
                                  f"weights of {n} (position: key); the other {n - REAL_ROW_KEYS} keys "
                                  f"share {rest:.3f}")


def _table_html(state):
    """The head's heatmap (at most REAL_MAX_DRAWN tokens, a window around the chosen one), ▸ on its row."""
    a, b = state.shown
    i, n = state.token, len(state.tokens)
    queries = [(_QUERY_MARK if q == i else "") + t for q, t in enumerate(state.tokens)]
    decimals, cell_width, font_size = _table_look(b - a)
    where = "" if (a, b) == (0, n) else f", positions {a} to {b - 1} of {n}"
    return weights_table_html(state.weights[a:b, a:b], queries[a:b], state.tokens[a:b],
                              title=_table_title(state.layer, state.head, where, _nats(state.head_entropy)),
                              decimals=decimals, cell_width=cell_width, font_size=font_size)


def _draw_real(state):
    """The explorer's picture (after its messages): the chosen token's row, then the heatmap."""
    return _strip_html(state) + _SPACER + _table_html(state)


class _RealModelExplorer(Explorer):
    """The Explorer with a sentence box: a new sentence rebuilds the token dropdown before one redraw.

    Its picture carries its own messages, first (so a long text's note is seen
    before the strip and the heatmap). A text the model cannot take is shown
    as a plain note (class ``explorer-note``); the red box stays for faults.
    """

    _rebuilding = False
    attention = None      # the attention function the model runs (None: the course's), set by real_model_explorer
    note_errors = (TextProblem,)
    note_title = "The model cannot take this text."
    messages_first = True

    def static_controls(self):
        """The static page's controls: layer and head (ranges), token (a select); the sentence is fixed there."""
        notes = {"head": "layers and heads are counted from 0"}
        return [_static_control(name, self.controls[name], None, notes.get(name, "")) for name in ("layer", "head", "token")]

    def static_grid(self, budget=None):
        """The interactive static form: the numbers of every layer, head and token of the sentence shown,
        drawn by real_model.js (see :mod:`helpers.explorers.real_model_static`; state key [layer,head,token]).
        ``budget`` is not used: this explorer's numbers have a budget of their own (1 MB)."""
        return real_model_static.grid_html(self, self.static_controls())

    @staticmethod
    def static_pieces(state):
        """What the static page draws ``state`` with: the live strip, spacer and heatmap (their HTML is read
        for its styles), the heatmap's decimals, the formatters of weights and entropies, and the templates
        of the first message and the titles (the same functions called with "{slot}" strings)."""
        n = len(state.tokens)
        return {"strip": _strip_html(state), "spacer": _SPACER, "table": _table_html(state),
                "query_mark": _QUERY_MARK, "decimals": _table_look(n)[0], "weight": _weight, "nats": _nats,
                "templates": {"message": _row_message("{layer}", "{head}", _name("{token}", "{position}"), "{keys}",
                                                      "{entropy}", n),
                              "key": _key_text("{position}", "{token}", "{weight}"), "keys_sep": _KEYS_SEP,
                              "strip_title": _strip_title(_name("{token}", "{position}")),
                              "table_title": _table_title("{layer}", "{head}", "", "{entropy}")}}

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
            if len(tokens) > 100 and (text, self.attention) not in _RUNS:
                self.picture.value = (f"<p style='font-family:sans-serif'>Running the model on {len(tokens)} tokens "
                                      "(about a second for a few hundred)...</p>")
            tokens = real_model_run(text, attention=self.attention).tokens
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


def real_model_explorer(text=REAL_SENTENCE, layer=0, head=4, token="bank", attention=None):
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

    attention: the attention function every state is computed by (see
    :func:`real_model_state`; notebook 11 passes ``piece("attention",
    masks=True, batches=True)``, yours once it is right); None means the course's.

    Returns an :class:`Explorer`; ``.state`` is a :class:`RealModelState`.
    Raises the install message when the model is missing, and ValueError for
    bad starting values (as :func:`real_model_state`).
    """
    start = real_model_state(text, layer, head, token, attention)
    model = _real_model.load_minilm()
    box = widgets.Text(value=text, description="sentence", continuous_update=False,
                       placeholder="type a sentence and press Enter", layout=widgets.Layout(width="560px", max_width="100%"))
    layer_slider = widgets.IntSlider(value=start.layer, min=0, max=model.num_layers - 1, description="layer",
                                     layout=widgets.Layout(width="360px"))
    head_slider = widgets.IntSlider(value=start.head, min=0, max=model.num_heads - 1, description="head",
                                    layout=widgets.Layout(width="360px"))
    dropdown = widgets.Dropdown(options=_token_options(start.tokens), value=start.token, description="token",
                                layout=widgets.Layout(width="220px"))

    def state(text, layer, head, token):
        return real_model_state(text, layer, head, token, attention)
    explorer = _RealModelExplorer(
        state, _draw_real,
        {"text": box, "layer": layer_slider, "head": head_slider, "token": dropdown},
        [[box, widgets.Label("press Enter to run the model")], [layer_slider, head_slider, dropdown],
         [widgets.Label("layers and heads are counted from 0")]],
        height="420px", name="real_model")
    explorer.attention = attention
    return explorer
