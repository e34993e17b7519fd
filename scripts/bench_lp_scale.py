"""LP relaxation and rounding at scale: 10,000 jobs on 1,000 GPUs of 4 types.

Usage: python scripts/bench_lp_scale.py [--jobs 10000] [--gpus 1000] [--seed 0] [--time-limit 60]
    [--out docs/results/lp_scale.md]

The fleet has 125 nodes of 8 GPUs, of four types (K80, P100, V100, A100 speed ratios; the
cheaper types are slower, so per-job cost differs by type). Jobs have gangs of 1/2/4/8,
memory and compute shares sized so that the batch fills about 80% of the fleet's compute:
the cheapest types run out and the LP must split jobs. Objective: total assignment cost
(GPU-seconds x price). Runs the ``gpuplan bench`` harness: one row per rounding, and the
greedy baseline, written to --out.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.settings import RunSettings
from gpuplan.harness.bench import load_suite, markdown, parse_method, run_bench, write_results
from gpuplan.parts.lp_rounding import ROUNDINGS

ROOT = Path(__file__).resolve().parent.parent
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"

TYPES = {  # memory GiB, relative speed, price per GPU-hour
    "k80": (12.0, 1.0, 0.45),
    "p100": (16.0, 2.6, 1.46),
    "v100": (32.0, 4.2, 2.48),
    "a100": (80.0, 9.0, 3.67),
}


def make_document(n_jobs: int, n_gpus: int, seed: int) -> dict[str, Any]:
    """A seeded fleet of four types and a batch that fills most of its compute."""
    rng = np.random.default_rng(seed)
    names = list(TYPES)
    nodes = [{"id": f"node{n:04d}", "gpus": {names[n % 4]: 8}} for n in range(n_gpus // 8)]
    gangs = rng.choice([1, 2, 4, 8], size=n_jobs, p=[0.7, 0.15, 0.1, 0.05])
    memory = rng.choice([1.0, 2.0, 4.0, 8.0, 11.0], size=n_jobs, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    shares = rng.choice([0.015, 0.035, 0.07, 0.14], size=n_jobs, p=[0.4, 0.3, 0.2, 0.1])
    base = rng.lognormal(mean=8.0, sigma=0.7, size=n_jobs)
    jobs = [
        {
            "id": f"job{j:05d}",
            "gpus": int(gangs[j]),
            "demand": {"memory_gib": float(memory[j] / 4), "compute": float(shares[j])},
            "duration_s": {t: round(float(base[j]) / speed, 1)
                           for t, (_, speed, _) in TYPES.items()},
        }
        for j in range(n_jobs)
    ]
    return {
        "name": f"lp-scale-{n_jobs}x{n_gpus}",
        "gpu_types": [
            # Jobs take shares of a GPU's memory and compute: the fleet shares its GPUs.
            {"id": t, "capacity": {"memory_gib": mem, "compute": 1.0}, "cost_per_hour": price,
             "sharing": True}
            for t, (mem, _, price) in TYPES.items()
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "assign-cost",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "lp_scale.md")
    args = parser.parse_args()
    raw = make_document(args.jobs, args.gpus, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{raw['name']}.json"
        path.write_text(json.dumps(raw))
        # Read once: every run plans the same instance.
        problems = [p.loaded() for p in load_suite(str(path), ROOT)]
        instance = problems[0].load()
        load = (instance.demand[:, :, 1].min(axis=1) * instance.gang).sum() / instance.n_gpus
        methods = ["greedy", *(f"lp:rounding={name}" for name in ROUNDINGS)]
        rows = run_bench(problems, [parse_method(m) for m in methods],
                         RunSettings(time_limit_s=args.time_limit))
    text = (f"# LP relaxation and rounding at scale\n\nWritten by `python "
            f"scripts/bench_lp_scale.py` (the `gpuplan bench` harness). {instance.name}: "
            f"{instance.n_jobs} jobs, {instance.n_gpus} GPUs, compute load {load:.0%} of the "
            f"fleet at each job's least demand; time limit {args.time_limit:g} s. Gaps are to "
            "the tightest bound any method proved (the LP's).\n\n" + markdown(rows))
    write_results(args.out, text, PAGE)
    print(text)


if __name__ == "__main__":
    main()
