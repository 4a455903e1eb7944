"""The real-model explorer of notebook 11, driven as a learner drives it, and its figures.

Expected values come from the model's own forward pass (``MiniLM.run``, itself
checked against the reference implementation in test_real_model.py) or from
the definition of attention written out with loops, never from the explorer.
"""

import math
import re
from collections import OrderedDict
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers.explorers.real_model as W
from helpers import real_model
from helpers.plots import heatmap_panels, layer_head_grid, weights_row_html
from helpers.real_model import ModelFileError, ModelNotInstalledError, load_minilm

RIVER = "The bank by the river was steep."
INTEREST = "The bank raised its interest rate."


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def shows_a_picture(explorer):
    return explorer.error is None and explorer.state is not None and "<table" in explorer.picture.value


def shows_a_message(explorer, *phrases):
    """The explorer shows a plain note in its picture (not the red box of a fault) and raised nothing."""
    return (explorer.state is None and "explorer-note" in explorer.picture.value
            and "explorer-error" not in explorer.picture.value
            and all(p in explorer.picture.value for p in phrases))


def option_labels(explorer):
    return [label for label, _ in explorer.controls["token"].options]


# ------------------------------------------------------------ the state function

@pytest.mark.parametrize("layer, head, token", [(0, 4, 2), (0, 2, 5), (3, 11, 9), (5, 6, 0), (5, 11, 7)])
def test_state_row_is_the_models_row(model, layer, head, token):
    out = model.run(RIVER)
    s = W.real_model_state(RIVER, layer, head, token)
    assert s.tokens == tuple(out.tokens)
    assert np.array_equal(s.weights, out.attention[layer, head])
    assert np.array_equal(s.row, out.attention[layer, head, token])
    assert np.allclose(s.weights.sum(axis=1), 1.0)
    # the five largest, largest first
    assert [j for j, _, _ in s.top_keys] == list(np.argsort(-s.row, kind="stable")[:5])
    # entropy by its definition, -sum w log w
    assert math.isclose(s.row_entropy, -sum(w * math.log(w) for w in s.row if w > 0), abs_tol=1e-12)


def test_a_layer_0_row_from_the_definition_with_loops(model):
    # q = x W_Q + b_Q and k = x W_K + b_K, head 4's 32 features; weights = softmax(q . k / sqrt(32)).
    s = W.real_model_state(RIVER, 0, 4, "bank")
    x = model.run(RIVER).hidden_states[0]
    p, cols = model.layers[0], range(4 * 32, 5 * 32)
    q = [sum(x[2, m] * p["W_Q"][m, c] for m in range(384)) + p["b_Q"][c] for c in cols]
    scores = []
    for j in range(len(x)):
        k = [sum(x[j, m] * p["W_K"][m, c] for m in range(384)) + p["b_K"][c] for c in cols]
        scores.append(sum(a * b for a, b in zip(q, k)) / math.sqrt(32))
    top = max(scores)
    e = [math.exp(v - top) for v in scores]
    assert np.allclose(s.row, [v / sum(e) for v in e], atol=1e-9)
    assert s.tokens[int(np.argmax(s.row))] == "river"


def test_a_token_given_as_text_is_its_first_occurrence():
    s = W.real_model_state(RIVER, 1, 1, "the")
    assert s.token == 1 and s.tokens[1] == "the" and s.tokens[4] == "the"


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(layer=6), r"layer must be a whole number from 0 to 5 \(the model has 6 layers, counted from 0\); got 6"),
    (dict(layer=True), r"layer must be a whole number from 0 to 5 .*; got True"),
    (dict(head=12), r"head must be a whole number from 0 to 11 .*; got 12"),
    (dict(head=-1), r"head must be a whole number from 0 to 11 .*; got -1"),
    (dict(head=2.0), r"head must be a whole number .*; got 2.0"),
    (dict(token=10), r"token must be a whole number from 0 to 9 \(a position in the 10 tokens \['\[CLS\]', 'the'"),
    (dict(token="zebra"), r"token must be one of the sentence's tokens .*; got 'zebra'"),
    (dict(text=3), r"text must be a str; got int"),
    (dict(text=["The bank"]), r"text must be a str; got list"),
    (dict(text="bank " * 600), r"602 tokens .* only 512 positions"),
    (dict(text="\ud800"), r"not valid Unicode text: a lone surrogate, U\+D800"),
    (dict(token="Bank"), r"got 'Bank' \(the model lower-cases text and drops accents: try 'bank'\)"),
    (dict(token="zebra", text="bank " * 510), r"tokens \['\[CLS\]', 'bank', .*, \.\.\. \(503 more\) \.\.\., .*'\[SEP\]'\]"),
    (dict(token=600, text="bank " * 510), r"a position in the 512 tokens \[.* \(503 more\) .*\]"),
])
def test_state_bad_input_is_a_clear_value_error(kwargs, pattern):
    args = dict(text=RIVER, layer=0, head=4, token=2) | kwargs
    with pytest.raises(ValueError, match=pattern):
        W.real_model_state(**args)


