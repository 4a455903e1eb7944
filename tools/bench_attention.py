"""Benchmark the course's attention against a plain numpy version, and every figure at 512 tokens.

    make bench        (or: .venv/bin/python tools/bench_attention.py)

1. ``scaled_dot_product_attention`` at n = 2048 queries and keys, d_k = d_v =
   64, float64, against the plainest numpy version that is still numerically
   safe (scores, the row maximum subtracted, exp and the division done in
   place, then @ V), without and with a causal mask. The two are timed in
   turns in one run (median of REPEATS each), so load from other work on the
   machine hits both alike; the ratio is what counts. Peak memory is measured
   with tracemalloc (numpy reports its arrays to it) and printed in units of
   one n x n float64 array. Targets: time at most 1.15 x the plain version,
   peak memory at most 2.2 n x n arrays.
2. Every figure function of helpers.plots at 512 tokens (the model's limit):
   wall time and peak memory (tracemalloc), including drawing the figure to
   a PNG at the course's resolution, each in a fresh child process (its peak
   resident memory counts matplotlib's drawing buffers too), and as a multiple
   of the time of an empty figure drawn the same way, which says more than
   seconds on a loaded machine. Target: at most FIGURE_SECONDS and FIGURE_MB,
   and a readable size: the figure at least MIN_FIGURE_PX and every axes
   (colour bars aside) at least MIN_AXES_PX on each side, as drawn (the
   pixel sizes are printed; constrained_layout can collapse axes silently).
"""

from __future__ import annotations

import io
import os
import statistics
import time
import tracemalloc

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from helpers import plots  # noqa: E402
from helpers.attention import causal_mask, scaled_dot_product_attention, softmax  # noqa: E402

N, D = 2048, 64
REPEATS = 9
TIME_TARGET, MEMORY_TARGET = 1.15, 2.2
FIGURE_TOKENS = 512
FIGURE_SECONDS, FIGURE_MB = 5.0, 300.0
MIN_FIGURE_PX, MIN_AXES_PX = (300, 200), 100   # 100 px: about an inch at 100 dpi


def load():
    """The machine's load average (1, 5, 15 minutes), printed beside every figure: a loaded machine's times say less."""
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def plain_attention(Q, K, V, mask=None):
    """The plain numpy version: no checks, everything in place in one (n, n) array."""
    s = Q @ K.T
    s *= 1.0 / np.sqrt(Q.shape[-1])
    if mask is not None:
        np.copyto(s, -np.inf, where=~mask)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ V, s


