"""A real JupyterLab and a real Chromium for the browser tests.

The server runs from the project's own environment (this Python), with the
repository's JupyterLab configuration (jupyter/), on a free loopback port with
a random token. It serves a copy of notebooks/ in a temporary folder, so that
nothing the browser does (autosave included) can touch the stored notebooks.
Screenshots and the server log (one per pytest-xdist worker) go to artifacts/browser/, which git ignores.
Server and browser are stopped whatever happens.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
INSTALL_HINT = "apt-get install -y chromium   (as root; the browser tests use Debian's Chromium)"


def chromium_missing():
    return not Path(CHROMIUM).exists()


def pytest_collection_modifyitems(config, items):
    if not chromium_missing():
        return
    skip = pytest.mark.skip(reason=f"Chromium is not installed, so the browser tests cannot run. Install it with: {INSTALL_HINT}")
    for item in items:
        if "browser" in item.nodeid:
            item.add_marker(skip)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its base URL, token and log file."""

    def __init__(self, base, token, log_path, root):
        self.base, self.token, self.log_path, self.root = base, token, log_path, root

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def log_tail(self, lines=40):
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # Draw every cell of a notebook, not only those in view, so every output can be checked.
    tracker = root / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}', encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    # Under pytest-xdist each worker that runs browser tests starts its own server: one log each.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    log_path = ARTIFACTS / (f"jupyter-server-{worker}.log" if worker else "jupyter-server.log")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["JUPYTER_CONFIG_PATH"] = str(ROOT / "jupyter")
    env["JUPYTER_CONFIG_DIR"] = str(ROOT / "jupyter")  # as `make lab`: where the server finds custom/custom.css
    log = open(log_path, "w", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.port_retries=0",
         f"--LabApp.workspaces_dir={root / 'workspaces'}", f"--LabApp.user_settings_dir={root / 'settings'}"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    server = Lab(base, token, log_path, root)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited at start; its log:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.url("/api/status"), timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer within 60 s; its log:\n{server.log_tail()}")
            time.sleep(0.3)
        yield server
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
