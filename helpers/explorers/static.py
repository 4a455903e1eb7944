"""The explorers' interactive static form: every state of a control grid, stored in the output, switched by a script.

A page without a kernel (the course's site, ``make html``) cannot run the
state functions, so the explorer's output stores their results for every
setting of its controls, computed in Python by the same state function and
drawn by the same HTML code as the live explorer (the course's design, "Other
contracts": the state functions stay the one source of truth). ``explorer.js`` (beside this module, inlined into the output)
builds native controls (``input type=range``, checkboxes, buttons,
``select``) in an element ``data-explorer="<name>"`` and shows the stored
state of the chosen setting.

What is stored, to keep it small and diffable (no base64): each state's
HTML is cut into its top-level elements ("pieces"); a piece shared by
several states (a table that two settings draw alike) is stored once; every
``style='...'`` attribute is replaced by ``data-s=N``, an index into one
list of the explorer's distinct styles, which the script puts back as
inline styles, so a state looks exactly as the live explorer draws it.

The grid is built only when ``STATIC_FORMS_ENV`` is "1" in the kernel's
environment: ``tools/execute_notebooks.py`` (``make execute``) sets it. A
live cell in JupyterLab therefore displays at once (nbval waits 5 s for a
cell) and shows the widget view; the stored notebook carries the grid.

The still picture of the state the explorer was shown in stays in front,
with its inline styles, and the interactive form is created only by the
script: where scripts are stripped (JupyterLab shows an untrusted notebook's
HTML sanitised, GitHub), the page shows the still picture and never dead
controls.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["STATIC_FORMS_ENV", "static_forms_wanted", "Control", "grid_html", "bounded_grid_html", "grid_states",
           "pieces", "state_key", "SCRIPT", "GRID_BUDGET"]

#: The environment variable that asks explorers to store their whole grid (set by tools/execute_notebooks.py).
STATIC_FORMS_ENV = "COURSE_STATIC_FORMS"
#: The script every interactive static form carries (it runs once per page, whatever the number of forms).
SCRIPT = (Path(__file__).with_name("explorer.js")).read_text(encoding="utf-8")


def static_forms_wanted():
    """Whether this process should store the explorers' whole grids (``STATIC_FORMS_ENV`` is "1")."""
    return os.environ.get(STATIC_FORMS_ENV) == "1"


class Control:
    """One control of the static form.

    name: the state function's keyword; label: what the live control says;
    kind: "range" (a slider over ``options``), "checkbox", "buttons" (one
    pressed of several, as ToggleButtons), "select" (a dropdown) or
    "toggles" (buttons each pressed or not, as the mask explorer's hidden
    keys: the value is the tuple of pressed positions); options: a list of
    (label, value) pairs (for "toggles", one per button); value: the
    starting value; note: a short line shown beside the control; follows: the
    name of the control whose value sets this slider's range (its largest
    value is the largest the grid holds for the other controls' values, as
    the tiling explorer's step follows its block size), or None.
    """

    KINDS = ("range", "checkbox", "buttons", "select", "toggles")

    def __init__(self, name, label, kind, options, value, note="", follows=None):
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}; got {kind!r}")
        self.name, self.label, self.kind, self.note, self.follows = name, label, kind, note, follows
        self.options = [(str(lab), _plain(v)) for lab, v in options]
        self.value = _plain(value)

    def spec(self):
        return {"name": self.name, "label": self.label, "kind": self.kind, "follows": self.follows,
                "options": [[lab, v] for lab, v in self.options], "value": self.value, "note": self.note}


