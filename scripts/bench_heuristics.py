"""Benchmark ``sa`` and ``ga`` on the Gavel clusters, and their warm starts of milp and cp.

Usage:
    python scripts/bench_heuristics.py [--cluster-limit 30] [--gap-limit 10]
        [--out docs/results/heuristics.md]

Two tables, every plan verified by ``gpuplan.plan``:

1. greedy, sa and ga on ``instances/gavel_cluster_500.json`` and
   ``gavel_cluster_500_long.json`` (makespan) at ``--cluster-limit`` seconds;
2. warm starts at equal total time: milp on six Chu & Beasley GAP problems (types C and
   D, 200 jobs) at ``--gap-limit`` seconds, and cp on the two clusters at
   ``--cluster-limit`` seconds, each without a warm start and with
   ``--warm-start greedy|sa|ga`` (the heuristic gets 30% of the time, the method the rest).

GAP rows give the gap to the best known value (``known_values.csv``), cluster rows the
gap to the bound gpuplan reports.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.schedule import Schedule
from gpuplan.solvers import SolveOptions

ROOT = Path(__file__).resolve().parent.parent
GAP = ROOT.parent / "shared" / "benchmarks" / "gap"
CLUSTERS = ["gavel_cluster_500", "gavel_cluster_500_long"]
GAP_PROBLEMS = ["c05200", "c10200", "c20200", "d05200", "d10200", "d20200"]


def best_known() -> dict[str, float]:
    """Best known minimisation values by instance name."""
    with (GAP / "known_values.csv").open() as handle:
        return {row["instance"]: float(row["best_known_min"])
                for row in csv.DictReader(handle) if row["best_known_min"]}


def row(name: str, label: str, schedule: Schedule, reference: float | None) -> str:
    """One table row: objective, its gap to ``reference`` (or to the bound), seconds."""
    value = schedule.objective
    target = reference if reference is not None else schedule.bound
    gap = ("-" if value is None or not target
           else f"{100 * (value - target) / abs(target):.2f}")
    ok = schedule.verification is not None and schedule.verification.ok
    return (f"| {name} | {label} | {schedule.status.value} | "
            f"{'-' if value is None else f'{value:.6g}'} | "
            f"{'-' if reference is None else f'{reference:.6g}'} | "
            f"{'-' if schedule.bound is None else f'{schedule.bound:.6g}'} | {gap} | "
            f"{schedule.wall_time_s:.1f} | {'yes' if ok else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster-limit", type=float, default=30.0)
    parser.add_argument("--gap-limit", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "heuristics.md")
    args = parser.parse_args()
    header = ("| instance | method | status | objective | best known | bound | gap % | "
              "seconds | verified |\n|---|---|---|---:|---:|---:|---:|---:|---|")
    lines = ["## Heuristics on the Gavel clusters", "", header]
    for name in CLUSTERS:
        instance = read_instance(ROOT / "instances" / f"{name}.json")
        for method in ("greedy", "sa", "ga"):
            schedule = plan(instance, method, SolveOptions(time_limit_s=args.cluster_limit))
            lines.append(row(name, method, schedule, None))
            print(lines[-1], flush=True)
    lines += ["", "## Warm starts at equal total time", "", header]
    known = best_known()
    cases = [(GAP / "chu1997_split" / p, "milp", args.gap_limit, known.get(p))
             for p in GAP_PROBLEMS]
    cases += [(ROOT / "instances" / f"{c}.json", "cp", args.cluster_limit, None)
              for c in CLUSTERS]
    for path, method, limit, reference in cases:
        instance = (read_instance(path, file_format="orlib-gap", sense="min")
                    if method == "milp" else read_instance(path))
        for warm in (None, "greedy", "sa", "ga"):
            schedule = plan(instance, method, SolveOptions(time_limit_s=limit), warm=warm)
            label = f"{method}" + (f" --warm-start {warm}" if warm else "")
            lines.append(row(path.stem, label, schedule, reference))
            print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
