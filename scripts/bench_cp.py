"""Benchmark ``--method cp`` on unrelated parallel machines (R||Cmax) against the plain models.

Usage:
    python scripts/bench_cp.py [--families uniform,jobs-correlated,machines-correlated]
        [--machines 10,20,30] [--jobs 100,200,500] [--seeds 3] [--time-limit 10]
        [--threads 2] [--out docs/results/rcmax.md]

Instances are generated as Fanjul-Peyro & Ruiz (2010) describe three of their families:
``uniform`` has processing times U(1, 100) per (job, machine); ``jobs-correlated`` has
``b_j + d_ij`` and ``machines-correlated`` ``a_i + d_ij``, with ``a_i, b_j`` U(1, 100)
and ``d_ij`` U(1, 20). Each machine is a GPU type with one GPU and each job a single-GPU
job, so gpuplan's ``cp`` solves exactly R||Cmax. They are written to a temporary folder
per family and size and run through the ``gpuplan bench`` harness with greedy, cp and the
peers a user would write: ``textbook`` (the assignment MILP, min C with each job on one
machine and each machine's load at most C, on HiGHS with its defaults) and
``textbook:backend=cpsat`` (the same MILP on CP-SAT), each with the same time limit and
threads, one solve at a time, every plan verified. "gap %" is to the best lower bound any
of them proved. The first table checks cp against the stronger peer of each cell: on how
many instances its plan is worse than the better of the two peers' (the target is none).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.settings import RunSettings
from gpuplan.harness.bench import (
    load_suite,
    markdown,
    parse_method,
    run_bench,
    summary_markdown,
    write_results,
)

ROOT = Path(__file__).resolve().parent.parent
METHODS = ["greedy", "cp", "textbook", "textbook:backend=cpsat"]
#: The method checked, and the peers it must never lose to.
CHECKED = "cp"
PEERS = ("textbook", "textbook:backend=cpsat")


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


def _mean(values: Sequence[float]) -> str:
    return f"{statistics.mean(values):.3g}" if values else "-"


def check_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Per cell: cp's and each peer's mean gap, the stronger peer, and where cp loses to it.

    An instance counts against cp when its plan is worse than the better of the peers'
    plans there, or when it has no plan and a peer has one.
    """
    cells: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for row in rows:
        cells.setdefault(row["group"], {}).setdefault(row["instance"], {})[row["method"]] = row
    lines = ["| group | cp mean gap % | textbook (HiGHS) mean gap % | textbook (CP-SAT) mean "
             "gap % | stronger peer | instances cp worse than the best peer | ahead | tied |",
             "|---|---:|---:|---:|---|---:|---:|---:|"]
    for group, instances in cells.items():
        gaps = {m: [r[m]["gap_pct"] for r in instances.values()
                    if m in r and r[m].get("gap_pct") is not None] for m in (CHECKED, *PEERS)}
        peer_means = {m: statistics.mean(g) if g else float("inf")
                      for m, g in gaps.items() if m != CHECKED}
        worse = ahead = tied = 0
        for by_method in instances.values():
            mine = by_method.get(CHECKED, {}).get("objective")
            theirs = [by_method[m]["objective"] for m in PEERS
                      if by_method.get(m, {}).get("objective") is not None]
            if not theirs:
                ahead += mine is not None
            elif mine is None or mine > min(theirs):
                worse += 1
            elif mine < min(theirs):
                ahead += 1
            else:
                tied += 1
        lines.append(f"| {group} | {_mean(gaps[CHECKED])} | {_mean(gaps[PEERS[0]])} | "
                     f"{_mean(gaps[PEERS[1]])} | {min(peer_means, key=peer_means.__getitem__)}"
                     f" | {worse} | {ahead} | {tied} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--machines", default="10,20,30")
    parser.add_argument("--jobs", default="100,200,500")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=2)
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
                         RunSettings(time_limit_s=args.time_limit, threads=args.threads),
                         on_row=lambda r: print(r["instance"], r["method"], r.get("objective"),
                                                r.get("bound"), r.get("seconds"), flush=True))
    text = (
        f"# R||Cmax, {args.time_limit:g} s and {args.threads} threads per run\n\nWritten by "
        "`python scripts/bench_cp.py` (the `gpuplan bench` harness, one solve at a time). "
        "Gaps are to the best bound any method proved on the instance. Per cell, cp against "
        "the peers (the assignment MILP on HiGHS and on CP-SAT):\n\n" + check_markdown(rows)
        + "\nPer cell and method:\n\n" + summary_markdown(rows) + "\nEvery run:\n\n"
        + markdown(rows))
    write_results(args.out, text)
    print(check_markdown(rows))
    print(summary_markdown(rows))


if __name__ == "__main__":
    main()