def test_bad_arguments_are_refused_before_the_forward_pass(monkeypatch):
    ran = []
    monkeypatch.setattr(W, "real_model_run", lambda text: ran.append(text))
    for kwargs in (dict(layer=9), dict(head=12), dict(token=600), dict(token="Bank"), dict(text="\ud800")):
        with pytest.raises(ValueError):
            W.real_model_state(**(dict(text="river " * 300, layer=0, head=4, token=2) | kwargs))
    assert ran == []                              # no forward pass was started


def test_a_long_token_list_is_cut_in_the_message():
    with pytest.raises(ValueError) as info:
        W.real_model_state("bank " * 510, token="zebra")
    assert len(str(info.value)) < 300 and str(info.value).count("'bank'") < 12


def test_the_message_quotes_tokens_and_gives_their_positions(model):
    out = model.run(RIVER)
    s = W.real_model_state(RIVER, 0, 2, 9)        # [SEP]'s row in the previous-token head
    j = int(out.attention[0, 2, 9].argmax())
    assert f"'{out.tokens[j]}' ({j}) {out.attention[0, 2, 9, j]:.3f}" in s.messages[0]
    s = W.real_model_state("the bank . [SEP] [SEP]", 1, 0, 1)
    for j, t, w in s.top_keys[:3]:
        assert f"'{t}' ({j}) {w:.3f}" in s.messages[0]


# ------------------------------------------------------------ driving the explorer

def test_starts_on_the_river_sentence_with_bank_chosen():
    ex = W.real_model_explorer()
    assert shows_a_picture(ex)
    assert ex.state.tokens[ex.state.token] == "bank" and (ex.state.layer, ex.state.head) == (0, 4)
    assert option_labels(ex)[:3] == ["0: [CLS]", "1: the", "2: bank"]
    assert ex.controls["text"].continuous_update is False  # one run per Enter, not per key
    assert "▸\u00a0bank" in ex.picture.value


def test_typing_a_sentence_rebuilds_the_token_list_and_keeps_the_token(model):
    ex = W.real_model_explorer()
    ex.controls["text"].value = INTEREST
    tokens = model.tokenize(INTEREST)[0]
    assert option_labels(ex) == [f"{i}: {t}" for i, t in enumerate(tokens)]
    assert ex.controls["token"].value == tokens.index("bank")  # the same token, still chosen
    assert shows_a_picture(ex) and ex.state.tokens == tuple(tokens)
    out = model.run(INTEREST)
    for name, value in [("layer", 3), ("head", 11), ("token", 6), ("layer", 0), ("head", 4)]:
        ex.controls[name].value = value
        s = ex.state
        assert np.array_equal(s.row, out.attention[s.layer, s.head, s.token]), (name, value)
        assert np.allclose(s.weights.sum(axis=1), 1.0)
    assert (ex.state.layer, ex.state.head, ex.state.token) == (0, 4, 6)


def test_a_stale_token_choice_does_not_crash():
    ex = W.real_model_explorer()
    ex.controls["token"].value = 9                # [SEP] of the river sentence, the last position
    ex.controls["text"].value = "steep"           # three tokens: position 9 no longer exists
    assert shows_a_picture(ex)
    assert ex.state.tokens == ("[CLS]", "steep", "[SEP]") and ex.state.tokens[ex.state.token] == "[SEP]"
    ex.controls["token"].value = 1
    ex.controls["text"].value = RIVER             # 'steep' is in it: kept, at its new place
    assert ex.state.tokens[ex.state.token] == "steep" and ex.state.token == 7
    ex.controls["text"].value = INTEREST          # no 'steep': the first word instead
    assert ex.state.token == 1 and shows_a_picture(ex)


@pytest.mark.parametrize("chosen, text, expected", [
    (9, "[PAD] [SEP] [CLS]", 4),       # the river sentence's final [SEP] stays the final [SEP], not the typed one
    (1, "a bank by the river and the sea", 4),   # an early 'the' (1 of 9) stays the early 'the' (4 of 10)
    (4, "the bank , the river", 4),   # the same token at the same position: kept
])
def test_a_repeated_token_keeps_its_place_in_the_sentence(chosen, text, expected):
    ex = W.real_model_explorer()
    ex.controls["token"].value = chosen
    old = ex.state.tokens[chosen]
    ex.controls["text"].value = text
    assert ex.state.tokens[ex.state.token] == old and ex.state.token == expected


