"""The real model's explorer on the static page: its numbers stored, its picture drawn by a script.

Notebook 11's explorer covers, on the course's site, the sentence it was
shown with and every layer (0-5), head (0-11) and token: 720 states for 10
tokens. Stored as the other explorers' are (every state's HTML), that would
be 20 MB; so this explorer stores the numbers as the live picture prints them
and the templates of its messages and titles, and ``real_model.js`` (beside
this module) draws each state as the live explorer does: the messages, the
chosen token's row (``plots.weights_row_html``) and the head's heatmap
(``plots.weights_table_html``).

Stored, per (layer, head): every weight as the heatmap prints it (its
decimals), as the strip prints it (3 decimals) where those differ, each
cell's colour (an index into a palette of cividis colours and their text
colours, computed by the plots code, so the colours are the live ones), the
head's mean entropy as its title prints it; per (layer, head, token): the
top three key positions (in ``real_model_state``'s stable order) and the
row's entropy as printed. The messages that do not depend on the setting
are stored once. The HTML around the numbers (styles, the heatmap's header
row, its colour key) is read from the live explorer's own picture of the
state it was shown in, so the page's table has the live one's cell sizes,
colours, ▸ marker and labels.

explorer.js builds the controls (two ranges and a select, as the live
sliders and dropdown) in ``<div class='course-static-live'
data-explorer='real_model'>`` and calls the drawer that real_model.js
registers for ``"draw": "real_model"``. The state key (``data-state``) is the
JSON list [layer, head, token position], e.g. ``[0,4,2]``. Where the live
explorer has its sentence box, the page shows the stored sentence and says
that typing a new one needs a kernel.

The grid is bounded: past :data:`STATIC_MAX_TOKENS` tokens (the heatmap writes
no numbers in its cells there) the page keeps the still picture and says so.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from helpers.explorers.base import STATIC_LINE, _messages_html
from helpers.explorers.static import SCRIPT, script_json
from helpers.plots import ANNOTATE_MAX_TOKENS, _cell_colour, _text_colour

__all__ = ["STATIC_MAX_TOKENS", "REAL_SCRIPT", "grid_data", "grid_html", "fill"]

#: The longest sentence (in tokens, [CLS] and [SEP] included) whose every setting the page stores: the
#: heatmap writes its numbers up to this size (plots.ANNOTATE_MAX_TOKENS); 72 heads of 20 x 20 stay under 1 MB.
STATIC_MAX_TOKENS = ANNOTATE_MAX_TOKENS
#: The script that draws a state (it registers itself for explorer.js; runs once per page).
REAL_SCRIPT = (Path(__file__).with_name("real_model.js")).read_text(encoding="utf-8")
#: The name of the drawer in real_model.js.
DRAWER = "real_model"

_SLOT = re.compile(r"\{(\w+)\}")


def fill(template, slots):
    """``template`` with each ``{name}`` replaced by ``slots[name]``, in one pass (as real_model.js does):
    a token's text that looks like a slot is not filled again."""
    return _SLOT.sub(lambda m: str(slots[m.group(1)]), template)


def _match(pattern, text, what):
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"the live explorer's {what} no longer has the HTML real_model_static.py reads "
                           f"(pattern {pattern!r}): update it and real_model.js together")
    return found


def _look(strip, table, token, tokens):
    """The HTML around the numbers, read from the live picture: the styles of the strip's boxes (marked and
    not), the heatmap's opening up to its title, its header row, its cells' and row labels' styles, its end."""
    look = {"message": _match(r"<p style='([^']*)'>", _messages_html(["x"]), "message")[1],
            "strip_open": _match(r"^<div style='[^']*'><div style='[^']*'>", strip, "strip")[0]}
    box = (r"<div style='([^']*)' title='key (\d+): [^']*'><div style='([^']*)'>([^<]*)</div>"
           r"<div style='([^']*?)background:#[0-9a-f]{6};color:\w+'>")
    for found in re.finditer(box, strip):
        kind = "marked" if int(found[2]) == token else "plain"
        look["box"], look[f"label_{kind}"], look[f"value_{kind}"] = found[1], found[3], found[5]
        if kind == "marked":
            label = html.unescape(found[4])
            look["key_mark"] = label[:len(label) - len(tokens[token])]
    if not {"label_marked", "label_plain"} <= set(look):
        raise RuntimeError("the live explorer's strip no longer has the HTML real_model_static.py reads")
    look["table_open"] = _match(r"^<div class='course-heatmap' style='[^']*'><table style='[^']*'><caption style='[^']*'>",
                                table, "heatmap")[0]
    look["header"] = _match(r"<tr>.*?</tr>", table, "heatmap")[0]
    look["row"] = _match(r"<th scope='row' style='([^']*)'>", table, "heatmap")[1]
    look["cell"] = _match(r"<td style='([^']*?)background:#", table, "heatmap")[1]
    look["table_close"] = table[table.index("</table>"):]
    return look


