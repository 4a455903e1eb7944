"""Time the training of notebook 09 and the whole notebook in a fresh kernel.

1. The bank task's training (BANK_SETUP: 150 Adam steps on 200 sentences),
   the even-weight baseline, and each of the three trap models (TRAP_SETUP:
   400 steps on 100 sequences): median of 3 runs each, CPU time beside wall
   time (on a shared machine the wall time includes waiting for a core).
2. Notebook 09 run top to bottom in a fresh kernel with nbclient, as
   `make execute` does (kernel start-up included), once: wall time.

Targets: training under 10 s; the whole notebook under 30 s.

    make bench        (or: .venv/bin/python tools/bench_training.py)
"""

import statistics
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from helpers.attention import causal_mask
from helpers.tasks import BANK_SETUP, TRAP_SETUP, bank_task, pattern_task
from helpers.training import init_params, train

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "09_learning.ipynb"
REPEATS = 3


def timed(fn):
    walls, cpus = [], []
    for _ in range(REPEATS):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main():
    s, t = BANK_SETUP, TRAP_SETUP
    bank = bank_task(s["n_train"], seed=s["train_seed"])
    p0 = init_params(6, s["d_k"], s["d_v"], 2, seed=s["init_seed"])
    trap = pattern_task(t["n_train"], seed=t["train_seed"])
    n = trap.X.shape[1]
    q0 = init_params(trap.X.shape[2], t["d_k"], t["d_k"], trap.n_symbols, seed=t["init_seed"])
    jobs = {
        "bank task, learned attention": lambda: train(p0, bank.X, bank.targets, s["steps"], s["learning_rate"]),
        "bank task, even weights": lambda: train(p0, bank.X, bank.targets, s["steps"], s["learning_rate"], uniform=True),
    }
    for name, mask, where in (("causal", causal_mask(n), "before"), ("no mask", None, "before"),
                              ("mask after", causal_mask(n), "after")):
        jobs[f"trap, {name}"] = (lambda mask=mask, where=where:
                                 train(q0, trap.X, trap.targets, t["steps"], t["learning_rate"], mask=mask, mask_where=where))
    total_wall = total_cpu = 0.0
    for name, job in jobs.items():
        wall, cpu = timed(job)
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"{name:30} median of {REPEATS}: {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    print(f"{'all training in notebook 09':30} {total_wall:6.2f} s wall, {total_cpu:6.2f} s CPU  (target under 10 s)")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    w = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    print(f"{'notebook 09, fresh kernel':30} {time.perf_counter() - w:6.2f} s wall  (target under 30 s)")


if __name__ == "__main__":
    main()
