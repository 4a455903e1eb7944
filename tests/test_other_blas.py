"""Stored outputs are the same whatever BLAS kernel, thread count or SIMD path computes them.

OpenBLAS picks a kernel for the CPU it runs on (Haswell, SkylakeX, Zen, ...) and
splits a matrix product by thread count; numpy's own exp, log and tanh take
AVX2 or AVX-512 paths where the CPU has them. Each choice changes the last bits
of a result, so a notebook that prints rounding noise (a gradient check's
5.9e-11) passes nbval on one machine and fails on the next. This test re-runs
every notebook under nbval in a subprocess whose kernel computes differently
from this one: another OpenBLAS kernel (Prescott), one thread, and numpy's
x86-64-v3/v4 and AVX-512 paths switched off. A stored digit that moves fails it.

An unknown core type falls back to the default kernel without a word, so the
test first asks threadpoolctl, in a Python started with the same environment,
whether the kernel really changed. It is skipped, saying why, where the BLAS
library is not OpenBLAS on x86 (macOS arm64 wheels use Accelerate).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from threadpoolctl import threadpool_info

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: numpy's dispatch targets that belong to x86-64-v3 or v4 or are AVX-512 groups (this numpy's names).
try:
    from numpy._core._multiarray_umath import __cpu_dispatch__ as _DISPATCH
except ImportError:  # numpy 1.x kept them in numpy.core
    from numpy.core._multiarray_umath import __cpu_dispatch__ as _DISPATCH
WIDE_SIMD = [name for name in _DISPATCH if name.startswith(("X86_V3", "X86_V4", "AVX512"))]

OTHER_BLAS = {
    "OPENBLAS_CORETYPE": "Prescott",
    "OPENBLAS_NUM_THREADS": "1",
    "NPY_DISABLE_CPU_FEATURES": " ".join(WIDE_SIMD),
}

PROBE = """
import json
import numpy as np
try:
    from numpy._core._multiarray_umath import __cpu_features__
except ImportError:
    from numpy.core._multiarray_umath import __cpu_features__
from threadpoolctl import threadpool_info
blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"blas": [(i["internal_api"], i.get("architecture"), i["num_threads"]) for i in blas],
                  "features": {k: bool(v) for k, v in __cpu_features__.items()}}))
"""


def numpy_openblas():
    """numpy's own BLAS as threadpoolctl sees it, or None."""
    for info in threadpool_info():
        if info["user_api"] == "blas" and "numpy" in info.get("filepath", ""):
            return info
    return None


def other_blas_env():
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # as `make test`: figures stay in outputs
    env.update(OTHER_BLAS)
    return env


def skip_unless_x86_openblas():
    info = numpy_openblas()
    if platform.machine().lower() not in ("x86_64", "amd64") or info is None or info["internal_api"] != "openblas":
        pytest.skip(f"numpy's BLAS here is {info and info['internal_api']} on {platform.machine()}, not OpenBLAS "
                    "on x86: OPENBLAS_CORETYPE cannot choose another kernel, so this check of other machines "
                    "cannot run here")
    return info


def test_the_environment_really_changes_the_kernel_threads_and_simd_paths():
    here = skip_unless_x86_openblas()
    probe = subprocess.run([sys.executable, "-c", PROBE], env=other_blas_env(), capture_output=True, text=True,
                           timeout=120)
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    kernels = {arch for api, arch, _ in seen["blas"] if api == "openblas"}
    assert kernels and here["architecture"] not in kernels, (
        f"OPENBLAS_CORETYPE=Prescott left the kernel at {kernels} (this process: {here['architecture']}): "
        "the re-run below would compute exactly as the main run does")
    assert {threads for _, _, threads in seen["blas"]} == {1}
    assert WIDE_SIMD, "this numpy names no x86-64-v3/v4 or AVX-512 dispatch target to switch off"
    still_on = [name for name in WIDE_SIMD if seen["features"].get(name)]
    assert not still_on, f"NPY_DISABLE_CPU_FEATURES left {still_on} switched on"


def test_every_notebook_prints_the_same_under_another_blas_kernel():
    skip_unless_x86_openblas()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-sanitize-with", str(ROOT / "nbval_sanitize.cfg"),
         "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *[str(p.relative_to(ROOT)) for p in NOTEBOOKS]],
        cwd=ROOT, env=other_blas_env(), capture_output=True, text=True, timeout=900)
    tail = "\n".join(run.stdout.splitlines()[-60:])
    assert run.returncode == 0, (
        "a stored output changed under another BLAS kernel (Prescott, one thread, no AVX2/AVX-512 paths in "
        "numpy): print a bound the value meets, not its rounding digits\n" + tail + run.stderr[-2000:])
    assert " passed" in tail and "failed" not in tail


def test_the_stored_progress_bar_shows_the_finished_run_and_no_timing():
    nb = nbformat.read(ROOT / "notebooks" / "09_learning.ipynb", as_version=4)
    bars = [o["data"]["text/plain"] for c in nb.cells for o in c.get("outputs", [])
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {}) and "%|" in o["data"].get("text/plain", "")]
    assert bars, "notebook 09 stores no progress bar"
    for text in bars:
        assert "100%|" in text and "150/150" in text, f"a page without a kernel shows the bar as {text!r}"
    stored = json.dumps(nb.metadata.get("widgets", {})) + "".join(json.dumps(c.get("outputs", [])) for c in nb.cells)
    for timing in ("it/s", "s/it", "<?,", "[00:"):
        assert timing not in stored, f"notebook 09 stores a timing ({timing!r})"
