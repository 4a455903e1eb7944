"""Export the course to static HTML pages in site/ (``make html``), for handouts and reading offline.

Usage: python tools/export_html.py [SITE_FOLDER] [NOTEBOOK.ipynb ...]
(default: site/ and every notebook of the course map that exists; -h/--help prints this usage).

- Each notebook becomes SITE/NN_topic.html through nbconvert's HTML exporter,
  with the template tools/html_template/course (the lab look, nothing loaded
  from another host, each figure's description as its alt text).
- An explorer's output holds a widget view and a static form: the still
  picture it was shown with and, stored by ``make execute``, the pictures (or
  numbers) of every setting of its controls with the script that switches
  them (helpers/explorers/static.py). nbconvert draws the widget view whenever
  the notebook stores widget state, and that needs the widget manager from a
  CDN; so the export drops the widget views and the stored state, and the
  static form is what the page shows: its controls move on the page.
- An exercise's check stores its data beside the printed feedback; the export adds the form that
  answers a typed answer on the page (helpers.exercises.static.add_exercise_html).
- Maths is rendered by the MathJax 2 copy of the PyPI package
  jupyter-server-mathjax, copied to SITE/mathjax/.
- SITE/index.html is the course map of helpers/course.py, linking the
  notebooks that exist and marking the others as coming; its text says what
  the exported pages answer and what needs a kernel, read from what they
  store (``page_facts``: in a student edition an exercise whose solution is
  withheld does not answer, and the index names the notebooks that hold one). Each page links, at
  its top and bottom, the previous and the next page of the map (by title)
  and the map itself; the links are relative, so SITE works from disk and
  from any static host (GitHub Pages: README.md).
- The pages follow the reader's light or dark preference
  (``prefers-color-scheme``): the lab template brings JupyterLab's light
  theme, and the export adds nbconvert's own dark theme file, read from its
  installed templates, under ``@media (prefers-color-scheme: dark)``.
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
from helpers.exercises.static import BUILD_MIME, MIME, WITHHELD, add_exercise_html  # noqa: E402
from helpers.explorers.real_model_static import DRAWER  # noqa: E402

TITLES = {Path(name).stem: title for name, title, _ in COURSE}

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


def dark_theme_css(html_exporter):
    """JupyterLab's dark theme variables as nbconvert installs them (its lab template's
    static/theme-dark.css, found as the template's own ``include_css`` finds the light one), in force
    only where the reader prefers a dark colour scheme."""
    env = html_exporter.environment
    dark = env.loader.get_source(env, "static/theme-dark.css")[0]
    return "@media (prefers-color-scheme: dark) {\n" + dark + "\n}\n"


def course_nav(stem, stems):
    """The links of page ``stem`` among the site's pages ``stems`` (in course-map order): a dict with
    "previous" and "next" ({"href", "title"}, or None at either end and for a page not on the map)."""
    def link(k):
        return {"href": f"{stems[k]}.html", "title": TITLES.get(stems[k], stems[k])} if 0 <= k < len(stems) else None
    k = stems.index(stem) if stem in stems else None
    return {"map": "index.html", "previous": None if k is None else link(k - 1),
            "next": None if k is None else link(k + 1)}


def site_stems(paths):
    """The stems of ``paths`` that are on the course map, in the map's order (the pages prev/next walk)."""
    given = {Path(p).stem for p in paths}
    return [stem for stem in TITLES if stem in given]


def page_resources(name, folder, html_exporter, nav):
    """What the course template reads besides the notebook: the course CSS, the dark theme, the links."""
    return {"metadata": {"name": name, "path": str(folder)}, "course_css": CSS.read_text(encoding="utf-8"),
            "dark_theme_css": dark_theme_css(html_exporter), "course_nav": nav}


def export_notebook(path, site, html_exporter=None, stems=None):
    """Write ``site/<stem>.html`` for the notebook at ``path``; returns the page's path.

    stems: the course-map pages the site holds, in order, for the previous/next links (default:
    every notebook of the map that exists beside ``path``; a notebook not on the map gets neither).
    """
    path = Path(path)
    html_exporter = html_exporter or exporter()
    if stems is None:
        stems = site_stems(p for p in path.parent.glob("*.ipynb"))
    nb = add_exercise_html(static_notebook(nbformat.read(path, as_version=4)), path.stem)
    resources = page_resources(path.stem, path.parent, html_exporter, course_nav(path.stem, list(stems)))
    body, _ = html_exporter.from_notebook_node(nb, resources=resources)
    page = Path(site) / f"{path.stem}.html"
    page.write_text(body, encoding="utf-8")
    return page


#: The index's first sentences, above the map; :func:`index_text` adds what the exported pages answer.
INDEX_TEXT = ("The course's notebooks as pages that need nothing installed: every number and figure as a fresh "
              "run stored it.")
#: A real-model explorer's stored grid (helpers/explorers/real_model_static.py) names its drawer so.
REAL_MODEL_GRID = f'"draw": "{DRAWER}"'


