"""Measure how well every method keeps ``--time-limit``, as a user runs it.

Usage:
    python scripts/bench_limits.py [--limits 2,5,10] [--benchmarks ../shared/benchmarks]
        [--out docs/results/limits.md]

Each method that can plan the instance runs as ``gpuplan solve ... --time-limit S``, on:

- ``gpuplan generate --jobs 2000 --nodes 32`` (seed 0: 2,000 Gavel-shaped jobs on 256 GPUs),
  for makespan and, overridden, for ``max-weight`` (every other static objective is
  infeasible on it: the fleet cannot hold all 2,000 jobs at once);
- Yagiura's e801600 (80 agents, 1,600 jobs, ``--format orlib-gap``, ``assign-cost``).

The table gives the wall time the schedule records (from the first instruction of the solve
to the verified plan) and the process wall time (Python start-up and imports, reading and
writing included), with the overshoot of each over the limit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuplan.harness.bench import write_results

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")

#: (label, methods, extra solve arguments) per instance kind.
RUNS = {
    "generate 2000 makespan": (("greedy", "cp", "sa", "ga", "balance"), []),
    # max-weight: the static objective this fleet can hold (it may leave jobs out).
    "generate 2000 max-weight": (("greedy", "milp", "lp", "sa", "ga"),
                                 ["--objective", "max-weight"]),
    "yagiura e801600": (("greedy", "milp", "lp", "textbook", "sa", "ga"),
                        ["--format", "orlib-gap"]),
}


def solve(instance: Path, method: str, limit: float, extra: list[str],
          out: Path) -> tuple[float, float | None, str, str]:
    """Process wall time, the schedule's wall time, its status and objective."""
    out.unlink(missing_ok=True)
    began = time.perf_counter()
    done = subprocess.run([GPUPLAN, "solve", str(instance), "--method", method,
                           "--time-limit", f"{limit:g}", *extra, "-o", str(out)],
                          capture_output=True, text=True, check=False)
    process = time.perf_counter() - began
    if not out.exists():
        return process, None, f"exit {done.returncode}", done.stderr.strip().splitlines()[-1]
    schedule = json.loads(out.read_text())
    objective = "-" if schedule["objective"] is None else f"{schedule['objective']:.6g}"
    return process, float(schedule["wall_time_s"]), schedule["status"], objective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="2,5,10")
    parser.add_argument("--benchmarks", type=Path, default=ROOT.parent / "shared" / "benchmarks")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "limits.md")
    args = parser.parse_args()
    limits = [float(x) for x in args.limits.split(",")]
    rows = ["| instance | method | limit s | solve s | over | process s | over | status | "
            "objective |", "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        generated = folder / "g2000.json"
        subprocess.run([GPUPLAN, "generate", "--jobs", "2000", "--nodes", "32", "-o",
                        str(generated)], check=True, capture_output=True)
        files = {"generate 2000 makespan": generated, "generate 2000 max-weight": generated,
                 "yagiura e801600": args.benchmarks / "gap" / "yagiura" / "e801600"}
        for label, (methods, extra) in RUNS.items():
            for method in methods:
                for limit in limits:
                    process, wall, status, objective = solve(
                        files[label], method, limit, extra, folder / "s.json")
                    over = "-" if wall is None else f"{wall - limit:+.2f}"
                    rows.append(f"| {label} | {method} | {limit:g} | "
                                f"{'-' if wall is None else f'{wall:.2f}'} | {over} | "
                                f"{process:.2f} | {process - limit:+.2f} | {status} | "
                                f"{objective} |")
                    if wall is not None:
                        worst[method] = max(worst.get(method, -limit), wall - limit)
                    print(rows[-1], flush=True)
    summary = ["| method | worst overshoot of the solve, s |", "|---|---:|",
               *(f"| {m} | {w:+.2f} |" for m, w in worst.items())]
    write_results(args.out, "# Time limits kept, per method\n\nWritten by `python "
                  f"scripts/bench_limits.py --limits {args.limits}`.\n\n"
                  + "\n".join(summary) + "\n\n" + "\n".join(rows) + "\n", PAGE)


if __name__ == "__main__":
    main()
