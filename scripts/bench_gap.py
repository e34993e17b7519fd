"""Benchmark gpuplan's assignment methods, and the peer a user would write instead, on GAP sets.

Usage:
    python scripts/bench_gap.py [--sets gap1-12,gap1-12-max,chu-beasley,yagiura]
        [--time-limit 10] [--methods greedy,lp,milp,...] [--only NAME,...] [--runs 3]
        [--out docs/results/gap.md]

Runs the ``gpuplan bench`` harness (:mod:`gpuplan.harness.bench`) on named sets from
``../shared/benchmarks/gap/known_values.csv``:

- gap1-12 and gap1-12-max: the 60 OR-Library problems, minimised and maximised;
- chu-beasley: gapa..gapd (types A-D, 5-20 agents x 100-200 jobs), minimised;
- yagiura: types C, D, E up to 80 x 1600, minimised.

The default methods are gpuplan's (greedy, lp, milp on HiGHS and on CP-SAT) and the peer,
``textbook``: the plain assignment model handed straight to HiGHS and to CP-SAT with the
same time limit and 2 threads. Every answer goes through gpuplan's verifier. ``--runs N``
plans everything N times, with seeds 0 to N-1. Writes the summary per set and type (over
all runs), how often each method ends worse or better than each peer (one comparison per
problem and seed), the check per set (problems on which a method ends worse than a peer
in any run; mean and max gap of every method), then one row per (problem, seed, method).
The results file is written alone: the tables docs/benchmarks.md quotes from it are
refreshed there by ``gpuplan bench --page`` or ``gpuplan.harness.bench.refresh_quotes``.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

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
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
METHODS = ["greedy", "lp", "milp", "milp:backend=cpsat", "textbook", "textbook:backend=cpsat"]
PEERS = ("textbook", "textbook:backend=cpsat")


Runs = dict[tuple[str, str, int], dict[str, dict[str, Any]]]


def by_run(rows: list[dict[str, Any]]) -> Runs:
    """The rows by (group, problem, seed), then by method."""
    runs: Runs = defaultdict(dict)
    for r in rows:
        runs[(r["group"], r["instance"], r["seed"])][r["method"]] = r
    return runs


def compare(group: str, mine: dict[str, Any], theirs: dict[str, Any]) -> int:
    """-1, 0 or 1: whether the first plan is better, equal or worse (no plan is worst)."""
    a, b = mine.get("objective"), theirs.get("objective")
    sign = -1.0 if group.endswith("max") else 1.0
    if a is None or (b is not None and sign * a > sign * b + 1e-6):
        return 0 if b is None else 1
    return -1 if b is None or sign * a < sign * b - 1e-6 else 0


def versus_peers(rows: list[dict[str, Any]]) -> str:
    """Per method and peer: in how many (problem, seed) runs it ends worse, better or equal."""
    runs = by_run(rows)
    lines = ["| method | versus | runs | worse | better | equal |",
             "|---|---|---:|---:|---:|---:|"]
    for method in dict.fromkeys(r["method"] for r in rows if r["method"] not in PEERS):
        for peer in PEERS:
            counts = [compare(key[0], results[method], results[peer])
                      for key, results in runs.items() if method in results and peer in results]
            if counts:
                lines.append(f"| {method} | {peer} | {len(counts)} | {counts.count(1)} | "
                             f"{counts.count(-1)} | {counts.count(0)} |")
    return "\n".join(lines) + "\n"


def per_set_check(rows: list[dict[str, Any]]) -> str:
    """Per set (group) and method: gaps over all runs, and problems worse than a peer.

    A problem counts as worse than a peer when the method ends worse than that peer in
    any run (same seed); "-" for the peers themselves.
    """
    runs = by_run(rows)
    lines = ["| set | method | problems | runs | mean gap % | max gap % | worse than "
             + " | worse than ".join(PEERS) + " |",
             "|---|---|---:|---:|---:|---:|" + "---:|" * len(PEERS)]
    for group in dict.fromkeys(r["group"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows if r["group"] == group):
            mine = [r for r in rows if r["group"] == group and r["method"] == method]
            gaps = [r["gap_pct"] for r in mine if r.get("gap_pct") is not None]
            worse = []
            for peer in PEERS:
                if method in PEERS or not any(r["method"] == peer for r in rows):
                    worse.append("-")
                    continue
                lost = {key[1] for key, results in runs.items()
                        if key[0] == group and method in results and peer in results
                        and compare(group, results[method], results[peer]) > 0}
                worse.append(f"{len(lost)}" + (f" ({', '.join(sorted(lost))})" if lost else ""))
            lines.append(
                f"| {group} | {method} | {len({r['instance'] for r in mine})} | "
                f"{len({r['seed'] for r in mine})} | "
                f"{f'{statistics.mean(gaps):.3g}' if gaps else '-'} | "
                f"{f'{max(gaps):.3g}' if gaps else '-'} | {' | '.join(worse)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="gap1-12,gap1-12-max,chu-beasley,yagiura")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--only", default="", help="comma-separated instance names")
    parser.add_argument("--runs", type=int, default=1, help="runs, with seeds 0 to N-1")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "gap.md")
    args = parser.parse_args()
    only = [n for n in args.only.split(",") if n]
    problems = [p.loaded() for s in args.sets.split(",") for p in load_suite(s, BENCHMARKS, only)]
    specs = [parse_method(m) for m in args.methods.split(",")]
    rows = []
    for seed in range(args.runs):
        for row in run_bench(problems, specs,
                             RunSettings(time_limit_s=args.time_limit, threads=2, seed=seed),
                             on_row=lambda r: print(r["group"], r["instance"], r["method"],
                                                    r["status"], r.get("objective"),
                                                    r.get("gap_pct"), r.get("seconds"),
                                                    flush=True)):
            rows.append({**row, "seed": seed})
    peers = versus_peers(rows) if any(r["method"] in PEERS for r in rows) else ""
    check = per_set_check(rows)
    labelled = [{**r, "instance": f"{r['instance']} (seed {r['seed']})"} if args.runs > 1 else r
                for r in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"# GAP results (time limit {args.time_limit:g} s, 2 threads, {args.runs} run"
        f"{'s' if args.runs > 1 else ''})\n\n"
        "Written by `python scripts/bench_gap.py` (the `gpuplan bench` harness), "
        f"sets {args.sets}, methods {args.methods}, seeds 0-{args.runs - 1}.\n\n"
        f"{summary_markdown(rows)}\n{peers}\n{check}\n{markdown(labelled)}")
    write_results(args.out, text)
    print(summary_markdown(rows))
    print(peers)
    print(check)


if __name__ == "__main__":
    main()