def test_one_word():
    ex = W.real_model_explorer()
    ex.controls["text"].value = "bank"
    assert shows_a_picture(ex)
    assert ex.state.tokens == ("[CLS]", "bank", "[SEP]") and ex.state.token == 1
    assert ex.state.weights.shape == (3, 3) and np.allclose(ex.state.weights.sum(axis=1), 1.0)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u200b", "\x00"])
def test_an_empty_box_says_so(text):
    ex = W.real_model_explorer()
    ex.controls["text"].value = text
    assert shows_a_picture(ex)  # [CLS] and [SEP]: what the model really sees
    assert ex.state.tokens == ("[CLS]", "[SEP]")
    assert any("Type a sentence and press Enter" in m for m in ex.state.messages)
    assert "Type a sentence and press Enter" in ex.picture.value


def test_past_512_tokens_a_message_not_a_traceback():
    ex = W.real_model_explorer()
    ex.controls["text"].value = "bank " * 600     # 602 tokens with [CLS] and [SEP]
    assert shows_a_message(ex, "602 tokens", "512 positions")
    assert ex.controls["token"].disabled
    ex.controls["layer"].value = 2                # moving a control still raises nothing
    assert shows_a_message(ex, "512 positions")
    ex.controls["text"].value = RIVER             # and the explorer recovers
    assert shows_a_picture(ex) and not ex.controls["token"].disabled
    assert ex.state.layer == 2


def test_exactly_512_tokens_draw_a_window_and_the_whole_row(model):
    ex = W.real_model_explorer()
    ex.controls["text"].value = "bank " * 510     # 512 tokens: the model's limit
    s = ex.state
    assert shows_a_picture(ex) and len(s.tokens) == 512
    assert s.token == 2                           # 'bank' was at 2 and is at 2 again: kept
    start, stop = s.shown
    assert stop - start == W.REAL_MAX_DRAWN and start <= s.token < stop
    table = ex.picture.value.split("<table", 1)[1]
    assert table.count("<td style='min-width") == W.REAL_MAX_DRAWN ** 2
    assert ex.picture.value.count("title='key ") == W.REAL_ROW_KEYS  # the row strip: its largest weights
    keys = np.sort(np.argsort(-s.row, kind="stable")[:W.REAL_ROW_KEYS])
    for j in keys:                                # each labelled with its position
        assert f"{j}:\u00a0{s.tokens[j]}" in ex.picture.value
    assert f"share {1 - s.row[keys].sum():.3f}" in ex.picture.value
    assert any("512 tokens" in m for m in s.messages)
    page = ex.picture.value                       # the note first, where a 600 px box shows it
    assert page.index("512 tokens") < page.index("title='key ") < page.index("<table")
    ex.controls["token"].value = 511
    assert ex.state.shown == (512 - W.REAL_MAX_DRAWN, 512)
    assert np.isclose(ex.state.row.sum(), 1.0)


@pytest.mark.parametrize("text, phrase", [
    ("🙂 by the river", "[UNK] at position 1 stands for &#x27;🙂&#x27;: it is one word the model&#x27;s vocabulary"),
    ("x" * 101, "word of more than 100 characters"),
    ("我喜欢在河边散步。", "[UNK] at positions 2, 3, 4, 6, 7 and 8"),
    ("the [PAD] bank", "A [PAD] you type is read as the padding marker, but it is not masked"),
    ("Банк у реки", "a piece that continues a word starts with ##"),
    ("the [PAD] bank [SEP]", "contains [PAD], [SEP]"),
    ("e\u0301 ça", "Layer 0, head 4"),
    (" ".join(["😀"] * 20), "stands for &#x27;😀&#x27;: these are 20 words"),   # a repeated word named once
    ("a 😀 b 😁 c 😂 d 🤣 e 😃 f 😄 g 😅 h 😆",
     "&#x27;😃&#x27;, &#x27;😄&#x27; and 2 more: these are 8 words"),             # one "and", no quoted "more"
])
def test_odd_text_is_drawn_and_explained(text, phrase):
    ex = W.real_model_explorer()
    ex.controls["text"].value = text
    assert shows_a_picture(ex)
    assert phrase in ex.picture.value


def test_text_the_tokenizer_refuses_gives_a_message():
    ex = W.real_model_explorer()
    ex.controls["text"].value = "bank \ud800"    # a lone surrogate: not Unicode text
    assert shows_a_message(ex, "not valid Unicode text: a lone surrogate, U+D800, at position 5")


