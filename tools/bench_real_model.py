"""Time the numpy forward pass of all-MiniLM-L6-v2 (helpers.real_model).

For each of the course's two "bank" sentences: one warm-up run, then the
median of 20 forward passes (tokenizing included), with the model already
loaded. Target: under 50 ms each on the course's 2-core machine.

    make bench        (or: .venv/bin/python tools/bench_real_model.py)
"""

import statistics
import time

from helpers.real_model import load_minilm

SENTENCES = ("The bank by the river was steep.", "The bank raised its interest rate.")
REPEATS = 20
TARGET_MS = 50.0


def main():
    t0 = time.perf_counter()
    model = load_minilm()
    print(f"load (SHA-256 check + weights + tokenizer): {1000 * (time.perf_counter() - t0):.0f} ms")
    ok = True
    for text in SENTENCES:
        model.run(text)  # warm-up
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            model.run(text)
            times.append(1000 * (time.perf_counter() - t))
        median = statistics.median(times)
        ok &= median < TARGET_MS
        n = len(model.tokenize(text)[0])
        print(f"{text!r:40} n={n:2d}  median of {REPEATS}: {median:6.2f} ms  (min {min(times):.2f}, max {max(times):.2f})")
    print(f"target under {TARGET_MS:.0f} ms each: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
