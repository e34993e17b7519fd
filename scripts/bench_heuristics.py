"""Benchmark ``sa`` and ``ga`` on the Gavel clusters, and their warm starts of milp and cp.

Usage:
    python scripts/bench_heuristics.py [--cluster-limit 30] [--gap-limit 10]
        [--out docs/results/heuristics.md]

Three suites through the ``gpuplan bench`` harness (:mod:`gpuplan.harness.bench`), every plan
verified:

1. greedy, sa and ga on ``instances/gavel_cluster_500.json`` and
   ``gavel_cluster_500_long.json`` (makespan) at ``--cluster-limit`` seconds;
2. warm starts at equal total time: milp on six Chu & Beasley GAP problems (types C and
   D, 200 jobs) at ``--gap-limit`` seconds, alone and as ``milp@greedy|sa|ga`` (the
   heuristic gets 30% of the time, milp the rest);
3. the same for cp on the two clusters at ``--cluster-limit`` seconds.

GAP rows give the gap to the best known value (``known_values.csv``); cluster rows have
none, and their bound column is the bound gpuplan reports.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
CLUSTERS = str(ROOT / "instances" / "gavel_cluster_500*.json")
GAP_PROBLEMS = ["c05200", "c10200", "c20200", "d05200", "d10200", "d20200"]
WARM = ["greedy", "sa", "ga"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-limit", type=float, default=30.0)
    parser.add_argument("--gap-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "heuristics.md")
    args = parser.parse_args()
    clusters = [p.loaded() for p in load_suite(CLUSTERS, BENCHMARKS)]  # two runs, one read
    gap = load_suite("chu-beasley", BENCHMARKS, GAP_PROBLEMS)
    cluster_settings = RunSettings(time_limit_s=args.cluster_limit)
    runs = [
        ("Heuristics on the Gavel clusters", clusters, ["greedy", "sa", "ga"], cluster_settings),
        ("Warm starts of milp at equal total time", gap,
         ["milp", *(f"milp@{w}" for w in WARM)], RunSettings(time_limit_s=args.gap_limit)),
        ("Warm starts of cp at equal total time", clusters,
         ["cp", *(f"cp@{w}" for w in WARM)], cluster_settings),
    ]
    parts = ["# Metaheuristics and warm starts", "",
             "Written by `python scripts/bench_heuristics.py` (the `gpuplan bench` harness).", ""]
    for title, problems, methods, settings in runs:
        rows = run_bench(problems, [parse_method(m) for m in methods], settings,
                         on_row=lambda r: print(r["instance"], r["method"], r.get("objective"),
                                                r.get("seconds"), flush=True))
        parts += [f"## {title}", "", summary_markdown(rows), markdown(rows)]
    write_results(args.out, "\n".join(parts), PAGE)


if __name__ == "__main__":
    main()