def test_a_long_word_is_blamed_on_the_length_limit_not_the_vocabulary(model):
    s = W.real_model_state("x" * 101, 0, 4, 1)
    assert s.tokens == ("[CLS]", "[UNK]", "[SEP]")
    assert not any("cannot spell" in m for m in s.messages)
    assert W.real_model_state("x" * 100, 0, 4, 1).tokens != s.tokens   # 100 characters: still spelt


def test_each_unknown_word_is_counted(model):
    text = "我喜欢在河边散步。"
    tokens = model.tokenize(text)[0]
    s = W.real_model_state(text, 0, 4, 1)
    note = [m for m in s.messages if "[UNK]" in m]
    assert len(note) == 1 and f"{tokens.count('[UNK]')} words" in note[0]
    assert "one 'unknown' token" not in note[0] and "100 characters" not in note[0]


def test_a_typed_pad_gets_weight_and_the_message_says_so(model):
    s = W.real_model_state("the [PAD] bank", 0, 4, 3)
    assert s.tokens[2] == "[PAD]" and s.weights[:, 2].min() > 0   # not masked: every query gives it weight
    assert any("not masked" in m for m in s.messages)


EXPLORER = W.real_model_explorer()  # one explorer, as one learner types one thing after another


@given(text=st.text(max_size=40))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_text_gives_a_picture_or_a_message_never_an_exception(text):
    ex = EXPLORER
    ex.controls["text"].value = text              # must not raise
    if ex.state is None:
        assert "explorer-note" in ex.picture.value and "explorer-error" not in ex.picture.value
    else:
        assert ex.state.tokens[0] == "[CLS]" and ex.state.tokens[-1] == "[SEP]"
        assert np.allclose(ex.state.weights.sum(axis=1), 1.0)
        assert 0 <= ex.controls["token"].value < len(ex.state.tokens)


def test_every_control_changes_the_picture():
    # What the browser test checks in JupyterLab: each control, moved, redraws.
    ex = W.real_model_explorer()
    for name, value in [("layer", 1), ("head", 5), ("token", 0), ("text", INTEREST)]:
        before = ex.picture.value
        ex.controls[name].value = value
        assert shows_a_picture(ex) and ex.picture.value != before, name


def test_redraw_in_place_one_picture_sized_from_its_layout():
    ex = W.real_model_explorer()
    children, picture = ex.children, ex.picture
    for value in range(6):
        ex.controls["layer"].value = value
    for value in range(12):
        ex.controls["head"].value = value
    ex.controls["text"].value = INTEREST
    assert ex.children == children and ex.picture is picture
    assert ex.picture.layout.min_height.endswith("px") and ex.picture.layout.overflow == "auto"
    assert ex.picture.value.count("<table") == 1


def test_moving_layer_head_or_token_does_not_rerun_the_model(monkeypatch):
    ex = W.real_model_explorer()
    runs = []
    original = real_model.MiniLM.run
    monkeypatch.setattr(real_model.MiniLM, "run", lambda self, *a, **k: runs.append(a) or original(self, *a, **k))
    ex.controls["text"].value = "A sentence that nobody has typed before, about a bank."
    assert len(runs) == 1
    for name, values in [("layer", range(6)), ("head", range(12)), ("token", range(5))]:
        for value in values:
            ex.controls[name].value = value
    assert len(runs) == 1 and shows_a_picture(ex)
    ex.controls["text"].value = RIVER             # seen before: remembered
    assert len(runs) == 1


def test_remembered_runs_are_bounded(monkeypatch):
    class Fake:
        def run(self, text, attention=None):
            n = len(text)
            return SimpleNamespace(tokens=["t"] * n, ids=np.zeros(n), is_real=np.ones(n, bool),
                                   attention=np.zeros((1, 1, n, n)), hidden_states=np.zeros((2, n, 1)),
                                   embedding=np.zeros(1))

    monkeypatch.setattr(W, "_RUNS", OrderedDict())
    monkeypatch.setattr(real_model, "load_minilm", lambda: Fake())
    for k in range(20):
        W.real_model_run("x" * (k + 1))
    assert len(W._RUNS) == W._RUNS_KEPT
    assert list(W._RUNS)[0] == ("x" * 20, None)    # the most recent first; remembered with its attention (None)
    W.real_model_run("y" * 400)
    W.real_model_run("z" * 400)                    # two of 400: 320,000 pairs, over the budget
    assert list(W._RUNS) == [("z" * 400, None)]
    W.real_model_run("w" * 600)                    # over the budget alone: still kept, as the latest
    assert list(W._RUNS) == [("w" * 600, None)]
    assert not W._RUNS["w" * 600, None].attention.flags.writeable


