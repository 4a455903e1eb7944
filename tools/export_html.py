"""Export the course to static HTML pages in site/ (``make html``), for handouts and reading offline.

Usage: python tools/export_html.py [SITE_FOLDER] [NOTEBOOK.ipynb ...]
(default: site/ and every notebook of the course map that exists; -h/--help prints this usage).

- Each notebook becomes SITE/NN_topic.html through nbconvert's HTML exporter,
  with the template tools/html_template/course (the lab look, nothing loaded
  from another host, each figure's description as its alt text).
- An explorer's output holds a widget view and a static form (the saved
  picture and a line saying a kernel is needed; see helpers.explorers.Explorer).
  nbconvert draws the widget view whenever the notebook stores widget state,
  and that needs the widget manager from a CDN; so the export drops the widget
  views and the stored state, and the static form is what the page shows.
- An exercise's check stores its data beside the printed feedback; the export adds the form that
  answers a typed answer on the page (helpers.exercises.static.add_exercise_html).
- Maths is rendered by the MathJax 2 copy of the PyPI package
  jupyter-server-mathjax, copied to SITE/mathjax/.
- SITE/index.html is the course map of helpers/course.py, linking the
  notebooks that exist and marking the others as coming.
"""

from __future__ import annotations

import argparse
import html
import shutil
import re
import sys
from pathlib import Path

import jupyter_server_mathjax
import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from helpers.course import COURSE  # noqa: E402
from helpers.exercises.static import add_exercise_html  # noqa: E402

SITE = ROOT / "site"
TEMPLATES = Path(__file__).resolve().parent / "html_template"
CSS = ROOT / "jupyter" / "custom" / "custom.css"
MATHJAX = Path(jupyter_server_mathjax.__file__).parent / "static"
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


#: tqdm's notebook progress bar (notebook 09) is a widget but not an explorer: its static form is tqdm's
#: own text line as the run ended ("training ...: 100%|##########| 150/150 steps"), which needs no kernel.
PROGRESS_BAR = re.compile(r"\d+%\|.*\| *\d+/\d+\b")


def is_explorer_output(data):
    """Whether an output's MIME bundle is an explorer's widget view (not a progress bar)."""
    return WIDGET_VIEW in data and not PROGRESS_BAR.search(data.get("text/plain", ""))


def static_notebook(nb):
    """``nb`` without widget views (where an output has another form) and without stored widget state."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and len(data) > 1:
                del data[WIDGET_VIEW]
    nb.metadata.pop("widgets", None)
    return nb


def exporter():
    return HTMLExporter(template_name="course", extra_template_basedirs=[str(TEMPLATES)],
                        mathjax_url=MATHJAX_URL, exclude_anchor_links=True)


def export_notebook(path, site, html_exporter=None):
    """Write ``site/<stem>.html`` for the notebook at ``path``; returns the page's path."""
    path = Path(path)
    nb = add_exercise_html(static_notebook(nbformat.read(path, as_version=4)), path.stem)
    resources = {"metadata": {"name": path.stem, "path": str(path.parent)},
                 "course_css": CSS.read_text(encoding="utf-8")}
    body, _ = (html_exporter or exporter()).from_notebook_node(nb, resources=resources)
    page = Path(site) / f"{path.stem}.html"
    page.write_text(body, encoding="utf-8")
    return page


def index_page(ready):
    """The course map as a page: every notebook in order, a link where it exists, 'coming' where not."""
    rows = []
    for name, title, what in COURSE:
        stem = Path(name).stem
        cell = (f"<a href='{stem}.html'>{html.escape(title)}</a>" if name in ready
                else f"{html.escape(title)} <em>(coming)</em>")
        rows.append(f"<tr><th scope='row'>{stem[:2]}</th><td>{cell}</td><td>{html.escape(what)}</td></tr>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Attention, step by step: the course map</title>
<style>
body {{ font-family: sans-serif; max-width: 90ch; margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ text-align: left; vertical-align: top; padding: 4px 10px 4px 0; border-bottom: 1px solid #ccc; }}
a {{ color: #0b57a4; }}
</style>
</head>
<body>
<h1>Attention, step by step</h1>
<p>The course's notebooks as static pages: every number and figure as a fresh run stored it. The explorers show
the picture they were saved with; to move them, open the course with <code>make lab</code>.</p>
<table>
<caption style="text-align:left;font-weight:bold;margin-bottom:6px">The course map, in reading order</caption>
<tr><th scope="col">#</th><th scope="col">notebook</th><th scope="col">what you learn</th></tr>
{''.join(rows)}
</table>
</body>
</html>
"""


def export_site(site=SITE, paths=None):
    """Export the notebooks (default: every one of the course map that exists) and the index to ``site``."""
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    if paths is None:
        paths = [ROOT / "notebooks" / name for name, _, _ in COURSE if (ROOT / "notebooks" / name).exists()]
    if (site / "mathjax").exists():
        shutil.rmtree(site / "mathjax")
    shutil.copytree(MATHJAX, site / "mathjax")
    html_exporter = exporter()
    pages = [export_notebook(p, site, html_exporter) for p in paths]
    (site / "index.html").write_text(index_page({Path(p).name for p in paths}), encoding="utf-8")
    return pages


def parse_args(args):
    parser = argparse.ArgumentParser(description="Export the course to static HTML pages (make html).")
    parser.add_argument("site", nargs="?", default=SITE, type=Path, metavar="SITE_FOLDER",
                        help="the folder to write the pages to (default: site/ of the repository)")
    parser.add_argument("notebooks", nargs="*", type=Path, metavar="NOTEBOOK.ipynb",
                        help="the notebooks to export (default: every notebook of the course map that exists)")
    return parser.parse_args(args)


def main(args=None):
    options = parse_args(args)
    pages = export_site(options.site, options.notebooks or None)
    print(f"wrote {len(pages)} pages and index.html to {options.site}")


if __name__ == "__main__":
    main()
