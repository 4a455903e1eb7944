"""Benchmark the explorers: time from a control change to the new picture, in a real kernel.

Usage: python tools/bench_explorers.py [--changes N]     (the Makefile's bench target)

It starts an ipykernel, builds the explorers of notebooks 03, 04, 05, 08, 10 and 11 in it, and then acts as
the browser would: for each change it sends the kernel the widget message a
moved control sends (a comm "update" of the control's value or index) and
waits for the message that carries the explorer's new picture back (a comm
"update" of the picture's HTML). The time between the two is one update:
the kernel receiving the change, recomputing, building the HTML and sending
it. What this leaves out is the browser putting the HTML on the page
(a small table: about a millisecond).

It prints the median and 95th percentile per explorer over N changes
(default 40, at least 20) after a few untimed warm-up changes, and fails if
a picture does not arrive, does not change, or reports an error.

The real-model explorer (notebook 11) is timed twice: moving its layer and
head sliders and its token dropdown (the forward pass is remembered, so
nothing is rerun), and typing a new sentence (a comm update of the text
box), which runs the model once: sentences of 9 to 11 tokens, each new.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client import KernelManager

ROOT = Path(__file__).resolve().parent.parent

SETUP = r"""
import json
import ipywidgets
from helpers.explorers import dk_explorer, mask_explorer, heads_explorer, real_model_explorer, tiling_explorer
from helpers.explorers import window_explorer
explorers = {"d_k": dk_explorer(), "mask": mask_explorer(), "heads": heads_explorer(), "tiling": tiling_explorer(),
             "real model": real_model_explorer()}
explorers["window"] = window_explorer()
explorers["new sentence"] = explorers["real model"]
ids = {}
for name, ex in explorers.items():
    controls = {}
    for key, c in ex.controls.items():
        if key == "hidden":
            for i, b in enumerate(c.buttons):
                controls[f"hide{i}"] = [b.model_id, "value", None, b.value]
        elif isinstance(c, ipywidgets.Text):
            if name == "new sentence":
                controls[key] = [c.model_id, "text", None, c.value]
        elif name == "new sentence":
            continue
        elif hasattr(c, "options"):
            controls[key] = [c.model_id, "index", len(c.options), c.index]
        elif isinstance(c, ipywidgets.IntSlider):
            controls[key] = [c.model_id, "value", [c.min, c.max], c.value]
        else:
            controls[key] = [c.model_id, "value", None, c.value]
    ids[name] = {"picture": ex.picture.model_id, "controls": controls}
print(json.dumps(ids))
"""

CHECK = r"""
print(json.dumps({name: ex.error for name, ex in explorers.items()}))
"""


#: New sentences for the real-model explorer, 9 to 11 tokens each, none seen before.
SENTENCES = [f"The {a} by the {b} was {c}." for a in ("bank", "house", "road") for b in ("river", "lake", "hill")
             for c in ("steep", "old", "quiet", "wide", "empty", "green")]
SENTENCES.remove("The bank by the river was steep.")  # the explorer's start: not new


def plan(controls, count):
    """A learner's walk: each slider or button row to its end and back, each toggle flipped; repeated.

    A text box gets a new sentence each time (SENTENCES, in order).
    """
    current = {key: c[3] for key, c in controls.items()}
    steps = []
    sentences = iter(SENTENCES)
    while len(steps) < count:
        for key, (model_id, trait, n_options, _) in controls.items():
            if trait == "index":
                for i in list(range(n_options)) + list(range(n_options - 2, -1, -1)):
                    if i != current[key]:
                        steps.append((model_id, {"index": i}))
                        current[key] = i
            elif trait == "text":
                steps.append((model_id, {"value": next(sentences)}))
            elif isinstance(n_options, list):  # an integer slider: to each end and back
                low, high = n_options
                for v in list(range(low, high + 1)) + list(range(high - 1, low - 1, -1)):
                    if v != current[key]:
                        steps.append((model_id, {"value": v}))
                        current[key] = v
            else:
                current[key] = not current[key]
                steps.append((model_id, {"value": current[key]}))
    return steps[:count]


class Kernel:
    def __init__(self):
        self.km = KernelManager(kernel_name="python3")
        # The kernel's own stderr holds only its start-up notices; errors come back as messages.
        self.km.start_kernel(cwd=str(ROOT / "notebooks"), stderr=subprocess.DEVNULL)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code):
        """Execute code, return its stdout; raise on an error."""
        msg_id = self.kc.execute(code)
        out = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                out.append(content["text"])
            elif kind == "error":
                raise RuntimeError("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)

    def change(self, model_id, state, picture_id):
        """Send a control update as the browser does; wait for the picture's update. Returns (seconds, html)."""
        content = {"comm_id": model_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
        msg = self.kc.session.msg("comm_msg", content)
        start = time.perf_counter()
        self.kc.shell_channel.send(msg)
        while True:
            reply = self.kc.get_iopub_msg(timeout=30)
            c = reply["content"]
            if (reply["msg_type"] == "comm_msg" and c.get("comm_id") == picture_id
                    and "value" in c["data"].get("state", {})):
                return time.perf_counter() - start, c["data"]["state"]["value"]

    def stop(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="timed changes per explorer (at least 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed changes first")
    args = parser.parse_args(argv)
    if args.changes < 20:
        parser.error("--changes must be at least 20")
    kernel = Kernel()
    try:
        ids = json.loads(kernel.run(SETUP))
        print(f"{'explorer':12} {'changes':>7} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
        results = {}
        for name, spec in ids.items():
            steps = plan(spec["controls"], args.changes + args.warmup)
            times, last = [], None
            for k, (model_id, state) in enumerate(steps):
                seconds, html = kernel.change(model_id, state, spec["picture"])
                if "<table" not in html:
                    raise SystemExit(f"{name}: no picture after {state}: {html[:300]}")
                if html == last:
                    raise SystemExit(f"{name}: the picture did not change after {state}")
                last = html
                if k >= args.warmup:
                    times.append(seconds * 1000)
            results[name] = times
            print(f"{name:12} {len(times):7d} {statistics.median(times):10.1f} {percentile(times, 95):8.1f} "
                  f"{max(times):8.1f}")
        errors = json.loads(kernel.run(CHECK))
        if any(errors.values()):
            raise SystemExit(f"an explorer reported an error: {errors}")
    finally:
        kernel.stop()
    target = all(statistics.median(t) <= 50 and percentile(t, 95) <= 100 for t in results.values())
    print("target (median <= 50 ms, p95 <= 100 ms):", "met" if target else "NOT met")
    return 0 if target else 1


if __name__ == "__main__":
    sys.exit(main())
