"""Pages without a kernel: every explorer's static form, every figure's description, the HTML export.

The browser half (the exported pages opened in Chromium) is tests/browser/test_static_pages.py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import explorers as W
from helpers.explorers.base import _code

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
sys.path.insert(0, str(ROOT / "tools"))
import export_html  # noqa: E402
from export_html import is_explorer_output  # noqa: E402


EXPLORERS = [W.setup_check, W.dk_explorer, W.mask_explorer, W.heads_explorer, W.window_explorer]


@pytest.mark.parametrize("make", EXPLORERS, ids=lambda f: f.__name__)
def test_explorer_output_carries_its_static_form(make):
    ex = make()
    bundle = ex._repr_mimebundle_()
    assert WIDGET_VIEW in bundle  # a live JupyterLab still draws the widget
    # The static form: the picture as shown now, then the line saying a kernel is needed and how to start one.
    page = bundle["text/html"]
    assert ex.picture.value in page and page.index(ex.picture.value) < page.index("saved picture of the explorer")
    assert "`make lab`" in W.KERNEL_LINE and _code(W.KERNEL_LINE) in page and "<code>make lab</code>" in page
    assert bundle["text/plain"].startswith(W.KERNEL_LINE) and "VBox(" not in bundle["text/plain"]
    # The live widget's own last line, for a widget renderer showing saved controls without a kernel.
    assert ex.children[-1] is ex.kernel_line and "Controls change nothing?" in ex.kernel_line.value


def test_static_form_follows_the_state_it_was_shown_in():
    ex = W.dk_explorer()
    ex.controls["d_k"].value = 256
    page = ex._repr_mimebundle_()["text/html"]
    assert "d_k = 256" in page and "d_k = 64" not in page


def test_static_text_shows_an_error_when_the_update_failed():
    ex = W.setup_check()
    ex.compute = lambda n: 1 / 0
    ex.update()
    assert ex.state is None and "ZeroDivisionError" in ex._repr_mimebundle_()["text/plain"]


def test_setup_check_counts_the_dot_products():
    ex = W.setup_check(3)
    assert ex.state.dot_products == 9 and "3 tokens: 9 dot products" in ex.picture.value
    ex.controls["n"].value = 7
    assert ex.state.dot_products == 49 and "7 tokens: 49 dot products" in ex.picture.value
    ex.controls["n"].value = 1  # one token: singular, and it scores itself
    assert ex.state.dot_products == 1 and "1 token: 1 dot product " in ex.picture.value
    for bad in (0, 9, 2.5, True, "4"):
        with pytest.raises(ValueError, match="n must be a whole number from 1 to 8"):
            W.setup_check(bad)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_explorers_have_a_static_form(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if is_explorer_output(data):
                assert "saved picture of the explorer" in data.get("text/html", ""), (
                    f"{path.name}: a widget output with no static form (a page without a kernel shows nothing)")
                assert "VBox(" not in data["text/plain"] and "Output(" not in data["text/plain"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_figures_have_a_description_and_a_caption_line(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        outs = cell.get("outputs", [])
        for k, out in enumerate(outs):
            if "image/png" not in out.get("data", {}):
                continue
            alt = out.get("metadata", {}).get("image/png", {}).get("alt", "")
            assert len(alt) > 20, f"{path.name}: a figure without a description (alt text): {cell.source[:80]!r}"
            before = outs[k - 1] if k else {}
            caption = before.get("data", {}).get("text/plain", "")
            assert caption.startswith("Figure: ") and " ".join(caption.split()) == "Figure: " + alt, (
                f"{path.name}: the caption line above a figure must say what its alt text says")


def test_export_drops_widget_views_only_where_another_form_exists():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    both = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "x"}, "text/html": "<p>p</p>"})
    alone = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "y"}})
    nb.cells.append(nbformat.v4.new_code_cell("x", outputs=[both, alone]))
    out = export_html.static_notebook(nb)
    assert "widgets" not in out.metadata
    assert list(out.cells[0].outputs[0].data) == ["text/html"]
    assert list(out.cells[0].outputs[1].data) == [WIDGET_VIEW]


def test_index_page_is_the_course_map():
    from helpers.course import COURSE

    ready = {"00_start_here.ipynb", "11_real_model.ipynb"}
    page = export_html.index_page(ready)
    for name, title, what in COURSE:
        stem = Path(name).stem
        if name in ready:
            assert re.search(rf"href=['\"]{stem}\.html['\"]", page)
        else:
            assert f"{stem}.html" not in page and re.search(re.escape(title) + r" <em>\(coming\)</em>", page)
    assert page.count("<tr>") == len(COURSE) + 1
    # What the index says of the pages (computed from what they store): tests/test_static_exercises.py.
    text = " ".join(re.sub(r"<[^>]+>", " ", page.split("<h1", 1)[1]).split())
    assert "The explorers move on these pages" in text and "make lab" in text
    assert "course-nav" not in page.split("</style>")[-1]  # the map has no previous/next links of its own


def test_pages_link_their_neighbours_on_the_map():
    stems = export_html.site_stems([Path("notebooks/08_cost_and_tiling.ipynb"), Path("x/00_start_here.ipynb"),
                                    Path("zz_not_on_the_map.ipynb"), Path("04_masking.ipynb")])
    assert stems == ["00_start_here", "04_masking", "08_cost_and_tiling"]  # the map's order, off-map pages left out
    first, middle, last = (export_html.course_nav(s, stems) for s in stems)
    assert first["previous"] is None and first["next"] == {"href": "04_masking.html", "title": "Masks"}
    assert middle["previous"]["href"] == "00_start_here.html" and middle["previous"]["title"] == "Start here"
    assert middle["next"] == {"href": "08_cost_and_tiling.html", "title": "Cost and tiling"}
    assert last["next"] is None and last["previous"]["href"] == "04_masking.html"
    off = export_html.course_nav("zz_not_on_the_map", stems)
    assert off == {"map": "index.html", "previous": None, "next": None}


def test_dark_theme_is_nbconverts_own_file_behind_the_readers_preference():
    html_exporter = export_html.exporter()
    css = export_html.dark_theme_css(html_exporter)
    installed = next(Path(d) / "static" / "theme-dark.css" for d in html_exporter.template_paths
                     if (Path(d) / "static" / "theme-dark.css").exists())
    assert css.startswith("@media (prefers-color-scheme: dark) {") and css.rstrip().endswith("}")
    assert installed.read_text(encoding="utf-8") in css and "--jp-layout-color0: #111" in css


def test_export_html_prints_its_usage_for_help_and_writes_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for flag in ("-h", "--help"):
        with pytest.raises(SystemExit) as stop:
            export_html.main([flag])
        assert stop.value.code == 0 and "SITE_FOLDER" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())                       # no folder named "--help"
    options = export_html.parse_args(["out", "notebooks/01_river_bank.ipynb"])
    assert options.site == Path("out") and options.notebooks == [Path("notebooks/01_river_bank.ipynb")]
    assert export_html.parse_args([]).site == export_html.SITE


def test_execute_notebooks_takes_a_timeout_and_prints_its_usage_for_help(capsys):
    import execute_notebooks
    assert execute_notebooks.parse_args(["a.ipynb"]).timeout == execute_notebooks.DEFAULT_TIMEOUT == 120
    options = execute_notebooks.parse_args(["--timeout", "300", "a.ipynb", "b.ipynb"])
    assert options.timeout == 300 and options.notebooks == ["a.ipynb", "b.ipynb"]
    with pytest.raises(SystemExit) as stop:
        execute_notebooks.main(["--help"])                   # usage, not a notebook called "--help"
    assert stop.value.code == 0 and "--timeout SECONDS" in capsys.readouterr().out
    for bad in ([], ["--timeout", "0", "a.ipynb"], ["--timeout", "soon", "a.ipynb"]):
        with pytest.raises(SystemExit) as stop:
            execute_notebooks.parse_args(bad)
        assert stop.value.code == 2
