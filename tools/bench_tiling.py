"""Benchmark tiled_attention against scaled_dot_product_attention: peak memory and time.

    make bench        (or: .venv/bin/python tools/bench_tiling.py)

float64, d_k = d_v = 64, block_size 256, no mask, random inputs (seeded).
Memory: the peak that tracemalloc sees during one call (numpy's allocations,
the output included, the inputs not), in MiB and in units of one n x n
float64 array. Time: the median of 3 calls each, the two functions
alternating, so that both see the same load on a shared machine; the ratio
is what to read. Then notebook 10's sliding window (issue 26): the mask alone against the
tiled version that skips the key blocks outside the window (no target).
Targets (issue 10): at n = 8192 the tiled peak is at most
1/16 of one n x n float64 array; at n = 4096 the tiled time is at most
2 x scaled_dot_product_attention's.

The time is measured twice: with OpenBLAS's default threads, and again held
to one thread (threadpoolctl). On a loaded machine the default
threads wait for each other in every small matrix product, and the tiled
version makes many small ones (two per pair of blocks), so the two ratios
can differ several-fold; on an idle machine they are close.
"""

import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from helpers.attention import scaled_dot_product_attention, sliding_window_mask
from helpers.tiling import sliding_window_attention, tiled_attention, window_blocks

D, BLOCK, REPEATS = 64, 256, 3
MiB = 2 ** 20


def inputs(n):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, D)), rng.standard_normal((n, D)), rng.standard_normal((n, D))


def peak(fn, *args):
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def plain(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)[0]


def tiled(Q, K, V):
    return tiled_attention(Q, K, V, BLOCK)


def memory():
    print(f"float64, d_k = d_v = {D}, block_size {BLOCK}, no mask")
    print(f"{'n':>6} {'plain peak':>12} {'tiled peak':>12} {'tiled / (n x n)':>16} {'plain / tiled':>14}")
    ok = True
    for n in (4096, 8192):
        Q, K, V = inputs(n)
        square = n * n * 8
        p, t = peak(plain, Q, K, V), peak(tiled, Q, K, V)
        print(f"{n:6d} {p / MiB:9.1f} MiB {t / MiB:9.2f} MiB {t / square:16.4f} {p / t:13.0f}x")
        if n == 8192:
            ok = t <= square / 16
            print(f"target at n = 8192: tiled peak <= 1/16 = 0.0625 of an n x n array: {'met' if ok else 'NOT met'}")
    return ok


def timing(threads):
    n = 4096
    Q, K, V = inputs(n)
    times = {"plain": [], "tiled": []}
    plain(Q, K, V), tiled(Q, K, V)  # warm-up
    for _ in range(REPEATS):
        for name, fn in (("plain", plain), ("tiled", tiled)):
            t0 = time.perf_counter()
            fn(Q, K, V)
            times[name].append(time.perf_counter() - t0)
    a, b = statistics.median(times["plain"]), statistics.median(times["tiled"])
    print(f"n = {n}, OpenBLAS threads {threads}: scaled_dot_product_attention {1000 * a:.0f} ms, tiled_attention "
          f"{1000 * b:.0f} ms (medians of {REPEATS}); tiled / plain = {b / a:.2f}: target <= 2 "
          f"{'met' if b / a <= 2 else 'NOT met'}")
    return b / a <= 2


def window(threads, n=4096, window_size=512):
    """Notebook 10: causal sliding-window attention, the mask alone against the tiled version that skips blocks."""
    Q, K, V = inputs(n)

    def masked(Q, K, V):
        return scaled_dot_product_attention(Q, K, V, mask=sliding_window_mask(n, window_size))[0]

    def skipping(Q, K, V):
        return sliding_window_attention(Q, K, V, BLOCK, window_size)

    times = {masked: [], skipping: []}
    for _ in range(REPEATS):
        for fn in times:
            t0 = time.perf_counter()
            fn(Q, K, V)
            times[fn].append(time.perf_counter() - t0)
    a, b = (statistics.median(times[fn]) for fn in (masked, skipping))
    if threads == "default":
        p, t = peak(masked, Q, K, V), peak(skipping, Q, K, V)
        pairs = len(window_blocks(n, BLOCK, window_size))
        print(f"sliding window {window_size}, n = {n}, blocks of {BLOCK}: {pairs} of {(n // BLOCK) ** 2} blocks computed")
        print(f"  peak: the mask alone {p / MiB:.1f} MiB, skipping blocks {t / MiB:.2f} MiB ({p / t:.0f}x less)")
    print(f"  time, OpenBLAS threads {threads}: the mask alone {1000 * a:.0f} ms, skipping blocks {1000 * b:.0f} ms "
          f"(medians of {REPEATS})")


def main():
    window("default")
    with threadpool_limits(limits=1):
        window("1")
    ok = memory()
    ok &= timing("default")
    with threadpool_limits(limits=1):
        ok &= timing("1")
    print("all targets met" if ok else "a target is NOT met (see above)")


if __name__ == "__main__":
    main()
