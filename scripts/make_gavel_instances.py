"""Derive gpuplan instances from Gavel's measured throughputs and traces.

Usage: python scripts/make_gavel_instances.py [--gavel ../shared/benchmarks/gpu-traces/gavel]

Writes
- instances/gavel_makespan.json: Gavel's ``minimize_makespan.trace`` (100 jobs, 10-column
  layout) on Gavel's physical cluster, 8 V100 + 16 P100 + 24 K80 in 4-GPU servers;
- instances/gavel_cluster_500.json: 500 jobs sampled as Gavel's job generator does (gang
  sizes 1/2/4/8), on 16 servers of 8 GPUs (5 V100, 5 P100, 6 K80 servers); 10% of the jobs
  depend on an earlier job, and 5% carry a deadline of 4x their V100 run time plus an hour;
- instances/gavel_cluster_500_long.json: the same shape, every job from the generator's long
  run-time mode, so that packing the fleet matters (the benchmark of ``--method cp``).

Prices are approximate on-demand cloud prices per GPU-hour (K80 0.90, P100 1.46, V100 3.06
USD). Re-running the script reproduces the committed files byte for byte.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.readers.gavel import (
    PHYSICAL_CLUSTER,
    PRICES,
    read_throughputs,
    read_trace,
    synthetic_trace,
    trace_document,
)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GAVEL = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "gavel"


def add_dependencies_and_deadlines(document: dict[str, Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = document["jobs"]
    for j, job in enumerate(jobs):
        if j > 0 and rng.random() < 0.10:
            job["depends_on"] = [jobs[int(rng.integers(j))]["id"]]
        elif rng.random() < 0.05 and "v100" in job["duration_s"]:
            job["deadline_s"] = round(4 * job["duration_s"]["v100"] + 3600, 1)


def write(document: dict[str, Any], name: str) -> None:
    out = ROOT / "instances" / f"{name}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {len(document['jobs'])} jobs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", type=Path, default=DEFAULT_GAVEL)
    args = parser.parse_args()
    throughputs = read_throughputs(args.gavel / "simulation_throughputs.json")

    trace = "physical_cluster/minimize_makespan.trace"
    document = trace_document(
        read_trace(args.gavel / "traces" / trace), throughputs,
        PHYSICAL_CLUSTER, 4, PRICES, name="gavel_makespan",
    )
    document["description"] += f" Trace: {trace}."
    write(document, "gavel_makespan")

    document = trace_document(
        synthetic_trace(throughputs, 500, seed=2020), throughputs,
        {"v100": 40, "p100": 40, "k80": 48}, 8, PRICES, name="gavel_cluster_500",
    )
    add_dependencies_and_deadlines(document, seed=2020)
    document["description"] += (
        " Jobs sampled as Gavel's generator does (seed 2020); 10% depend on an earlier job, "
        "5% have a deadline of 4x their V100 run time plus an hour."
    )
    write(document, "gavel_cluster_500")

    document = trace_document(
        synthetic_trace(throughputs, 500, seed=2021, long_share=1.0), throughputs,
        {"v100": 40, "p100": 40, "k80": 48}, 8, PRICES, name="gavel_cluster_500_long",
    )
    add_dependencies_and_deadlines(document, seed=2021)
    document["description"] += (
        " Jobs sampled as Gavel's generator does (seed 2021) but all from its long run-time "
        "mode (1,000 to 10,000 minutes on a V100), so that the fleet, not the longest job, "
        "sets the makespan; 10% depend on an earlier job, 5% have a deadline of 4x their "
        "V100 run time plus an hour."
    )
    write(document, "gavel_cluster_500_long")


if __name__ == "__main__":
    main()