def grid_data(explorer, controls):
    """The stored grid of a real-model explorer (a ``_RealModelExplorer``), as a JSON-ready dict, or None
    when the page cannot store it (no state: the text could not be drawn; more than STATIC_MAX_TOKENS tokens).

    explorer: its ``compute`` (real_model_state) and ``state`` (the state it is shown in) are read, and its
    ``static_pieces(state)``: the live picture's pieces, formatters and templates. controls: the static
    :class:`~helpers.explorers.static.Control` list; its "layer" and "head" options are the grid's.
    Keys: text, tokens, layers, heads, decimals (the heatmap's), look (HTML around the numbers), templates,
    messages (the setting-independent ones), palette ([cell colour, text colour] pairs), grid (one entry
    per head, layer by layer: grid[layer * len(heads) + head] with w, s, c, e, top, r; numbers as the page
    prints them, space-separated; w, s and c row by row, n x n).
    """
    start = explorer.state
    if start is None or len(start.tokens) > STATIC_MAX_TOKENS:
        return None
    text, tokens, n = start.text, list(start.tokens), len(start.tokens)
    pieces = explorer.static_pieces(start)
    weight, nats, decimals = pieces["weight"], pieces["nats"], pieces["decimals"]
    values = {c.name: [v for _, v in c.options] for c in controls}
    layers, heads = values["layer"], values["head"]
    palette, colour_index, grid = [], {}, []

    def colour(w):
        hex_ = _cell_colour(w)
        if hex_ not in colour_index:
            colour_index[hex_] = len(palette)
            palette.append([hex_, _text_colour(w)])
        return str(colour_index[hex_])

    for layer in layers:
        for head in heads:
            states = [explorer.compute(text=text, layer=layer, head=head, token=t) for t in range(n)]
            w = states[0].weights
            cells = [f"{float(x):.{decimals}f}" for x in w.ravel()]
            entry = {"w": " ".join(cells), "c": " ".join(colour(x) for x in w.ravel()),
                     "e": nats(states[0].head_entropy),
                     "top": [[j for j, _, _ in s.top_keys[:3]] for s in states],
                     "r": " ".join(nats(s.row_entropy) for s in states)}
            strip = [weight(float(x)) for x in w.ravel()]
            if strip != cells:
                entry["s"] = " ".join(strip)
            grid.append(entry)
    return {"text": text, "tokens": tokens, "layers": layers, "heads": heads, "decimals": decimals,
            "look": dict(_look(pieces["strip"], pieces["table"], start.token, tokens), spacer=pieces["spacer"],
                         query_mark=pieces["query_mark"]),
            "templates": pieces["templates"], "messages": list(start.messages[1:]), "palette": palette,
            "grid": grid}


def _intro(text):
    return (f"This page stores every layer, head and token of the sentence \u201c{text}\u201d; to type a new "
            "sentence, open the course with make lab.")


def grid_html(explorer, controls):
    """The interactive static form of a real-model explorer: the stored grid (a JSON script element) and the
    scripts (real_model.js, then explorer.js), or a line saying why the page keeps the still picture.

    controls: the :class:`~helpers.explorers.static.Control` list (layer, head, token). Nothing in the form
    is visible until the scripts run.
    """
    data = grid_data(explorer, controls)
    if data is None:
        if explorer.state is None:
            return ""
        return (f"<p class='explorer-kernel-line'>This sentence has {len(explorer.state.tokens)} tokens: the page "
                f"stores the explorer's settings for sentences of up to {STATIC_MAX_TOKENS} tokens, so moving it "
                "needs a kernel: open the course with make lab.</p>")
    grid = data.pop("grid")
    head = json.dumps({"name": explorer.name, "draw": DRAWER, "controls": [c.spec() for c in controls],
                       "intro": _intro(data["text"]), "line": STATIC_LINE, "real": data}, ensure_ascii=False)
    # One head per line, so that a re-run's diff shows what changed.
    rows = ",\n".join(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) for entry in grid)
    body = head[:-2] + ',"grid":[\n' + rows + "\n]}}"
    return (f"<script type='application/json' class='course-explorer-grid'>{script_json(body)}</script>"
            f"<script>{REAL_SCRIPT}</script><script>{SCRIPT}</script>")
