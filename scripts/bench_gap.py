"""Benchmark gpuplan's assignment methods, and the peer a user would write instead, on GAP sets.

Usage:
    python scripts/bench_gap.py [--sets gap1-12,gap1-12-max,chu-beasley,yagiura]
        [--time-limit 10] [--methods greedy,lp,milp,...] [--only NAME,...]
        [--out docs/results/gap.md]

Runs the ``gpuplan bench`` harness (:mod:`gpuplan.bench`) on named sets from
``../shared/benchmarks/gap/known_values.csv``:

- gap1-12 and gap1-12-max: the 60 OR-Library problems, minimised and maximised;
- chu-beasley: gapa..gapd (types A-D, 5-20 agents x 100-200 jobs), minimised;
- yagiura: types C, D, E up to 80 x 1600, minimised.

The default methods are gpuplan's (greedy, lp, milp on HiGHS and on CP-SAT) and the peer,
``textbook``: the plain assignment model handed straight to HiGHS and to CP-SAT with the
same time limit and 2 threads. Every answer goes through gpuplan's verifier. Writes the
summary per set and type, then one row per (problem, method), then how often each method
ends worse or better than each peer.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

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
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
METHODS = ["greedy", "lp", "milp", "milp:backend=cpsat", "textbook", "textbook:backend=cpsat"]
PEERS = ("textbook", "textbook:backend=cpsat")


def versus_peers(rows: list[dict[str, Any]]) -> str:
    """Per method and peer: on how many problems it ends worse, better or equal."""
    by_problem: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        by_problem[(r["group"], r["instance"])][r["method"]] = r
    lines = ["| method | versus | problems | worse | better | equal |",
             "|---|---|---:|---:|---:|---:|"]
    for method in dict.fromkeys(r["method"] for r in rows if r["method"] not in PEERS):
        for peer in PEERS:
            worse = better = equal = 0
            for (group, _), results in by_problem.items():
                if method not in results or peer not in results:
                    continue
                mine, theirs = results[method].get("objective"), results[peer].get("objective")
                sign = -1.0 if group.endswith("max") else 1.0
                if mine is None or (theirs is not None and sign * mine > sign * theirs + 1e-6):
                    worse += 1
                elif theirs is None or sign * mine < sign * theirs - 1e-6:
                    better += 1
                else:
                    equal += 1
            if worse + better + equal:
                lines.append(f"| {method} | {peer} | {worse + better + equal} | {worse} | "
                             f"{better} | {equal} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="gap1-12,gap1-12-max,chu-beasley,yagiura")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--only", default="", help="comma-separated instance names")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "gap.md")
    args = parser.parse_args()
    only = [n for n in args.only.split(",") if n]
    problems = [p for s in args.sets.split(",") for p in load_suite(s, BENCHMARKS, only)]
    rows = run_bench(problems, [parse_method(m) for m in args.methods.split(",")],
                     RunSettings(time_limit_s=args.time_limit, threads=2),
                     on_row=lambda r: print(r["group"], r["instance"], r["method"],
                                            r["status"], r.get("objective"),
                                            r.get("gap_pct"), r.get("seconds"), flush=True))
    peers = versus_peers(rows) if any(r["method"] in PEERS for r in rows) else ""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"# GAP results (time limit {args.time_limit:g} s, 2 threads)\n\n"
        "Written by `python scripts/bench_gap.py` (the `gpuplan bench` harness), "
        f"sets {args.sets}, methods {args.methods}.\n\n"
        f"{summary_markdown(rows)}\n{peers}\n{markdown(rows)}")
    write_results(args.out, text, PAGE)
    print(summary_markdown(rows))
    print(peers)


if __name__ == "__main__":
    main()
