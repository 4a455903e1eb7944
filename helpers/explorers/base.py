"""The shell every explorer shares: ``Explorer`` (controls above a picture) and its static form.

``Explorer`` recomputes its state from the controls' values through a pure
function, redraws the picture, and shows an error in the picture's place
instead of raising. Its output also stores a static form (the picture it was
shown with and ``KERNEL_LINE``) for pages without a kernel. ``EXPLORER_CSS``
styles the explorers (a pressed toggle differs in more than a shade of grey).
Each explorer is in a module of its own beside this one: setup, dk, mask,
heads, tiling, real_model.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from helpers.examples import load_example
from helpers.explorers.static import GRID_BUDGET, Control, bounded_grid_html, grid_states, static_forms_wanted

__all__ = [
    "Explorer", "KERNEL_LINE", "NO_KERNEL_LINE", "STATIC_LINE",
]


# --------------------------------------------------------------------------
# The widget shell shared by the three explorers
# --------------------------------------------------------------------------

class Explorer(widgets.VBox):
    """Controls above a picture, redrawn whenever a control's value changes.

    compute: function of the controls' values (as keyword arguments) that
        returns a state record with a ``messages`` attribute.
    draw: function of that state returning the picture's HTML.
    controls: {name: widget}; each name is a keyword of ``compute``.
    layout_rows: lists of control widgets, one list per row of controls
        (each row wraps onto a second line when the page is narrow).
    height: the picture's minimum CSS height: a string, or a function of the
        state returning one, so that the space kept free follows the current
        layout (e.g. the number of heads) rather than the largest one. The
        picture grows past it when its content needs more room.

    Every explorer also carries a static form for pages without a kernel
    (DESIGN.md, "Other contracts"): its output holds, besides the widget
    view, ``text/html`` with the picture of the state it was shown in and
    :data:`KERNEL_LINE`, and ``text/plain`` with that line and the state's
    messages. nbconvert's HTML exporter and GitHub pick the HTML when they
    cannot draw widgets (nbconvert draws the widget view while the notebook
    holds saved widget state: ``tools/export_html.py`` removes the view); a
    JupyterLab with a running kernel draws the live widget. Where a widget
    renderer shows the saved widget without a kernel, the explorer's own
    last line (:data:`NO_KERNEL_LINE`) tells the reader to start the kernel.
    """

    #: The explorer's name on a static page (``data-explorer``); each explorer sets its own.
    name = "explorer"
    #: {control name: values} where the static grid covers other values than the control offers
    #: (a bounded grid, or a slider whose range follows another control); see :meth:`static_controls`.
    grid_options = None
    #: The line under the static page's controls (see :data:`STATIC_LINE`).
    static_line = None
    #: What the static page says for a setting its grid does not hold.
    missing_note = "This setting is not stored on this page; moving to it needs a kernel: open the course with make lab."

    def __init__(self, compute, draw, controls, layout_rows, height, name=None):
        if name is not None:
            self.name = name
        self.compute, self.draw, self.controls = compute, draw, dict(controls)
        self.state, self.error = None, None
        self._height = height
        self.picture = widgets.HTML(layout=widgets.Layout(overflow="auto", max_width="100%"))
        self.picture.add_class("explorer-picture")
        self.kernel_line = widgets.HTML(f"<style>{EXPLORER_CSS}</style>"
                                        f"<div class='explorer-kernel-line'>{_code(NO_KERNEL_LINE)}</div>")
        self._notes = _row_notes(layout_rows, self.controls)
        rows = [widgets.HBox(row, layout=widgets.Layout(flex_flow="row wrap", align_items="center", max_width="100%"))
                for row in layout_rows]
        super().__init__(rows + [self.picture, self.kernel_line], layout=widgets.Layout(max_width="100%"))
        self.add_class("course-explorer")
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    def _changed(self, change):
        self.update()

    #: Exceptions that mean "this input cannot be drawn" (expected, the learner's to change):
    #: shown as a plain note (class ``explorer-note``). Anything else is a fault: the red box.
    note_errors = ()
    note_title = "This input cannot be drawn."
    #: Put the state's messages above the picture rather than below it.
    messages_first = False

    def update(self):
        """Recompute from the current control values and redraw; show any error in the picture."""
        try:
            state = self.compute(**{name: c.value for name, c in self.controls.items()})
            picture = self._picture(state)
            height = self._height(state) if callable(self._height) else self._height
        except self.note_errors as exc:
            self.state, self.error = None, str(exc)
            self.picture.value = _note_html(self.note_title, str(exc))
            return
        except Exception as exc:  # shown to the learner, never lost in the log
            self.state, self.error = None, f"{type(exc).__name__}: {exc}"
            self.picture.value = _error_html(self.error)
            return
        self.state, self.error = state, None
        self.picture.layout.min_height = height
        self.picture.value = picture

    def _picture(self, state):
        """The picture's HTML for ``state``: the drawing and the state's messages, in the explorer's order."""
        drawn, messages = self.draw(state), _messages_html(state.messages)
        return messages + drawn if self.messages_first else drawn + messages

    def static_html(self):
        """The static form, one piece of HTML: the still picture of the current state with :data:`KERNEL_LINE`,
        and, when :func:`~helpers.explorers.static.static_forms_wanted` (``make execute``), the interactive
        form of :meth:`static_grid`, which a script puts in the still picture's place. The grid gets what the
        still picture leaves of GRID_BUDGET; a grid that cannot be built (a control the static page has no
        form for) leaves the still picture alone, so the output is never lost."""
        still = (f"<div class='course-explorer-static'><style>{EXPLORER_CSS}</style>"
                 f"<div class='course-explorer-still'>{self.picture.value}"
                 f"<p class='explorer-kernel-line'>{_code(KERNEL_LINE)}</p></div>")
        grid = ""
        if static_forms_wanted():
            try:
                grid = self.static_grid(GRID_BUDGET - len((still + "</div>").encode("utf-8")))
            except Exception:                # the still picture is shown, as on a page without a grid
                grid = ""
        return f"{still}{grid}</div>"

    def static_controls(self):
        """The controls as the static page offers them: a :class:`~helpers.explorers.static.Control` per
        widget (sliders become ranges, checkboxes checkboxes, toggle buttons buttons, dropdowns selects)."""
        return [_static_control(name, widget, (self.grid_options or {}).get(name), self._notes.get(name, ""))
                for name, widget in self.controls.items()]

    def static_states(self):
        """{state key: picture HTML} for every setting of the static grid (as the live picture draws it)."""
        return grid_states(self.static_controls(), lambda values: self._picture(self.compute(**values)),
                           self.grid_options)

    def static_grid(self, budget=GRID_BUDGET):
        """The interactive static form: every state of the control grid (bounded to ``budget`` bytes: the
        states nearest the start, when all would be more) and the script that switches them."""
        return bounded_grid_html(self.name, self.static_controls(), self.static_states(), self.missing_note,
                                 self.static_line or STATIC_LINE, budget)[0]

    def static_text(self):
        """The static form as plain text: :data:`KERNEL_LINE`, then the state's messages (or the error)."""
        said = self.state.messages if self.state is not None else (self.error or "",)
        return "\n".join((KERNEL_LINE,) + tuple(said))

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["text/html"] = self.static_html()
        data["text/plain"] = self.static_text()
        return data