def _notebooks(stems):
    """'notebook 04', or 'notebooks 01, 02 and 04'."""
    nums = [stem[:2] for stem in stems]
    return f"notebook {nums[0]}" if len(nums) == 1 else "notebooks " + ", ".join(nums[:-1]) + " and " + nums[-1]


def page_facts(notebooks):
    """What the exported pages hold, for the index: ``notebooks`` maps each page's stem to its notebook
    (nbformat, as stored). Returns a dict: "answerable" (stems with an exercise the page answers),
    "kernel_only" ({(name, why): stems} of exercises that need a kernel for a reason of their own, not
    the edition's withheld answers), "withheld" (stems with an exercise whose answer this edition keeps in
    the kernel), "builds" (stems with a build cell: your own function) and "typing" (stems whose
    real-model explorer moves on the page but takes no new sentence)."""
    facts = {"answerable": [], "kernel_only": {}, "withheld": [], "builds": [], "typing": []}
    for stem, nb in notebooks.items():
        outputs = [out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", [])]
        exercises = [data[MIME] for data in outputs if MIME in data]
        if any("needs_kernel" not in ex for ex in exercises):
            facts["answerable"].append(stem)
        if any(ex.get("needs_kernel") == WITHHELD for ex in exercises):
            facts["withheld"].append(stem)
        for ex in exercises:
            if ex.get("needs_kernel") not in (None, WITHHELD):
                facts["kernel_only"].setdefault((ex["name"], ex["needs_kernel"]), []).append(stem)
        if any(BUILD_MIME in data for data in outputs):
            facts["builds"].append(stem)
        if any(REAL_MODEL_GRID in "".join(data.get("text/html", "")) for data in outputs):
            facts["typing"].append(stem)
    return facts


def index_text(facts):
    """What the index says of the pages, from :func:`page_facts`: whether the exercises answer here (none
    does in a student edition, which keeps its answers in the kernel), and what needs ``make lab``."""
    if not facts["answerable"]:
        return (f"{INDEX_TEXT} The explorers move on these pages, with no kernel; the exercises need one here "
                "(each says why). To check your answers and run your own code, open the course with `make lab`.")
    needs = []
    if facts["typing"]:
        needs.append(f"typing a new sentence into the explorer of {_notebooks(facts['typing'])}")
    if facts["builds"]:
        needs.append(f"the build cells, which run your own functions from workbook.py ({_notebooks(facts['builds'])})")
    if facts.get("withheld"):
        needs.append(f"the exercises of {_notebooks(facts['withheld'])} whose answers this edition keeps in the kernel")
    for (name, why), stems in facts["kernel_only"].items():
        needs.append(f"the exercise {name} of {_notebooks(stems)}: {why.rstrip('.')}")
    text = (f"{INDEX_TEXT} The explorers move on these pages and the numeric and choice exercises answer what "
            "you type, with no kernel.")
    if needs:
        text += (" These need one: " + "; ".join(needs) + ". For those, open the course with `make lab`.")
    return text


def index_notebook(ready, facts=None):
    """The course map as a notebook of one Markdown cell: every notebook in order, a link where it is
    in ``ready`` (file names), 'coming' where not. facts: :func:`page_facts` of the exported pages (None:
    no exercise answers, nothing named)."""
    rows = []
    for name, title, what in COURSE:
        stem = Path(name).stem
        cell = (f"<a href='{stem}.html'>{html.escape(title)}</a>" if name in ready
                else f"{html.escape(title)} <em>(coming)</em>")
        rows.append(f"<tr><th scope='row'>{stem[:2]}</th><td>{cell}</td><td>{html.escape(what)}</td></tr>")
    table = ("<table class='course-map'>\n<caption>The course map, in reading order</caption>\n"
             "<tr><th scope='col'>#</th><th scope='col'>notebook</th><th scope='col'>what you learn</th></tr>\n"
             + "\n".join(rows) + "\n</table>")
    nb = nbformat.v4.new_notebook()
    nb.metadata["title"] = "Attention, step by step: the course map"
    text = index_text(facts or {"answerable": [], "kernel_only": {}, "builds": [], "typing": []})
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# Attention, step by step\n\n{text}\n\n{table}"))
    return nb


def index_page(ready, html_exporter=None, facts=None):
    """The course map as a page (see :func:`index_notebook`), exported as the notebooks are: the same
    look, the same light and dark themes, and no previous/next links (it is the map)."""
    html_exporter = html_exporter or exporter()
    resources = page_resources("index", ROOT, html_exporter, nav=None)
    return html_exporter.from_notebook_node(index_notebook(ready, facts), resources=resources)[0]


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
    stems = site_stems(paths)
    pages = [export_notebook(p, site, html_exporter, stems) for p in paths]
    facts = page_facts({Path(p).stem: nbformat.read(p, as_version=4) for p in paths})
    (site / "index.html").write_text(index_page({Path(p).name for p in paths}, html_exporter, facts),
                                     encoding="utf-8")
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