def test_bad_start_values_are_refused():
    with pytest.raises(ValueError, match="head must be a whole number from 0 to 11"):
        W.real_model_explorer(head=12)
    with pytest.raises(ValueError, match="token must be one of the sentence's tokens"):
        W.real_model_explorer(token="money")


def test_the_model_errors_show_only_their_message_in_jupyter():
    # IPython calls _render_traceback_ instead of printing the traceback.
    for error in (ModelNotInstalledError("run make test"), ModelFileError("reinstall it")):
        assert error._render_traceback_() == [f"{type(error).__name__}: {error}"]


# ------------------------------------------------------------ figures

def test_row_strip_colours_marks_and_escapes():
    out = weights_row_html([0.0, 1.0, 0.25], ["a", "<b>", "c"], title="row", marked=1)
    boxes = re.findall(r"background:(#[0-9a-f]{6});color:(\w+)'>([0-9.]+)<", out)
    assert [text for _, _, text in boxes] == ["0.000", "1.000", "0.250"]
    cividis = matplotlib.colormaps["cividis"]
    for (colour, _, _), value in zip(boxes, [0.0, 1.0, 0.25]):
        got, want = matplotlib.colors.to_rgb(colour), matplotlib.colors.to_rgb(matplotlib.colors.to_hex(cividis(value)))
        assert max(abs(a - b) for a, b in zip(got, want)) < 0.02
    # The marked key: a double outline set off from its box and a bold label after ▸, not a hue alone.
    assert out.count("outline:3px double") == 1 and out.index("outline:3px double") > out.index("&lt;b&gt;")
    assert "font-weight:bold;" in out and ">▸\u00a0&lt;b&gt;</div>" in out and out.count(">▸") == 1
    with pytest.raises(ValueError, match=r"row must be one row of weights"):
        weights_row_html(np.zeros((2, 2)), ["a", "b"])
    with pytest.raises(ValueError, match=r"key_labels must give 2 labels"):
        weights_row_html([0.5, 0.5], ["a"])


def test_heatmap_panels_draw_each_panel_with_its_numbers():
    a, b = np.full((3, 3), 1 / 3), np.full((2, 4), 0.25)
    xyz, pq, pqrs = list("xyz"), list("pq"), list("pqrs")
    fig = heatmap_panels([[(a, xyz, xyz, "A"), (a, xyz, xyz, "B")], [(b, pq, pqrs, "C")]])
    images = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert [ax.get_title() for ax in images] == ["A", "B", "C"]
    assert [len(ax.texts) for ax in images] == [9, 9, 8]
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="panels must be a non-empty list"):
        heatmap_panels([])
    with pytest.raises(ValueError, match="query_labels must give 2 labels"):
        heatmap_panels([[(b, ["p"], pqrs, "C")]])


def test_layer_head_grid_counts_from_zero():
    fig = layer_head_grid(np.arange(12.0).reshape(2, 6) / 11, "t", vmax=1.0, colour_label="w")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3", "4", "5"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1"]
    assert len(ax.texts) == 12 and ax.texts[11].get_text() == "1.00"
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="vmax must be larger than vmin"):
        layer_head_grid(np.zeros((2, 2)), "t", vmax=0.0, colour_label="w")


def test_the_explorer_runs_on_the_attention_it_is_given_and_says_when_it_is_not_the_courses():
    from helpers.attention import scaled_dot_product_attention
    from helpers.pieces import piece

    def unscaled(Q, K, V, mask=None):                  # not the course's: no division by sqrt(d_k)
        return scaled_dot_product_attention(Q, K, V, mask=mask, scale=1.0)

    course = W.real_model_state(RIVER, 0, 4, "bank")
    wrapped = W.real_model_state(RIVER, 0, 4, "bank", attention=piece("attention", use="course", masks=True,
                                                                        batches=True, quiet=True))
    other = W.real_model_state(RIVER, 0, 4, "bank", attention=unscaled)
    assert "Computed by your attention." not in course.messages + wrapped.messages     # the course's, wrapped by piece()
    assert other.messages[-1] == "Computed by your attention."
    assert np.array_equal(wrapped.row, course.row)
    assert other.row.max() > 0.99 > course.row.max()    # its own run, remembered apart: unscaled, one-hot on river
    explorer = W.real_model_explorer(RIVER, attention=unscaled)
    assert explorer.state.messages[-1] == "Computed by your attention." and np.array_equal(explorer.state.row, other.row)
