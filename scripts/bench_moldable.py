"""Benchmark moldable planning: ``cp`` choosing elastic jobs' GPU counts vs the trace's counts.

Usage:
    nice -n 19 python scripts/bench_moldable.py [--time-limit 30] [--quick]
        [--traces ../shared/benchmarks/gpu-traces/microsoft-itp]
        [--out docs/results/moldable.md] [--keep DIR]

Batches are drawn from ElasticFlow's ITP traces (``195job.csv``, its 128-GPU testbed trace,
and ``cluster10.csv``) as ``gpuplan convert itp TRACE --deadlines --node-count N`` makes
them elastic: the powers of two its model and batch size have an A100 throughput for (up
to the fleet), the trace's ``num_gpu`` as the reference count, ``num_iteration`` as the
work, ElasticFlow's 2 s restore overhead. A batch is a seeded sample of 30-60 of its jobs
on 2-4 nodes of 8 A100 GPUs, all released at 0, or consecutive jobs released at their
submission times (from the first). Due dates are left out: the objectives are makespan and
weighted (here unit-weight) completion time.

Each batch and objective is planned by ``cp`` twice with the same time limit on one
thread: with elastic counts (moldable, the default) and with ``--moldable false`` (each job
at the trace's count, as a gang scheduler runs it). Every plan is verified. The bound is
the one gpuplan reports (the moldable relaxation's: each elastic job on one GPU for its
shortest time; for makespan also the least GPU-seconds over the fleet), valid for both
plans, since a fixed count is one of the choices. The improvement is how much lower the
moldable value is than the fixed one.

The instances are written as gpuplan instance files (``--keep`` keeps them in DIR) and
planned through the public API (:func:`gpuplan.read_instance`, :func:`gpuplan.plan`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan import RunSettings, plan, read_instance

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ITP = ROOT.parent / "shared" / "benchmarks" / "gpu-traces" / "microsoft-itp"


@dataclass(frozen=True)
class Batch:
    """A batch drawn from a trace: its name, trace, jobs, nodes and whether it has releases."""

    name: str
    trace: str
    jobs: int
    nodes: int
    seed: int
    releases: bool


#: The batches: each trace at three sizes, two released at 0 and one with releases.
BATCHES = tuple(
    Batch(f"{stem}-{jobs}j-{nodes}n-{'rel' if releases else 's'}{seed}", f"{stem}.csv", jobs,
          nodes, seed, releases)
    for stem in ("195job", "cluster10")
    for jobs, nodes, seed, releases in ((30, 2, 1, False), (45, 3, 2, False),
                                        (60, 4, 3, False), (40, 3, 4, True))
)


def converted(traces: Path, batch: Batch, folder: Path) -> dict[str, Any]:
    """The batch's trace as ``gpuplan convert itp TRACE --deadlines`` writes it, on its nodes."""
    with tarfile.open(traces / "elasticflow-traces.tar.gz") as archive:
        member = next(m for m in archive.getmembers() if Path(m.name).name == batch.trace)
        handle = archive.extractfile(member)
        assert handle is not None
        trace = folder / batch.trace
        trace.write_bytes(handle.read())
    out = folder / f"converted-{batch.name}"
    # The command line beside this interpreter (a venv's), else on the PATH.
    beside = Path(sys.executable).parent / "gpuplan"
    command = str(beside) if beside.exists() else "gpuplan"
    subprocess.run([command, "convert", "itp", str(trace),
                    "--deadlines", "--node-count", str(batch.nodes), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    data: dict[str, Any] = json.loads(next(out.glob("*.json")).read_text())
    return data


def document(batch: Batch, data: dict[str, Any], objective: str) -> dict[str, Any]:
    """The batch drawn from the converted trace, for ``objective`` (no due dates)."""
    jobs = data["jobs"]
    rng = np.random.default_rng(batch.seed)
    if batch.releases:
        first = int(rng.integers(0, len(jobs) - batch.jobs))
        chosen = sorted(jobs, key=lambda j: float(j["release_s"]))[first:first + batch.jobs]
        origin = float(chosen[0]["release_s"])
    else:
        picks = rng.choice(len(jobs), size=batch.jobs, replace=False)
        chosen = [jobs[int(k)] for k in sorted(picks)]
    drawn = []
    for job in chosen:
        job = {key: value for key, value in job.items() if key != "due_s"}
        job["release_s"] = float(job["release_s"]) - origin if batch.releases else 0.0
        drawn.append(job)
    return {**data, "name": f"{batch.name}-{objective}",
            "description": f"{batch.jobs} jobs of {batch.trace} (seed {batch.seed}), "
                           + data["description"], "jobs": drawn, "objective": objective}


def solve(path: Path, moldable: bool, time_limit_s: float) -> dict[str, Any]:
    """``cp`` on the instance file, moldable or at the trace's counts; the plan verified."""
    instance = read_instance(path)
    began = time.perf_counter()
    schedule = plan(instance, "cp", {"moldable": moldable},
                    settings=RunSettings(time_limit_s=time_limit_s, threads=1))
    seconds = time.perf_counter() - began
    assert schedule.verification is not None and schedule.verification.ok, path
    assert schedule.objective is not None, path
    gpus: dict[str, int] = {}
    for segment in schedule.segments:
        gpus[segment.job] = gpus.get(segment.job, 0) + len(segment.gpu_ids)
    changed = sum(gpus[job] != int(instance.gang[instance.job_index[job]]) for job in gpus)
    return {"value": schedule.objective, "bound": schedule.bound, "seconds": seconds,
            "changed": changed}


def gap(value: float, bound: float | None) -> str:
    """The relative gap to the bound, in percent."""
    return "-" if bound is None or value <= 0 else f"{100 * (value - bound) / value:.1f}%"


def report(results: list[dict[str, Any]], time_limit_s: float) -> str:
    """The results page: a table per objective and the mean improvement."""
    lines = [
        "# Moldable planning: elastic counts vs the trace's counts (issue 48)",
        "",
        "Written by `scripts/bench_moldable.py` (see its docstring for the batches). `cp` "
        f"with a {time_limit_s:g} s time limit on one thread, each plan verified; *elastic*: "
        "each elastic job runs whole on the GPU count cp chooses (`--moldable true`, the "
        "default), *fixed*: at the trace's `num_gpu` (`--moldable false`). The bound is "
        "gpuplan's reported one, valid for both. *resized*: jobs the elastic plan runs on "
        "another count than the trace's. *better*: how much lower the elastic value is.",
    ]
    for objective in ("makespan", "weighted-completion"):
        mine = [r for r in results if r["objective"] == objective]
        unit = "s" if objective == "makespan" else "job-s"
        lines += ["", f"## {objective}", "",
                  f"| batch | fixed ({unit}) | elastic ({unit}) | bound | gap fixed | "
                  "gap elastic | s fixed | s elastic | resized | better |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in mine:
            fixed, elastic = r["fixed"], r["elastic"]
            bound = max(b for b in (fixed["bound"], elastic["bound"], 0.0) if b is not None)
            lines.append(
                f"| {r['batch']} | {fixed['value']:,.0f} | {elastic['value']:,.0f} | "
                f"{bound:,.0f} | {gap(fixed['value'], bound)} | "
                f"{gap(elastic['value'], bound)} | {fixed['seconds']:.1f} | "
                f"{elastic['seconds']:.1f} | {elastic['changed']} | {r['better']:.1f}% |")
        if mine:
            better = [r["better"] for r in mine]
            lines += ["", f"Elastic counts are better on {sum(b > 0 for b in better)} of "
                      f"{len(better)} batches, by {np.mean(better):.1f}% on average (from "
                      f"{min(better):.1f}% to {max(better):.1f}%)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Draw the batches, plan each both ways, write the results page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_ITP)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "moldable.md")
    parser.add_argument("--keep", type=Path, help="write the instance files here")
    parser.add_argument("--quick", action="store_true",
                        help="one batch per trace and a 5 s time limit (a smoke test)")
    args = parser.parse_args()
    batches = [b for b in BATCHES if not args.quick or b.seed == 1]
    limit = 5.0 if args.quick else args.time_limit
    folder = args.keep or Path(tempfile.mkdtemp(prefix="moldable-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for batch in batches:
        data = converted(args.traces, batch, folder)
        for objective in ("makespan", "weighted-completion"):
            path = folder / f"{batch.name}-{objective}.json"
            path.write_text(json.dumps(document(batch, data, objective), indent=1))
            fixed = solve(path, False, limit)
            elastic = solve(path, True, limit)
            better = 100 * (fixed["value"] - elastic["value"]) / fixed["value"]
            results.append({"batch": batch.name, "objective": objective, "fixed": fixed,
                            "elastic": elastic, "better": better})
            print(f"{batch.name} {objective}: fixed {fixed['value']:.0f} elastic "
                  f"{elastic['value']:.0f} bound {elastic['bound']} ({better:.1f}% better; "
                  f"{fixed['seconds']:.1f} s, {elastic['seconds']:.1f} s)", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(results, limit))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
