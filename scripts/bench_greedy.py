"""Time the greedy planners (and the verifier) on the example instances and at scale.

Usage: python scripts/bench_greedy.py [--jobs 10000] [--gpus 1000] [--seed 0]
    [--out docs/results/greedy.md]

The example instances are those in instances/. The scale instances are a seeded
10,000-job, 1,000-GPU fleet:

The fleet has three GPU types in the speed ratios of Gavel's K80/P100/V100 measurements,
8 GPUs per node. Jobs have gang sizes 1/2/4/8, memory by model size and a compute share, so
that several small jobs can share one GPU in the static problems. Runs the ``gpuplan
bench`` harness and writes the tables to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.settings import RunSettings
from gpuplan.harness.bench import load_suite, markdown, parse_method, run_bench, write_results

ROOT = Path(__file__).resolve().parent.parent
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"
#: The installed command, beside this interpreter.
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")

TYPES = {  # memory GiB, relative speed, price per hour
    "k80": (12.0, 1.0, 0.45),
    "p100": (16.0, 2.6, 1.46),
    "v100": (16.0, 4.2, 2.48),
}


def make_document(n_jobs: int, n_gpus: int, seed: int, share: float = 1.0) -> dict[str, Any]:
    """A seeded fleet and batch; ``share`` scales per-GPU demands (small for static packing)."""
    rng = np.random.default_rng(seed)
    names = list(TYPES)
    nodes = [
        {"id": f"node{n:04d}", "gpus": {names[n % 3]: 8}} for n in range(n_gpus // 8)
    ]
    gangs = rng.choice([1, 2, 4, 8], size=n_jobs, p=[0.7, 0.15, 0.1, 0.05])
    memory = rng.choice([1.0, 2.0, 4.0, 8.0, 12.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    compute = rng.choice([0.05, 0.1, 0.25, 0.5, 1.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.1, 0.1])
    base = rng.lognormal(mean=8.0, sigma=0.5, size=n_jobs)
    jobs = []
    for j in range(n_jobs):
        jobs.append(
            {
                "id": f"job{j:05d}",
                "gpus": int(gangs[j]),
                "demand": {
                    "memory_gib": float(memory[j]) * share,
                    "compute": float(compute[j]) * share,
                },
                "duration_s": {
                    t: round(float(base[j]) / speed, 1) for t, (_, speed, _) in TYPES.items()
                },
                "weight": float(rng.integers(1, 10)),
            }
        )
    return {
        "name": f"synthetic-{n_jobs}x{n_gpus}",
        "gpu_types": [
            # Jobs take shares of a GPU's memory and compute: the fleet shares its GPUs.
            {"id": t, "capacity": {"memory_gib": mem, "compute": 1.0}, "cost_per_hour": price,
             "sharing": True}
            for t, (mem, _, price) in TYPES.items()
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "makespan",
    }


#: (fleet, objective) runs at scale: the timeline fleet for time-based objectives and
#: max-weight, the packing fleet (small shares, so GPUs are shared) for the others.
SCALE_RUNS = {
    "timeline": ["makespan", "weighted-completion", "cost", "max-weight"],
    "packing": ["min-gpus", "min-gpu-cost", "min-max-load"],
}


def timed_command(*argv: str) -> tuple[float, float]:
    """Run a command to its end; its wall seconds and peak resident memory in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait4 gives this child's own resource use (ru_maxrss in KiB on Linux).
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {process.stderr.read().decode()}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "greedy.md")
    args = parser.parse_args()
    settings = RunSettings()
    parts = ["# Greedy at scale", "",
             "Written by `python scripts/bench_greedy.py` (the `gpuplan bench` harness). "
             "\"seconds\" is the solve; \"with checks s\" adds what `plan()` does around it "
             "(infeasibility reasons, verification). Gaps are to the method's own bound.", "",
             "## Example instances", ""]
    rows = run_bench(load_suite(str(ROOT / "instances"), ROOT), [parse_method("greedy")],
                     settings)
    parts += [markdown(rows), "## Scale", ""]
    commands: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, share in (("timeline", 1.0), ("packing", 0.15)):
            started = time.perf_counter()
            raw = make_document(args.jobs, args.gpus, args.seed, share)
            raw["name"] = f"{label}-{args.jobs}x{args.gpus}"
            # The file's own objective is the one the CLI runs below plan for.
            raw["objective"] = SCALE_RUNS[label][0]
            path = Path(tmp) / f"{raw['name']}.json"
            path.write_text(json.dumps(raw))
            # Read once: every run plans the same instance.
            problems = [p.loaded() for p in load_suite(str(path), ROOT)]
            parts.append(f"- {raw['name']}: written, read, validated and indexed in "
                         f"{time.perf_counter() - started:.2f} s")
            specs = [parse_method(f"greedy:objective={o}") for o in SCALE_RUNS[label]]
            rows = run_bench(problems, specs, settings)
            parts += ["", markdown(rows)]
            plan = path.with_suffix(".plan.json")
            solve = timed_command(GPUPLAN, "solve", str(path), "-o", str(plan))
            check = timed_command(GPUPLAN, "check", str(path), str(plan))
            commands.append(f"| {raw['name']} | {raw['objective']} | {solve[0]:.2f} | "
                            f"{solve[1]:.0f} | {check[0]:.2f} | {check[1]:.0f} |")
    parts += ["## End to end through the CLI", "",
              "`gpuplan solve FILE -o OUT.json`, then `gpuplan check FILE OUT.json`, as a user "
              "runs them: wall seconds with interpreter start-up, reading and validating the "
              "JSON, planning, verifying and writing atomically; peak resident memory.", "",
              "| instance | objective | solve wall s | solve peak MiB | check wall s "
              "| check peak MiB |", "|---|---|---:|---:|---:|---:|", *commands]
    write_results(args.out, "\n".join(parts) + "\n", PAGE)
    print("\n".join(parts))


if __name__ == "__main__":
    main()
