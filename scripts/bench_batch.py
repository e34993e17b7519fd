"""Benchmark ``gpuplan batch``: throughput locally, wall time with a time limit, and Dask.

Usage:
    python scripts/bench_batch.py [--instances 1000] [--milp-instances 40] [--workers 2]
        [--out docs/results/batch.md]

1. ``--instances`` generated instances of 20 jobs on 4 nodes (``gpuplan generate``
   shapes, seeds 0, 1, ...) planned with greedy by ``gpuplan batch --workers N``, timed
   end to end as a user runs it (the command, process start-up included);
2. ``--milp-instances`` of them, with objective ``assign-cost`` (milp plans static
   objectives), with milp at ``--time-limit 1``: the wall time against instances x limit
   / workers;
3. the greedy batch again through a 2-worker Dask ``LocalCluster`` on loopback
   (``--scheduler``), with every schedule compared to the local run's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from distributed import LocalCluster

from gpuplan.core.schedule import Schedule
from gpuplan.harness.bench import write_results
from gpuplan.readers.generate import generate_document

ROOT = Path(__file__).resolve().parent.parent
#: The page that quotes this script's results tables; refreshed after each run.
PAGE = ROOT / "docs" / "benchmarks.md"
GPUPLAN = str(Path(sys.executable).parent / "gpuplan")


def batch(inputs: Path, out: Path, *extra: str) -> float:
    """Run ``gpuplan batch`` and return its wall time in seconds."""
    began = time.perf_counter()
    subprocess.run([GPUPLAN, "batch", str(inputs), "-o", str(out), *extra], check=False,
                   capture_output=True)
    return time.perf_counter() - began


def verified(out: Path) -> int:
    """Rows of the summary with a verified plan."""
    return sum(bool(r["verified"]) for r in json.loads((out / "summary.json").read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--milp-instances", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "batch.md")
    args = parser.parse_args()
    workers = str(args.workers)
    lines = ["| run | instances | workers | seconds | instances/s | verified | note |",
             "|---|---:|---:|---:|---:|---:|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inputs, few = root / "in", root / "few"
        inputs.mkdir()
        few.mkdir()
        for seed in range(args.instances):
            text = json.dumps(generate_document(20, 4, seed=seed, dependencies=0.1))
            (inputs / f"g{seed:05d}.json").write_text(text)
            if seed < args.milp_instances:
                # milp plans static objectives: the same jobs, placed at minimum cost.
                static = generate_document(20, 4, seed=seed, objective="assign-cost")
                (few / f"g{seed:05d}.json").write_text(json.dumps(static))
        seconds = batch(inputs, root / "greedy", "--workers", workers)
        lines.append(f"| greedy, local | {args.instances} | {workers} | {seconds:.2f} | "
                     f"{args.instances / seconds:.0f} | {verified(root / 'greedy')} | "
                     "command wall time, process start-up included |")
        print(lines[-1], flush=True)
        seconds = batch(inputs, root / "greedy", "--workers", workers)
        lines.append(f"| greedy, local, rerun (resume) | {args.instances} | {workers} | "
                     f"{seconds:.2f} | {args.instances / seconds:.0f} | "
                     f"{verified(root / 'greedy')} | every schedule up to date, kept |")
        print(lines[-1], flush=True)
        seconds = batch(few, root / "milp", "--workers", workers, "--method", "milp",
                        "--time-limit", "1")
        ideal = args.milp_instances * 1.0 / args.workers
        lines.append(f"| milp, 1 s limit, local | {args.milp_instances} | {workers} | "
                     f"{seconds:.2f} | {args.milp_instances / seconds:.1f} | "
                     f"{verified(root / 'milp')} | instances x limit / workers = {ideal:.0f} s |")
        print(lines[-1], flush=True)
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster:
            seconds = batch(inputs, root / "dask", "--scheduler", cluster.scheduler_address)
        same = sum(Schedule.read(p).segments
                   == Schedule.read(root / "greedy" / p.name).segments
                   for p in (root / "dask").glob("g*.json"))
        lines.append(f"| greedy, Dask LocalCluster | {args.instances} | {workers} | "
                     f"{seconds:.2f} | {args.instances / seconds:.0f} | "
                     f"{verified(root / 'dask')} | {same} schedules identical to the local "
                     "run |")
        print(lines[-1], flush=True)
    write_results(args.out, "\n".join(lines) + "\n", PAGE)


if __name__ == "__main__":
    main()