#: The static form's line: what a page without a kernel shows under the explorer's saved picture.
KERNEL_LINE = ("This is a saved picture of the explorer, without its controls. Moving them needs a running kernel "
               "and JupyterLab's widget support: open the course with `make lab` and run the notebook's cells.")
#: How the explorers look beyond their inline styles: the kernel line, and a pressed toggle button that
#: differs from a released one in more than a shade of grey (a blue fill with white bold text, 5.7:1,
#: an inner outline, the label underlined). Text on the page uses JupyterLab's theme colours, so the dark theme works.
PRESSED_BACKGROUND, PRESSED_TEXT = "#1565c0", "#ffffff"
EXPLORER_CSS = (
    ".explorer-kernel-line{font-family:sans-serif;font-size:12px;line-height:1.4;font-style:italic;margin:6px 0 2px 0;"
    "color:var(--jp-content-font-color1,#222)}"
    ".course-explorer .explorer-picture .widget-html-content{width:100%;max-width:100%;min-width:0}"
    ".explorer-text{font-family:sans-serif;font-size:14px;line-height:1.4;margin:6px 0;color:var(--jp-content-font-color1,#222)}"
    ".course-explorer .jupyter-button.mod-active{"
    f"background:{PRESSED_BACKGROUND};color:{PRESSED_TEXT};font-weight:bold;"
    "box-shadow:inset 0 0 0 2px var(--jp-content-font-color0,#000);text-decoration:underline}"
)
#: The line under the controls of the static page's interactive form.
STATIC_LINE = ("Move the controls: this page holds the picture of each setting it stores, computed by the course's "
               "code. To run code of your own, open the course with make lab.")
