"""Benchmark ``--method cp`` on unrelated parallel machines (R||Cmax) against the plain model.

Usage:
    python scripts/bench_cp.py [--families uniform,jobs-correlated,machines-correlated]
        [--machines 10,20,30] [--jobs 100,200,500] [--seeds 3] [--time-limit 10]
        [--out docs/results/rcmax.md]

Instances are generated as Fanjul-Peyro & Ruiz (2010) describe three of their families:
``uniform`` has processing times U(1, 100) per (job, machine); ``jobs-correlated`` has
``b_j + d_ij`` and ``machines-correlated`` ``a_i + d_ij``, with ``a_i, b_j`` U(1, 100)
and ``d_ij`` U(1, 20). Each machine is a GPU type with one GPU and each job a single-GPU
job, so gpuplan's ``cp`` solves exactly R||Cmax. They are written to a temporary folder
per family and size and run through the ``gpuplan bench`` harness with greedy, cp and the
peer ``textbook`` (the plain CP-SAT model a user would write: one optional interval per
job and machine, no-overlap per machine, makespan), each with the same time limit and 2
workers, every plan verified. "gap %" is to the best lower bound any of them proved.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.bench import (
    load_suite,
    markdown,
    parse_method,
    run_bench,
    summary_markdown,
    write_results,
)
from gpuplan.methods.base import RunSettings

ROOT = Path(__file__).resolve().parent.parent
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"
METHODS = ["greedy", "cp", "textbook"]


#: Fanjul-Peyro & Ruiz's families, as processing-time generators (jobs x machines).
FAMILIES = {
    "uniform": lambda rng, n, m: rng.integers(1, 101, size=(n, m)),
    "jobs-correlated": lambda rng, n, m: (rng.integers(1, 101, size=(n, 1))
                                          + rng.integers(1, 21, size=(n, m))),
    "machines-correlated": lambda rng, n, m: (rng.integers(1, 101, size=(1, m))
                                              + rng.integers(1, 21, size=(n, m))),
}


def rcmax_document(family: str, machines: int, jobs: int, seed: int) -> dict[str, Any]:
    """An R||Cmax instance of one family, as a gpuplan document."""
    times = FAMILIES[family](np.random.default_rng(seed), jobs, machines)
    return {
        "name": f"rcmax_{family}_{machines}x{jobs}_{seed}",
        "gpu_types": [{"id": f"m{i}", "capacity": {"compute": 1.0}} for i in range(machines)],
        "nodes": [{"id": f"n{i}", "gpus": {f"m{i}": 1}} for i in range(machines)],
        "jobs": [{"id": f"j{j}", "demand": {"compute": 1.0},
                  "duration_s": {f"m{i}": int(times[j, i]) for i in range(machines)}}
                 for j in range(jobs)],
        "objective": "makespan",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--machines", default="10,20,30")
    parser.add_argument("--jobs", default="100,200,500")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "rcmax.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        problems = []
        for family in args.families.split(","):
            for m in map(int, args.machines.split(",")):
                for n in map(int, args.jobs.split(",")):
                    folder = Path(tmp) / f"{family} {m}x{n}"
                    folder.mkdir()
                    for seed in range(args.seeds):
                        document = rcmax_document(family, m, n, seed)
                        (folder / f"{document['name']}.json").write_text(json.dumps(document))
                    problems += load_suite(str(folder), ROOT)
        rows = run_bench(problems, [parse_method(m) for m in args.methods.split(",")],
                         RunSettings(time_limit_s=args.time_limit),
                         on_row=lambda r: print(r["instance"], r["method"], r.get("objective"),
                                                r.get("bound"), r.get("seconds"), flush=True))
    text = (
        f"# R||Cmax, {args.time_limit:g} s per run\n\nWritten by `python scripts/bench_cp.py` "
        "(the `gpuplan bench` harness). Gaps are to the best bound any method proved on the "
        "instance.\n\n" + summary_markdown(rows) + "\n" + markdown(rows))
    write_results(args.out, text, PAGE)
    print(summary_markdown(rows))


if __name__ == "__main__":
    main()
