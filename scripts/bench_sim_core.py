"""How fast the simulation core plays out the ITP gang mix and a saturated multi-GPU queue.

Usage:
    python scripts/bench_sim_core.py [--sizes 10000,100000,1000000]
        [--policies fifo,sjf,srtf,las] [--saturated 10000,40000,200000]
        [--saturated-policies fifo,las] [--timeout 600] [--out docs/results/sim_core.md]

Two workloads, as issue 46 sets them:

- **ITP mix**: jobs drawn (with replacement, seed 0) from the 69,351 jobs of the ten raw ITP
  cluster files (``../shared/benchmarks/gpu-traces/microsoft-itp/raw-traces.tar.gz``):
  each a (``num_gpu``, ``duration``) pair of the trace, so gangs of 1 to 64 GPUs in the
  trace's mix. They arrive as a Poisson process at the rate that offers 60% of the fleet's
  speed-weighted GPU-seconds, written as an ITP CSV and converted by ``gpuplan convert itp
  --node-count 256 --types A100=1,V100=0.5,K80=0.25``: 2,048 GPUs on 256 8-GPU nodes, 86,
  85 and 85 nodes of three types, a job running its trace duration on A100 and 2x / 4x
  that on V100 / K80. Gangs above 8 GPUs span whole nodes.
- **saturated**: ``gpuplan generate --cluster 342:341:341 --arrival-rate 30 --multi-gpu``
  (1,024 GPUs, Gavel's multi-GPU jobs arriving faster than they are served): the queue of
  blocked gangs grows with the run.

Each point is the whole command ``gpuplan simulate W.json --policy P --metrics-only -o
SUMMARY.json``: starting Python, reading the instance, simulating every job to completion,
verifying the run log and checking it against its record (only the summary is written).
Seconds are its wall time, peak memory its own maximum resident set; making the workloads
is not timed. One command runs at a time; one that passes ``--timeout`` is stopped and
shown as such.
"""

from __future__ import annotations

import argparse
import csv
import io
import shlex
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from bench_simulate_makespan import GPUPLAN, ROOT, generate, run_timed, shown
from bench_simulate_speed import timed_row

from gpuplan.harness.bench import write_results

ITP = (ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "microsoft-itp"
       / "raw-traces.tar.gz")
#: The fleet: 256 nodes of 8 GPUs, three types at these speeds relative to the trace's.
NODES = 256
TYPES = {"A100": 1.0, "V100": 0.5, "K80": 0.25}
#: Share of the fleet's speed-weighted GPU-seconds the arrivals offer.
LOAD = 0.6

#: Issue 46's targets: seconds for a million ITP-mix jobs, for 200k saturated jobs, and
#: the most memory.
TARGET_1M_S = {"fifo": 60.0, "sjf": 60.0, "srtf": 120.0, "las": 120.0}
TARGET_SATURATED_S = {"fifo": 15.0, "las": 30.0}
TARGET_PEAK_MIB = 1024


def itp_jobs() -> tuple[np.ndarray, np.ndarray]:
    """Every job's GPUs and duration (s) in the ten raw ITP cluster files."""
    gpus: list[int] = []
    seconds: list[int] = []
    with tarfile.open(ITP) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            name = Path(member.name)
            if not name.name.startswith("cluster") or name.suffix != ".csv":
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            for row in csv.DictReader(io.TextIOWrapper(handle, encoding="utf-8")):
                gpus.append(int(row["num_gpu"]))
                seconds.append(int(float(row["duration"])))
    return np.array(gpus), np.array(seconds)


def itp_mix(out: Path, jobs: int, seed: int = 0) -> list[str]:
    """Write an ITP-mix instance of ``jobs`` jobs; the convert command that made it."""
    gpus, seconds = itp_jobs()
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, gpus.size, jobs)
    capacity = NODES * 8 * float(np.mean(list(TYPES.values())))
    rate = LOAD * capacity / float(np.mean(gpus * seconds))
    arrivals = np.cumsum(rng.exponential(1.0 / rate, jobs)).astype(np.int64)
    trace = out.with_suffix(".csv")
    with trace.open("w", encoding="utf-8") as handle:
        handle.write("job_id,submission_time,duration,num_gpu\n")
        handle.writelines(f"j{k},{arrivals[k]},{seconds[drawn[k]]},{gpus[drawn[k]]}\n"
                          for k in range(jobs))
    folder = out.parent / f"{out.stem}-converted"
    args = [*GPUPLAN, "convert", "itp", str(trace), "--node-count", str(NODES), "--types",
            ",".join(f"{name}={speed:g}" for name, speed in TYPES.items()), "-o",
            str(folder)]
    run_timed(args)
    (converted,) = folder.glob("*.json")
    converted.replace(out)
    return args


def main() -> None:
    """Time every point, one at a time, and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--policies", default="fifo,sjf,srtf,las")
    parser.add_argument("--saturated", default="10000,40000,200000")
    parser.add_argument("--saturated-policies", default="fifo,las")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which a command is stopped")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "sim_core.md")
    args = parser.parse_args()
    command = shlex.join(["python", "scripts/bench_sim_core.py", *sys.argv[1:]])
    head = ["| workload | jobs | policy | seconds | jobs/min | peak MiB |",
            "|---|---:|---|---:|---:|---:|"]
    rows: list[str] = []
    made: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        points = [("ITP mix", int(size), args.policies) for size in args.sizes.split(",")
                  if size]
        points += [("saturated", int(size), args.saturated_policies)
                   for size in args.saturated.split(",") if size]
        for name, size, policies in points:
            workload = work / f"workload{size}.json"
            made.append(shown(itp_mix(workload, size) if name == "ITP mix" else generate(
                workload, size, 0, 30.0, ["--multi-gpu", "--gpus-per-node", "8"],
                "342:341:341")).replace(tmp, "WORK").replace(str(ROOT.parent / "shared"),
                                                            "../shared"))
            print("workload:", made[-1], flush=True)
            for policy in policies.split(","):
                rows.append(f"| {name} | {size:,} | {policy} | " + timed_row(
                    [*GPUPLAN, "simulate", str(workload), "--policy", policy,
                     "--metrics-only", "-o", str(work / "summary.json")], size,
                    args.timeout))
                print(rows[-1], flush=True)
            workload.unlink()
    targets = ", ".join(f"{p} <= {s:g} s" for p, s in TARGET_1M_S.items())
    saturated = ", ".join(f"{p} <= {s:g} s" for p, s in TARGET_SATURATED_S.items())
    write_results(args.out, f"# Simulation core speed (issue 46)\n\nWritten by `{command}` "
                  f"on this machine's 2 cores (shared). Targets: a million ITP-mix jobs "
                  f"{targets}; 200k saturated jobs {saturated}; peak memory <= "
                  f"{TARGET_PEAK_MIB:,} MiB. Seconds are the whole `gpuplan simulate "
                  f"--metrics-only` command (reading, simulating, verifying and checking "
                  f"the run log).\n\nWorkloads (the ITP mix is a CSV of jobs drawn from the "
                  f"trace, then converted):\n\n" + "\n".join(f"- `{m}`" for m in made)
                  + "\n\n" + "\n".join(head + rows) + "\n")


if __name__ == "__main__":
    main()
