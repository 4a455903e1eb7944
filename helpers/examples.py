"""The worked examples of the course, loaded from ``data/`` into small typed objects.

Each example is one JSON file in ``data/``: the sentence, its tokens and
vectors, the matrices W_Q, W_K, W_V, and every number its source publishes,
with the precision it was published at and where in the source it stands.
Notebooks and tests read the examples from here and nowhere else, so an
instructor who edits a JSON file changes the example everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.inputs import refuse_masked_array
from helpers.paths import COURSE_ROOT

DATA_DIR = COURSE_ROOT / "data"

__all__ = ["Published", "WorkedExample", "available_examples", "load_example", "matches", "compare", "SourceAudit",
           "DATA_DIR"]


@dataclass(frozen=True)
class Published:
    """One number (or vector, or matrix) as a source publishes it.

    value: float or ndarray, exactly as printed in the source.
    decimals: the decimals it was printed with (int, or one per entry).
    where: where in the source it stands.
    rounded_inputs: None, or a note saying that the source computed it from
        intermediate values it had already rounded, so that full-precision
        arithmetic can differ from it in the last printed digit.
    """

    name: str
    value: object
    decimals: object
    where: str
    rounded_inputs: str | None = None

    @property
    def tolerance(self):
        """Half a unit in the last published decimal: the rounding of the source."""
        return 0.5 * 10.0 ** (-np.asarray(self.decimals, dtype=float))


@dataclass(frozen=True)
class WorkedExample:
    """A sentence with its vectors and projection matrices (row-vector convention).

    X has shape (n, d_model), one row per token; W_Q, W_K have shape
    (d_model, d_k) and W_V (d_model, d_v), so Q = X @ W_Q.
    """

    name: str
    title: str
    sentence: str
    tokens: tuple
    dimensions: tuple
    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    query_token: str
    source: dict
    published: dict
    notes: dict

    def index(self, token):
        """Position of ``token`` in the sentence (ValueError naming the tokens if absent)."""
        if token not in self.tokens:
            raise ValueError(f"token must be one of {list(self.tokens)}; got {token!r}")
        return self.tokens.index(token)

    @property
    def d_k(self):
        return self.W_K.shape[1]


def _array(values, name, where):
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2:
        raise ValueError(f"{where}: {name} must be a matrix (a list of rows); got shape {arr.shape}")
    return arr


def available_examples(data_dir=None):
    """The names of the worked examples in ``data/`` (JSON files with tokens, embeddings and W_Q).

    Other JSON files there (reference values of the real model, for
    instance) are not worked examples and are not listed.
    """
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    names = []
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(raw, dict) and {"tokens", "embeddings", "W_Q", "W_K", "W_V"} <= raw.keys():
            names.append(path.stem)
    return names


def load_example(name, data_dir=None):
    """Load ``data/<name>.json`` into a :class:`WorkedExample`.

    Raises ValueError naming the file when it is missing or its matrices do
    not fit together (X (n, d_model), W_Q and W_K (d_model, d_k), W_V (d_model, d_v)).
    """
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    examples = available_examples(folder)
    if name not in examples:
        raise ValueError(f"name must be one of the worked examples in data/ {examples}; got {name!r}")
    path = folder / f"{name}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    X = _array(raw["embeddings"], "embeddings", path.name)
    W_Q, W_K, W_V = (_array(raw[k], k, path.name) for k in ("W_Q", "W_K", "W_V"))
    if len(raw["tokens"]) != X.shape[0]:
        raise ValueError(f"{path.name}: {len(raw['tokens'])} tokens but {X.shape[0]} embedding rows")
    for k, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"{path.name}: {k} has shape {W.shape}; it needs {X.shape[1]} rows (d_model)")
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(f"{path.name}: W_Q {W_Q.shape} and W_K {W_K.shape} must give the same d_k")
    published = {
        key: Published(
            name=key,
            value=np.asarray(entry["value"], dtype=float) if isinstance(entry["value"], list) else float(entry["value"]),
            decimals=entry["decimals"],
            where=entry["where"],
            rounded_inputs=entry.get("rounded_inputs"),
        )
        for key, entry in raw.get("published", {}).items()
    }
    notes = {k: v for k, v in raw.items() if k.endswith("_note")}
    return WorkedExample(
        name=raw["name"], title=raw["title"], sentence=raw["sentence"],
        tokens=tuple(raw["tokens"]), dimensions=tuple(raw["dimensions"]),
        X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, query_token=raw["query_token"],
        source=raw["source"], published=published, notes=notes,
    )


def _fmt(x, decimals):
    return f"{float(x):.{int(decimals)}f}"


def matches(ours, published):
    """Boolean array: where ``ours`` rounds to the published value (within half a unit of its last decimal)."""
    refuse_masked_array(ours, "ours")
    ours = np.asarray(ours, dtype=float)
    pub = np.asarray(published.value, dtype=float)
    if ours.shape != pub.shape:
        raise ValueError(f"ours must have the published shape {pub.shape} for {published.name}; got {ours.shape}")
    return np.abs(ours - pub) <= published.tolerance + 1e-12


def _check_compare_args(published, extra):
    if not isinstance(published, Published):
        raise ValueError(f"published must be a Published entry (e.g. example.published['weights_bank']); got {type(published).__name__}")
    if isinstance(extra, bool) or not isinstance(extra, int) or extra < 0:
        raise ValueError(f"extra must be a whole number of decimals >= 0; got {extra!r}")


def _compare_lines(ours, published, labels, extra, verdicts=("yes", "NO")):
    """The lines of a comparison table: a header, one line per entry, then the source's note if it is needed."""
    ok = matches(ours, published)
    ours = np.asarray(ours, dtype=float)
    pub = np.asarray(published.value, dtype=float)
    decimals = np.broadcast_to(np.asarray(published.decimals), pub.shape)
    flat_labels = None if labels is None else [str(label) for label in labels]
    if flat_labels is not None and len(flat_labels) != ours.size:
        raise ValueError(f"labels must give one label per entry ({ours.size} for {published.name}); got {len(flat_labels)}")
    width = max([10] + [len(str(label)) for label in flat_labels or []])
    yes, no = verdicts
    lines = [f"{published.name}   (source: {published.where})",
             f"  {'':{width}} {'ours':>12} {'published':>12} {'difference':>12}  {'match' if verdicts == ('yes', 'NO') else 'agrees?'}"]
    for i, (o, p, d, good) in enumerate(zip(ours.ravel(), pub.ravel(), decimals.ravel(), np.ravel(ok))):
        label = flat_labels[i] if flat_labels else (f"[{i}]" if ours.size > 1 else "")
        lines.append(f"  {label:{width}} {_fmt(o, d + extra):>12} {_fmt(p, d):>12} {_fmt(o - p, d + extra):>12}  {yes if good else no}")
    if not np.all(ok) and published.rounded_inputs:
        lines.append(f"  {'note' if verdicts == ('yes', 'NO') else 'why'}: {published.rounded_inputs}")
    return lines