#: The live explorer's last line, for a widget renderer that shows saved controls without a kernel.
NO_KERNEL_LINE = ("Controls change nothing? Then no kernel is running: open the course with `make lab` "
                  "and run the notebook's cells.")


def _row_notes(layout_rows, controls):
    """{control name: the text of the Labels that follow it in its row} (the live explorer's notes beside a
    control, e.g. "d_model = 24, d_k = d_model / num_heads"), for the static page's controls."""
    owner = {id(w): name for name, w in controls.items()}
    for name, w in controls.items():
        for b in getattr(w, "buttons", ()):
            owner[id(b)] = name
    notes = {}
    for row in layout_rows:
        last = None
        for w in row:
            if id(w) in owner:
                last = owner[id(w)]
            elif isinstance(w, widgets.Label) and last is not None:
                notes[last] = (notes.get(last, "") + " " + w.value).strip()
    return notes


def _static_control(name, widget, values=None, note=""):
    """The static page's :class:`Control` for one live control widget (its label and options as shown)."""
    label = getattr(widget, "description", "") or name
    if isinstance(widget, widgets.Checkbox):
        return Control(name, label, "checkbox", [], bool(widget.value), note)
    if isinstance(widget, widgets.IntSlider):
        span = values if values is not None else range(widget.min, widget.max + 1)
        return Control(name, label, "range", [(str(v), int(v)) for v in span], int(widget.value), note,
                       follows=getattr(widget, "static_follows", None))
    if isinstance(widget, (widgets.SelectionSlider, widgets.ToggleButtons, widgets.Dropdown)):
        kind = {widgets.SelectionSlider: "range", widgets.ToggleButtons: "buttons"}.get(type(widget), "select")
        return Control(name, label, kind, list(zip(widget._options_labels, widget._options_values)), widget.value,
                       note)
    buttons = getattr(widget, "buttons", None)        # the mask explorer's hidden keys: one toggle button per key
    if buttons is not None:
        return Control(name, "keys to hide:", "toggles", [(b.description, i) for i, b in enumerate(buttons)],
                       list(widget.value), note)
    raise ValueError(f"control {name!r}: a static page has no control for {type(widget).__name__}")


def _code(text):
    """``text`` as HTML, with each `command` in backticks set as code."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if k % 2 else p for k, p in enumerate(parts))


def _note_html(title, text):
    """An input the explorer cannot take, as a plain note (class ``explorer-note``)."""
    return ("<div class='explorer-note' style='font-family:sans-serif;font-size:13px;"
            f"border:1px solid #888;padding:8px'><b>{html.escape(title)}</b><br>"
            f"{html.escape(text[0].upper() + text[1:])}.</div>")


def _error_html(error):
    """An unexpected failure, in a red box (class ``explorer-error``, which the browser tests look for)."""
    return ("<div class='explorer-error' style='font-family:sans-serif;border:2px solid #b00020;padding:8px;"
            f"color:#b00020'><b>This setting could not be drawn.</b><br>{html.escape(error)}</div>")


def _messages_html(messages):
    return "".join(f"<p style='font-family:sans-serif;font-size:13px;line-height:1.4;margin:6px 0'>{html.escape(m)}</p>"
                   for m in messages)


def _flag(value, name):
    """``value`` as a bool; a ValueError unless it is True or False (a string such as "no" is not)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _listed(items):
    """'a'; 'a' and 'b'; 'a', 'b' and 'c': names quoted and joined as in a sentence."""
    quoted = [repr(str(t)) for t in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _example(example):
    """The worked example named ``example``, with the argument named in any error."""
    try:
        return load_example(example)  # read afresh (60 microseconds), so an edited data file shows at once
    except ValueError as exc:
        raise ValueError(f"example: {exc}") from None
