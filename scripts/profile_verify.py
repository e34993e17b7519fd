"""Time what checking a big simulated run log costs: translation, verification, JSON.

Builds a synthetic workload in the shape of Gavel's (run times 60·10^U(1.5,3) s w.p. 0.8
else 60·10^U(3,4) s, Poisson arrivals, the cluster of ``instances/gavel_cluster_500.json``),
plays it out in round mode under a small least-attained-service scheduler defined here (so
the timing does not depend on the registered policies), and times each step on the run log::

    .venv/bin/python scripts/profile_verify.py --jobs 3000 --rate 60
    .venv/bin/python scripts/profile_verify.py --jobs 3000 --profile   # cProfile top 25

The zero-overhead run keeps the timing about the run log's size, not the overheads.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Schedule
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.simulate.engine import Engine, SimulationConfig
from gpuplan.simulate.policies.admit_all import AdmitAll
from gpuplan.simulate.policy import ClusterView, Decision, Mode, PolicyContext, View
from gpuplan.verify import verify_schedule

ROOT = Path(__file__).resolve().parent.parent


class _LeastAttained:
    """Preemptive: run the jobs with the least attained service first."""

    name: ClassVar[str] = "profile-las"
    description: ClassVar[str] = "least attained service"
    takes: ClassVar[frozenset[str]] = frozenset()
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = True

    def __init__(self, context: PolicyContext) -> None:
        del context

    def decide(self, view: View) -> Decision:
        jobs = view.jobs
        return Decision(jobs[np.argsort(view.attained[jobs], kind="stable")])

    def wakeup(self, view: View) -> float | None:
        return None


class _FirstFit:
    """The lowest free GPUs of the type on the first node that has enough."""

    name: ClassVar[str] = "profile-first-fit"
    description: ClassVar[str] = "first node that fits"
    takes: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, context: PolicyContext) -> None:
        del context

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> Any:
        need = int(cluster.instance.gang[job])
        for node in np.flatnonzero(cluster.free[:, gpu_type] >= need).tolist():
            return cluster.free_gpus(node, gpu_type)[:need]
        return None


def workload(n_jobs: int, rate_per_hour: float, seed: int) -> Instance:
    """Gavel-shaped jobs on the cluster of gavel_cluster_500.json."""
    cluster = json.loads((ROOT / "instances" / "gavel_cluster_500.json").read_text())
    rng = np.random.default_rng(seed)
    long = rng.random(n_jobs) >= 0.8
    run_s = 60.0 * 10 ** np.where(long, rng.uniform(3, 4, n_jobs), rng.uniform(1.5, 3, n_jobs))
    release = np.cumsum(rng.exponential(3600.0 / rate_per_hour, n_jobs))
    slow = {"v100": 1.0, "p100": 1.6, "k80": 3.5}
    gang = rng.choice([1, 2, 4, 8], n_jobs, p=[0.7, 0.1, 0.15, 0.05])
    jobs = [{"id": f"job{j:05d}", "gpus": int(gang[j]), "preemptible": True,
             "release_s": round(float(release[j]), 3),
             "duration_s": {t: round(float(run_s[j]) * f, 3) for t, f in slow.items()}}
            for j in range(n_jobs)]
    document = {"name": f"profile-{n_jobs}", "gpu_types": cluster["gpu_types"],
                "nodes": cluster["nodes"], "jobs": jobs, "objective": "weighted-completion"}
    return build_instance(parse_document(document, "<profile>"), "<profile>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=60.0, help="arrivals per hour")
    parser.add_argument("--round", type=float, default=360.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="cProfile the checks")
    args = parser.parse_args()
    instance = workload(args.jobs, args.rate, args.seed)
    context = PolicyContext(instance, Mode.ROUND, args.round, args.seed)
    config = SimulationConfig(Mode.ROUND, args.round, 0.0, 0.0)
    began = time.perf_counter()
    result = Engine(instance, config, _LeastAttained(context), _FirstFit(context),
                    AdmitAll(context)).run()
    print(f"engine: {time.perf_counter() - began:.2f} s, {result.n_segments} segments, "
          f"{len(result.events)} events")
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    schedule = Schedule.from_result(instance, result, "profile", 0.0, args.seed)
    timings["from_result"] = time.perf_counter() - clock
    clock = time.perf_counter()
    verification = verify_schedule(instance, schedule)
    timings["verify_schedule"] = time.perf_counter() - clock
    schedule = schedule.model_copy(update={"verification": verification})
    clock = time.perf_counter()
    text = schedule.to_json()
    timings["to_json"] = time.perf_counter() - clock
    clock = time.perf_counter()
    Schedule.from_json(text, "<profile>")
    timings["from_json"] = time.perf_counter() - clock
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    assert verification.ok, verification.violations[:5]
    for step, seconds in timings.items():
        print(f"{step}: {seconds:.2f} s")
    print(f"total: {sum(timings.values()):.2f} s ({len(text) / 1e6:.0f} MB of JSON)")


if __name__ == "__main__":
    main()