def compare(ours, published, labels=None, extra=2):
    """Print our value beside the published one, entry by entry, with the difference.

    ours: a number or array of the same shape as ``published.value``.
    published: a :class:`Published`.
    labels: optional names for the entries (e.g. the tokens).
    extra: how many more decimals than the source to show of ours.

    Each line reads ``label  ours  published  difference  match``, where
    match is "yes" when ours rounds to the published value (within half a
    unit of its last decimal). Where it does not and the source rounded
    before this step, the source's note is printed. Returns nothing.
    """
    _check_compare_args(published, extra)
    print("\n".join(_compare_lines(ours, published, labels, extra)))


class SourceAudit:
    """Checks against a source's published numbers: one line at each step, the full table at the end.

    ``audit = SourceAudit("source 000", "the appendix")`` names the source and
    the place where the notebook prints the table. ``audit.check(ours,
    published, labels=None, extra=2)`` prints one line saying whether ours
    matches the published value to its rounding (half a unit of its last
    decimal), and records the comparison; ``audit.table()`` prints every
    recorded comparison in full, entry by entry, with a column saying
    "yes", or "no, rounded first" where the source rounded an earlier step
    (followed by the source's note on why), or "no, unexplained".
    With ``quiet=True``, ``check`` records without printing (as ``record``
    does), and
    ``audit.summary(published)`` prints the one line a notebook's main path
    keeps (issue 22): how many published numbers are reproduced, and how many
    differ only by the source's rounding.
    """

    ROUNDED_FIRST = "no, rounded first"
    UNEXPLAINED = "no, unexplained"

    def __init__(self, source, table_at, quiet=False):
        if not isinstance(source, str) or not isinstance(table_at, str) or not source or not table_at:
            raise ValueError(f"source and table_at must be non-empty text (e.g. 'source 000', 'section 14'); "
                             f"got {source!r} and {table_at!r}")
        if not isinstance(quiet, bool):
            raise ValueError(f"quiet must be True or False; got {quiet!r}")
        self.source, self.table_at, self.quiet = source, table_at, quiet
        self.records = []

    def record(self, ours, published, labels=None, extra=2):
        """Record a comparison for ``summary`` and ``table`` without printing; returns where ours matches.

        Shapes and labels are checked now (ValueError naming the argument), not at the end.
        """
        _check_compare_args(published, extra)
        _compare_lines(ours, published, labels, extra)
        self.records.append((np.array(ours, dtype=float), published, labels, extra))
        return np.ravel(matches(ours, published))

    def check(self, ours, published, labels=None, extra=2):
        """Print one line: does ``ours`` match ``published`` to its rounding? Records it for ``table``."""
        ok = self.record(ours, published, labels, extra)
        if self.quiet:
            return
        if ok.all():
            count = {1: "matches", 2: "both values match"}.get(ok.size, f"all {ok.size} values match")
            print(f"{published.name}: {count} {self.source} to its rounding")
            return
        off = ok.size - int(ok.sum())
        why = "because the source rounded an earlier step" if published.rounded_inputs else "and no note explains it"
        if ok.size == 1:
            said = f"differs from {self.source} beyond its rounding"
        else:
            said = f"{int(ok.sum())} of {ok.size} match {self.source} to its rounding; {off} differ{'s' if off == 1 else ''}"
        print(f"{published.name}: {said}, {why} ({self.table_at} has the table)")

    def summary(self, published=None):
        """Print one line: how many published numbers are reproduced, and how many differ by the source's rounding.

        published: optionally the example's whole ``published`` dict; entries of
        it that were never checked are then counted and named. "all" is said
        only when it is given and every published number was checked. A number is
        reproduced when it matches to the source's rounding, or differs where
        the source rounded an earlier step (its note says so, and
        tests/test_published.py recomputes the source's rounded chain).
        """
        entries = sum(np.size(p.value) for _, p, _, _ in self.records)
        off = [(int(np.size(o) - np.sum(matches(o, p))), p) for o, p, _, _ in self.records]
        rounded = sum(k for k, p in off if p.rounded_inputs)
        unexplained = sum(k for k, p in off if not p.rounded_inputs)
        missing = []
        if published is not None:
            checked = {p.name for _, p, _, _ in self.records}
            missing = [name for name in published if name not in checked]
        if unexplained:
            print(f"{entries - rounded - unexplained} of {entries} numbers published by {self.source} match ours; "
                  f"{rounded} differ{'s' if rounded == 1 else ''} only by the published rounding and {unexplained} "
                  f"differ{'s' if unexplained == 1 else ''} unexplained, "
                  f"listed in {self.table_at}")
        else:
            scope = "all " if published is not None and not missing else ""   # "all" only when checked against all
            how = (f"; {rounded} differ{'s' if rounded == 1 else ''} only by the published rounding, listed in "
                   f"{self.table_at}" if rounded else f", each to its published rounding ({self.table_at} has the table)")
            print(f"{scope}{entries} numbers published by {self.source} are reproduced{how}")
        if missing:
            print(f"not checked: {', '.join(missing)}")

    def table(self):
        """Print every recorded comparison in full, mismatches marked with the reason."""
        if not self.records:
            print(f"No comparison with {self.source} was recorded.")
        for ours, published, labels, extra in self.records:
            no = self.ROUNDED_FIRST if published.rounded_inputs else self.UNEXPLAINED
            print("\n".join(_compare_lines(ours, published, labels, extra, verdicts=("yes", no))))