def _plain(value):
    """A control value as JSON keeps it, and as the script writes it: tuples become lists, numpy scalars
    Python numbers, and a whole float a whole number (JavaScript writes 1.0 as "1", Python as "1.0")."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def state_key(values):
    """The key of one setting: its values (in the controls' order) as compact JSON, as the script builds it."""
    return json.dumps([_plain(v) for v in values], separators=(",", ":"), ensure_ascii=False)


class _TopLevel(HTMLParser):
    """Finds the character offsets where each top-level element (or text) of an HTML string ends."""

    VOID = {"br", "img", "input", "hr", "meta", "link", "col", "wbr", "source", "area", "base", "embed"}

    def __init__(self, text):
        super().__init__(convert_charrefs=False)
        self.text, self.depth, self.cuts = text, 0, []
        self._lines = [0] + [m.end() for m in re.finditer("\n", text)]
        self.feed(text)
        self.close()

    def _offset(self):
        line, col = self.getpos()
        return self._lines[line - 1] + col

    def handle_starttag(self, tag, attrs):
        if self.depth == 0:
            self.cuts.append(self._offset())          # text before a top-level element is a piece of its own
        if tag in self.VOID:
            if self.depth == 0:
                self.cuts.append(self._offset() + len(self.get_starttag_text()))
            return
        self.depth += 1

    def handle_startendtag(self, tag, attrs):
        if self.depth == 0:
            self.cuts += [self._offset(), self._offset() + len(self.get_starttag_text())]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        self.depth -= 1
        if self.depth == 0:
            self.cuts.append(self.text.index(">", self._offset()) + 1)


def pieces(text):
    """``text`` (HTML) cut into its top-level elements: their concatenation is ``text``."""
    cuts = sorted(set(c for c in _TopLevel(text).cuts if 0 < c < len(text)))
    bounds = [0] + cuts + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


_STYLE = re.compile(r"""style=(['"])(.*?)\1""", re.S)


def grid_html(name, controls, states, missing_note, line):
    """The interactive static form: a JSON script element holding the grid, and the script.

    name: the explorer's name (``data-explorer``). controls: :class:`Control` list.
    states: {state_key(values): HTML of that state's picture, as the live explorer shows it}.
    missing_note: what the page says for a setting the grid does not hold (a bounded grid).
    line: the line under the controls, saying what the page can and cannot do without a kernel.
    Returns a string of HTML: nothing in it is visible until the script runs.
    """
    styles, style_index, piece_index, store = [], {}, {}, []

    def styled(match):
        s = match.group(2)
        if s not in style_index:
            style_index[s] = len(styles)
            styles.append(s)
        return f"data-s={style_index[s]}"

    table = {}
    for key, text in states.items():
        ids = []
        for piece in pieces(text):
            compact = _STYLE.sub(styled, piece)
            if compact not in piece_index:
                piece_index[compact] = len(store)
                store.append(compact)
            ids.append(piece_index[compact])
        table[key] = ids
    head = json.dumps({"name": name, "controls": [c.spec() for c in controls], "styles": styles,
                       "missing": missing_note, "line": line}, ensure_ascii=False)
    # One piece and one state per line, so that a re-run's diff shows what changed.
    body = (head[:-1] + ',\n"pieces":[\n' + ",\n".join(json.dumps(p, ensure_ascii=False) for p in store)
            + '\n],\n"states":{\n' + ",\n".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in table.items())
            + "\n}}")
    return (f"<script type='application/json' class='course-explorer-grid'>{script_json(body)}</script>"
            f"<script>{SCRIPT}</script>")


def script_json(text):
    """JSON ``text`` made safe inside a ``<script>`` element: each "<" before "/" or "!" as the JSON escape
    \\u003c, so that no string in it (a token, a label: "</script>", "<!--") can end the element or start a
    comment, and the JSON stays valid (the other "<" of the stored HTML stay as they are: smaller)."""
    return re.sub(r"<(?=[/!])", r"\\u003c", text)


#: The most bytes of stored HTML one explorer's static form may take (issue 23's budget).
GRID_BUDGET = 300_000


def bounded_grid_html(name, controls, states, missing_note, line, budget=GRID_BUDGET):
    """:func:`grid_html`, bounded: when every state would pass ``budget`` bytes, the states nearest the
    controls' starting values are kept (fewest controls moved, fewest keys toggled), as many as fit, and the
    page says so for a setting left out. Returns (html, number of states kept)."""
    page = grid_html(name, controls, states, missing_note, line)
    if len(page.encode("utf-8")) <= budget:
        return page, len(states)
    start = [c.value for c in controls]
    order = sorted(states, key=lambda key: sum(_moved(a, b) for a, b in zip(json.loads(key), start)))
    note = (f"{missing_note} (The page stores the settings nearest the explorer's start: all {len(states)} "
            f"would take more than {budget // 1000} kB.)")

    def build(count):
        return grid_html(name, controls, {k: states[k] for k in order[:count]}, note, line)
    low, high = 1, len(order) - 1
    while low < high:                                   # the largest count that fits
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(build(middle).encode("utf-8")) <= budget else (low, middle - 1)
    return build(low), low


def _moved(value, start):
    """How far a control's value is from its start: 0 or 1, or for toggles the keys toggled."""
    if isinstance(value, list) and isinstance(start, list):
        return len(set(value) ^ set(start))
    return int(value != start)


def grid_states(controls, compute_html, options=None):
    """{state_key: HTML} for every combination of the controls' values (``options`` overrides a control's
    values: {name: list of values}); a combination ``compute_html`` refuses with a ValueError is left out."""
    values = []
    for c in controls:
        if options and c.name in options:
            values.append([_plain(v) for v in options[c.name]])
        elif c.kind == "checkbox":
            values.append([True, False])
        elif c.kind == "toggles":
            n = len(c.options)
            values.append([list(s) for r in range(n + 1) for s in itertools.combinations(range(n), r)])
        else:
            values.append([v for _, v in c.options])
    states = {}
    for combo in itertools.product(*values):
        try:
            text = compute_html(dict(zip([c.name for c in controls], combo)))
        except ValueError:
            continue
        states[state_key(combo)] = text
    return states