def peak_bytes(fn):
    """Peak memory traced while ``fn()`` runs, above what was allocated before it."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak


def bench_attention():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((N, D)) for _ in range(3))
    square = N * N * 8
    ok = True
    print(f"scaled_dot_product_attention, n = {N}, d_k = d_v = {D}, float64; median of {REPEATS}, timed in turns")
    for label, mask in (("no mask", None), ("causal mask", causal_mask(N))):
        ours, plain = [], []
        out_a, w_a = scaled_dot_product_attention(Q, K, V, mask=mask)
        out_b, w_b = plain_attention(Q, K, V, mask=mask)
        assert np.allclose(w_a, w_b) and np.allclose(out_a, out_b), "the two versions disagree"
        del out_a, w_a, out_b, w_b
        for _ in range(REPEATS):
            t = time.perf_counter()
            scaled_dot_product_attention(Q, K, V, mask=mask)
            ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            plain_attention(Q, K, V, mask=mask)
            plain.append(time.perf_counter() - t)
        a, b = statistics.median(ours), statistics.median(plain)
        mem_a = peak_bytes(lambda: scaled_dot_product_attention(Q, K, V, mask=mask)) / square
        mem_b = peak_bytes(lambda: plain_attention(Q, K, V, mask=mask)) / square
        ok &= a / b <= TIME_TARGET and mem_a <= MEMORY_TARGET
        print(f"  {label:12} course {1000 * a:7.1f} ms, plain {1000 * b:7.1f} ms, ratio {a / b:.2f} "
              f"(target <= {TIME_TARGET}); peak memory {mem_a:.2f} n*n arrays, plain {mem_b:.2f} "
              f"(target <= {MEMORY_TARGET})  {load()}")
    x = rng.standard_normal((N, N))
    ours, plain = [], []
    for _ in range(REPEATS):
        t = time.perf_counter()
        softmax(x)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        e = x - x.max(axis=-1, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=-1, keepdims=True)
        plain.append(time.perf_counter() - t)
    a, b = statistics.median(ours), statistics.median(plain)
    mem = peak_bytes(lambda: softmax(x)) / square
    print(f"  softmax of ({N}, {N}): course {1000 * a:.1f} ms, plain {1000 * b:.1f} ms, ratio {a / b:.2f}; "
          f"peak memory {mem:.2f} n*n arrays (the result is one)")
    return ok


def figure_cases(n):
    """(name, function drawing one figure) for every figure function of helpers.plots at n tokens."""
    rng = np.random.default_rng(1)
    w = softmax(rng.standard_normal((n, n)) * 3)
    heads = softmax(rng.standard_normal((12, n, n)) * 3)
    labels = [f"tok{i}" for i in range(n)]
    points = rng.standard_normal((n, 2))
    return [
        ("weights_heatmap", lambda: plots.weights_heatmap(w, labels, labels, "title")),
        ("heatmap_panels (2 x 2)", lambda: plots.heatmap_panels([[(w, labels, labels, "a"), (w, labels, labels, "b")],
                                                                  [(w, labels, labels, "c"), (w, labels, labels, "d")]])),
        ("heads_heatmaps (12 heads)", lambda: plots.heads_heatmaps(heads, labels, labels)),
        ("layer_head_grid (6 x 12)", lambda: plots.layer_head_grid(rng.random((6, 12)), "t", 1.0, "c")),
        ("plane_plot", lambda: plots.plane_plot(points, labels)),
        ("lines_plot", lambda: plots.lines_plot(np.arange(n), {"a": np.arange(n) ** 0.5}, "x", "y")),
        ("weights_table_html", lambda: plots.weights_table_html(w, labels, labels)),
        ("weights_row_html", lambda: plots.weights_row_html(w[0], labels)),
    ]


def in_child(fn):
    """Run ``fn`` in a forked child process: (seconds, peak resident memory in bytes, fn's text).

    The child's peak resident set (ru_maxrss, from wait4) counts everything,
    matplotlib's C++ drawing buffers included, which tracemalloc does not see.
    """
    read, write = os.pipe()
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        try:
            text = fn()
        except BaseException as exc:  # report, never fall back into the parent's code
            text = f"FAILED: {type(exc).__name__}: {exc}"
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, _, usage = os.wait4(pid, 0)
    return time.perf_counter() - t, usage.ru_maxrss * 1024, text


def readable(fig, dpi=100):
    """The figure's pixel size and its smallest axes, as drawn at ``dpi``; 'TOO SMALL ...' if under the minimum."""
    width, height = fig.get_size_inches() * dpi
    fig.set_dpi(dpi)
    fig.canvas.draw()
    boxes = [ax.get_window_extent() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    small = min((min(b.width, b.height) for b in boxes), default=float("inf"))
    text = f"{width:.0f} x {height:.0f} px, smallest axes {small:.0f} px"
    if width < MIN_FIGURE_PX[0] or height < MIN_FIGURE_PX[1] or small < MIN_AXES_PX:
        return f"TOO SMALL: {text} (needs {MIN_FIGURE_PX[0]} x {MIN_FIGURE_PX[1]} px, axes {MIN_AXES_PX} px)"
    return text


def bench_figures(n=FIGURE_TOKENS):
    ok = True
    base = in_child(lambda: "")[1]
    print(f"\nfigures at {n} tokens, each in a fresh child process, drawn to a PNG at 100 dpi as in a notebook; "
          f"target under {FIGURE_SECONDS:.0f} s and {FIGURE_MB:.0f} MB each (memory above the "
          f"{base / 1e6:.0f} MB of a child that draws nothing)")
    def empty():
        fig, _ = plt.subplots(figsize=(4.6, 3.2))
        fig.savefig(io.BytesIO(), format="png", dpi=100)
        return "an empty figure"

    yardstick = in_child(empty)[0]
    print(f"  {'(yardstick: an empty figure)':28} {yardstick:6.2f} s")
    for name, draw in figure_cases(n):
        def run():
            made = draw()
            if isinstance(made, plt.Figure):
                made.savefig(io.BytesIO(), format="png", dpi=100)
                return readable(made)
            return f"{len(made) / 1e6:.1f} MB of HTML"

        seconds, peak, what = in_child(run)
        mb = (peak - base) / 1e6
        ok &= seconds <= FIGURE_SECONDS and mb <= FIGURE_MB and not what.startswith(("FAILED", "TOO SMALL"))
        print(f"  {name:28} {seconds:6.2f} s  = {seconds / yardstick:5.1f} empty figures  {mb:6.0f} MB  ({what})  "
              f"{load()}")
    return ok


def main():
    ok = bench_attention()
    ok &= bench_figures()
    print(f"\ntargets: {'all met' if ok else 'NOT all met'}")


if __name__ == "__main__":
    main()
