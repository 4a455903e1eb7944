"""Measure how long each notebook takes to run, and write it into the instructors' guide.

Usage: python tools/measure_run_times.py            (every notebook that exists)
       python tools/measure_run_times.py 04_masking  (only those named; the others keep their times)

Each notebook runs top to bottom in a fresh kernel started in notebooks/, as
`make execute` runs it (but nothing is written back to the notebook); the
time is from asking for the kernel to the end of the last cell. The times go
to data/run_times.json with the machine's load average (one minute) before and after each
notebook, printed beside each time: a time measured under load is not a run time. The "run (measured)" column of the course map in
INSTRUCTORS.md is rewritten from them and from helpers/course.py (the other
columns of a row, written by hand, are kept). tests/test_instructors.py checks
that the guide and data/run_times.json agree with helpers/course.py.
"""

import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from helpers.course import COURSE, NOTEBOOKS_DIR  # noqa: E402

TIMES = ROOT / "data" / "run_times.json"
GUIDE = ROOT / "INSTRUCTORS.md"
BEGIN, END = "<!-- course map: begin -->", "<!-- course map: end -->"
HEADER = ("| notebook | what you learn | a learner (estimate) | run (measured) | peak memory (measured) | assumes |\n"
          "| --- | --- | --- | --- | --- | --- |")
NOT_YET = "not written yet"


PEAK = "import resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def measure(name):
    """(seconds to run the notebook, the kernel's peak memory in MB)."""
    path = NOTEBOOKS_DIR / name
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PEAK))        # runs after the timing stops: asks the kernel its peak
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells[:-1]):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - started
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    peak_kb = int(nb.cells[-1].outputs[0]["text"])          # Linux reports ru_maxrss in kilobytes
    return seconds, peak_kb / 1024


def measured_cells(name, times, peaks):
    """The two measured cells of a notebook's row: run time and peak memory."""
    if name not in times:
        return NOT_YET, NOT_YET
    return f"{times[name]:.1f} s", f"{peaks[name]} MB"


def table(times, peaks, rows):
    """The course map of the guide: one row per notebook of helpers/course.py, hand-written cells from ``rows``."""
    lines = [HEADER]
    for name, _, what in COURSE:
        estimate, assumes = rows.get(name, ("?", "?"))
        run, peak = measured_cells(name, times, peaks)
        lines.append(f"| `{name}` | {what} | {estimate} | {run} | {peak} | {assumes} |")
    return "\n".join(lines)


def guide_rows(text):
    """{notebook: (estimate, assumes)} from the course map now in the guide."""
    inside = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = {}
    for line in inside.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0].strip("`")] = (cells[2], cells[5])
    return rows


def main(names):
    env_backend = os.environ.pop("MPLBACKEND", None)        # as `make execute`: figures need the inline backend
    stored = json.loads(TIMES.read_text(encoding="utf-8")) if TIMES.exists() else {}
    times, peaks = stored.get("seconds", {}), stored.get("peak_memory_mb", {})
    existing = [name for name, _, _ in COURSE if (NOTEBOOKS_DIR / name).exists()]
    todo = [n for n in existing if not names or any(n.startswith(w) for w in names)]
    loads = stored.get("load_average_1min", {})
    for name in todo:
        before = os.getloadavg()[0]
        seconds, peak = measure(name)
        after = os.getloadavg()[0]
        times[name], peaks[name], loads[name] = round(seconds, 1), round(peak), [round(before, 2), round(after, 2)]
        print(f"{name:28} {times[name]:6.1f} s  peak {peaks[name]:5d} MB  load {before:.2f} -> {after:.2f}",
              flush=True)
    times = {n: times[n] for n in existing if n in times}
    peaks = {n: peaks[n] for n in existing if n in peaks}
    loads = {n: loads[n] for n in existing if n in loads}
    TIMES.write_text(json.dumps({
        "what": "seconds to run each notebook top to bottom in a fresh kernel, and the kernel's peak memory "
                "(resident, MB) at the end (tools/measure_run_times.py)",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}",
        "seconds": times,
        "peak_memory_mb": peaks,
        "load_average_1min": loads,
    }, indent=2) + "\n", encoding="utf-8")
    text = GUIDE.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    GUIDE.write_text(f"{head}{BEGIN}\n{table(times, peaks, guide_rows(text))}\n{END}{tail}", encoding="utf-8")
    if env_backend is not None:
        os.environ["MPLBACKEND"] = env_backend


if __name__ == "__main__":
    main(sys.argv[1:])
