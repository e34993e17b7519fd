"""Benchmark the allocation policies of ``--method balance`` at Gavel's scale.

Usage:
    python scripts/bench_balance.py [--gavel ../shared/benchmarks/gpu-traces/gavel]
        [--repeats 3] [--out docs/results/balance.md]

Jobs are sampled as Gavel's generator does (gang sizes 1/2/4/8, job types and run times
from Gavel's measured throughputs, ``synthetic_trace``) on equal numbers of V100, P100 and
K80 GPUs in 8-GPU servers. Each row times the policy's solve (HiGHS on 2 threads, the
median of ``--repeats`` runs) from the built instance; rows marked "rounded" also time
the round-based plan and report its tracking error and its verification.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gpuplan.instance import Instance
from gpuplan.models.allocation import Policy, ThroughputData
from gpuplan.planning import plan
from gpuplan.readers.gavel import PRICES, read_throughputs, synthetic_trace, trace_document
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.solvers.balance import solve_policy
from gpuplan.solvers.base import SolveOptions

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GAVEL = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"


def gavel_instance(gavel: Path, jobs: int, gpus_per_type: int, seed: int) -> Instance:
    """``jobs`` Gavel-generated jobs on ``gpus_per_type`` GPUs of each of the three types."""
    throughputs = read_throughputs(gavel / "simulation_throughputs.json")
    document = trace_document(
        synthetic_trace(throughputs, jobs, seed=seed), throughputs,
        dict.fromkeys(("v100", "p100", "k80"), gpus_per_type), 8, PRICES,
        name=f"gavel_{jobs}x{3 * gpus_per_type}")
    return build_instance(parse_document(document, "<generated>"), "<generated>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", type=Path, default=DEFAULT_GAVEL)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "balance.md")
    args = parser.parse_args()
    options = SolveOptions(threads=2)
    lines = ["| instance | policy | value | seconds (median) | rounded plan |",
             "|---|---|---:|---:|---|"]
    cases = [(2048, 512, list(Policy), False), (700, 32, [Policy.MAKESPAN], True),
             (700, 32, [Policy.MAX_MIN_FAIRNESS], True)]
    for jobs, per_type, policies, rounded in cases:
        instance = gavel_instance(args.gavel, jobs, per_type, seed=0)
        data = ThroughputData.from_instance(instance)
        for policy in policies:
            runs = [solve_policy(data, policy, options) for _ in range(args.repeats)]
            seconds = statistics.median(r.seconds for r in runs)
            value = runs[0].value
            note = "-"
            if rounded:
                began = time.perf_counter()
                schedule = plan(instance, "balance",
                                SolveOptions(threads=2, policy=policy.value))
                ok = schedule.verification is not None and schedule.verification.ok
                note = (f"makespan {schedule.objective:.6g} s, {schedule.solver.split('; ')[-1]}"
                        f", {time.perf_counter() - began:.2f} s, verified {'yes' if ok else 'no'}")
            lines.append(f"| {instance.name} | {policy.value} | "
                         f"{'-' if value is None else f'{value:.6g}'} | {seconds:.3f} | {note} |")
            print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
